"""train.tensorboard: the training log as TensorBoard event files, read back with TensorBoard."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nmt_cli.cli import app
from nmt_cli.config import apply_overrides, preset
from nmt_cli.pictures import read_png
from nmt_cli.training import Trainer, prepare_run_dir, resume

from conftest import read_sample, write_corpus

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402
from tensorboard.util.tensor_util import make_ndarray  # noqa: E402

TINY = {"model.d_model": 32, "model.d_ff": 64, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "tokenizer.vocab_size": 250, "train.batch_tokens": 600,
        "train.warmup_steps": 5, "train.validate_every": 8, "train.max_steps": 16,
        "train.attention_plots": 1}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 200), read_sample("train", "de", 200)),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})


def config(corpus: Path, tensorboard: bool = True):
    return apply_overrides(preset("transformer"), {**TINY, "data.data_dir": str(corpus),
                                                   "train.tensorboard": tensorboard})


def scalars(run_dir: Path) -> list[tuple[str, int, float]]:
    """Every scalar in the run's event files, as (tag, step, value), in the order written."""
    found = []
    for path in sorted((run_dir / "tensorboard").glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "scalars":
                    found.append((value.tag, event.step, make_ndarray(value.tensor).item()))
    return found


def images(run_dir: Path) -> list[tuple[str, int, int, int]]:
    """Every image in the run's event files, as (tag, step, width, height) (the loader gives
    an image as the strings width, height, PNG)."""
    return [(value.tag, event.step, *map(int, value.tensor.string_val[:2]))
            for path in sorted((run_dir / "tensorboard").glob("events.out.tfevents.*"))
            for event in EventFileLoader(str(path)).Load() for value in event.summary.value
            if value.metadata.plugin_data.plugin_name == "images"]


def logged(run_dir: Path) -> list[tuple[str, int, float]]:
    """What metrics.jsonl holds, as the scalars the log should have."""
    section = {"step": "train", "validate": "valid", "skipped": "train"}
    expected = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        record = json.loads(line)
        for key, value in record.items():
            if key not in ("kind", "step") and type(value) in (int, float):
                expected.append((f"{section[record['kind']]}/{key}", record["step"], value))
    return expected


def same(found, expected) -> bool:
    """The same scalars, tag by tag in order; values to float32 precision."""
    return len(found) == len(expected) and all(
        (tag, step) == (tag2, step2) and value == pytest.approx(value2, rel=1e-6, abs=1e-30)
        for (tag, step, value), (tag2, step2, value2) in zip(found, expected, strict=True))


@pytest.fixture(scope="module")
def whole(corpus, tmp_path_factory) -> Path:
    run_dir = prepare_run_dir(tmp_path_factory.mktemp("whole") / "run")
    Trainer(config(corpus), run_dir, lambda event: None).run()
    return run_dir


def test_the_log_holds_every_number_of_metrics_jsonl(whole):
    found = scalars(whole)
    assert same(found, logged(whole))
    tags = Counter(tag for tag, _, _ in found)
    assert tags["train/loss"] == tags["train/lr"] == tags["train/tokens_per_s"] == 16
    assert tags["valid/val_bleu"] == tags["valid/val_loss"] == 2  # steps 8 and 16
    pictures = [read_png(whole / "attention" / f"step-{step:06d}-1.png") for step in (8, 16)]
    assert images(whole) == [("attention/1", step, p.shape[1], p.shape[0])
                             for step, p in zip((8, 16), pictures)]


class Crash(Exception):
    pass


@pytest.mark.parametrize("on_before", [True, False])
def test_a_resumed_run_logs_each_step_once(corpus, whole, tmp_path, on_before):
    """A crash at step 11 leaves steps 9-11 logged past the state saved at step 8: after the
    resume, each step is in the log once, as in a run never stopped. A run trained without the
    log and resumed with it logs its earlier steps too."""

    def crash(event):
        if event["kind"] == "step" and event["step"] == 11:
            raise Crash

    run_dir = prepare_run_dir(tmp_path / "run")
    with pytest.raises(Crash):
        Trainer(config(corpus, on_before), run_dir, crash).run()
    if on_before:  # the log went past the saved step
        assert max(step for _, step, _ in scalars(run_dir)) == 11
    resume(run_dir, {"train.tensorboard": True})
    found = scalars(run_dir)
    assert Counter((tag, step) for tag, step, _ in found).most_common(1)[0][1] == 1
    assert same(found, logged(run_dir))
    assert [(t, s) for t, s, _ in found] == [(t, s) for t, s, _ in scalars(whole)]
    assert images(run_dir) == images(whole)  # the attention pictures, once each


def test_without_tensorboard_one_line_says_how_to_install(corpus, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # its import fails
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "--data", str(corpus), "--run", str(run_dir),
                                      "--max-steps", "1", "--tensorboard"])
    assert result.exit_code == 1, result.output
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    assert 'pip install "nmt-cli[tensorboard]"' in message
    assert not run_dir.exists()
