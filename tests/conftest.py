"""Shared fixtures: tiny models and small slices of real text."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from nmt_cli.config import ModelConfig
from nmt_cli.data import sample_corpus
from nmt_cli.models import build_model

ROOT = Path(__file__).resolve().parent.parent
# Float32 products through oneDNN (nmt_cli.devices.onednn_float32) need a torch built with it.
NEEDS_ONEDNN = pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                  reason="torch built without oneDNN")
WITH_AND_WITHOUT_ONEDNN = [False, pytest.param(True, marks=NEEDS_ONEDNN)]
SAMPLE = sample_corpus()  # nmt_cli/sample/, the corpus that ships in the package

TINY = ModelConfig(d_model=32, num_heads=4, num_encoder_layers=2, num_decoder_layers=2,
                   d_ff=64, dropout=0.0)


def tiny_model(arch: str = "transformer", vocab: int = 50, **changes) -> torch.nn.Module:
    """A small untrained model in eval mode, seeded."""
    torch.manual_seed(0)
    config = dataclasses.replace(TINY, arch=arch, **changes)
    return build_model(config, vocab, vocab, joint_vocab=True).eval()


def random_tokens(batch: int, length: int, vocab: int = 50, seed: int = 0) -> torch.Tensor:
    """Token ids in [4, vocab): never a special token. (batch, length)"""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(4, vocab, (batch, length), generator=generator)


def write_corpus(directory: Path, pairs: dict[str, tuple[list[str], list[str]]]) -> Path:
    """Write {split: (src_lines, tgt_lines)} as SPLIT.en / SPLIT.de files."""
    directory.mkdir(parents=True, exist_ok=True)
    for split, (src, tgt) in pairs.items():
        (directory / f"{split}.en").write_text("".join(f"{s}\n" for s in src), encoding="utf-8")
        (directory / f"{split}.de").write_text("".join(f"{t}\n" for t in tgt), encoding="utf-8")
    return directory


def read_sample(split: str, lang: str, limit: int | None = None) -> list[str]:
    lines = (SAMPLE / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
    return lines[:limit]


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> Path:
    """800 training pairs of the sample corpus, 60 validation and 60 test pairs."""
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 800), read_sample("train", "de", 800)),
        "val": (read_sample("val", "en", 60), read_sample("val", "de", 60)),
        "test": (read_sample("test", "en", 60), read_sample("test", "de", 60)),
    })
