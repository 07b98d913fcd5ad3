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


@pytest.mark.slow
def test_serve_benchmark_runs_end_to_end(multi30k_layout, small_corpus, tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    run = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "nmt_cli", "train", "--data", str(small_corpus),
                    "--run", str(run), "--max-steps", "2", "--set", "model.d_model=32",
                    "--set", "model.d_ff=64", "--set", "tokenizer.vocab_size=300"],
                   check=True, capture_output=True, timeout=300)
    out = tmp_path / "serve.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.serve", "--run", str(run), "--clients", "3",
         "--sentences", "12", "--alone", "4", "--beams", "1", "--data", str(multi30k_layout),
         "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| beam 1 |" in result.stdout and "3 clients" in result.stdout
    figures = json.loads(out.read_text())["results"]["beam 1"]
    assert figures["clients"]["sentences"] == 12 and figures["ratio"] > 0


@pytest.mark.slow
def test_ctranslate2_benchmark_runs_end_to_end(multi30k_layout, tmp_path):
    pytest.importorskip("ctranslate2")
    run = tmp_path / "run"
    nmt_train = [sys.executable, "-m", "nmt_cli", "train", "--data", str(multi30k_layout),
                 "--run", str(run), "--max-steps", "3", "--set", "model.d_model=32",
                 "--set", "model.d_ff=64", "--set", "tokenizer.vocab_size=300"]
    assert subprocess.run(nmt_train, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    out = tmp_path / "ct2.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench.ct2", "--run", str(run), "--data", str(multi30k_layout),
         "--quick", "--repeats", "1", "--out", str(tmp_path / "exports"), "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| ctranslate2 float32 |" in result.stdout
    figures = json.loads(out.read_text())["results"]
    assert set(figures) == {"nmt torch", "ctranslate2 float32", "ctranslate2 int8"}
    for search in ("greedy", "beam5"):
        assert figures["ctranslate2 float32"][search]["sentences"] == 40
        assert figures["ctranslate2 float32"][search]["same_as_nmt"] >= 39
