"""Runs survive interruption, crashes, bad steps and failing disks; loading never runs code."""

from __future__ import annotations

import gzip
import json
import os
import queue
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from nmt_cli import checkpoint, files
from nmt_cli.cli import app
from nmt_cli.config import UserError, apply_overrides, preset
from nmt_cli.data import uneven
from nmt_cli.stopping import stop_signals
from nmt_cli.training import Trainer, TrainingInterrupted, prepare_run_dir, resume, train

from conftest import read_sample, write_corpus

TINY = {"model.d_model": 32, "model.d_ff": 64, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "model.dropout": 0.3, "tokenizer.vocab_size": 250,
        "train.batch_tokens": 600, "train.warmup_steps": 5, "train.validate_every": 8}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 300), read_sample("train", "de", 300)),
        "val": (read_sample("val", "en", 20), read_sample("val", "de", 20))})


def tiny_config(corpus: Path, steps: int, **changes):
    return apply_overrides(preset("transformer"), {
        **TINY, "data.data_dir": str(corpus), "train.max_steps": steps, **changes})


def step_losses(run_dir: Path) -> list[tuple[int, float]]:
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    return [(r["step"], r["loss"]) for r in records if r["kind"] == "step"]


def same_weights(a: Path, b: Path) -> bool:
    first, second = load_file(a), load_file(b)
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> Path:
    """An uninterrupted run of 30 steps (about two epochs)."""
    run_dir = prepare_run_dir(tmp_path_factory.mktemp("reference") / "run")
    Trainer(tiny_config(corpus, 30), run_dir, lambda e: None).run()
    return run_dir


def validations(run_dir: Path) -> list[tuple[int, float, float]]:
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    return [(r["step"], r["val_loss"], r["val_bleu"]) for r in records if r["kind"] == "validate"]


def interrupted(config, run_dir: Path, step: int) -> TrainingInterrupted:
    """Train as `config` says into `run_dir` until Ctrl-C at `step`; what training raised."""

    def interrupt(event):
        if event["kind"] == "step" and event["step"] == step:
            signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C

    with pytest.raises(TrainingInterrupted) as stopped:
        Trainer(config, run_dir, interrupt).run()
    return stopped.value


@pytest.mark.parametrize("stop_at", [11, 16])  # 16: a step due for validation (every 8)
def test_interrupted_and_resumed_run_equals_an_uninterrupted_one(corpus, reference, tmp_path,
                                                                  stop_at):
    run_dir = prepare_run_dir(tmp_path / "run")
    stopped = interrupted(tiny_config(corpus, 30), run_dir, stop_at)
    assert stopped.step == stop_at and stopped.signum == signal.SIGINT
    assert "nmt train --resume" in str(stopped)
    state = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
    assert state["progress"]["step"] == stop_at and state["progress"]["batch_in_epoch"] > 0
    resume(run_dir)
    assert len(step_losses(reference)) == 30
    assert step_losses(run_dir) == step_losses(reference)  # bitwise equal floats
    assert [s for s, _, _ in validations(reference)] == [8, 16, 24, 30]
    assert validations(run_dir) == validations(reference)
    assert same_weights(run_dir / "last.safetensors", reference / "last.safetensors")
    assert same_weights(run_dir / "model.safetensors", reference / "model.safetensors")


def test_a_signal_during_a_validation_stops_it_and_saves_at_once(corpus, reference, tmp_path,
                                                                 monkeypatch):
    """torchrun, and container runtimes, kill a process 30 s after SIGTERM: a validation that
    ran on to its end lost every step since the last save. It stops between two batches; the
    run saves, and resumed, validates there first, as an unbroken run."""
    import nmt_cli.validation

    make_batch, at_16 = nmt_cli.validation.make_batch, []

    def signalled_inside(*args, **kwargs):  # the first batch of the validation at step 16
        if at_16 == [True]:
            at_16.append(False)
            signal.raise_signal(signal.SIGTERM)
        return make_batch(*args, **kwargs)

    monkeypatch.setattr(nmt_cli.validation, "make_batch", signalled_inside)
    run_dir = prepare_run_dir(tmp_path / "run")
    with pytest.raises(TrainingInterrupted) as stopped:
        Trainer(tiny_config(corpus, 30), run_dir,
                lambda e: at_16.append(True) if e.get("step") == 16 and not at_16 else None).run()
    assert stopped.value.step == 16 and stopped.value.signum == signal.SIGTERM
    progress = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)["progress"]
    assert (progress["step"], progress["validated_at"]) == (16, 8)
    assert not (run_dir / "valid" / "step-000016.txt").exists()  # cut short
    assert [s for s, _, _ in validations(run_dir)] == [8]
    resume(run_dir)
    assert step_losses(run_dir) == step_losses(reference)
    assert validations(run_dir) == validations(reference)
    assert same_weights(run_dir / "model.safetensors", reference / "model.safetensors")


def step_rates(run_dir: Path) -> list[tuple[int, float, float]]:
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    return [(r["step"], r["loss"], r["lr"]) for r in records if r["kind"] == "step"]


def test_a_run_extended_past_its_limit_goes_on_as_one_given_the_larger_limit(corpus, tmp_path):
    """Stopped at step 12, between its validations every 8 steps, a run validates there to
    pick its best weights; extended to step 30, it trains, lowers its rate (plateau), counts
    its patience and ends with the kept weights of a run given 30 steps from the start."""
    settings = {"train.schedule": "plateau", "train.plateau_patience": 1, "train.patience": 5,
                "train.keep_last": 2, "train.best_metric": "chrf"}
    straight, extended = (prepare_run_dir(tmp_path / name) for name in ("straight", "extended"))
    Trainer(tiny_config(corpus, 30, **settings), straight, lambda e: None).run()
    Trainer(tiny_config(corpus, 12, **settings), extended, lambda e: None).run()
    assert [s for s, _, _ in validations(extended)] == [8, 12]
    resume(extended, {"train.max_steps": 30})
    rates = [lr for _, _, lr in step_rates(straight)]
    assert len(set(rates[8:])) > 1  # the plateau schedule lowered the rate
    assert step_rates(extended) == step_rates(straight)  # bitwise, rates included
    assert [v for v in validations(extended) if v[0] != 12] == validations(straight)
    assert same_weights(extended / "last.safetensors", straight / "last.safetensors")
    assert sorted(p.name for p in extended.glob("step-*")) == \
        sorted(p.name for p in straight.glob("step-*")) == ["step-000024.safetensors",
                                                           "step-000030.safetensors"]
    state = [checkpoint.load_train_state(run / checkpoint.TRAIN_STATE)["progress"]
             for run in (straight, extended)]
    assert state[0]["bad_validations"] == state[1]["bad_validations"]


def test_linear_schedule_reaches_zero_at_the_limit_and_resumes_exactly(corpus, tmp_path):
    config = tiny_config(corpus, 20, **{"train.schedule": "linear", "train.lr": 1e-3})
    whole = prepare_run_dir(tmp_path / "whole")
    Trainer(config, whole, lambda e: None).run()
    rates = [lr for _, _, lr in step_rates(whole)]  # each the rate its step's update took
    # warming up over 5 steps, until the line falling to 0 after step 20 is lower (0.8 after
    # 4 of 20 steps); the line came a step late under a step limit, not under --epochs
    assert rates[:6] == pytest.approx([2e-4, 4e-4, 6e-4, 8e-4, 8e-4, 7.5e-4])
    assert all(a > b for a, b in zip(rates[4:], rates[5:]))
    assert rates[-1] == pytest.approx(1e-3 / 20)  # the last: 1/20 of the budget left

    broken = prepare_run_dir(tmp_path / "broken")
    interrupted(config, broken, 9)
    resume(broken)
    assert step_rates(broken) == step_rates(whole)  # bitwise equal losses and rates


def test_subword_sampling_draws_each_epoch_anew_and_resumes_exactly(corpus, tmp_path):
    config = tiny_config(corpus, 24, **{"tokenizer.sampling_alpha": 0.2})
    whole = prepare_run_dir(tmp_path / "whole")
    trainer = Trainer(config, whole, lambda e: None)
    first, second, again = (trainer.corpus.for_epoch(100_003 + epoch) for epoch in (0, 1, 0))
    assert first.src != second.src and first.tgt != second.tgt and again.tgt == first.tgt
    best, spelled = trainer.corpus.best, trainer.corpus.tokenizer.decode_tgt
    assert first.src != best.src and spelled(first.tgt) == spelled(second.tgt) == spelled(best.tgt)
    # stopped two steps into the second epoch, however many batches the first one drew (19
    # here: a stop at a fixed step 20 hung on that count)
    first_epoch = len(trainer.epoch_batches(0))
    assert first_epoch + 2 < config.train.max_steps
    trainer.run()

    broken = prepare_run_dir(tmp_path / "broken")
    interrupted(config, broken, first_epoch + 2)
    progress = checkpoint.load_train_state(broken / checkpoint.TRAIN_STATE)["progress"]
    assert (progress["epoch"], progress["batch_in_epoch"]) == (1, 2)
    resume(broken)
    assert step_losses(broken) == step_losses(whole)  # the second epoch drawn the same again
    plain = prepare_run_dir(tmp_path / "plain")
    Trainer(tiny_config(corpus, 24), plain, lambda e: None).run()
    assert step_losses(plain) != step_losses(whole)


class Crash(Exception):
    """A stand-in for SIGKILL at a chosen moment."""


@pytest.mark.parametrize("killed_in", [checkpoint.BEST_WEIGHTS, checkpoint.EMA_WEIGHTS])
def test_a_crash_while_the_best_weights_are_written_leaves_none_of_another_step(
        corpus, tmp_path, monkeypatch, killed_in):
    """Killed while writing the best weights of step 16, the run resumes from step 8, whose
    state it had written last, and writes them again: every file ends as an unbroken run's.
    (The state used to be written first: the best weights stayed those of step 8 for good.)"""
    config = tiny_config(corpus, 24, **{"train.ema_decay": 0.9, "train.best_metric": "loss"})
    whole = prepare_run_dir(tmp_path / "whole")
    Trainer(config, whole, lambda e: None).run()
    real, writes = checkpoint.save_weights, []

    def killed_at_the_second(model, path):
        writes.append(path.name)
        if writes.count(killed_in) == 2:  # at step 16: the best at every validation (loss)
            raise Crash
        real(model, path)

    monkeypatch.setattr(checkpoint, "save_weights", killed_at_the_second)
    broken = prepare_run_dir(tmp_path / "broken")
    with pytest.raises(Crash):
        Trainer(config, broken, lambda e: None).run()
    monkeypatch.setattr(checkpoint, "save_weights", real)
    assert saved_step(broken) == 8
    resume(broken)
    for name in (checkpoint.BEST_WEIGHTS, checkpoint.LAST_WEIGHTS, checkpoint.EMA_WEIGHTS,
                 checkpoint.EMA_LAST_WEIGHTS):
        assert same_weights(broken / name, whole / name), name


def test_sampled_segmentations_keep_to_the_length_ratio(corpus, tmp_path):
    """A drawn segmentation over data.max_len_ratio falls back to the best one, as one over
    data.max_len does."""
    config = tiny_config(corpus, 1, **{"tokenizer.sampling_alpha": 0.5,
                                       "data.max_len_ratio": 1.5})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    assert trainer.corpus.best.uneven > 0  # the filter has pairs to drop
    for seed in range(3):
        drawn = trainer.corpus.for_epoch(seed)
        assert not any(uneven(s, t, 1.5) for s, t in zip(drawn.src, drawn.tgt))


def nmt(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nmt_cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def cli_args(corpus: Path, run_dir: Path, steps: int) -> list[str]:
    settings = [arg for key, value in TINY.items() for arg in ("--set", f"{key}={value}")]
    return ["train", "--data", str(corpus), "--run", str(run_dir), "--max-steps", str(steps),
            *settings]


def wait_for_steps(run_dir: Path, count: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if (run_dir / "metrics.jsonl").exists() and len(step_losses(run_dir)) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"training did not reach step {count}")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_saves_and_says_how_to_resume(corpus, tmp_path, signum, code):
    run_dir = tmp_path / "run"
    process = nmt(*cli_args(corpus, run_dir, 1000))
    wait_for_steps(run_dir, 3, process)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code
    assert stderr.strip().splitlines()[-1] == (
        f"interrupted at step {len(step_losses(run_dir))}; "
        f"resume with: nmt train --resume {run_dir}")
    assert "Traceback" not in stderr
    state = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
    assert state["progress"]["step"] == len(step_losses(run_dir))


INTERRUPTED_WHILE_LOADING = """
import sys
from importlib.abc import MetaPathFinder

class CtrlC(MetaPathFinder):  # Ctrl-C as the command's modules load
    def find_spec(self, name, path=None, target=None):
        if name == "nmt_cli.cli":
            raise KeyboardInterrupt

sys.meta_path.insert(0, CtrlC())
from nmt_cli.__main__ import main
main()
"""


def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback():
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_LOADING, "--help"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


def test_second_ctrl_c_stops_at_once_and_leaves_a_loadable_run(corpus, tmp_path):
    run_dir = tmp_path / "run"
    process = nmt(*cli_args(corpus, run_dir, 1000))
    wait_for_steps(run_dir, 3, process)
    process.send_signal(signal.SIGINT)
    time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr
    checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
    assert not list(run_dir.glob(".*.tmp"))


# Runs `nmt train ...` with a SIGTERM sent once the run's config and tokenizer are written,
# before its first state is saved (the moment a long corpus or tokenizer keeps open for minutes)
TERMINATED_IN_SET_UP = """
import os, signal, sys
from nmt_cli import checkpoint
from nmt_cli.cli import app
save_config = checkpoint.save_config
def save_then_terminate(*args, **kwargs):
    save_config(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
checkpoint.save_config = save_then_terminate
app(sys.argv[1:], prog_name="nmt")
"""


def test_sigterm_while_a_run_is_set_up_leaves_no_half_made_run(corpus, tmp_path):
    """Stopped before its first state is saved, a new run is removed, as after Ctrl-C (SIGTERM
    used to kill it where it stood, leaving a folder that could neither be resumed nor
    reused); a folder left so anyway (by SIGKILL) is named as such by --run and --resume."""
    run_dir = tmp_path / "run"
    stopped = subprocess.run([sys.executable, "-c", TERMINATED_IN_SET_UP,
                              *cli_args(corpus, run_dir, 5)], capture_output=True, text=True,
                             timeout=120)
    assert stopped.returncode == 130 and stopped.stderr.strip().endswith("interrupted")
    assert "Traceback" not in stopped.stderr and not run_dir.exists()
    run_dir.mkdir()  # what SIGKILL leaves at that moment
    (run_dir / checkpoint.CONFIG_FILE).write_text("{}")
    for args in (["train", "--run", str(run_dir)], ["train", "--resume", str(run_dir)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1 and "stopped before its first step was saved" in \
            result.output and f"rm -r {run_dir}" in result.output, result.output
    other = CliRunner().invoke(app, ["train", "--resume", str(run_dir), "--run",
                                     str(tmp_path / "other")])
    assert other.exit_code == 1 and "use --finetune" in other.output, other.output


def test_a_run_directory_is_trained_by_one_run_at_a_time(corpus, reference, tmp_path):
    """A second training into a folder wrote its log and weights among the first one's (a
    second `nmt train --run` resumed a live run; a second new run overwrote the first's);
    and a run that failed to start in a folder given empty left its config and tokenizer
    there, so that the folder was refused next time."""
    given = tmp_path / "given"
    given.mkdir()
    with pytest.raises(UserError, match="none.vec"):
        train(tiny_config(corpus, 5, **{"model.src_embeddings": str(tmp_path / "none.vec")}),
              given)
    assert list(given.iterdir()) == []
    run_dir = shutil.copytree(reference, tmp_path / "run")
    unsaved = tmp_path / "unsaved"  # a run setting up: not "delete it", as for a dead one
    unsaved.mkdir()
    shutil.copy(run_dir / checkpoint.CONFIG_FILE, unsaved)
    for folder, start in ((given, lambda: train(tiny_config(corpus, 5), given)),
                          (run_dir, lambda: resume(run_dir, {"train.max_steps": 40})),
                          (unsaved, lambda: resume(unsaved))):
        before = {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}
        with checkpoint.claimed(folder, main=True):  # as a training in another process does
            with pytest.raises(UserError, match="another `nmt train` is training this run"):
                start()
        assert {path.name: path.read_bytes() for path in folder.iterdir()
                if path.is_file()} == before
    assert train(tiny_config(corpus, 5), given) == given  # once the other has ended


def test_a_fine_tuning_run_can_be_resumed_from_before_its_first_validation(corpus, reference,
                                                                          tmp_path,
                                                                          monkeypatch):
    """A fine-tuning run validates its parent's weights first, which takes as long as any
    validation: it saves its state before, so that a kill there leaves a run to resume."""
    config = tiny_config(corpus, 2, **{"train.finetune_from": str(reference)})

    def killed(self):
        raise KeyboardInterrupt  # as if the process died here

    monkeypatch.setattr(Trainer, "validate_and_save", killed)
    run_dir = prepare_run_dir(tmp_path / "child")
    with pytest.raises(KeyboardInterrupt):
        Trainer(config, run_dir, lambda e: None).run()
    assert saved_step(run_dir) == 0
    monkeypatch.undo()
    resume(run_dir)
    assert [step for step, _, _ in validations(run_dir)] == [0, 2]


def test_a_run_whose_corpus_moved_resumes_from_its_new_place(corpus, tmp_path):
    before, after = tmp_path / "corpus", tmp_path / "moved"
    shutil.copytree(corpus, before)
    run_dir = prepare_run_dir(tmp_path / "run")
    Trainer(tiny_config(before, 2), run_dir, lambda e: None).run()
    before.rename(after)
    with pytest.raises(UserError, match="no such directory"):
        resume(run_dir, {"train.max_steps": 3})
    events = []
    resume(run_dir, {"train.max_steps": 3, "data.data_dir": str(after)}, events.append)
    assert [e["step"] for e in events if e["kind"] == "step"] == [3]
    assert any(f"now read from {after}" in e.get("message", "") for e in events)
    assert checkpoint.read_config(run_dir)[0].data.data_dir == str(after)


def test_a_resumed_run_refuses_other_pairs_than_it_began_with(corpus, tmp_path):
    """Its config.json records the pairs it began with; resumed on a corpus whose training or
    validation pairs differ, it would not go on as it began. The same text, gzipped in
    another folder, is the same pairs."""
    run_dir = prepare_run_dir(tmp_path / "run")
    Trainer(tiny_config(corpus, 1), run_dir, lambda e: None).run()
    recorded = checkpoint.corpus_record(run_dir)
    assert recorded["train"]["pairs"] == 300 and recorded["val"]["pairs"] == 20

    def resumed_on(name: str, change) -> Path:
        folder = tmp_path / name
        shutil.copytree(corpus, folder)
        change(folder)
        resume(run_dir, {"train.max_steps": 2, "data.data_dir": str(folder)})
        return folder

    def edit(file: str, edit_lines):
        def change(folder: Path):
            lines = (folder / file).read_text().splitlines()
            (folder / file).write_text("".join(f"{line}\n" for line in edit_lines(lines)))
        return change

    for name, change, message in (
            ("word", edit("train.de", lambda lines: [lines[0] + " x", *lines[1:]]),
             "train pairs are not those this run began with \\(as many, but others\\)"),
            ("fewer", lambda folder: [edit(f"train.{lang}", lambda lines: lines[1:])(folder)
                                      for lang in ("en", "de")],
             "train pairs are not those this run began with \\(300 pairs then, 299 now\\)"),
            ("val", edit("val.en", lambda lines: lines[::-1]),
             "val pairs are not those this run began with")):
        with pytest.raises(UserError, match=f"{tmp_path / name}: its .*{message}.*: resume it "
                                            f"on those, or .* \\(--finetune {run_dir}\\)"):
            resumed_on(name, change)
    assert saved_step(run_dir) == 1

    def gzipped(folder: Path):
        for lang in ("en", "de"):
            text = (folder / f"train.{lang}").read_bytes()
            (folder / f"train.{lang}").unlink()
            (folder / f"train.{lang}.gz").write_bytes(gzip.compress(text))
    resumed_on("gzipped", gzipped)
    assert saved_step(run_dir) == 2
    assert checkpoint.corpus_record(run_dir) == recorded
    description = json.loads((run_dir / "config.json").read_text())
    description["corpus"]["train"]["pairs"] = "many"
    (run_dir / "config.json").write_text(json.dumps(description))
    with pytest.raises(UserError, match='config.json: "corpus" must hold a record'):
        resume(run_dir, {"train.max_steps": 3})


@pytest.mark.parametrize("moment", ["while the file is written", "once its temporary file exists"])
def test_a_second_ctrl_c_during_a_write_stops_once_the_file_is_whole(tmp_path, monkeypatch,
                                                                      moment):
    """The second Ctrl-C is held until the file being written is whole, then stops at once:
    the new file is in place and no temporary file is left (wherever the signal lands)."""
    target, ctrl_c = tmp_path / "state.bin", lambda: signal.raise_signal(signal.SIGINT)
    if moment == "once its temporary file exists":
        make_temporary = tempfile.mkstemp

        def mkstemp(**names):
            made = make_temporary(**names)
            ctrl_c()
            return made
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

    def write(tmp: str) -> None:
        if moment == "while the file is written":
            ctrl_c()
        Path(tmp).write_bytes(b"whole")

    with stop_signals() as received:
        ctrl_c()
        assert received == [signal.SIGINT]  # the first one: stop after the current step
        with pytest.raises(KeyboardInterrupt):
            files.atomic_write(target, write)
        monkeypatch.undo()  # the next write, with no signal, is not held up
        files.atomic_write(tmp_path / "next.bin", lambda tmp: Path(tmp).write_bytes(b"next"))
    assert target.read_bytes() == b"whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.bin", "state.bin"]


def test_an_atomic_write_onto_a_link_or_a_pipe_leaves_it_in_place(tmp_path):
    """An output named by a link replaces the file it names; one that is no regular file
    (here a pipe, as `-o /dev/null` is a device) is written as it is, never renamed over."""
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old\n")
    link.symlink_to(real)
    files.atomic_write_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    pipe, got = tmp_path / "pipe", queue.Queue()
    os.mkfifo(pipe)
    threading.Thread(target=lambda: got.put(pipe.read_text()), daemon=True).start()
    files.atomic_write_text(pipe, "through\n")
    assert stat.S_ISFIFO(pipe.lstat().st_mode) and got.get(timeout=60) == "through\n"


def saved_step(run_dir: Path) -> int:
    path = run_dir / checkpoint.TRAIN_STATE
    return checkpoint.load_train_state(path)["progress"]["step"] if path.exists() else -1


def wait_for_checkpoint(run_dir: Path, after_step: int, process: subprocess.Popen) -> None:
    """Return once the process has saved a training state beyond `after_step` (or ended)."""
    path, seen = run_dir / checkpoint.TRAIN_STATE, None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        stamp = path.stat().st_mtime_ns if path.exists() else None
        if stamp != seen:  # a new file: read its step
            seen = stamp
            if saved_step(run_dir) > after_step:
                return
        time.sleep(0.01)


@pytest.mark.slow
def test_run_survives_sigkill_at_random_moments(corpus, tmp_path):
    """Kill a real training process 20 times at random moments while it trains and saves
    (a checkpoint every 2 steps), resume each time: the result equals an unbroken run."""
    steps, settings = 200, {"train.validate_every": 2}
    reference = prepare_run_dir(tmp_path / "reference")
    Trainer(tiny_config(corpus, steps, **settings), reference, lambda e: None).run()
    rng = random.Random(1234)
    run_dir, kills, checkpoints = tmp_path / "run", 0, set()
    args = cli_args(corpus, run_dir, steps) + ["--set", "train.validate_every=2"]
    for _ in range(20):
        resumed_at = saved_step(run_dir)
        process = nmt(*args)
        # Past a new checkpoint first (one every 2 steps), however slow the machine, so that
        # the kills land all along the run; then at a random moment, mid-step or mid-save.
        wait_for_checkpoint(run_dir, resumed_at, process)
        time.sleep(rng.uniform(0.0, 0.25))
        if process.poll() is not None:  # finished before the kill
            break
        process.kill()
        process.wait()
        kills += 1
        # Whatever the moment, what is on disk loads.
        state = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
        checkpoints.add(state["progress"]["step"])
        checkpoint.read_config(run_dir)
        checkpoint.truncate_metrics(run_dir, state["progress"]["step"])
    final = nmt(*args)
    assert final.wait(timeout=120) == 0, final.stderr.read()
    assert kills == 20
    assert len(checkpoints) >= 10, checkpoints  # kills landed all along the run
    assert step_losses(run_dir) == step_losses(reference)
    assert same_weights(run_dir / "last.safetensors", reference / "last.safetensors")
    assert not list(run_dir.glob(".*.tmp"))


class RunsCode:
    """Unpickling this would create a file: a stand-in for an attacker's payload."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_training_state_that_would_run_code_is_refused(corpus, reference, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    marker = tmp_path / "pwned"
    torch.save({"progress": RunsCode(marker)}, run_dir / checkpoint.TRAIN_STATE)
    result = CliRunner().invoke(app, ["train", "--resume", str(run_dir)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "not a valid training state" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["random bytes", "truncated"])
def test_damaged_files_are_one_line_errors(reference, tmp_path, damage):
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    for name in (checkpoint.TRAIN_STATE, checkpoint.BEST_WEIGHTS):
        path = run_dir / name
        data = path.read_bytes()
        path.write_bytes(os.urandom(2000) if damage == "random bytes" else data[: len(data) // 2])
    for command in (["train", "--resume", str(run_dir)],
                    ["translate", "--run", str(run_dir), "hi"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_damaged_log_or_progress_is_a_one_line_error(reference, tmp_path):
    """metrics.jsonl: a line that is not UTF-8 or not JSON is passed over, as one cut short by
    a crash is; a record with a field of the wrong type names its line, for every command that
    reads the log. A saved progress of the wrong type stops a resume with one line too, and so
    does a state of the wrong shape, naming the part it lacks."""
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    log = run_dir / "metrics.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join([lines[0], b"\xff\xfe\n", b'{"kind": "st\n', *lines[1:]]))
    assert len(checkpoint.metrics_records(log)) == len(lines)
    validation = next(i for i, line in enumerate(lines) if b'"validate"' in line)
    record = json.loads(lines[validation])
    for key, value in (("val_bleu", "abc"), ("step", [8]), ("step", 8.0), ("kind", 1)):
        log.write_text(b"".join(lines).decode() + json.dumps({**record, key: value}) + "\n")
        with pytest.raises(UserError, match=rf"metrics.jsonl:{len(lines) + 1}: '{key}' is "):
            checkpoint.metrics_records(log)
    for command in (["plot", str(run_dir), "--json"], ["train", "--resume", str(run_dir)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), command
        assert result.stderr.strip().splitlines()[-1] == (  # after the data report, resuming
            f"error: {log}:{len(lines) + 1}: 'kind' is 1, not what training writes there")
    log.write_bytes(b"".join(lines))
    state = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
    state["progress"]["step"] = "8"
    checkpoint.save_train_state(run_dir / checkpoint.TRAIN_STATE, state)
    result = CliRunner().invoke(app, ["train", "--resume", str(run_dir)])
    assert result.exit_code == 1 and "does not match this run" in result.stderr
    for other, lacking in (({"x": 1}, "progress"), ([1, 2], "progress"),
                           ({"progress": state["progress"], "model": {}}, "rng")):
        torch.save(other, run_dir / checkpoint.TRAIN_STATE)  # plain data, not a state
        result = CliRunner().invoke(app, ["train", "--resume", str(run_dir)])
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
        assert result.stderr == (f"error: {run_dir / checkpoint.TRAIN_STATE}: not a valid "
                                 f"training state (it has no '{lacking}')\n")


def test_nan_steps_are_skipped_then_training_stops(corpus, tmp_path):
    config = tiny_config(corpus, 40, **{"train.max_bad_steps": 3})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    features = trainer.model.features
    poisoned = {6, 10, 11, 12}  # training forwards: one bad step alone, then three in a row
    calls = []

    def sometimes_nan(*args):
        out = features(*args)
        if not trainer.model.training:  # validation
            return out
        calls.append(1)
        return out * float("nan") if len(calls) in poisoned else out

    trainer.model.features = sometimes_nan
    before = {}

    def snapshot(event):
        if event["kind"] == "step" and event["step"] == 8:
            before.update({k: v.clone() for k, v in trainer.model.state_dict().items()})

    trainer.emit = snapshot
    with pytest.raises(UserError, match="3 steps in a row with a NaN/inf"):
        trainer.run()
    assert trainer.progress.step == 8 and trainer.progress.skipped_steps == 4
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    saved = checkpoint.load_train_state(trainer.run_dir / checkpoint.TRAIN_STATE)
    assert saved["progress"]["step"] == 8
    records = [json.loads(line) for line in (trainer.run_dir / "metrics.jsonl").open()]
    assert [r["step"] for r in records if r["kind"] == "skipped"] == [5, 8, 8, 8]


@contextmanager
def file_size_limit(size: int):
    """Files written inside grow to `size` bytes at most: past it the kernel refuses the write
    (EFBIG), as a full disk does (ENOSPC)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the process is killed
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_failed_save_is_reported_and_the_previous_checkpoint_kept(corpus, tmp_path,
                                                                  monkeypatch):
    """The kernel refusing the writes from step 16 on (safetensors' and torch's own writers
    raised errors of other kinds than OSError there: a traceback ended the run)."""
    events = []
    trainer = Trainer(tiny_config(corpus, 16), prepare_run_dir(tmp_path / "run"), events.append)
    real_write = files._write_and_replace
    saved = {}

    def disk_full(path, write):
        with file_size_limit(1024) if trainer.progress.step >= 16 else nullcontext():
            real_write(path, write)

    def remember(event):
        events.append(event)
        if event["kind"] == "step" and event["step"] == 9:
            saved.update({p.name: p.read_bytes() for p in trainer.run_dir.iterdir()
                          if p.suffix in (".pt", ".safetensors")})

    monkeypatch.setattr(files, "_write_and_replace", disk_full)
    trainer.emit = remember
    trainer.run()
    warnings = [e["message"] for e in events if e["kind"] == "warning"]
    assert warnings and "could not save a checkpoint (File too large)" in warnings[0]
    assert "previous one is kept" in warnings[0]
    for name, data in saved.items():
        assert (trainer.run_dir / name).read_bytes() == data, name
    # the first save failing: nothing to resume from, which the warning claimed there was
    monkeypatch.setattr(files, "_write_and_replace", real_write)
    first = Trainer(tiny_config(corpus, 4), prepare_run_dir(tmp_path / "first"), events.append)

    def full(path, write):
        with file_size_limit(1024):
            real_write(path, write)

    monkeypatch.setattr(files, "_write_and_replace", full)
    with pytest.raises(UserError, match="could not save the run's first checkpoint"):
        first.run()


def test_a_run_saved_when_only_bleu_ranked_validations_resumes(corpus, reference, tmp_path):
    """Training states written before train.best_metric keep the best BLEU as best_bleu."""
    run_dir = prepare_run_dir(tmp_path / "run")
    interrupted(tiny_config(corpus, 30), run_dir, 11)
    path = run_dir / checkpoint.TRAIN_STATE
    state = checkpoint.load_train_state(path)
    state["progress"]["best_bleu"] = state["progress"].pop("best_score")
    checkpoint.save_train_state(path, state)
    resume(run_dir)
    assert validations(run_dir) == validations(reference)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").open()]
    flags = [(r["step"], r["best"]) for r in records if r["kind"] == "validate"]
    assert flags == [(r["step"], r["best"]) for r in map(json.loads, (
        reference / "metrics.jsonl").open()) if r["kind"] == "validate"]
