"""Checkpoint averaging (train.keep_last, `nmt average`) and the EMA of the weights."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from nmt_cli import DecodeConfig, TrainConfig, UserError, checkpoint
from nmt_cli.averaging import Averages, average_run, ema_decay_at, mean_weights
from nmt_cli.cli import app
from nmt_cli.config import apply_overrides, preset, resume_config
from nmt_cli.training import Trainer, TrainingInterrupted, prepare_run_dir, resume
from nmt_cli.translate import Translator

from conftest import random_tokens, read_sample, tiny_model, write_corpus

TINY = {"model.d_model": 32, "model.d_ff": 64, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dropout": 0.3, "tokenizer.vocab_size": 250,
        "train.batch_tokens": 600, "train.warmup_steps": 5, "train.validate_every": 4,
        "train.keep_last": 2, "train.ema_decay": 0.9}
STEPS = 14  # validations at 4, 8, 12 and 14: the last two stay


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 200), read_sample("train", "de", 200)),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})


def tiny_config(corpus: Path):
    return apply_overrides(preset("transformer"), {
        **TINY, "data.data_dir": str(corpus), "train.max_steps": STEPS})


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    """An uninterrupted run with keep_last = 2 and EMA on."""
    run_dir = prepare_run_dir(tmp_path_factory.mktemp("reference") / "run")
    Trainer(tiny_config(corpus), run_dir, lambda e: None).run()
    return run_dir


def kept_steps(run_dir: Path) -> list[int]:
    return [step for step, _ in checkpoint.kept_weights(run_dir)]


def same_weights(a: Path, b: Path) -> bool:
    first, second = load_file(a), load_file(b)
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]


def untimed_records(run_dir: Path) -> list:
    """The log without its times: step losses, and whole validation records."""
    return [(r["step"], r["loss"]) if r["kind"] == "step" else r for r in records(run_dir)]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    for needle in needles:
        assert needle in message, message


# The EMA


def test_ema_decay_warms_up_then_holds():
    assert ema_decay_at(0.999, 0) == pytest.approx(0.1)  # the first update: mostly the weights
    assert ema_decay_at(0.999, 90) == pytest.approx(0.91)
    assert ema_decay_at(0.999, 10**6) == 0.999
    assert ema_decay_at(0.5, 20) == 0.5


def test_ema_math_on_known_tensors():
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.0, 4.0]]))
    averages = Averages(model, TrainConfig(ema_decay=0.5))
    weights = [torch.tensor([[2.0, 8.0]]), torch.tensor([[-2.0, 0.0]]), torch.tensor([[6.0, 2.0]])]
    expected = torch.tensor([[0.0, 4.0]], dtype=torch.float64)
    for n, value in enumerate(weights):
        with torch.no_grad():
            model.weight.copy_(value)
        averages.update(model)
        decay = min(0.5, (1 + n) / (10 + n))
        expected = decay * expected + (1 - decay) * value.double()
        assert torch.allclose(averages.ema.weight.double(), expected, rtol=0, atol=1e-6)
    assert torch.equal(model.weight, weights[-1])  # the trained weights are left alone
    assert averages.ema.weight.dtype == torch.float32 and not averages.ema.weight.requires_grad
    averages.updates = 1000  # past the warm-up: halfway each time, exactly
    before = averages.ema.weight.clone()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 1.0]]))
    averages.update(model)
    assert torch.equal(averages.ema.weight, (before + 1.0) / 2)


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_ema_copy_computes_with_its_own_weights(arch):
    """The GRU keeps a list of its weights for its kernel: a copy must use its own."""
    model = tiny_model(arch)
    averages = Averages(model, TrainConfig(ema_decay=0.5))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)
    averages.update(model)
    rebuilt = tiny_model(arch)
    rebuilt.load_state_dict(averages.ema.state_dict())
    src, tgt = random_tokens(2, 5), random_tokens(2, 4, seed=1)
    with torch.no_grad():
        assert torch.equal(averages.ema(src, tgt), rebuilt(src, tgt))
        assert not torch.equal(averages.ema(src, tgt), model(src, tgt))


def test_no_ema_when_decay_is_zero():
    model = torch.nn.Linear(2, 1)
    averages = Averages(model, TrainConfig())
    averages.update(model)
    assert averages.ema is None and averages.updates == 0


def test_stopped_and_resumed_run_keeps_the_same_checkpoints_and_ema(corpus, reference,
                                                                     tmp_path):
    run_dir = prepare_run_dir(tmp_path / "run")

    def interrupt_at_step_10(event):
        if event["kind"] == "step" and event["step"] == 10:
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(TrainingInterrupted):
        Trainer(tiny_config(corpus), run_dir, interrupt_at_step_10).run()
    assert kept_steps(run_dir) == [4, 8]
    shutil.copyfile(run_dir / "step-000008.safetensors", run_dir / "step-000013.safetensors")
    resume(run_dir)  # ... as if a save at step 13 had crashed: that file goes

    assert kept_steps(reference) == kept_steps(run_dir) == [12, 14]
    for name in ("step-000012.safetensors", "step-000014.safetensors", "last.safetensors",
                 "model.safetensors", "ema-last.safetensors", "ema.safetensors"):
        assert same_weights(run_dir / name, reference / name), name
    assert not same_weights(reference / "ema-last.safetensors", reference / "last.safetensors")
    state = checkpoint.load_train_state(reference / checkpoint.TRAIN_STATE)
    assert state["ema"]["updates"] == STEPS
    assert untimed_records(run_dir) == untimed_records(reference)  # bitwise equal floats


def test_validation_scores_the_ema_too(reference):
    validations = [r for r in records(reference) if r["kind"] == "validate"]
    assert [r["step"] for r in validations] == [4, 8, 12, 14]
    for r in validations:
        assert {"ema_val_loss", "ema_val_ppl", "ema_val_bleu", "ema_best"} <= r.keys()
        assert (reference / "valid" / f"ema-step-{r['step']:06d}.txt").is_file()
    bleu = [r["ema_val_bleu"] for r in validations]
    assert [r["ema_best"] for r in validations] == [
        b > max([-1.0, *bleu[:i]]) for i, b in enumerate(bleu)]  # as for the trained weights


# nmt average


def test_average_of_identical_checkpoints_is_those_weights(reference, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    for step in (12, 14):
        shutil.copyfile(reference / "model.safetensors", run / checkpoint.kept_name(step))
    result = invoke("average", str(run), "--last", "2", "-o", str(tmp_path / "avg"))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "avg")
    assert same_weights(tmp_path / "avg" / "model.safetensors", reference / "model.safetensors")
    monkeypatch.chdir(run)  # "." is named by its folder
    result = invoke("average", ".", "--last", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "run-last2")


def test_averaged_run_translates_like_any_run(reference, tmp_path):
    out, sources = average_run(reference)  # all kept: the last 2
    assert out == reference.with_name(f"{reference.name}-last2") and len(sources) == 2
    a, b = (load_file(p) for p in sources)
    mean = load_file(out / "model.safetensors")
    assert mean.keys() == a.keys()
    assert all(torch.equal(mean[k], ((a[k].double() + b[k].double()) / 2).float()) for k in a)
    assert {p.name for p in out.iterdir()} == {"config.json", "spm.model", "model.safetensors",
                                               "average.json"}
    lines = ["A man is walking.", "Two dogs play in the snow."]
    translations = Translator.from_run(out, "cpu").translate(lines, DecodeConfig(beam=1))
    assert len(translations) == 2
    result = invoke("translate", "--run", str(out), "--beam", "1", lines[0])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == translations[:1]


def test_ema_option_packs_the_best_ema_weights(reference, tmp_path):
    result = invoke("average", str(reference), "--ema", "-o", str(tmp_path / "ema"))
    assert result.exit_code == 0, result.output
    assert same_weights(tmp_path / "ema" / "model.safetensors", reference / "ema.safetensors")
    Translator.from_run(tmp_path / "ema", "cpu")


def known_run(reference: Path, directory: Path, bleu: dict[int, float]) -> Path:
    """A run directory whose kept checkpoints hold one known tensor each: the step."""
    directory.mkdir()
    shutil.copyfile(reference / "config.json", directory / "config.json")
    for step in bleu:
        save_file({"w": torch.full((3,), float(step)), "b": torch.tensor([step * 0.1])},
                  directory / checkpoint.kept_name(step))
    (directory / "metrics.jsonl").write_text("".join(
        json.dumps({"kind": "validate", "step": step, "val_bleu": score}) + "\n"
        for step, score in bleu.items()))
    return directory


def test_mean_of_two_known_tensors_is_exact(reference, tmp_path):
    run = known_run(reference, tmp_path / "run", {1: 0.0, 2: 0.0})
    out, _ = average_run(run, tmp_path / "avg", last=2)
    mean = load_file(out / "model.safetensors")
    assert torch.equal(mean["w"], torch.full((3,), 1.5))
    assert torch.equal(mean["b"], ((torch.tensor([0.1]).double()
                                    + torch.tensor([0.2]).double()) / 2).float())
    a = torch.tensor([1.0, 3.0, -0.5])
    assert torch.equal(mean_weights([save(tmp_path / "a", a), save(tmp_path / "b", -a)])["w"],
                       torch.zeros(3))


def save(path: Path, tensor: torch.Tensor) -> Path:
    save_file({"w": tensor}, path)
    return path


def test_best_k_by_validation_bleu(reference, tmp_path):
    run = known_run(reference, tmp_path / "run", {4: 10.0, 8: 30.0, 12: 20.0, 16: 30.0})
    out, sources = average_run(run, last=None, best=2)
    assert out.name == "run-best2"
    assert [p.name for p in sources] == ["step-000008.safetensors", "step-000016.safetensors"]
    assert torch.equal(load_file(out / "model.safetensors")["w"], torch.full((3,), 12.0))
    _, sources = average_run(run, tmp_path / "best3", best=3)  # a tie for third: the earlier
    assert [p.name for p in sources] == ["step-000008.safetensors", "step-000012.safetensors",
                                         "step-000016.safetensors"]
    _, sources = average_run(run, tmp_path / "last1", last=1)
    assert [p.name for p in sources] == ["step-000016.safetensors"]


def test_best_k_by_the_runs_own_metric(reference, tmp_path):
    """A run ranking validations by loss averages those of the lowest loss."""
    run = known_run(reference, tmp_path / "run", {4: 10.0, 8: 30.0, 12: 20.0, 16: 30.0})
    description = json.loads((run / "config.json").read_text())
    description["config"]["train"]["best_metric"] = "loss"
    (run / "config.json").write_text(json.dumps(description))
    losses = {4: 2.0, 8: 4.0, 12: 1.5, 16: 3.0}
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"kind": "validate", "step": step, "val_bleu": 0.0, "val_loss": loss}) + "\n"
        for step, loss in losses.items()))
    _, sources = average_run(run, best=2)
    assert [p.name for p in sources] == ["step-000004.safetensors", "step-000012.safetensors"]


def test_bad_requests_are_one_line_errors(reference, tmp_path):
    run = str(reference)
    one_line_error(invoke("average", run, "--last", "3"), "--last 3", "only 2 are kept")
    one_line_error(invoke("average", run, "--best", "5"), "--best 5", "only 2 are kept")
    one_line_error(invoke("average", run, "--last", "0"), "--last must be at least 1")
    one_line_error(invoke("average", run, "--best", "-1"), "--best must be at least 1")
    one_line_error(invoke("average", run, "--last", "1", "--best", "1"),
                   "--last and --best exclude each other")
    one_line_error(invoke("average", run, "--last", "1", "--ema"), "exclude each other")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine\n")
    one_line_error(invoke("average", run, "-o", str(taken)), str(taken), "already holds files")
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    one_line_error(invoke("average", run, "-o", str(taken / "notes.txt")),
                   "notes.txt: a file, not a directory")
    one_line_error(invoke("average", str(tmp_path / "nowhere")), "not a run directory")
    plain = known_run(reference, tmp_path / "plain", {})
    one_line_error(invoke("average", str(plain)), "no kept checkpoints", "train.keep_last")
    one_line_error(invoke("average", str(plain), "--ema"), "no ema.safetensors")
    other = known_run(reference, tmp_path / "other", {1: 0.0, 2: 0.0})
    save_file({"w": torch.zeros(4), "b": torch.zeros(1)}, other / checkpoint.kept_name(2))
    one_line_error(invoke("average", str(other), "-o", str(tmp_path / "x")), "shape")
    assert not (tmp_path / "x").exists()
    foreign = tmp_path / "foreign"  # kept weights of another model, copied in
    shutil.copytree(reference, foreign)
    for step in (12, 14):
        save_file({"w": torch.zeros(4)}, foreign / checkpoint.kept_name(step))
    one_line_error(invoke("average", str(foreign), "--last", "2", "-o", str(tmp_path / "y")),
                   ".safetensors: holds other tensors than",
                   "so not this run's model")
    assert not (tmp_path / "y").exists()


# Settings


def test_settings_are_checked_and_keep_last_may_change_on_resume():
    with pytest.raises(UserError, match=r"train.keep_last must not be negative"):
        apply_overrides(preset("transformer"), {"train.keep_last": -1})
    with pytest.raises(UserError, match=r"train.ema_decay must lie in \[0, 1\)"):
        apply_overrides(preset("transformer"), {"train.ema_decay": 1.0})
    run = apply_overrides(preset("transformer"), {"train.ema_decay": 0.999})
    assert resume_config(run, {"train.keep_last": "5"}).train.keep_last == 5
    with pytest.raises(UserError, match="train.ema_decay is fixed by the run"):
        resume_config(run, {"train.ema_decay": "0.99"})


def test_the_end_of_training_points_to_the_ema_when_it_validated_higher(capsys):
    from nmt_cli.cli.training import TrainingDisplay

    done = {"kind": "done", "step": 10, "best_metric": "bleu", "best_score": 30.0,
            "run_dir": "runs/x"}
    by_loss = {**done, "best_metric": "loss", "best_score": -2.5}
    with TrainingDisplay() as display:
        display.show({**done, "ema_best_score": 31.0})
        display.show({**done, "ema_best_score": 29.0})
        display.show(done)
        display.show({**by_loss, "ema_best_score": -2.25})
        display.show({**by_loss, "ema_best_score": -2.75})
    said = " ".join(capsys.readouterr().err.split())
    assert said.count("done after 10 steps; best val BLEU 30.00") == 3
    assert said.count("the EMA validated better (BLEU 31.00); to translate with it: "
                      "nmt average runs/x --ema") == 1
    assert said.count("done after 10 steps; best val loss 2.50") == 2
    assert said.count("the EMA validated better (loss 2.25)") == 1
