"""Forced decoding (`nmt score`): the log-probability of given translations."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from nmt_cli import preset
from nmt_cli.checkpoint import load_run
from nmt_cli.cli import app
from nmt_cli.config import apply_overrides
from nmt_cli.data import source_tensor
from nmt_cli.ensemble import Ensemble
from nmt_cli.scoring import score_pairs
from nmt_cli.search import forbid_special_tokens
from nmt_cli.special_tokens import EOS_ID, SOS_ID
from nmt_cli.training import Trainer, prepare_run_dir

from conftest import read_sample, tiny_model

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def run_dir(small_corpus, tmp_path_factory):
    config = apply_overrides(preset("transformer"), {
        "data.data_dir": str(small_corpus), "model.d_model": 32, "model.d_ff": 64,
        "tokenizer.vocab_size": 300, "train.batch_tokens": 1024, "train.max_steps": 20,
        "train.validate_every": 20})
    run_dir = prepare_run_dir(tmp_path_factory.mktemp("runs") / "scored")
    Trainer(config, run_dir, lambda event: None).run()
    return run_dir


def stepwise_log_prob(model, src_ids: list[int], tgt_ids: list[int]) -> float:
    """log P(target | source) one decoder step at a time, as search computes it."""
    with torch.inference_mode():
        state, token, total = model.start(source_tensor([src_ids])), torch.tensor([SOS_ID]), 0.0
        for t in [*tgt_ids, EOS_ID]:
            logits, state = model.decode_step(token, state)
            total += torch.log_softmax(forbid_special_tokens(logits).float(), -1)[0, t].item()
            token = torch.tensor([t])
    return total


@pytest.mark.parametrize("arch", ["transformer", "gru", "ensemble"])
def test_scores_are_the_log_probabilities_that_step_by_step_decoding_gives(run_dir, arch):
    run = load_run(run_dir, CPU)
    gru = tiny_model("gru", run.tokenizer.tgt_vocab_size)  # untrained, the run's vocabulary
    if arch != "transformer":  # the ensemble: the mean of the two models' distributions
        run = dataclasses.replace(run, model=gru if arch == "gru" else Ensemble([run.model, gru]))
    src, tgt = read_sample("test", "en", 12), read_sample("test", "de", 12)
    tgt[3] = ""  # an empty translation scores its <eos> alone
    scores = score_pairs(run, CPU, src, tgt, batch_size=5)  # batches of mixed lengths
    for s, t, score in zip(src, tgt, scores):
        tgt_ids = run.tokenizer.encode_tgt([t])[0] if t else []
        assert score.tokens == run.tokenizer.tgt.id_to_piece(tgt_ids + [EOS_ID])
        expected = stepwise_log_prob(run.model, run.tokenizer.encode_src([s])[0], tgt_ids)
        assert score.log_prob == pytest.approx(expected, rel=1e-4, abs=1e-4)
        assert score.per_token == pytest.approx(score.log_prob / len(score.tokens))
    assert len(scores[3].tokens) == 1 and scores[3].log_prob < 0


def test_score_command(run_dir, tmp_path):
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_text("A man.\nTwo dogs run.\nHello\n", encoding="utf-8")
    tgt.write_text("Ein Mann.\n\n" + "Hallo " * 1100 + "\n", encoding="utf-8")
    runner, args = CliRunner(), ["score", "--run", str(run_dir), "--src", str(src),
                                 "--tgt", str(tgt)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    totals = result.stdout.splitlines()
    assert len(totals) == 3 and totals[2] == "nan"  # too long for the model's positions
    assert all(float(v) < 0 for v in totals[:2])
    assert "not scored" in result.stderr
    result = runner.invoke(app, [*args, "--normalize", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3] and rows[1]["tokens"] == ["<eos>"]
    assert rows[2]["score"] is None and rows[0]["target"] == "Ein Mann."
    for row, total in zip(rows[:2], totals):
        assert math.fsum(row["token_log_probs"]) == pytest.approx(float(total), abs=1e-3)
        assert row["score"] == pytest.approx(float(total) / len(row["tokens"]), abs=1e-4)
    tgt.write_text("Ein Mann.\n", encoding="utf-8")
    kept = tmp_path / "kept.txt"
    kept.write_text("earlier scores\n", encoding="utf-8")
    result = runner.invoke(app, [*args, "-o", str(kept)])
    assert result.exit_code == 1 and "line counts differ" in result.stderr
    assert f"{tgt} has 1 line, " in result.stderr and result.stderr.rstrip().endswith(" more")
    assert len(result.stderr.strip().splitlines()) == 1
    assert kept.read_text(encoding="utf-8") == "earlier scores\n"  # written whole or not at all


def test_an_output_file_that_is_an_input_is_refused_untouched(run_dir, tmp_path):
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_text("A man.\n", encoding="utf-8")
    tgt.write_text("Ein Mann.\n", encoding="utf-8")
    (tmp_path / "link.de").symlink_to(tgt)
    runs = (["score", "--src", str(src), "--tgt", str(tgt), "-o", str(tmp_path / "link.de")],
            ["score", "--src", str(src), "--tgt", str(tgt), "-o", str(src)],
            ["translate", "-i", str(src), "-o", str(src)])
    for args in runs:
        result = CliRunner().invoke(app, [*args, "--run", str(run_dir)])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith("error: -o ") and "also the input" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert src.read_text() == "A man.\n" and tgt.read_text() == "Ein Mann.\n"
    with open(src, "rb") as stdin:  # `nmt translate -o src.en < src.en`
        done = subprocess.run([sys.executable, "-m", "nmt_cli", "translate", "--run",
                               str(run_dir), "-o", str(src)], stdin=stdin, capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 1 and "it is also the input stdin" in done.stderr, done.stderr
    assert src.read_text() == "A man.\n"
    done = subprocess.run([sys.executable, "-m", "nmt_cli", "translate", "--run", str(run_dir),
                           "-o", os.devnull], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=300)  # not a file: it may be both
    assert done.returncode == 0 and done.stderr == "", done.stderr
    done = subprocess.run([sys.executable, "-m", "nmt_cli", "translate", "--run", str(run_dir),
                           "-o", str(tmp_path / "out.de")], preexec_fn=lambda: os.close(0),
                          capture_output=True, text=True, timeout=300)  # `<&-`: no stdin at all
    assert done.returncode == 1 and done.stderr == "error: stdin is closed: give TEXT or -i FILE\n"
    done = subprocess.run([sys.executable, "-m", "nmt_cli", "translate", "--run", str(run_dir),
                           "Hello."], preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE,
                          text=True, timeout=300)  # `>&-`: a traceback
    assert done.returncode == 1 and done.stderr == "error: stdout is closed: give -o FILE\n"
