"""Training through the Python API: schedule, checkpoints, reloading."""

import functools
import math
import re
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from nmt_cli import Translator, preset
from nmt_cli.checkpoint import LAST_WEIGHTS, load_train_state
from nmt_cli.config import DecodeConfig, apply_overrides
from nmt_cli.errors import UserError
from nmt_cli.optim import Updater, lr_factor
from nmt_cli.progress import TrainingProgress
from nmt_cli.training import Trainer, TrainingInterrupted, prepare_run_dir, resume
from nmt_cli.validation import selection_score

from conftest import read_sample, tiny_model, write_corpus


def test_inverse_sqrt_schedule_warms_up_linearly_then_decays():
    factors = [lr_factor(step, "inverse_sqrt", 100) for step in range(400)]
    assert factors[0] == pytest.approx(0.01) and factors[99] == pytest.approx(1.0)
    assert factors[399] == pytest.approx(math.sqrt(100 / 400))
    assert all(a < b for a, b in zip(factors[:99], factors[1:100]))
    assert lr_factor(5000, "constant", 100) == 1.0


def test_linear_schedule_warms_up_then_falls_to_zero_with_the_budget_spent():
    assert lr_factor(0, "linear", 100, done=0.0) == pytest.approx(0.01)
    assert lr_factor(99, "linear", 100, done=0.1) == pytest.approx(0.9)  # warmup done
    assert lr_factor(500, "linear", 100, done=0.25) == pytest.approx(0.75)
    assert lr_factor(5000, "linear", 100, done=1.0) == 0.0
    assert lr_factor(3, "linear", 100, done=0.999) == pytest.approx(0.001)  # the lower wins


def small_config(corpus, **settings):
    """The transformer preset made small, on `corpus`, with `settings` (keys without dots
    are train settings)."""
    return apply_overrides(preset("transformer"), {
        "data.data_dir": str(corpus), "model.d_model": 32, "model.d_ff": 64,
        "tokenizer.vocab_size": 300, "train.batch_tokens": 1024,
        **{key if "." in key else f"train.{key}": value for key, value in settings.items()}})


@pytest.fixture(scope="module")
def trainer(small_corpus, tmp_path_factory):
    config = small_config(small_corpus, max_steps=30, validate_every=15, warmup_steps=10)
    run_dir = prepare_run_dir(tmp_path_factory.mktemp("runs") / "api")
    events = []
    trainer = Trainer(config, run_dir, events.append)
    trainer.run()
    trainer.events = events
    return trainer


def test_training_lowers_the_loss_and_reports_progress(trainer):
    losses = [e["loss"] for e in trainer.events if e["kind"] == "step"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
    validations = [e for e in trainer.events if e["kind"] == "validate"]
    assert [v["step"] for v in validations] == [15, 30]
    assert validations[1]["val_loss"] < validations[0]["val_loss"]
    assert trainer.events[-1]["kind"] == "done"


def test_the_python_api_records_paths_that_work_from_anywhere(small_corpus, tmp_path,
                                                              monkeypatch):
    """train() kept a relative data.data_dir in config.json: the run resumed and was scored
    only from the folder it began in."""
    from nmt_cli import train

    monkeypatch.chdir(small_corpus.parent)
    config = small_config(small_corpus.name, max_steps=1, validate_every=1)
    run_dir = train(config, tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    assert Translator.from_run(run_dir, "cpu").run.config.data.data_dir == str(small_corpus)
    resume(run_dir, {"train.max_steps": 2})


def test_each_step_logs_the_rate_its_update_took(trainer):
    """The rate was read after the schedule had moved on: each step showed the next one's,
    so the warmup peaked a step early on the curves."""
    t = trainer.config.train
    rates = [e["lr"] for e in trainer.events if e["kind"] == "step"]
    assert rates == pytest.approx([t.lr * lr_factor(step, t.schedule, t.warmup_steps)
                                   for step in range(30)])
    assert rates.index(max(rates)) == t.warmup_steps - 1  # step 10 of warmup 10: the peak


def test_saved_and_reloaded_run_translates_identically(trainer, small_corpus):
    lines = (small_corpus / "test.en").read_text(encoding="utf-8").splitlines()[:20]
    for beam in (1, 3):
        config = DecodeConfig(beam=beam, device="cpu")
        in_memory = Translator(trainer.as_run(), torch.device("cpu")).translate(lines, config)
        reloaded = Translator.from_run(trainer.run_dir, "cpu", LAST_WEIGHTS).translate(lines,
                                                                                       config)
        assert in_memory == reloaded


def test_training_state_loads_safely(trainer):
    state = load_train_state(trainer.run_dir / "train_state.pt")
    assert state["progress"]["step"] == 30
    assert "exp_avg" in next(iter(state["optimizer"]["state"].values()))


def test_early_stopping_ends_training_when_bleu_stops_improving(small_corpus, tmp_path):
    config = apply_overrides(preset("transformer"), {
        "data.data_dir": str(small_corpus), "model.d_model": 16, "model.d_ff": 32,
        "model.num_encoder_layers": 1, "model.num_decoder_layers": 1,
        "tokenizer.vocab_size": 200, "train.batch_tokens": 512, "train.max_steps": 50,
        "train.validate_every": 1, "train.patience": 2, "train.lr": 1e-6})
    events = []
    Trainer(config, prepare_run_dir(tmp_path / "run"), events.append).run()
    steps = [e["step"] for e in events if e["kind"] == "step"]
    assert len(steps) < 50
    assert any("early stopping" in e.get("message", "") for e in events)
    # resumed with a larger limit, it stays stopped, its weights as they were; with more
    # patience it trains on
    weights = (tmp_path / "run" / LAST_WEIGHTS).read_bytes()
    events.clear()
    resume(tmp_path / "run", {"train.max_steps": 60}, events.append)
    assert not [e for e in events if e["kind"] == "step"]
    assert any(f"stopped early at step {steps[-1]}" in e.get("message", "") for e in events)
    assert (tmp_path / "run" / LAST_WEIGHTS).read_bytes() == weights
    resume(tmp_path / "run", {"train.max_steps": steps[-1] + 1, "train.patience": 0},
           events.append)
    assert [e["step"] for e in events if e["kind"] == "step"] == [steps[-1] + 1]


def test_validation_pairs_longer_than_the_model_reads_are_reported(small_corpus, tmp_path):
    """They cannot be teacher-forced, so the validation loss leaves them out: said once."""
    messages = {}
    for positions in (12, 1024):
        config = small_config(small_corpus, **{"model.max_positions": positions,
                                               "data.max_len": 10})
        events = []
        trainer = Trainer(config, prepare_run_dir(tmp_path / str(positions)), events.append)
        messages[positions] = [e["message"] for e in events if "max_positions" in
                               e.get("message", "")]
    assert len(trainer.corpus.val.src) == 60  # all 60 fit 1,024 positions
    assert len(messages[12]) == 1 and not messages[1024]
    assert re.fullmatch(r"val: \d+ of 60 pairs are longer than model.max_positions \(12 tokens\):"
                        r" the validation loss leaves them out, .*", messages[12][0])


def test_validation_pairs_with_a_blank_side_are_reported_and_none_left_is_an_error(tmp_path):
    """The validation loss leaves them out: said, since a validation set of every other
    target blank scored a loss on half of it without a word; one with nothing left to score
    (a loss of 0.000, perplexity 1) is an error."""
    english, german = read_sample("val", "en", 20), read_sample("val", "de", 20)
    for name, targets in (("half", [t if i % 2 else "" for i, t in enumerate(german)]),
                          ("none", [""] * 20)):
        corpus = write_corpus(tmp_path / name, {
            "train": (read_sample("train", "en", 200), read_sample("train", "de", 200)),
            "val": (english, targets)})
        events = []
        make = functools.partial(Trainer, small_config(corpus), prepare_run_dir(
            tmp_path / f"run-{name}"), events.append)
        if name == "none":
            with pytest.raises(UserError, match=r"^val: none of its 20 pairs can be scored \(20 "
                                                r"have a blank side, 0 are longer than "
                                                r"model.max_positions\)"):
                make()
            continue
        assert len(make().corpus.val.src) == 10
        assert [e["message"] for e in events if "blank side" in e.get("message", "")] == [
            "val: 10 of 20 pairs have a blank side: the validation loss leaves them out, and "
            "BLEU and chrF score their translations"]


def test_tokens_per_second_count_the_steps_and_not_the_validations(small_corpus, tmp_path,
                                                                    monkeypatch):
    """On a clock where each step takes 0.5 s and each validation 100 s, every logged rate is
    the tokens of the last 20 steps over their 0.5 s each: none dips after a validation (a
    validation once made the next 20 steps look 40% slower), and the first is not 0."""
    from types import SimpleNamespace

    from nmt_cli import training

    clock = [0.0]
    monkeypatch.setattr(training, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    train_step, validate = Trainer.train_step, Trainer.validate_and_save

    def timed_step(self, update):
        clock[0] += 0.5
        return train_step(self, update)

    def timed_validation(self):
        clock[0] += 100.0
        return validate(self)

    monkeypatch.setattr(Trainer, "train_step", timed_step)
    monkeypatch.setattr(Trainer, "validate_and_save", timed_validation)
    events = []
    Trainer(small_config(small_corpus, max_steps=30, validate_every=10), prepare_run_dir(
        tmp_path / "run"), events.append).run()
    steps = [e for e in events if e["kind"] == "step"]
    assert [e["step"] for e in steps] == list(range(1, 31))
    for i, event in enumerate(steps):
        window = steps[max(0, i - 19): i + 1]
        expected = sum(e["tokens"] for e in window) / (0.5 * len(window))
        assert event["tokens_per_s"] == pytest.approx(expected)
    assert steps[-1]["elapsed"] == pytest.approx(30 * 0.5 + 2 * 100.0)  # validations count


def test_a_run_without_a_limit_says_so(small_corpus, tmp_path):
    config = small_config(small_corpus, max_steps=0, patience=3)
    events = []

    def stop(event):
        events.append(event)
        if event["kind"] == "step":
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(TrainingInterrupted):
        Trainer(config, prepare_run_dir(tmp_path / "run"), stop).run()
    assert "no limit is set (train.max_steps, train.max_time and train.epochs are 0): training " \
           "goes on until it is stopped or its patience runs out" in [e.get("message")
                                                                     for e in events]


def test_bf16_and_fp16_autocast_train_like_fp32(small_corpus, tmp_path):
    losses = {}
    for precision in ("fp32", "bf16", "fp16"):
        config = small_config(small_corpus, precision=precision, **{"model.dropout": 0.0})
        trainer = Trainer(config, prepare_run_dir(tmp_path / precision), lambda e: None)
        batches = trainer.epoch_batches(0)
        losses[precision] = [trainer.train_step([b])[0] for b in batches[:5]]
        if precision == "fp16":  # float16 needs loss scaling; the scale is saved with the run
            assert trainer.scaler is not None and trainer.scaler.get_scale() > 1
            trainer.save(best=False)
            assert "scaler" in load_train_state(trainer.run_dir / "train_state.pt")
    assert losses["fp32"] != losses["bf16"] != losses["fp16"]  # the autocasts really ran
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=2e-2)
    assert losses["fp16"] == pytest.approx(losses["fp32"], rel=2e-2)


def test_accumulating_two_batches_is_one_update_on_both(small_corpus, tmp_path):
    grads = {}
    for name, accum in (("one", 1), ("two", 2)):
        config = small_config(small_corpus, batch_tokens=512, accum=accum,
                              **{"model.dropout": 0.0})
        trainer = Trainer(config, prepare_run_dir(tmp_path / name), lambda e: None)
        first, second = trainer.epoch_batches(0)[:2]
        update = [[*first, *second]] if accum == 1 else [first, second]
        loss, tokens = trainer.train_step(update)
        grads[name] = (loss, tokens, [p.grad.clone() for p in trainer.model.parameters()])
    assert grads["one"][:2] == pytest.approx(grads["two"][:2], rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads["one"][2], grads["two"][2]))


def same_weights(a: Path, b: Path) -> bool:
    first, second = load_file(a), load_file(b)
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def running_best(scores: list[float]) -> list[bool]:
    return [s > max(scores[:i], default=-math.inf) for i, s in enumerate(scores)]


@pytest.fixture(scope="module")
def ranked_runs(small_corpus, tmp_path_factory):
    """The same 12 steps, validated every 3, their validations ranked by each metric."""
    runs = {}
    for metric in ("bleu", "chrf", "loss"):
        config = small_config(small_corpus, max_steps=12, validate_every=3, keep_last=4,
                              ema_decay=0.9, lr=3e-3, warmup_steps=4, best_metric=metric)
        events = []
        Trainer(config, prepare_run_dir(tmp_path_factory.mktemp(metric) / "run"),
                events.append).run()
        runs[metric] = events
    return runs


@pytest.mark.parametrize("metric", ["bleu", "chrf", "loss"])
def test_the_best_weights_follow_train_best_metric(ranked_runs, metric):
    events = ranked_runs[metric]
    validations = [e for e in events if e["kind"] == "validate"]
    sign = -1 if metric == "loss" else 1
    for prefix, flag in (("", "best"), ("ema_", "ema_best")):
        scores = [sign * v[f"{prefix}val_{metric}"] for v in validations]
        assert [v[flag] for v in validations] == running_best(scores)
    best = [v["step"] for v in validations if v["best"]][-1]
    run_dir = Path(events[-1]["run_dir"])
    assert same_weights(run_dir / "model.safetensors", run_dir / f"step-{best:06d}.safetensors")
    assert events[-1]["best_metric"] == metric
    assert events[-1]["best_score"] == max(sign * v[f"val_{metric}"] for v in validations)


def test_the_metrics_rank_these_validations_differently(ranked_runs):
    """What makes the test above able to fail: BLEU and loss pick other validations here (the
    three runs train alike; only their ranking differs). chrF ranks as BLEU does in runs this
    short, so the next test checks that each metric reads its own number."""
    flags = {metric: [e["best"] for e in events if e["kind"] == "validate"]
             for metric, events in ranked_runs.items()}
    assert flags["bleu"] != flags["loss"]


def test_each_metric_scores_validations_by_its_own_number():
    scores = {"val_bleu": 1.5, "val_chrf": 2.5, "val_loss": 3.5}
    assert [selection_score(scores, m) for m in ("bleu", "chrf", "loss")] == [1.5, 2.5, -3.5]
    for value in (math.nan, math.inf):  # a loss gone bad ranks last, never as NaN
        assert selection_score({"val_loss": value}, "loss") == -math.inf
    progress = TrainingProgress()
    assert progress.count_validation(-math.inf)  # the first is the best so far, whatever it is
    assert not progress.count_validation(-math.inf)  # a second bad one is not
    assert progress.count_validation(-4.0) and not progress.count_validation(-5.0)


def test_a_clip_norm_of_0_leaves_the_gradient_whole():
    """train.clip_norm 0 turns clipping off, as in fairseq and Marian (it used to scale every
    gradient to 0, and the weights never moved)."""
    moved = {}
    for clip_norm in (0.0, 1.0):
        torch.manual_seed(0)
        model = tiny_model()
        config = apply_overrides(preset("transformer"), {"train.clip_norm": clip_norm,
                                                         "train.warmup_steps": 0})
        updater = Updater(model, config, torch.device("cpu"))
        before = [p.detach().clone() for p in model.parameters()]
        loss = 1000 * sum((p ** 2).sum() for p in model.parameters())
        updater.backward(loss)
        norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in model.parameters()))
        updater.step(loss)
        grads = math.sqrt(sum(float((p.grad ** 2).sum()) for p in model.parameters()
                              if p.grad is not None))
        moved[clip_norm] = max(float((p.detach() - b).abs().max())
                               for p, b in zip(model.parameters(), before))
        assert grads == pytest.approx(norm if clip_norm == 0 else 1.0, rel=1e-4)
    assert moved[0.0] > 0 and moved[1.0] > 0


@pytest.mark.parametrize(("metric", "better", "worse"), [("bleu", 12.0, 11.0),
                                                         ("loss", 2.5, 2.6)])
def test_the_plateau_schedule_follows_the_best_metric(metric, better, worse):
    """A BLEU that rises or a loss that falls keeps the rate; once either stalls for more
    than plateau_patience validations, the rate falls by plateau_factor."""
    config = apply_overrides(preset("transformer"), {
        "train.schedule": "plateau", "train.plateau_patience": 1, "train.lr": 1e-3,
        "train.best_metric": metric})
    updater = Updater(tiny_model(), config, torch.device("cpu"))
    for value in (worse, better):
        updater.validated(value)
    assert updater.lr == 1e-3
    updater.validated(worse)
    assert updater.lr == 1e-3  # one validation without progress: within the patience
    updater.validated(worse)
    assert updater.lr == pytest.approx(5e-4)
