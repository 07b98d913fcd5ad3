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


@pytest.mark.parametrize("arch", ["gru", "transformer"])
def test_weights_save_once_each_and_load_back_when_they_share_memory(tmp_path, arch):
    from safetensors import safe_open

    from nmt_cli.checkpoint import load_weights, save_weights
    from nmt_cli.config import ModelConfig
    from nmt_cli.models import build_model

    config = ModelConfig(arch=arch, d_model=16, d_ff=32, num_encoder_layers=1,
                         num_decoder_layers=1, num_heads=2)
    torch.manual_seed(0)
    model = build_model(config, 50, 50, True)
    # as cuDNN keeps an RNN's weights on a GPU: every tensor a view into one flat buffer
    names = [name for name, _ in model.named_parameters() if "rnn" in name]
    if arch == "gru":
        flat = torch.cat([model.get_parameter(n).detach().reshape(-1) for n in names])
        offset = 0
        for name in names:
            parameter = model.get_parameter(name)
            parameter.data = flat[offset:offset + parameter.numel()].view_as(parameter)
            offset += parameter.numel()
    save_weights(model, tmp_path / "w.safetensors")
    with safe_open(tmp_path / "w.safetensors", "pt") as f:
        saved = set(f.keys())
    state = model.state_dict()
    tied = {n for n in state if n.endswith("weight") and n not in saved}
    assert all(state[n].data_ptr() in {state[s].data_ptr() for s in saved} for n in tied)
    assert len(saved) == len({(t.data_ptr(), t.shape) for t in state.values()})
    fresh = build_model(config, 50, 50, True)
    load_weights(fresh, tmp_path / "w.safetensors")
    assert all(torch.equal(fresh.state_dict()[n], t) for n, t in state.items())
