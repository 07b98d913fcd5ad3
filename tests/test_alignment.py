"""Word alignment from attention (alignment.py): pieces to words, the hard links read from a
table of weights, and `--alignment` through the Python API and the command line."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error
from test_nbest import SETTINGS, train_tiny_run

from nmt_cli.alignment import (
    ATTENTION_CELLS,
    attention_batches,
    copy_unknown,
    hard_links,
    hypothesis_attention,
    pharaoh,
    piece_links,
    source_positions,
    surfaces,
    text_positions,
    unknown_words,
    word_alignments,
)
from nmt_cli.config import DecodeConfig, TokenizerConfig
from nmt_cli.guided_alignment import ALIGNMENT_LAYER
from nmt_cli.special_tokens import UNK_ID
from nmt_cli.tokenizer import Tokenizer
from nmt_cli.translate import Translation, Translator, term_words, with_unknown_copied

from conftest import read_sample, write_corpus

E = "\u2581"  # the mark that opens a piece starting a word


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    """A small tokenizer of the sample corpus, with byte pieces for characters it lacks."""
    return Tokenizer.train(read_sample("train", "en", 300), read_sample("train", "de", 300),
                           TokenizerConfig(vocab_size=500, byte_fallback=True,
                                           character_coverage=0.995),
                           tmp_path_factory.mktemp("tokenizer"))


def test_each_piece_falls_in_a_word_of_the_decoded_text(tokenizer):
    sp = tokenizer.tgt
    ids = sp.piece_to_id
    assert text_positions(sp, ids([f"{E}Ein", f"{E}", "M", f"{E}Mann"])) == [0, 1, 1, 2]
    assert text_positions(sp, ids([f"{E}Ein", f"{E}"])) == [0, None]  # "Ein ": one word
    assert text_positions(sp, ids([f"{E}", f"{E}Ein"])) == [0, 0]  # "Ein"
    # <unk> is decoded " ⁇ ", a word of its own even inside one
    assert text_positions(sp, [*ids([f"{E}Ein"]), UNK_ID, *ids(["M", f"{E}Mann"])]) == [0, 1, 2, 3]
    umlaut = sp.encode("☃")  # a character the vocabulary lacks: its bytes
    assert len(umlaut) > 2 and all(sp.is_byte(i) for i in umlaut[1:])
    assert text_positions(sp, [*ids([f"{E}Ein"]), *umlaut]) == [0] + [1] * len(umlaut)
    # Any ids at all: every word of the text gets pieces, in order.
    rng = random.Random(0)
    vocabulary = [i for i in range(sp.get_piece_size()) if not sp.is_control(i)]
    for _ in range(1000):
        ids = rng.choices(vocabulary, k=rng.randint(0, 12))
        words = sp.decode(ids).split()
        positions = text_positions(sp, ids)
        found = [p for p in positions if p is not None]
        assert found == sorted(found) and set(found) == set(range(len(words))), ids
        spelt = "".join(surfaces(sp, ids)).split()  # invalid UTF-8: how many "\ufffd" aside
        assert [w.replace("\ufffd", "") for w in spelt] == [w.replace("\ufffd", "") for w in words]


def test_source_words_are_the_lines_own(tokenizer):
    def positions(line: str) -> list:
        return source_positions(tokenizer, line, tokenizer.encode_src([line])[0])

    def each_word(*words: str) -> list:
        return [k for k, word in enumerate(words) for _ in tokenizer.src.encode(word)]

    assert positions("  Two  dogs. ") == each_word("Two", "dogs.")
    # A zero-width space splits a word into two words' pieces, but is no space to str.split
    assert positions("A\u200bman rides") == each_word("A\u200bman", "rides")
    assert len(tokenizer.src.encode("A\u200bman")) > len(tokenizer.src.encode("Aman"))
    # A model of one language has no tags: "<2de>" is text, the line's word 0.
    assert positions("<2de> A man") == each_word("<2de>", "A", "man")
    line = "A man rides a horse"
    ids = tokenizer.encode_src([line])[0]
    whole = each_word(*line.split())
    assert source_positions(tokenizer, line, ids[:-3]) == whole[:-3]  # a source cut short


def test_each_source_piece_links_the_target_piece_attending_to_it_most():
    # Columns: a tag, "▁A", "▁man", "s", <eos>; rows: "▁Ein", "▁Mann", "er", "▁geht", <eos>.
    source, target = [None, 0, 1, 1], [0, 1, 1, 2]
    weights = torch.tensor([[0.90, 0.05, 0.03, 0.01, 0.01],  # the tag is passed over
                            [0.00, 0.10, 0.60, 0.20, 0.10],
                            [0.00, 0.10, 0.50, 0.20, 0.20],
                            [0.00, 0.35, 0.25, 0.30, 0.10],
                            [0.00, 0.00, 0.00, 0.00, 1.00]])  # <eos> is passed over too
    # Columns' best rows: "▁A" row 3 (word 0 -> word 2, which row 3's best, "▁A", confirms);
    # "▁man" row 1 (1 -> 1, confirmed by row 1); "s" row 3 (1 -> 2, which no row confirms:
    # dropped, as word 1 has a confirmed link). "▁Ein" is linked to nothing.
    assert piece_links(weights, source, target) == [(1, 2), (3, 1)]
    links = hard_links(weights, source, target)
    assert links == [(0, 2), (1, 1)]
    assert pharaoh(links) == "0-2 1-1"
    assert hard_links(weights, [None] * 4, target) == []  # a source of no text
    # Row 1 alone has a word: every column's best. Its own best ("▁man") confirms word 1's
    # links; word 0 has no confirmed link, so it keeps its one.
    assert hard_links(weights, source, [None, 0, None, None]) == [(0, 0), (1, 0)]


def test_long_pairs_are_read_fewer_at_a_time():
    short, long = [5] * 10, [5] * 600
    assert list(attention_batches([short] * 5, [short] * 5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(attention_batches([long] * 5, [long] * 5, 64)) == [
        (0, 2), (2, 4), (4, 5)]  # 601 x 601 x 3 pairs is over ATTENTION_CELLS
    assert 2 * 601 * 601 <= ATTENTION_CELLS < 3 * 601 * 601
    assert list(attention_batches([long * 3], [long * 3], 64)) == [(0, 1)]  # one, whatever


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("alignment"))


LINES = ["A man rides a horse.", "", "Two dogs play in the snow ."]


def check_links(links: list[tuple[int, int]], source: str, translation: str) -> None:
    """Links within both sentences' words, every word of the line linked (when the
    translation has any)."""
    assert all(0 <= t < len(translation.split()) for _, t in links)
    assert {s for s, _ in links} == (set(range(len(source.split()))) if translation.split()
                                     else set())


def test_every_word_of_each_line_is_linked_to_a_word_of_each_hypothesis(tiny_run):
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
    both = translator.translate_nbest(LINES, config, 2, attention=True, alignment=True)
    attended = translator.translate_nbest(LINES, config, 2, attention=True)
    assert [[h.alignment for h in hyps] for hyps in both] == [[h.alignment for h in hyps]
                                                               for hyps in found]
    assert [[h.attention for h in hyps] for hyps in both] == [[h.attention for h in hyps]
                                                               for hyps in attended]
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


def test_score_aligns_a_given_translation_as_translate_aligned_it(tiny_run, tmp_path):
    translator = Translator.from_run(tiny_run, "cpu")
    found = translator.translate_nbest(LINES, DecodeConfig(beam=2, max_len_b=6), 2,
                                       alignment=True)
    # the translator's hypotheses, real pairs of different lengths, a blank target
    sources = [line for line, hyps in zip(LINES, found) for _ in hyps] + read_sample(
        "val", "en", 6) + ["A man."]
    targets = [h.text for hyps in found for h in hyps] + read_sample("val", "de", 6) + [""]
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.de"
    src.write_text("".join(f"{line}\n" for line in sources), encoding="utf-8")
    tgt.write_text("".join(f"{line}\n" for line in targets), encoding="utf-8")
    common = ["--run", str(tiny_run), "--src", str(src), "--tgt", str(tgt), "--batch-size", "4"]
    result = invoke("score", *common, "--alignment")
    assert result.exit_code == 0, result.output
    rows = [row.split(" ||| ") for row in result.stdout.splitlines()]
    assert [score for score, _ in rows] == invoke("score", *common).stdout.splitlines()
    tokenizer, model = translator.run.tokenizer, translator.run.model
    for (_, links), source, target in zip(rows, sources, targets):  # read one pair at a time
        src_ids = translator.encode([source], DecodeConfig())[0]
        tgt_ids = tokenizer.encode_tgt([target])[0] if target else []
        weights = hypothesis_attention(model, [src_ids], [tgt_ids], translator.device,
                                       ALIGNMENT_LAYER)
        assert links == pharaoh(word_alignments(tokenizer, source, src_ids, [tgt_ids],
                                                weights, [target])[0])
        check_links([tuple(map(int, link.split("-"))) for link in links.split()], source, target)
    hypotheses = [h for hyps in found for h in hyps]
    for (_, links), h in zip(rows, hypotheses):  # a text that splits into the same pieces
        if tokenizer.tgt.id_to_piece(tokenizer.encode_tgt([h.text])[0]) == h.tokens:
            assert links == pharaoh(h.alignment)
    objects = [json.loads(line) for line in
               invoke("score", *common, "--alignment", "--format", "jsonl").stdout.splitlines()]
    assert [" ".join(f"{s}-{t}" for s, t in o["alignment"]) for o in objects] == [
        links for _, links in rows]


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
    (tmp_path / "s.en").write_text("A man.\n")
    result = invoke("score", "--run", str(tiny_run), "--ensemble", str(tiny_run), "--src",
                    str(tmp_path / "s.en"), "--tgt", str(tmp_path / "s.en"), "--alignment")
    one_line_error(result, "--alignment: each model of an ensemble attends in its own way")


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


def test_the_alignment_bench_scores_every_decoder_layer_of_a_run(tmp_path):
    from bench.alignment import READINGS, layer_rows, markdown

    run = train_tiny_run(tmp_path)  # one decoder layer
    sources, targets = read_sample("val", "en", 3), read_sample("val", "de", 3)
    gold = [{(j, j) for j in range(min(len(s.split()), len(t.split())))}
            for s, t in zip(sources, targets)]
    rows = layer_rows(run, sources, targets, gold)
    assert [(r["layer"], r["reading"]) for r in rows] == [("1 of 1", reading)
                                                         for reading in READINGS]
    assert all(0 <= r[key] <= 100 for r in rows for key in ("aer", "precision", "recall"))
    assert markdown(rows).count("\n") == 4


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


def test_words_the_vocabulary_cannot_spell_are_copied_in_place_of_their_words():
    line = "Ольга rides a horse ."
    text, links = copy_unknown(line, "Ein Klikaner reitet ein Pferd .",
                               [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], [0])
    assert text == "Ольга reitet ein Pferd ."  # the words made up for it go
    assert links == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    # two unknown words on one word of the translation: both copied there, in order
    assert copy_unknown("Tomáš Čech runs", "Tomek läuft", [(0, 0), (1, 0), (2, 1)], [0, 1]) == (
        "Tomáš Čech läuft", [(0, 0), (1, 1), (2, 2)])
    # a word linked to a known word too is taken only when none is the unknown word's alone;
    # words apart from the first are kept
    assert copy_unknown("Ольга rides", "Ein Klik reitet Olg", [(0, 0), (1, 0), (0, 1), (1, 2),
                                                               (0, 3)], [0]) == (
        "Ein Ольга reitet Olg", [(0, 0), (0, 1), (0, 3), (1, 0), (1, 2)])
    # none the unknown word's alone: the first takes the copy, the known words' words stay,
    # and their links to the word replaced go to the copy (they took "Mann." and every link)
    assert copy_unknown("Ольга is riding a bike.", "Ein Mann.", [
        (0, 0), (0, 1), (1, 0), (2, 0), (3, 1), (4, 1)], [0]) == (
        "Ольга Mann.", [(0, 0), (0, 1), (1, 0), (2, 0), (3, 1), (4, 1)])
    assert copy_unknown(line, "Ein Pferd", [], [0]) == ("Ein Pferd", [])  # linked to nothing
    assert copy_unknown(line, "Ein Klikaner reitet", [(0, 0), (0, 1), (1, 2)], [0], kept={0}) == (
        "Ein Ольга reitet", [(0, 0), (0, 1), (1, 2)])  # a prefix's word stays
    assert copy_unknown(line, "Ein  Pferd", [(1, 0)], []) == ("Ein  Pferd", [(1, 0)])


def test_copying_keeps_the_words_of_the_terms_a_translation_holds(tiny_run):
    """A term placed by a glossary stays where attention aligns it to a word the vocabulary
    cannot spell; its last word may have an ending or a sign after it."""
    assert term_words("Ein Hunde, der Hund läuft".split(), ["Hund", "der Hund", "Katze"]) == {
        1, 2, 3}
    tokenizer = Translator.from_run(tiny_run, "cpu").tokenizer
    line, made = "A Łódź dog runs .", Translation("Ein Łoda Hund läuft .", [], 0.0, 0.0,
                                                   alignment=[(0, 0), (1, 1), (1, 2), (3, 3)])
    assert unknown_words(tokenizer, line) == [1]
    copied = with_unknown_copied(tokenizer, [line], [[made]])[0][0]
    assert copied.text == "Ein Łódź läuft ."  # the made-up word and "Hund" aligned to it go
    kept = with_unknown_copied(tokenizer, [line], [[made]], terms=[["Hund"]])[0][0]
    assert kept.text == "Ein Łódź Hund läuft ."


def test_translate_copy_unknown(tiny_run):
    tokenizer = Translator.from_run(tiny_run, "cpu").tokenizer  # no byte fallback
    assert unknown_words(tokenizer, "Ольга and Þórdís ride a horse .") == [0, 2]
    assert unknown_words(tokenizer, "A man rides a horse .") == []
    result = invoke("translate", "--run", str(tiny_run), "--copy-unknown", "--alignment",
                    "--max-len-b", "6", "Ольга rides a horse.")
    assert result.exit_code == 0, result.output
    text, links = result.stdout.rstrip("\n").split(" ||| ")
    links = [tuple(map(int, link.split("-"))) for link in links.split()]
    assert "Ольга" in text.split() and (0, text.split().index("Ольга")) in links
    assert all(0 <= s < 4 and 0 <= t < len(text.split()) for s, t in links)
    plain = invoke("translate", "--run", str(tiny_run), "--max-len-b", "6", "A man rides.")
    assert invoke("translate", "--run", str(tiny_run), "--max-len-b", "6", "--copy-unknown",
                  "A man rides.").stdout == plain.stdout  # nothing to copy: the same
