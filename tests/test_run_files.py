"""A trained run as others use it: file modes, the evaluation API, decoding settings."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch

from nmt_cli import DecodeConfig, Translator, UserError, evaluate, evaluate_run, resolve_config
from nmt_cli.training import Trainer, prepare_run_dir

from conftest import read_sample


@pytest.fixture(scope="module")
def run_under_umask(small_corpus, tmp_path_factory) -> Path:
    """A 4-step run written while the umask is 027 (group may read, others nothing)."""
    config = resolve_config("transformer", settings=[
        "model.d_model=32", "model.d_ff=64", "model.num_encoder_layers=1",
        "model.num_decoder_layers=1", "tokenizer.vocab_size=300", "train.validate_every=2",
        "train.max_steps=4"], options={"data.data_dir": str(small_corpus)})
    previous = os.umask(0o027)
    try:
        run_dir = prepare_run_dir(tmp_path_factory.mktemp("umask") / "run")
        return Trainer(config, run_dir, lambda event: None).run()
    finally:
        os.umask(previous)


def test_every_file_of_a_run_honours_the_umask(run_under_umask):
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in run_under_umask.rglob("*")
             if p.is_file()}
    assert {"model.safetensors", "last.safetensors", "train_state.pt", "config.json",
            "spm.model", "metrics.jsonl", "step-000002.txt"} <= modes.keys()
    assert set(modes.values()) == {0o640}, modes


def test_evaluate_run_scores_the_test_split_of_the_runs_corpus(run_under_umask):
    result = evaluate_run(run_under_umask, decode=DecodeConfig(beam=1), metrics=("bleu", "chrf"))
    sources, references = read_sample("test", "en", 60), read_sample("test", "de", 60)
    hypotheses = Translator.from_run(run_under_umask, "cpu").translate(
        sources, DecodeConfig(beam=1))
    expected = evaluate(hypotheses, references, ("bleu", "chrf"))
    assert result.sentences == 60 and result.references.endswith("test.de")
    assert [s.score for s in result.scores] == [s.score for s in expected]


def test_decode_config_device_is_not_ignored(run_under_umask):
    translator = Translator.from_run(run_under_umask, "cpu")
    assert translator.translate(["Hello."], DecodeConfig(beam=1, device="cpu"))
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="no CUDA device"):
            translator.translate(["Hello."], DecodeConfig(beam=1, device="cuda"))
