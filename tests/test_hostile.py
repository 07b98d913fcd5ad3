"""Hostile input: odd corpora train or fail cleanly; any text translates line for line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nmt_cli import Translator
from nmt_cli.config import DecodeConfig, apply_overrides, preset
from nmt_cli.training import Trainer, prepare_run_dir

from conftest import read_sample, write_corpus

TINY = {"model.d_model": 32, "model.d_ff": 64, "model.num_encoder_layers": 1,
        "model.num_decoder_layers": 1, "tokenizer.vocab_size": 250,
        "train.batch_tokens": 600, "train.validate_every": 10, "train.max_steps": 10}
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def tiny_config(corpus: Path):
    return apply_overrides(preset("transformer"), {**TINY, "data.data_dir": str(corpus)})


def test_hostile_corpus_lines(tmp_path):
    src, tgt = read_sample("train", "en", 200), read_sample("train", "de", 200)
    src[0], tgt[0] = "\ufeffByte order mark first.", "Zuerst eine Byte-Order-Markierung."
    src[1], tgt[1] = "NUL\x00inside", "NUL\x00drin"
    src[2], tgt[2] = "long " * 200_000, "lang " * 200_000  # a 1 MB line
    src[3], tgt[3] = "", "Leere Quelle."
    corpus = write_corpus(tmp_path / "corpus", {
        "train": (src, tgt), "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})
    crlf = corpus / "train.de"
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))
    events = []
    Trainer(tiny_config(corpus), prepare_run_dir(tmp_path / "run"), events.append).run()
    messages = [e.get("message", "") for e in events]
    assert any("198 pairs kept, 1 with an empty side skipped, 1 longer than 100 tokens dropped"
               in m for m in messages), messages
    assert events[-1]["kind"] == "done"


@pytest.fixture(scope="module")
def translator(tmp_path_factory) -> Translator:
    corpus = write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 200), read_sample("train", "de", 200)),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})
    run = prepare_run_dir(tmp_path_factory.mktemp("runs") / "run")
    Trainer(tiny_config(corpus), run, lambda e: None).run()
    return Translator.from_run(run, "cpu")


def test_hostile_translation_input(translator):
    warnings = []
    translator.warn = warnings.append
    lines = ["", "   \t  ", "word " * 10_000, "这是一个测试 ☃ ∑ ᚠᛇᚻ", "Hello!"]
    out = translator.translate(lines, DecodeConfig(beam=2, max_len_b=5))
    assert len(out) == 5 and out[0] == "" and out[1] == ""
    assert all("\n" not in line for line in out)
    assert len(warnings) == 1 and re.fullmatch(
        r"an input of [\d,]+ tokens, 'word word word word word word \.\.\.', was cut to the "
        r"model's 1,023", warnings[0])


def test_cli_translates_hostile_stdin_line_for_line(translator):
    text = "\n".join(["", "  ", "word " * 10_000, "ᚠᛇᚻ", "Hi\r"]) + "\n"
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "translate", "--run",
                             str(translator.run.path), "--beam", "1"], input=text.encode(),
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.decode().split("\n")) == 6  # five lines and the final newline
    assert b"warning:" in result.stderr and b"Traceback" not in result.stderr


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",),
                                      blacklist_characters=LINE_BREAKS), max_size=30),
                max_size=6))
def test_any_text_gives_one_line_per_line(translator, lines):
    out = translator.translate(lines, DecodeConfig(beam=1, max_len_a=1.0, max_len_b=3))
    assert len(out) == len(lines)
    assert all(not set(line) & set(LINE_BREAKS) for line in out)
    assert all(o == "" for o, i in zip(out, lines) if not i.strip())
