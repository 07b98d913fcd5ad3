"""The benchmark scripts run, on small data (smoke tests: no timing is checked)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, read_sample


@pytest.fixture(scope="module")
def multi30k_layout(tmp_path_factory) -> Path:
    """The sample corpus under Multi30k's file names, as the benchmarks read it."""
    folder = tmp_path_factory.mktemp("multi30k")
    for split, name, count in (("train", "train", 600), ("val", "val", 40),
                               ("test", "test_2016_flickr", 40)):
        for lang in ("en", "de"):
            text = "".join(f"{line}\n" for line in read_sample(split, lang, count))
            (folder / f"{name}.{lang}.gz").write_bytes(gzip.compress(text.encode()))
    return folder


@pytest.mark.slow
def test_gpu_benchmark_runs_end_to_end_on_a_cpu(multi30k_layout, tmp_path):
    out = tmp_path / "gpu.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.gpu", "--device", "cpu", "--steps", "2", "--sentences",
         "16", "--preset", "transformer", "--vocab", "300", "--data", str(multi30k_layout),
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| transformer, bf16 |" in result.stdout and "greedy" in result.stdout
    figures = json.loads(out.read_text())
    assert figures["train"]["transformer, bf16"]["tokens_per_s"] > 0
    assert figures["decode"]["greedy"] > 0 and figures["decode"]["beam5"] > 0
