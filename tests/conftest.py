"""Shared fixtures: tiny models and small slices of real text."""

from __future__ import annotations

import dataclasses
import os
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


def pytest_configure(config) -> None:
    """In a worker of pytest-xdist (`make test` starts one a core), compute on one thread, as do
    the processes its tests start, so that the workers do not contend for each other's cores."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


def tiny_model(arch: str = "transformer", vocab: int = 50, **changes) -> torch.nn.Module:
    """A small untrained model in eval mode, seeded."""
    torch.manual_seed(0)
    config = dataclasses.replace(TINY, arch=arch, **changes)
    return build_model(config, vocab, vocab, joint_vocab=True).eval()


def same_up_to_rounding(a, b, rel: float = 1e-5) -> bool:
    """Whether `a` and `b` (translations, JSON objects: dataclasses, dicts, lists, strings,
    numbers, tensors) are equal but for floats within `rel` of each other: what decoding a line
    alone and in a batch give. Products over a batch of another shape may add in another order
    (oneDNN picks kernels by shape and CPU), which moves scores in their last bits."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and same_up_to_rounding(vars(a), vars(b), rel)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, rtol=rel, atol=1e-6)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_up_to_rounding(a[k], b[k], rel) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_up_to_rounding(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=rel)
    return a == b


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
