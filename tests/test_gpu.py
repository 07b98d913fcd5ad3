"""The GPU fast path: run only where CUDA is present."""

import math

import pytest
import torch

from nmt_cli import preset
from nmt_cli.config import apply_overrides
from nmt_cli.training import Trainer, prepare_run_dir

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(),
    reason="no CUDA GPU here: bf16/fp16 autocast on CUDA, fused AdamW, TF32 and "
           "torch.compile on a GPU need one")


@pytest.mark.parametrize(("precision", "compiled"),
                         [("bf16", False), ("fp16", False), ("bf16", True)])
def test_cuda_training_steps_lower_the_loss(small_corpus, tmp_path, precision, compiled):
    config = apply_overrides(preset("transformer"), {
        "data.data_dir": str(small_corpus), "tokenizer.vocab_size": 300, "train.device": "cuda",
        "train.precision": precision, "train.compile": compiled, "model.dropout": 0.0})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    assert trainer.optimizer.defaults["fused"]
    assert torch.backends.cuda.matmul.allow_tf32
    assert (trainer.scaler is not None) == (precision == "fp16")
    batch = trainer.epoch_batches(0)[0]
    losses = [trainer.train_step([batch])[0] for _ in range(8)]
    assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]
