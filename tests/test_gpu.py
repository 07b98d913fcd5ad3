"""The GPU fast path: run only where CUDA is present (bench/gpu_check.sh runs them there)."""

import math

import pytest
import torch

from nmt_cli import DecodeConfig, Translator, preset
from nmt_cli.checkpoint import LAST_WEIGHTS, load_train_state
from nmt_cli.config import apply_overrides
from nmt_cli.training import Trainer, prepare_run_dir, resume

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA GPU here: bf16/fp16 autocast on CUDA, fused AdamW, TF32 and "
           "torch.compile on a GPU need one")


def cuda_config(corpus, arch: str = "transformer", **changes):
    return apply_overrides(preset(arch), {
        "data.data_dir": str(corpus), "tokenizer.vocab_size": 300, "train.device": "cuda",
        "model.dropout": 0.0, **changes})


@pytest.mark.parametrize(("precision", "compiled"),
                         [("bf16", False), ("fp16", False), ("bf16", True)])
def test_cuda_training_steps_lower_the_loss(small_corpus, tmp_path, precision, compiled):
    config = cuda_config(small_corpus, **{"train.precision": precision,
                                          "train.compile": compiled})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    assert trainer.optimizer.defaults["fused"]
    assert torch.get_float32_matmul_precision() == "high"  # TF32 matrix products
    assert (trainer.scaler is not None) == (precision == "fp16")
    batch = trainer.epoch_batches(0)[0]
    losses = [trainer.train_step([batch])[0] for _ in range(12)]
    finite = [loss for loss in losses if math.isfinite(loss)]
    # fp16 may skip its first steps while GradScaler lowers its initial scale of 2^16
    assert len(finite) >= (8 if precision == "fp16" else 12)
    assert finite[-1] < finite[0]


def test_compiled_training_runs_batches_of_every_length_on_one_graph(small_corpus, tmp_path):
    """Lengths padded to multiples of 8 (models.ALIGNMENT): whether a batch's longest source
    and longest target are multiples of 8 or not, it runs the graph of the first batch."""
    from torch._dynamo.utils import counters

    config = cuda_config(small_corpus, **{"train.precision": "bf16", "train.compile": True})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    assert trainer.model.length_multiple == 8
    trainer.epoch_batches(0)
    data = trainer.batches.data
    kinds = {}  # (source aligned, target aligned): pairs whose lengths with <eos> are of that kind
    for i, (src, tgt) in enumerate(zip(data.src, data.tgt)):
        kinds.setdefault(((len(src) + 1) % 8 == 0, (len(tgt) + 1) % 8 == 0), []).append(i)
    # every pair of a batch of one kind is of that kind, so its longest source and target are
    batches = {kind: [indices[k:k + 4] for k in range(0, 12, 4)] for kind, indices in kinds.items()}
    assert len(batches) == 4 and all(len(runs[-1]) == 4 for runs in batches.values())
    for indices in batches[False, False][:2]:  # forward and backward compiled
        trainer.train_step([indices])
    graphs = counters["stats"]["unique_graphs"]
    for kind in [(True, True), (True, False), (False, True), (False, False)]:
        batch = trainer.batches.get(batches[kind][-1])
        assert batch.src.size(1) % 8 == 0 and batch.tgt_in.size(1) % 8 == 0
        trainer.train_step([batches[kind][-1]])
    assert counters["stats"]["unique_graphs"] == graphs


@pytest.mark.parametrize("attention", ["additive", "dot"])
def test_gru_trains_and_decodes_under_autocast(small_corpus, tmp_path, attention):
    config = cuda_config(small_corpus, "gru", **{"model.attention": attention,
                                                 "train.precision": "bf16",
                                                 "train.max_steps": 6, "train.validate_every": 3})
    run_dir = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None).run()
    translator = Translator.from_run(run_dir, "cuda", LAST_WEIGHTS)
    for beam in (1, 3):
        out = translator.translate(["A man is riding a bike.", ""], DecodeConfig(beam=beam))
        assert len(out) == 2 and out[1] == ""
        forced = translator.translate(["A man is riding a bike.", "A dog."],  # target prefixes
                                      DecodeConfig(beam=beam), prefixes=["Ein Mann", ""])
        assert forced[0].startswith("Ein Mann") and len(forced) == 2


def test_transformer_validates_saves_and_resumes(small_corpus, tmp_path):
    config = cuda_config(small_corpus, **{"train.max_steps": 8, "train.validate_every": 4,
                                          "train.precision": "fp32"})
    reference = Trainer(config, prepare_run_dir(tmp_path / "reference"), lambda e: None).run()
    stopped = apply_overrides(config, {"train.max_steps": 4})
    run_dir = Trainer(stopped, prepare_run_dir(tmp_path / "run"), lambda e: None).run()
    resume(run_dir, {"train.max_steps": 8})
    a = load_train_state(reference / "train_state.pt")["model"]
    b = load_train_state(run_dir / "train_state.pt")["model"]
    # CUDA's atomic adds (embedding and index_copy backward) are not bitwise reproducible
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)
    translator = Translator.from_run(run_dir, "cuda")
    assert translator.translate(["Hello."], DecodeConfig(beam=5))[0] is not None


def test_nan_steps_are_skipped_on_cuda(small_corpus, tmp_path):
    config = cuda_config(small_corpus, **{"train.max_steps": 6})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    features = trainer.model.features
    calls = []

    def poisoned(*args):
        calls.append(1)
        out = features(*args)
        return out * float("nan") if len(calls) == 2 and trainer.model.training else out

    trainer.model.features = poisoned
    trainer.run()
    assert trainer.progress.step == 6 and trainer.progress.skipped_steps == 1
