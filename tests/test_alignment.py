"""Word alignment from attention (alignment.py): pieces to words, the hard links read from a
table of weights, and `--alignment` through the Python API and the command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error
from test_nbest import SETTINGS, train_tiny_run

from nmt_cli.alignment import ALIGNMENT_LAYER, hard_links, pharaoh, word_positions
from nmt_cli.config import DecodeConfig
from nmt_cli.translate import Translator

from conftest import read_sample, write_corpus

E = "\u2581"  # the mark that opens a piece starting a word


def test_a_piece_that_opens_with_the_mark_starts_a_word():
    pieces = [f"{E}A", f"{E}group", f"{E}load", "ing", f"{E}cott", "on", ".", "<eos>"]
    assert word_positions(pieces) == [0, 1, 2, 2, 3, 3, 3, None]
    assert word_positions(["Ein", f"{E}Mann"]) == [0, 1]  # a first piece without the mark
    assert word_positions([f"{E}", "stellen", f"{E}Eis", "<0xC3>", "<0xA4>"]) == [0, 0, 1, 1, 1]
    # A language tag is no word of the text; a line that opened with it counts it as word 0.
    assert word_positions(["<2de>", f"{E}A", f"{E}man", "<eos>"]) == [None, 0, 1, None]
    assert word_positions(["<2de>", "A", f"{E}man", "<eos>"], first=1) == [None, 1, 2, None]


def test_each_target_piece_links_the_source_piece_it_attends_to_most():
    # Columns: <2de>, "▁A", "▁man", "s", <eos>; rows: "▁Ein", "▁Mann", "er", <eos>.
    source = word_positions(["<2de>", f"{E}A", f"{E}man", "s", "<eos>"])
    target = word_positions([f"{E}Ein", f"{E}Mann", "er", "<eos>"])
    weights = torch.tensor([[0.9, 0.06, 0.02, 0.01, 0.01],  # the tag is passed over: "▁A"
                            [0.0, 0.10, 0.20, 0.30, 0.40],  # <eos> too: "s", of word 1
                            [0.0, 0.50, 0.30, 0.10, 0.10],  # "er" (word 1) to "▁A"
                            [0.0, 1.00, 0.00, 0.00, 0.00]])  # <eos> links nothing
    links = hard_links(weights, source, target)
    assert links == [(0, 0), (0, 1), (1, 1)]
    assert pharaoh(links) == "0-0 0-1 1-1"
    assert hard_links(weights, [None] * 5, target) == []  # a source of no text


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("alignment"))


LINES = ["A man rides a horse.", "", "Two dogs play in the snow ."]


def check_links(links: list[tuple[int, int]], source: str, translation: str) -> None:
    """Links within both sentences' words, every word of the translation linked."""
    assert all(0 <= s < len(source.split()) for s, _ in links)
    assert {t for _, t in links} == set(range(len(translation.split())))


def test_every_word_of_each_hypothesis_is_linked_to_a_word_of_its_line(tiny_run):
    translator = Translator.from_run(tiny_run, "cpu")
    config = DecodeConfig(beam=3, max_len_b=6)
    found = translator.translate_nbest(LINES, config, 2, alignment=True)
    assert found[1][0].alignment == []  # a blank line
    for line, hypotheses in zip(LINES, found):
        for h in hypotheses:
            check_links(h.alignment, line, h.text)
    plain = translator.translate_nbest(LINES, config, 2)
    assert all(h.alignment is None for hyps in plain for h in hyps)
    assert [[h.text for h in hyps] for hyps in plain] == [[h.text for h in hyps]
                                                           for hyps in found]
    prefixed = translator.translate_nbest(LINES[:1], config, 1, prefixes=["Ein Mann"],
                                          alignment=True)[0][0]
    check_links(prefixed.alignment, LINES[0], prefixed.text)  # the prefix's words too


def test_translate_alignment_in_every_format(tiny_run, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    common = ["--run", str(tiny_run), "-i", str(source), "--beam", "2", "--max-len-b", "6",
              "--alignment"]
    translator = Translator.from_run(tiny_run, "cpu")
    found = translator.translate_nbest(LINES, DecodeConfig(beam=2, max_len_b=6), 2,
                                       alignment=True)
    result = invoke("translate", *common)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"{hyps[0].text} ||| {pharaoh(hyps[0].alignment)}"
                                          for hyps in found]
    result = invoke("translate", *common, "--format", "tsv", "--nbest", "2")
    assert result.exit_code == 0, result.output
    rows = [row.split("\t") for row in result.stdout.splitlines()]
    assert [row[5] for row in rows] == [pharaoh(h.alignment) for hyps in found for h in hyps]
    result = invoke("translate", *common, "--format", "jsonl", "--nbest", "2", "--attention")
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [[h["alignment"] for h in o["hypotheses"]] for o in objects] == [
        [[list(link) for link in h.alignment] for h in hyps] for hyps in found]
    assert all("attention" in h for h in objects[0]["hypotheses"])


def test_alignment_needs_one_model_that_attends(tiny_run, tmp_path):
    result = invoke("translate", "--run", str(tiny_run), "--ensemble", str(tiny_run),
                    "--alignment", "A man.")
    one_line_error(result, "--alignment: each model of an ensemble attends in its own way")
    corpus = write_corpus(tmp_path / "corpus", {
        "train": (read_sample("train", "en", 100), read_sample("train", "de", 100)),
        "val": (read_sample("val", "en", 5), read_sample("val", "de", 5))})
    result = invoke("train", "--data", str(corpus), "--run", str(tmp_path / "gru"), "--arch",
                    "gru", "--max-steps", "1", "--batch-tokens", "512", *SETTINGS,
                    "--set", "model.attention=none")
    assert result.exit_code == 0, result.output
    result = invoke("translate", "--run", str(tmp_path / "gru"), "--alignment", "A man.")
    one_line_error(result, "--alignment: this GRU has no attention (model.attention = none)")


def test_the_layer_read_is_the_one_measured_best():
    assert ALIGNMENT_LAYER == -2  # bench/alignment.py: the second-to-last layer


MIRROR = os.environ.get("NMT_MULTI30K_MIRROR", "")


def test_the_hand_made_alignments_score_as_alignment_error_rate_defines():
    from bench.alignment import monotone, read_gold, scores

    gold = read_gold()
    assert len(gold) == 30 and min(gold) == 11 and all(gold.values())
    assert scores(list(gold.values()), list(gold.values()))["aer"] == 0.0
    half = [set(sorted(links)[: len(links) // 2]) for links in gold.values()]
    found = sum(map(len, half))
    sure = sum(map(len, gold.values()))
    assert scores(half, list(gold.values())) == {
        "precision": 100.0, "recall": round(100 * found / sure, 1),
        "aer": round(100 * (1 - 2 * found / (found + sure)), 1)}
    assert monotone("a b c d", "x y") == {(0, 0), (2, 1)}
    assert monotone("a b", "w x y z") == {(0, 0), (0, 1), (1, 2), (1, 3)}


@pytest.mark.skipif(not (MIRROR and Path(MIRROR).is_dir()),
                    reason="set NMT_MULTI30K_MIRROR to a folder with the Multi30k files")
def test_the_hand_made_alignments_name_words_of_their_sentences():
    import gzip

    from bench.alignment import read_gold

    lines = {lang: gzip.open(Path(MIRROR) / f"val.{lang}.gz", "rt", encoding="utf-8").read()
             .splitlines() for lang in ("en", "de")}
    for number, links in read_gold().items():
        english, german = lines["en"][number - 1].split(), lines["de"][number - 1].split()
        assert all(s < len(english) and t < len(german) for s, t in links), number
