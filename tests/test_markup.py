"""Inline markup through translation (nmt_cli/markup.py): lines taken apart into text and
elements, and the elements put back into a translation by its word alignment; then
`nmt translate --markup` and serve's "markup" on a real run."""

from __future__ import annotations

import html
import json
import random
import re
from pathlib import Path

import pytest
from test_cli import invoke, one_line_error
from test_nbest import train_tiny_run

from nmt_cli.config import DecodeConfig
from nmt_cli.errors import UserError
from nmt_cli.markup import Marked, parse
from nmt_cli.service import ApiError, ServeConfig, parse_query
from nmt_cli.translate import Translator

WORDS = ["man", "dog", "&", "a<b", "red", "car,", "(big)", "Tür", "3", "„Haus“"]


def shape(marked: Marked) -> list[tuple]:
    """Each element, in document order: its tags, and the words it encloses (as a range of
    word positions), or, enclosing none, the position of the first word after it."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", marked.text)]
    out = []

    def visit(elements):
        for e in elements:
            words = [i for i, (s, t) in enumerate(spans) if s < e.end and t > e.start]
            where = (words[0], words[-1] + 1) if e.end > e.start and words else \
                ("at", sum(t <= e.start for _, t in spans))
            out.append((e.open, e.close, where))
            visit(e.children)

    visit(marked.elements)
    return out


def random_line(rng: random.Random, depth: int = 0) -> str:
    """Words and elements, every tag at a word boundary: pairs that enclose a word or
    nothing, tags alone, comments."""
    parts = []
    for _ in range(rng.randint(1 if depth == 0 else 0, 4)):
        kind = rng.random()
        if kind < 0.5 or depth > 2:
            parts.append(html.escape(rng.choice(WORDS), quote=False))
        elif kind < 0.75:
            tag = rng.choice(["b", "i", "span"])
            attributes = rng.choice(["", ' class="x > y"', " id='n'"])
            inside = html.escape(rng.choice(WORDS), quote=False) + " " + random_line(rng, depth + 1)
            parts.append(f"<{tag}{attributes}> {inside.strip()} </{tag}>")
        elif kind < 0.85:
            parts.append(rng.choice(["<br/>", "<br>", '<img src="x.png" />', "<!-- <b> -->"]))
        else:
            parts.append(rng.choice(["<b></b>", "<i> </i>"]))
    return " ".join(parts)


def test_a_line_is_taken_apart_into_its_text_and_elements():
    marked = parse('A <b class="x > y">red</b> car &amp; a <i>big <u>dog</u></i>.<br>')
    assert marked.text == "A red car & a big dog."
    assert shape(marked) == [('<b class="x > y">', "</b>", (1, 2)), ("<i>", "</i>", (5, 7)),
                             ("<u>", "</u>", (6, 7)), ("<br>", "", ("at", 7))]
    # a language tag, a "<" that opens no tag and a comment's tags are no elements
    marked = parse("<2de> 3 < 4 <!-- <b> --> <unk >x</unk >")
    assert marked.text == "<2de> 3 < 4  x"
    assert [(e.open, e.close) for e in marked.elements] == [("<!-- <b> -->", ""),
                                                            ("<unk >", "</unk >")]
    # markup that stands alone is kept whole, untranslated, where it was
    marked = parse('<?xml version="1.0"?><!DOCTYPE html><p>Hi <![CDATA[a < <b>]]>there</p>')
    assert marked.text == "Hi there"
    assert shape(marked) == [('<?xml version="1.0"?>', "", ("at", 0)),
                             ("<!DOCTYPE html>", "", ("at", 0)), ("<p>", "</p>", (0, 2)),
                             ("<![CDATA[a < <b>]]>", "", ("at", 1))]


@pytest.mark.parametrize(("line", "error"), [
    ("a <b>red car", "<b> is never closed"),
    ("a red</b> car", "</b> closes no element"),
    ("<b><i>a</b></i>", "</b> closes <i>: elements must nest"),
    ("<br>a</br>", "</br> closes no element"),
])
def test_markup_that_does_not_nest_is_a_one_line_error(line, error):
    with pytest.raises(UserError, match=f"^{error}$"):
        parse(line)


def test_any_line_is_markup_or_a_one_line_error():
    """Lines of tag-like characters: each is refused in one line, or taken apart into text
    that a translation word for word gives back, with its tags, and nothing but those."""
    rng = random.Random(2)
    alphabet = ["<", ">", "/", "b", "i", "br", "!--", "-->", "&", "amp;", "#10;", "lt;", '"',
                "'", "=", " ", "x", "Ω", "?", "!DOCTYPE", "![CDATA[", "]]>"]
    refused = 0
    for _ in range(3000):
        line = "".join(rng.choices(alphabet, k=rng.randint(0, 20)))
        try:
            marked = parse(line)
        except UserError as e:
            refused += 1
            assert "\n" not in str(e) and str(e)
            continue
        words = marked.text.split()
        restored = marked.restore(" ".join(words), [(i, i) for i in range(len(words))])
        assert "\n" not in restored and parse(restored).text.split() == words, line
        assert shape(parse(restored)) == shape(marked), line
    assert 0 < refused < 3000


def test_a_translation_word_for_word_gets_the_markup_where_it_was():
    rng = random.Random(0)
    for _ in range(500):
        line = random_line(rng)
        marked = parse(line)
        words = marked.text.split()
        identity = [(i, i) for i in range(len(words))]
        restored = marked.restore(" ".join(words), identity)
        again = parse(restored)
        assert again.text.split() == words, (line, restored)
        assert shape(again) == shape(marked), (line, restored)


def test_any_alignment_gives_markup_that_nests_around_the_translation():
    rng = random.Random(1)
    for _ in range(1000):
        marked = parse(random_line(rng))
        n = len(marked.text.split())
        translation = [rng.choice(WORDS) for _ in range(rng.randint(0, 8))]
        links = [(rng.randrange(n), j) for j in range(len(translation))] if n else []
        links += [(rng.randrange(n), rng.randrange(len(translation)))
                  for _ in range(rng.randint(0, 3)) if n and translation]
        restored = marked.restore(" ".join(translation), links)
        again = parse(restored)  # nests, or this raises
        assert again.text.split() == translation, restored
        assert sorted((o, c) for o, c, _ in shape(again)) == sorted(
            (o, c) for o, c, _ in shape(marked)), restored  # every tag, once


def test_tags_move_with_the_words_they_enclose():
    marked = parse("<b>red</b> <i>car</i> <br/> here")
    assert marked.restore("voiture rouge ici", [(0, 1), (1, 0), (2, 2)]) == \
        "<i>voiture</i> <b>rouge</b> <br/> ici"
    # one word of the translation for two of the line: both pairs want it; the first gets it
    marked = parse("<b>big</b> <i>house</i>")
    assert marked.restore("Haus", [(0, 0), (1, 0)]) == "<b>Haus</b> <i></i>"
    # linked to nothing: an element goes before the translation of the word after it
    marked = parse("a <b>red</b> car")
    assert marked.restore("ein Auto", [(0, 0), (2, 1)]) == "ein <b></b> Auto"


def test_punctuation_outside_an_element_stays_outside():
    marked = parse('He said (<b>hello</b>), "<i>Title</i>".')
    assert marked.restore('Er sagte (hallo), "Titel".', [(0, 0), (1, 1), (2, 2), (3, 3)]) == \
        'Er sagte (<b>hallo</b>), "<i>Titel</i>".'
    # a translation whose word lacks the punctuation: the element takes the whole word
    assert marked.restore("Er sagte hallo, „Titel“.", [(0, 0), (1, 1), (2, 2), (3, 3)]) == \
        "Er sagte <b>hallo,</b> <i>„Titel“.</i>"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("markup"))


LINES = ['A man <b>rides</b> a <a href="h?a=1&amp;b=2">horse</a>.', "<br/>",
         "Two &amp; dogs <i>play <u>in</u></i> the snow."]


def test_translate_markup_puts_the_tags_back_by_the_alignment(tiny_run, tmp_path):
    source = tmp_path / "in.html"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    config = DecodeConfig(beam=2, max_len_b=6)
    marked = [parse(line) for line in LINES]
    found = Translator.from_run(tiny_run, "cpu").translate_nbest(
        [m.text for m in marked], config, 2, alignment=True)
    common = ["--run", str(tiny_run), "-i", str(source), "--beam", "2", "--max-len-b", "6",
              "--markup"]
    result = invoke("translate", *common, "--alignment")
    assert result.exit_code == 0, result.output
    expected = [m.restore(hyps[0].text, hyps[0].alignment) for m, hyps in zip(marked, found)]
    assert result.stdout.splitlines() == [
        f"{text} ||| {' '.join(f'{s}-{t}' for s, t in hyps[0].alignment)}"
        for text, hyps in zip(expected, found)]
    assert expected[1] == "<br/>" and '<a href="h?a=1&amp;b=2">' in expected[0]
    result = invoke("translate", *common, "--format", "jsonl", "--nbest", "2")
    assert result.exit_code == 0, result.output
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["source"] for o in objects] == LINES
    assert [[h["text"] for h in o["hypotheses"]] for o in objects] == [
        [m.restore(h.text, h.alignment) for h in hyps] for m, hyps in zip(marked, found)]
    assert all("alignment" not in h for o in objects for h in o["hypotheses"])


def test_bad_markup_names_its_line(tiny_run, tmp_path):
    source = tmp_path / "in.html"
    source.write_text("A <b>man</b>.\nA <i>dog.\n", encoding="utf-8")
    result = invoke("translate", "--run", str(tiny_run), "-i", str(source), "--markup")
    one_line_error(result, f"{source}:2: <i> is never closed")
    result = invoke("translate", "--run", str(tiny_run), "--ensemble", str(tiny_run),
                    "--markup", "A <b>man</b>.")
    one_line_error(result, "--markup: each model of an ensemble attends in its own way")


def test_a_request_with_markup_is_checked_line_by_line():
    settings, decode = ServeConfig(), DecodeConfig()
    query = parse_query(b'{"text": ["<2de> A <b>man</b>.", ""], "markup": true}', settings,
                        decode, ["de", "fr"])
    assert query.texts() == ["<2de> A man.", ""] and query.lines[0] == "<2de> A <b>man</b>."
    assert not query.copy_unknown and parse_query(b'{"text": "Hi.", "copy_unknown": true}',
                                                  settings, decode).copy_unknown
    assert parse_query(b'{"text": "A <b>man</b>."}', settings, decode).texts() == [
        "A <b>man</b>."]  # without "markup", tags are text
    for body, error in [(b'{"text": ["Hi.", "<b>Hi."], "markup": true}',
                         "line 2: <b> is never closed"),
                        (b'{"text": "Hi.", "markup": 1}', '"markup" must be true or false'),
                        (b'{"text": "Hi.", "copy_unknown": "yes"}',
                         '"copy_unknown" must be true or false')]:
        with pytest.raises(ApiError) as refused:
            parse_query(body, settings, decode)
        assert (refused.value.status, refused.value.message) == (422, error)


def test_the_markup_bench_counts_a_tag_right_where_the_hand_made_links_put_it():
    from bench.markup import row

    sources, targets = ["A red car .", "Two dogs play"], ["Ein rotes Auto .", "Zwei Hunde spielen"]
    gold = [{(0, 0), (1, 1), (2, 2), (3, 3)}, {(0, 0), (1, 1), (2, 2)}]
    right = row("gold", sources, targets, gold, [sorted(links) for links in gold])
    assert [right[f"exact {n}"] for n in (1, 2, 3)] == [100.0] * 3
    assert [right[f"tags {n}"] for n in (1, 2, 3)] == [7, 5, 3]
    swapped = row("swapped", sources, targets, gold,
                  [[(0, 0), (1, 2), (2, 1), (3, 3)], sorted(gold[1])])
    assert swapped["exact 1"] == round(100 * 5 / 7, 1)  # "red" and "car" on each other's word
    assert swapped["exact 2"] == round(100 * 3 / 5, 1)  # "red car" still right
