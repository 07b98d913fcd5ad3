"""Data-parallel training under torchrun: 2 CPU processes (gloo) against a single process."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from safetensors.torch import load_file

from conftest import read_sample, write_corpus

ENTRY = Path(__file__).resolve().parent / "distributed_entry.py"
STEPS = 6
SETTINGS = {"model.d_model": 32, "model.num_heads": 4, "model.num_encoder_layers": 1,
            "model.num_decoder_layers": 1, "model.d_ff": 64, "model.dropout": 0.0,
            "tokenizer.vocab_size": 300, "train.batch_tokens": 700, "train.warmup_steps": 3,
            "train.validate_every": 4, "train.ema_decay": 0.9, "train.keep_last": 1}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 300), read_sample("train", "de", 300)),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})


def train_args(corpus: Path, run_dir: Path, steps: int = STEPS) -> list[str]:
    settings = [arg for key, value in SETTINGS.items() for arg in ("--set", f"{key}={value}")]
    return ["train", "--data", str(corpus), "--run-dir", str(run_dir), "--max-steps",
            str(steps), "--device", "cpu", *settings]


def torchrun(args: list[str], timeout: float = 120, **env) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc_per_node=2", str(ENTRY), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "OMP_NUM_THREADS": "1", **env})


@pytest.fixture(scope="module")
def single(corpus, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("single") / "run"
    # One process taking two batches per update sees what two processes see together.
    subprocess.run([sys.executable, "-m", "nmt_cli", *train_args(corpus, run_dir), "--accum", "2"],
                   check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return run_dir


@pytest.fixture(scope="module")
def pair(corpus, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    run_dir = tmp_path_factory.mktemp("pair") / "run"
    result = torchrun(train_args(corpus, run_dir), GUARD_WRITES=str(run_dir))
    assert result.returncode == 0, f"torchrun and its workers said:\n{result.stderr}"
    return run_dir, result


def records(run_dir: Path, kind: str) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def test_two_processes_learn_what_one_process_learns_on_the_same_batches(single, pair):
    run_dir, _ = pair
    for name in ("last.safetensors", "ema-last.safetensors", "step-000006.safetensors"):
        one, two = load_file(single / name), load_file(run_dir / name)
        assert one.keys() == two.keys()
        worst = max((one[k] - two[k]).abs().max().item() for k in one)
        assert worst < 1e-5, name
    assert records(single, "step")[0]["step"] == 1
    losses = [(r["step"], r["loss"]) for r in records(single, "step")]
    pair_losses = [(r["step"], r["loss"]) for r in records(run_dir, "step")]
    assert [s for s, _ in pair_losses] == [s for s, _ in losses] == list(range(1, STEPS + 1))
    assert all(abs(a - b) < 1e-4 for (_, a), (_, b) in zip(losses, pair_losses))


def test_only_rank_0_writes_the_run_directory(single, pair):
    run_dir, result = pair  # rank 1 ran with every write to the run directory forbidden
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(p.name for p in single.iterdir())
    assert len(records(run_dir, "validate")) == len(records(single, "validate")) == 2
    assert result.stdout.strip() == str(run_dir)  # printed by rank 0 alone
    assert result.stderr.count("done after") == 1


def test_resuming_with_another_number_of_processes(corpus, pair, tmp_path):
    """It goes on, saying that its updates are now of another size; and ranks that would
    resume from other states (a machine with a stale copy of the run) stop at once."""
    run_dir, _ = pair
    resumed, stale = tmp_path / "run", tmp_path / "stale"
    for copy in (resumed, stale):
        subprocess.run(["cp", "-r", str(run_dir), str(copy)], check=True)
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "train", "--resume", str(resumed),
                             "--max-steps", str(STEPS + 2)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["step"] for r in records(resumed, "step")] == list(range(1, STEPS + 3))
    assert ("an update took 2 batches (2 processes x train.accum 1) and now takes 1 (1 x 1): "
            "the run goes on otherwise than it would have; --set train.accum=2 keeps them at 2"
            in " ".join(result.stderr.split()))
    result = torchrun(["train", "--resume", str(resumed), "--max-steps", str(STEPS + 4)],
                      timeout=90, RANK_1_READS=f"{resumed}={stale}")
    assert result.returncode != 0
    assert (f"error: {resumed}: rank 1 resumes from step {STEPS}, rank 0 from step {STEPS + 2}; "
            "training on several machines needs the run directory on a filesystem all share"
            in result.stderr.replace(str(stale), str(resumed)))
    assert [r["step"] for r in records(resumed, "step")] == list(range(1, STEPS + 3))


def test_ranks_that_read_other_corpora_stop_at_once(corpus, tmp_path):
    """On machines with their own copies of the corpus, one that differs would give its rank
    other batches: trained on, the ranks waited on each other until the collective timeout."""
    other = write_corpus(tmp_path / "other", {
        "train": (read_sample("train", "en", 200), read_sample("train", "de", 200)),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})
    result = torchrun(train_args(corpus, tmp_path / "run", steps=50), timeout=90,
                      RANK_1_READS=f"{corpus}={other}")
    assert result.returncode != 0
    assert (f"error: {corpus}: rank 1 reads other train pairs than rank 0 (300 pairs at rank 0, "
            "200 at rank 1): every machine must hold the same corpus" in result.stderr)


def test_a_failure_on_rank_1_ends_both_processes(corpus, tmp_path):
    started = time.monotonic()
    result = torchrun(train_args(corpus, tmp_path / "run", steps=50), timeout=90,
                      FAIL_AT_STEP="3")
    assert result.returncode != 0
    assert "rank 1 failed on purpose" in result.stdout + result.stderr
    assert time.monotonic() - started < 60


def test_ranks_given_other_settings_or_runs_stop_at_once(corpus, pair, tmp_path):
    """Each machine decides from its own options and files: ranks given another --max-steps,
    or a rank that saw no run to resume where rank 0 saw one, waited on each other at
    different collectives until the 30-minute timeout."""
    result = torchrun(train_args(corpus, tmp_path / "run", steps=9), timeout=90,
                      RANK_1_READS="9=10")
    assert result.returncode != 0
    assert ("error: rank 1 trains with train.max_steps=10, rank 0 with 9: every process must "
            "be given the same settings") in result.stderr, result.stderr[-2000:]
    stopped, elsewhere = tmp_path / "stopped", tmp_path / "elsewhere"
    subprocess.run(["cp", "-r", str(pair[0]), str(stopped)], check=True)
    result = torchrun(["train", "--run-dir", str(stopped), "--max-steps", str(STEPS + 2)],
                      timeout=90, RANK_1_READS=f"{stopped}={elsewhere}")
    assert result.returncode != 0
    assert ("error: rank 1 starts a new run, rank 0 resumes a run; training on several "
            "machines needs the run directory on a filesystem all share") in result.stderr
    assert not elsewhere.exists()
