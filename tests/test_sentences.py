"""Sentence splitting: where a line's sentences begin (and where they do not), the words of
the line each starts at, translations joined with their alignments moved to the words of the
line, and --split-sentences as a user runs it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from test_cli import invoke, one_line_error
from test_nbest import train_tiny_run

from nmt_cli.config import DecodeConfig
from nmt_cli.sentences import Sentence, split_sentences
from nmt_cli.service import ApiError, ServeConfig, parse_query
from nmt_cli.translate import Split, Translation, Translator, joined

from conftest import read_sample


@pytest.mark.parametrize(("line", "sentences"), [
    ("A dog runs. A cat sleeps.", ["A dog runs.", "A cat sleeps."]),
    ("Is it? Yes! It is... Really.", ["Is it?", "Yes!", "It is...", "Really."]),
    ("It is... really good.", ["It is... really good."]),
    ("e.g. this. And that.", ["e.g. this.", "And that."]),
    ("Dr. Smith met Mr. J. R. Brown at 5 p.m. today. He left.",
     ["Dr. Smith met Mr. J. R. Brown at 5 p.m. today.", "He left."]),
    ("We live in the U.S. Now we do.", ["We live in the U.S. Now we do."]),  # a break missed
    ("Am 3. Oktober kam er z.B. nach Berlin. Dann ging er.",
     ["Am 3. Oktober kam er z.B. nach Berlin.", "Dann ging er."]),
    ("Er wurde 2. Sieger. Sie wurde 1990 geboren. Dann kam sie.",
     ["Er wurde 2. Sieger.", "Sie wurde 1990 geboren.", "Dann kam sie."]),
    ("See No. 5 and Jan. 16th. No. Please.", ["See No. 5 and Jan. 16th.", "No.", "Please."]),
    ('He said "Go." Then he left. "Why?" she asked.',
     ['He said "Go."', "Then he left.", '"Why?" she asked.']),
    ("Il a dit « Bonjour. » Puis il est parti.", ["Il a dit « Bonjour. »", "Puis il est parti."]),
    ("M. Dupont est arrivé. Il est là.", ["M. Dupont est arrivé.", "Il est là."]),
    ("¿Qué tal? ¡Muy bien! Gracias.", ["¿Qué tal?", "¡Muy bien!", "Gracias."]),
    ("Er kam (spät). 3 Leute warteten.", ["Er kam (spät).", "3 Leute warteten."]),
    ('It read "4". A dog ran. It was No. 6. Das ist es.',
     ['It read "4".', "A dog ran.", "It was No. 6.", "Das ist es."]),
    ("Mr. A. Smith took a nap. Done. $5 it was.",
     ["Mr. A. Smith took a nap.", "Done.", "$5 it was."]),
    ("It costs $3.50 at example.com. Buy it.", ["It costs $3.50 at example.com.", "Buy it."]),
    ("你好。再见！他说：“好。”", ["你好。", "再见！", "他说：“好。”"]),
    ("  Hi.   Bye.  ", ["Hi.", "Bye."]),
    ("One sentence without a stop", ["One sentence without a stop"]),
    ("Ends with a stop.", ["Ends with a stop."]),
    ("", [""]),
])
def test_sentences_begin_after_a_stop_before_a_capital(line, sentences):
    assert [s.text for s in split_sentences(line)] == sentences


def test_a_line_of_one_sentence_is_given_whole():
    for line in ("  A dog runs.  ", "a. b. c.", "", "<2de> A dog."):
        assert split_sentences(line, tagged=True) == [Sentence(line, 0, 0)]


def test_each_sentence_starts_at_its_first_word_among_the_lines():
    """Over paragraphs of three sentences of the sample corpus, in both languages, every
    sentence is found, and its words are the line's from its `word` on."""
    for lang in ("en", "de"):
        lines = read_sample("test", lang) + read_sample("val", lang)
        for i in range(0, len(lines) - 2, 3):
            line = "  ".join(lines[i : i + 3])
            found = split_sentences(line)
            assert [s.text for s in found] == lines[i : i + 3]
            for s in found:
                words = s.text.split()
                assert line.split()[s.word : s.word + len(words)] == words


def test_a_language_tag_opens_each_sentence_of_its_line():
    found = split_sentences("<2fr> A dog.  A cat sleeps.", tagged=True)
    assert found == [Sentence("<2fr> A dog.", 1, 1), Sentence("<2fr> A cat sleeps.", 3, 1)]
    assert [s.text for s in split_sentences("<2fr> A dog. A cat.")] == ["<2fr> A dog.", "A cat."]


def translation(text: str, links: list[tuple[int, int]] | None, log_prob: float = -1.0):
    return Translation(text, text.split(), log_prob, log_prob / 2, alignment=links)


def test_joined_moves_links_to_the_words_of_the_line_and_of_the_text():
    line = "<2de> A dog. A big cat sleeps."
    sentences = split_sentences(line, tagged=True)
    out = joined(sentences, [translation("Ein Hund.", [(1, 0), (2, 1)]),
                             translation("Eine große Katze schläft.",
                                         [(0, 2), (1, 0), (2, 1), (3, 2), (4, 3)])])
    assert out.text == "Ein Hund. Eine große Katze schläft."
    assert out.tokens == out.text.split()
    assert (out.log_prob, out.score) == (-2.0, -1.0)
    # the tag (word 0 of each sentence translated) links to nothing; the rest move on
    assert out.alignment == [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]
    assert [line.split()[s] for s, _ in out.alignment] == line.split()[1:]


def test_joined_shares_a_word_where_no_space_parts_sentences():
    """"你好。再见。" is one word of the line, as its translation "你好。再见。" is; an empty
    translation adds nothing; no alignment where a sentence lacks one."""
    sentences = split_sentences("你好。再见。好的", tagged=False)
    assert [(s.text, s.word) for s in sentences] == [("你好。", 0), ("再见。", 0), ("好的", 0)]
    out = joined(sentences, [translation("你好。", [(0, 0)]), translation("", []),
                             translation("再见。", [(0, 0)])])
    assert out.text == "你好。再见。" and out.alignment == [(0, 0)]
    english = joined(sentences, [translation("Hello.", [(0, 0)]),
                                 translation("Bye.", [(0, 0)]), translation("Good", None)])
    assert english.text == "Hello. Bye. Good" and english.alignment is None


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("sentences"))


TEST = read_sample("test", "en", 6)
LINES = [" ".join(TEST[:3]), "", TEST[3], f"{TEST[4]}   {TEST[5]}"]
CONFIG = DecodeConfig(beam=3, max_len_b=8)


def test_a_paragraph_translates_as_its_sentences_each_alone(tiny_run):
    """Each sentence is translated as it would be on a line of its own; a line of one
    sentence, or none, as without splitting; the alignments are those of the sentences,
    moved on by the words before them."""
    translator = Translator.from_run(tiny_run, "cpu")
    split = translator.translate_nbest(
        LINES, dataclasses.replace(CONFIG, split_sentences=True), alignment=True)
    alone = [hyps[0] for hyps in translator.translate_nbest(TEST, CONFIG, alignment=True)]
    assert [hyps[0].text for hyps in split] == [
        " ".join(h.text for h in alone[:3]), "", alone[3].text, f"{alone[4].text} {alone[5].text}"]
    assert split[2][0].tokens == alone[3].tokens and split[1][0].alignment == []
    links, source, target = [], 0, 0
    for sentence, h in zip(TEST[:3], alone[:3]):
        links += [(s + source, t + target) for s, t in h.alignment]
        source, target = source + len(sentence.split()), target + len(h.text.split())
    assert split[0][0].alignment == sorted(links)
    assert split[0][0].log_prob == pytest.approx(sum(h.log_prob for h in alone[:3]), abs=1e-4)
    assert translator.translate(LINES, CONFIG)[0] != split[0][0].text  # read whole: other text


def test_translate_split_sentences_as_a_user_runs_it(tiny_run, tmp_path):
    source = tmp_path / "in.en"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    common = ["--run", str(tiny_run), "--beam", "3", "--max-len-b", "8", "--split-sentences"]
    result = invoke("translate", *common, "-i", str(source))
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    whole = invoke("translate", *common[:-1], "-i", str(source))
    assert whole.exit_code == 0 and whole.stderr.startswith(
        "note: 2 lines hold several sentences"), whole.stderr
    assert "--split-sentences" in whole.stderr and len(whole.stderr.splitlines()) == 1
    config = dataclasses.replace(CONFIG, split_sentences=True)
    assert result.stdout.splitlines() == Translator.from_run(tiny_run, "cpu").translate(
        LINES, config)
    marked = invoke("translate", *common, f"<b>{TEST[0]}</b> <i>{TEST[1]}</i>", "--markup")
    assert marked.exit_code == 0, marked.output
    assert [marked.stdout.count(tag) for tag in ("<b>", "</b>", "<i>", "</i>")] == [1] * 4
    run = ["translate", *common, LINES[0]]
    one_line_error(invoke(*run, "--nbest", "2"), "--nbest", "--split-sentences")
    one_line_error(invoke(*run, "--prefix", "Ein"), "--prefix", "drop --split-sentences")
    one_line_error(invoke(*run, "--attention", "--format", "jsonl"), "--attention")
    terms = tmp_path / "terms.txt"
    terms.write_text("Mann\n", encoding="utf-8")
    one_line_error(invoke(*run, "--terms-file", str(terms)), "--terms-file", "--glossary")
    one_line_error(invoke("attention", *common, LINES[0], "--json"), "--split-sentences")


def test_a_request_splits_its_lines_and_finds_glossary_terms_in_each_sentence(tmp_path):
    glossary = tmp_path / "g.tsv"
    glossary.write_text("man\tMann\ndog\tHund\n", encoding="utf-8")
    decode = DecodeConfig(glossary=str(glossary))

    def query(request: dict, config=decode):
        return parse_query(json.dumps(request).encode(), ServeConfig(), config)

    lines = ["A man runs. A dog sleeps.", "A man."]
    asked = query({"text": lines, "split_sentences": True})
    assert asked.sentences() == ["A man runs.", "A dog sleeps.", "A man."]
    assert asked.terms == [["Mann"], ["Hund"], ["Mann"]]
    assert asked.split == Split.of(lines) and not asked.config.split_sentences
    assert asked.split.per_line(asked.terms) == [["Mann", "Hund"], ["Mann"]]  # for copy_unknown
    plain = query({"text": lines})
    assert plain.sentences() == lines and plain.split is None
    splitting = dataclasses.replace(decode, split_sentences=True)  # nmt serve --split-sentences
    assert query({"text": lines}, splitting).split is not None
    assert query({"text": lines, "split_sentences": False}, splitting).split is None
    for request, message in (({"nbest": 2, "beam": 3}, '"nbest"'), ({"prefix": "Ein"}, '"prefix"'),
                             ({"split_sentences": "yes"}, "true or false")):
        with pytest.raises(ApiError, match=message) as refused:
            query({"text": lines, "split_sentences": True, **request})
        assert refused.value.status == 422
