"""Several target languages in one model (languages.py): tags that are one token and open
every source, a model that learns from them which language to produce, and every way in
(text or prepared corpora; translate, eval, score, attention, serve, CTranslate2) asking for
one language by --tgt-lang."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from difflib import SequenceMatcher
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error

from nmt_cli.config import DecodeConfig, TokenizerConfig, apply_overrides, preset
from nmt_cli.data import encode_parallel, load_split, uneven
from nmt_cli.errors import UserError
from nmt_cli.languages import checked_sources, rows_by_language, source_line
from nmt_cli.prepared import open_prepared, prepare
from nmt_cli.service import ApiError, ServeConfig, parse_query
from nmt_cli.tokenizer import Tokenizer
from nmt_cli.training import Trainer, prepare_run_dir, train
from nmt_cli.translate import Translator

from conftest import read_sample, write_corpus

LETTERS = "abcdefghij"
# The toy task: each source is a few letters; "copy" repeats them, "rev" reverses them. A
# model can do both only by reading the tag.
TOY = {"model.d_model": 64, "model.d_ff": 128, "model.dropout": 0.0, "tokenizer.vocab_size": 20,
       "train.max_steps": 500, "train.validate_every": 500, "train.batch_tokens": 1024,
       "train.lr": 3e-3, "train.warmup_steps": 50, "train.schedule": "linear",
       "train.label_smoothing": 0.0, "data.src_lang": "src", "data.tgt_lang": "copy,rev"}


def toy_split(count: int, seed: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    src = [" ".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 7))) for _ in range(count)]
    return {"src": src, "copy": src, "rev": [" ".join(s.split()[::-1]) for s in src]}


def write_toy(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for split, count, seed in (("train", 3000, 0), ("val", 40, 1), ("test", 100, 2)):
        for language, lines in toy_split(count, seed).items():
            (folder / f"{split}.{language}").write_text("".join(f"{line}\n" for line in lines))
    return folder


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Models this small gain nothing from a second thread; the tests after these get their
    threads back (a loss computed with another count differs in its last bits)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


EVENTS: list[dict] = []  # what training the toy run reported
DRAWN: list[list[str]] = []  # the sentences of the attention pictures drawn at validation


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """A Transformer trained on both toy "languages" at once (about 10 s)."""
    import nmt_cli.training

    folder = write_toy(tmp_path_factory.mktemp("toy") / "corpus")
    config = apply_overrides(preset("transformer"), {**TOY, "data.data_dir": str(folder),
                                                     "train.attention_plots": 2})
    draw = nmt_cli.training.draw_validation_attention

    def recorded(run, sentences, *args):
        DRAWN.append(sentences)
        return draw(run, sentences, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nmt_cli.training, "draw_validation_attention", recorded)
        return train(config, folder.parent / "run", EVENTS.append)


def test_the_model_translates_into_the_language_its_tag_names(toy_run):
    translator = Translator.from_run(toy_run, "cpu")
    test = toy_split(100, seed=2)
    for language in ("copy", "rev"):
        found = translator.translate(test["src"], DecodeConfig(beam=1, tgt_lang=language))
        exact = sum(a == b for a, b in zip(found, test[language])) / len(found)
        assert exact >= 0.95, f"{language}: {exact:.0%}"
    # Palindromes aside, the two languages differ: the tag alone made the difference.
    assert sum(a != b for a, b in zip(test["copy"], test["rev"])) > 90


def test_validation_scores_each_language_apart(toy_run):
    record = [json.loads(line) for line in (toy_run / "metrics.jsonl").read_text().splitlines()
              if '"validate"' in line][-1]
    for language in ("copy", "rev"):
        assert record[f"val_bleu_{language}"] > 90 and f"val_chrf_{language}" in record
    hypotheses = (toy_run / "valid" / "step-000500.txt").read_text().splitlines()
    assert len(hypotheses) == 80  # both languages' 40 validation sentences
    val = toy_split(40, seed=1)
    (shown,) = [event["samples"] for event in EVENTS if event["kind"] == "validate"]
    assert [sample["source"] for sample in shown] == [
        f"<2copy> {val['src'][0]}", f"<2rev> {val['src'][0]}", f"<2copy> {val['src'][1]}"]
    assert [sample["reference"] for sample in shown] == [val["copy"][0], val["rev"][0],
                                                          val["copy"][1]]
    # The pictures drawn at validation are of both languages too: the first of each.
    assert DRAWN == [[f"<2copy> {val['src'][0]}", f"<2rev> {val['src'][0]}"]]
    assert sorted(p.name for p in (toy_run / "attention").iterdir()) == [
        "step-000500-1.png", "step-000500-2.png"]


def test_tags_are_one_token_that_opens_the_source(tmp_path):
    src, tgt = read_sample("train", "en", 300), read_sample("train", "de", 300)
    tokenizer = Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400), tmp_path,
                                ["<2de>", "<2en>"])
    assert tokenizer.tags == {"<2de>": 4, "<2en>": 5} and tokenizer.languages == ["de", "en"]
    plain = tokenizer.encode_src([src[0], ""])
    assert tokenizer.encode_src([f"<2en> {src[0]}", "<2en>"]) == [[5, *plain[0]], [5]]
    drawn, _ = tokenizer.sample([f"<2de> {src[0]}"] * 5, tgt[:5], 0.5, -1, seed=3)
    assert all(ids[0] == 4 and 4 not in ids[1:] for ids in drawn)
    assert len({tuple(ids) for ids in drawn}) > 1  # sampling did draw
    assert Tokenizer.train(src, tgt, TokenizerConfig(vocab_size=400), tmp_path).tags == {}


@pytest.fixture(scope="module")
def two_targets(tmp_path_factory) -> Path:
    """Sample English with German and, as a second target language, the English itself."""
    folder = write_corpus(tmp_path_factory.mktemp("two"), {
        "train": (read_sample("train", "en", 200) + [""], read_sample("train", "de", 200)
                  + ["x"]), "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})
    for split, count in (("train", 200), ("val", 10)):
        lines = read_sample(split, "en", count) + (["y"] if split == "train" else [])
        (folder / f"{split}.fr").write_text("".join(f"{line}\n" for line in lines))
    return folder


def test_validation_bleu_of_languages_no_one_tokenizer_splits_is_their_mean(two_targets,
                                                                            tmp_path):
    """Into German and Chinese, the whole validation set in 13a's words would count each
    Chinese line as a word: val_bleu, which picks the best weights, is the mean of the
    languages' own BLEU then (the Chinese here is the sample's English, renamed)."""
    import nmt_cli.validation

    folder = shutil.copytree(two_targets, tmp_path / "corpus")
    for path in folder.glob("*.fr"):
        path.rename(path.with_suffix(".zh"))
    config = apply_overrides(preset("transformer"), {
        **TOY, "data.data_dir": str(folder), "data.src_lang": "en", "data.tgt_lang": "de,zh",
        "tokenizer.vocab_size": 300, "train.max_steps": 1, "train.validate_every": 1})
    events: list[dict] = []

    def half_right(model, corpus, lines, *args):  # every other word of each reference
        return [" ".join(line.split()[::2]) for line in corpus.val_text.tgt]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nmt_cli.validation, "translate_greedy", half_right)
        train(config, tmp_path / "run", events.append)
    scores = next(e for e in events if e["kind"] == "validate")
    assert 0 < scores["val_bleu_de"] != scores["val_bleu_zh"] > 0
    assert scores["val_bleu"] == pytest.approx((scores["val_bleu_de"] + scores["val_bleu_zh"]) / 2)


def test_each_language_is_read_in_turn_behind_its_tag(two_targets):
    text = load_split(two_targets, "train", "en", "de,fr")
    assert len(text.src) == 402
    assert text.src[0] == "<2de> " + read_sample("train", "en", 1)[0]
    assert text.src[201] == "<2fr> " + read_sample("train", "en", 1)[0]
    assert text.src[200] == text.src[401] == ""  # a blank source stays blank, to be skipped
    assert text.tgt[201:] == read_sample("train", "en", 200) + ["y"]
    # Each language's rows, for its validation scores: its blank-source pair too (no tag
    # tells its language, but it is read in that language's turn).
    assert rows_by_language(text.parts, "de,fr") == {"de": list(range(201)),
                                                     "fr": list(range(201, 402))}


def test_a_prepared_corpus_holds_what_encoding_the_text_gives(two_targets, tmp_path):
    config = apply_overrides(preset("transformer"), {"tokenizer.vocab_size": 300})
    prepare(two_targets, tmp_path, "en", "de,fr", config.tokenizer, 100)
    tokenizer = Tokenizer.load(tmp_path)
    assert tokenizer.languages == ["de", "fr"]
    expected = encode_parallel(load_split(two_targets, "train", "en", "de,fr"), tokenizer, 100)
    mapped = open_prepared(tmp_path, "en", "de,fr")
    assert [mapped.src[i] for i in range(len(mapped.src))] == expected.src
    assert [mapped.tgt[i] for i in range(len(mapped.tgt))] == expected.tgt
    assert mapped.empty == expected.empty == 2 and len(expected.src) == 400
    assert {ids[0] for ids in expected.src} == {tokenizer.tags["<2de>"], tokenizer.tags["<2fr>"]}
    assert sorted(p.name for p in tmp_path.glob("val.*")) == ["val.de", "val.en", "val.fr"]
    with pytest.raises(UserError, match="prepared for en-de,fr, not en-de"):
        open_prepared(tmp_path, "en", "de")


def test_a_tokenizer_without_the_tags_is_refused(two_targets, tmp_path):
    plain = tmp_path / "plain"
    config = apply_overrides(preset("transformer"), {"tokenizer.vocab_size": 300})
    prepare(two_targets, plain, "en", "de", config.tokenizer, 100)
    with pytest.raises(UserError, match="no <2de> tag"):
        prepare(two_targets, tmp_path / "again", "en", "de,fr", config.tokenizer, 100,
                tokenizer_from=plain)
    config = apply_overrides(config, {"data.data_dir": str(two_targets), "model.d_model": 32,
                                      "model.d_ff": 64, "train.max_steps": 1})
    parent = train(config, tmp_path / "parent")  # into German alone: no tags
    child = apply_overrides(config, {"data.tgt_lang": "de,fr",
                                     "train.finetune_from": str(parent)})
    with pytest.raises(UserError, match="no <2de> tag"):
        Trainer(child, prepare_run_dir(tmp_path / "child"), lambda event: None)


def test_each_sentence_of_a_tagged_paragraph_goes_into_the_tags_language(two_targets,
                                                                        tmp_path):
    """With --split-sentences the tag that opens a line opens each of its sentences; the
    alignments count the line's words, the tag its word 0, linked to nothing."""
    config = apply_overrides(preset("transformer"), {
        "tokenizer.vocab_size": 300, "data.data_dir": str(two_targets), "data.tgt_lang": "de,fr",
        "model.d_model": 32, "model.d_ff": 64, "train.max_steps": 1})
    translator = Translator.from_run(train(config, tmp_path / "run"), "cpu")
    first, second = read_sample("test", "en", 2)
    decode = DecodeConfig(beam=2, max_len_b=6)
    alone = [hyps[0] for hyps in translator.translate_nbest(
        [f"<2fr> {first}", f"<2fr> {second}"], decode, alignment=True)]
    (split,) = translator.translate_nbest([f"<2fr> {first} {second}"], dataclasses.replace(
        decode, split_sentences=True), alignment=True)
    assert split[0].text == " ".join(h.text for h in alone if h.text)
    words = (len(first.split()), len(alone[0].text.split()))
    assert split[0].alignment == sorted(alone[0].alignment + [
        (s + words[0], t + words[1]) for s, t in alone[1].alignment])
    assert all(s > 0 for s, _ in split[0].alignment)


@pytest.mark.parametrize(("value", "message"), [
    ("de,,fr", "'' is not a language suffix"), ("de,fr,de", "names a language twice"),
    ("de fr", "'de fr' is not a language suffix"), ("<2de>", "is not a language suffix")])
def test_bad_language_lists_are_one_line_errors(value, message, two_targets):
    one_line_error(invoke("train", "--data", str(two_targets), "--tgt-lang", value,
                          "--max-steps", "1"), message)


def test_every_command_asks_for_a_language_by_name(toy_run, tmp_path):
    test = toy_split(100, seed=2)
    (tmp_path / "in.src").write_text("".join(f"{line}\n" for line in test["src"][:5]))
    (tmp_path / "in.rev").write_text("".join(f"{line}\n" for line in test["rev"][:5]))
    result = invoke("translate", "--run", str(toy_run), "--tgt-lang", "rev", "--beam", "2",
                    "-i", str(tmp_path / "in.src"))
    assert result.exit_code == 0 and result.stdout.splitlines() == test["rev"][:5]
    result = invoke("eval", "--run", str(toy_run), "--tgt-lang", "copy", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["scores"][0]["score"] > 90
    assert json.loads(result.stdout)["reference"].endswith("test.copy")
    scores = {}
    for language in ("copy", "rev"):
        result = invoke("score", "--run", str(toy_run), "--tgt-lang", language,
                        "--src", str(tmp_path / "in.src"), "--tgt", str(tmp_path / "in.rev"))
        scores[language] = [float(line) for line in result.stdout.split()]
    assert all(r > c + 5 for r, c in zip(scores["rev"], scores["copy"]))
    result = invoke("attention", "--run", str(toy_run), "--tgt-lang", "rev", "a b c", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["source"][0] == "<2rev>"
    one_line_error(invoke("eval", "--run", str(toy_run)),
                   "--tgt-lang: this model translates into copy, rev; name one")
    for command in (["translate", "a b c"], ["attention", "a b c"]):
        one_line_error(invoke(command[0], "--run", str(toy_run), *command[1:]),
                       "'a b c' names no target language: this model translates into copy, "
                       "rev; give --tgt-lang, or open each line with the tag of its language")
    one_line_error(invoke("translate", "--run", str(toy_run), "--tgt-lang", "de", "a",
                          "-o", str(tmp_path / "out.txt")), "--tgt-lang 'de'")
    assert not (tmp_path / "out.txt").exists()  # checked before the output was opened


def in_their_languages(outputs: list[str], test: dict[str, list[str]], languages: list[str]
                       ) -> None:
    """Each output is nearer its line's target in its language than in the other (the toy
    model is not perfect: a letter may be out of place on one machine and not on another),
    and most are exactly it."""
    for i, (output, language) in enumerate(zip(outputs, languages, strict=True)):
        wanted, other = test[language][i].split(), test[OTHER[language]][i].split()
        assert wanted != other  # no palindrome among the lines used
        near = [SequenceMatcher(None, output.split(), words).ratio() for words in (wanted, other)]
        assert near[0] > near[1], (i, output, wanted)
    assert sum(output == test[language][i] for i, (output, language)
               in enumerate(zip(outputs, languages))) >= len(outputs) // 2 + 1


OTHER = {"copy": "rev", "rev": "copy"}


def test_each_line_may_open_with_the_tag_of_its_own_language(toy_run, tmp_path):
    """As OPUS-MT's ">>fra<<": a line's own tag chooses its language, --tgt-lang the
    language of the lines without one; a line with neither, or with a tag the model lacks,
    is a one-line error naming it, found before -o is opened."""
    test = toy_split(100, seed=2)
    own = ["copy", "rev", "rev", "copy", "rev", "copy"]
    lines = [f"<2{language}> {src}" for language, src in zip(own, test["src"])] + test["src"][6:9]
    (tmp_path / "in.src").write_text("".join(f"{line}\n" for line in lines))
    for default in ("copy", "rev"):
        result = invoke("translate", "--run", str(toy_run), "--beam", "2", "--tgt-lang",
                        default, "-i", str(tmp_path / "in.src"))
        assert result.exit_code == 0, result.output
        in_their_languages(result.stdout.splitlines(), test, own + [default] * 3)
    translator = Translator.from_run(toy_run, "cpu")
    in_their_languages(translator.translate(lines[:6], DecodeConfig(beam=2)), test, own)
    (tmp_path / "out.txt").write_text("kept\n")
    for text, message in ((lines, f"in.src:7: {test['src'][6]!r} names no target language"),
                          (["<2copy> a b", "<2de> a b"], "in.src:2: <2de>: this model "
                           "translates into copy, rev; open the line with the tag of one")):
        (tmp_path / "in.src").write_text("".join(f"{line}\n" for line in text))
        one_line_error(invoke("translate", "--run", str(toy_run), "-i", str(tmp_path / "in.src"),
                              "-o", str(tmp_path / "out.txt")), message)
        assert (tmp_path / "out.txt").read_text() == "kept\n"
    (tmp_path / "in.src").write_text(f"<2rev>\n{test['src'][0]}\n")  # a tag alone: blank
    (tmp_path / "prefixes").write_text("a\nb\n")
    blank = invoke("translate", "--run", str(toy_run), "--tgt-lang", "copy", "-i",
                   str(tmp_path / "in.src"), "--prefix-file", str(tmp_path / "prefixes"))
    assert blank.exit_code == 0 and blank.stdout.splitlines()[0] == ""
    assert "input line 1 is blank, and so is its translation" in blank.stderr, blank.stderr
    single = invoke("translate", "--run", str(plain_run(toy_run, tmp_path)), "-i",
                    str(tmp_path / "in.src"), "--prefix-file", str(tmp_path / "prefixes"))
    assert single.exit_code == 0 and "blank" not in single.stderr  # "<2rev>" is text there


def plain_run(run: Path, tmp_path: Path) -> Path:
    """`run` as a model of one language ("rev"): a tag is text to it."""
    plain = shutil.copytree(run, tmp_path / "plain-run")
    description = json.loads((plain / "config.json").read_text())
    description["config"]["data"]["tgt_lang"] = "rev"
    (plain / "config.json").write_text(json.dumps(description))
    return plain


def test_a_lines_own_tag_is_its_word_0_in_word_alignments(toy_run):
    """Positions count the words of the line as given: its own tag is one, a tag that
    --tgt-lang adds is none; the translations are the same."""
    src = toy_split(100, seed=2)["src"][:8]
    translator = Translator.from_run(toy_run, "cpu")
    config = DecodeConfig(beam=2, tgt_lang="rev")
    added = translator.translate_nbest(src, config, alignment=True)
    own = translator.translate_nbest([f"<2rev> {line}" for line in src], config,
                                     alignment=True)
    for line, (a,), (b,) in zip(src, added, own):
        assert a.text == b.text and a.alignment
        assert b.alignment == [(s + 1, t) for s, t in a.alignment]
        assert all(s < len(line.split()) for s, _ in a.alignment)


def test_how_a_line_names_its_language():
    both = ["copy", "rev"]
    assert source_line("<2de> Hallo", "", ["de"]) == "<2de> Hallo"  # one language: text
    assert source_line(" <2rev>\ta b ", "<2copy>", both) == "<2rev> a b "  # its own, tidied
    assert source_line("a b", "<2copy>", both) == "<2copy> a b"
    assert source_line("<2rev>", "<2copy>", both) == ""  # a tag alone: a blank line
    assert source_line("  ", "", both) == "  "
    for line, tag, strict, message in (
            ("a b", "", False, "'a b' names no target language"),
            ("<2de> a b", "<2copy>", False, "<2de>: this model translates into copy, rev"),
            ("<2rev> a b", "<2copy>", True, "<2rev>: the line asks for another language than "
                                            "--tgt-lang 'copy'")):
        with pytest.raises(UserError, match=message):
            source_line(line, tag, both, strict=strict)
    checked = checked_sources(["<2rev> a", "b", "c"], "", both, "in.src:", first=10)
    assert next(checked) == "<2rev> a"
    with pytest.raises(UserError, match="^in.src:11: 'b' names no target language"):
        next(checked)


def test_lines_that_name_their_language_from_stdin_eval_score_and_python(toy_run, tmp_path):
    """stdin is checked as it is read; eval and score translate into the language named, so
    a line asking for another is refused; in Python a line's own tag wins."""
    test = toy_split(100, seed=2)
    one_line_error(invoke("translate", "--run", str(toy_run), input=b"<2rev> a b\nc d\n"),
                   "stdin:2: 'c d' names no target language")
    result = invoke("translate", "--run", str(toy_run), "--beam", "2",
                    input=f"<2rev> {test['src'][0]}\n".encode())
    assert result.exit_code == 0 and result.stdout == test["rev"][0] + "\n"
    src, ref = tmp_path / "in.src", tmp_path / "in.copy"
    src.write_text(f"{test['src'][0]}\n<2rev> {test['src'][1]}\n")
    ref.write_text("".join(f"{line}\n" for line in test["copy"][:2]))
    for command in (["eval", "--src", str(src), "--ref", str(ref)],
                    ["score", "--src", str(src), "--tgt", str(ref)]):
        one_line_error(invoke(*command, "--run", str(toy_run), "--tgt-lang", "copy"),
                       f"{src}:2: <2rev>: the line asks for another language than --tgt-lang "
                       "'copy'")
    # so does compare, which translated that line into "rev" and scored it against "copy"
    one_line_error(invoke("compare", str(toy_run), str(toy_run), "--src", str(src), "--ref",
                          str(ref), "--tgt-lang", "copy"),
                   f"{src}:2: <2rev>: the line asks for another language than --tgt-lang 'copy'")
    translator = Translator.from_run(toy_run, "cpu")
    assert translator.translate([f"<2rev> {test['src'][0]}"], DecodeConfig(
        beam=2, tgt_lang="copy")) == [test["rev"][0]]


def test_a_run_with_one_language_takes_its_own_name_only(small_corpus, tmp_path):
    run = tmp_path / "run"
    assert invoke("train", "--data", str(small_corpus), "--run", str(run), "--max-steps", "2",
                  "--set", "tokenizer.vocab_size=300", "--set", "model.d_model=32",
                  "--set", "model.d_ff=64").exit_code == 0
    assert invoke("translate", "--run", str(run), "--tgt-lang", "de", "Hi.").exit_code == 0
    one_line_error(invoke("translate", "--run", str(run), "--tgt-lang", "fr", "Hi."),
                   "this model translates into de only")


def test_requests_to_a_server_name_their_language():
    settings, decode = ServeConfig(), DecodeConfig(beam=2)
    query = parse_query(b'{"text": "a b", "tgt_lang": "rev"}', settings, decode, ["copy", "rev"])
    assert query.config == DecodeConfig(beam=2, tgt_lang="rev")
    query = parse_query(b'{"text": ["<2rev> a b", "<2copy> a b"]}', settings, decode,
                        ["copy", "rev"])
    assert query.lines == ["<2rev> a b", "<2copy> a b"] and query.config.tgt_lang == ""
    for body, message in ((b'{"text": "a"}', "line 1: 'a' names no target language: this "
                           'model translates into copy, rev; give "tgt_lang"'),
                          (b'{"text": ["<2rev> a", "<2fr> a"]}', "line 2: <2fr>: this model"),
                          (b'{"text": "a", "tgt_lang": "de"}', "\"tgt_lang\" 'de'"),
                          (b'{"text": "a", "tgt_lang": 3}', "must be a language code")):
        with pytest.raises(ApiError, match=message) as refused:
            parse_query(body, settings, decode, ["copy", "rev"])
        assert refused.value.status == 422


def test_a_server_translates_each_request_into_the_language_it_names(toy_run):
    from test_serve import Server, call

    server = Server(toy_run, "--beam", "1")
    try:
        test = toy_split(100, seed=2)
        for language in ("copy", "rev"):
            status, _, answer = call(f"{server.url}/translate",
                                     {"text": test["src"][:5], "tgt_lang": language})
            assert status == 200 and [t["text"] for t in answer["translations"]] \
                == test[language][:5]
        status, _, answer = call(f"{server.url}/translate", {"text": "a b"})
        assert status == 422 and "names no target language" in answer["error"]
        tagged = [f"<2{language}> {src}" for language, src in zip(("rev", "copy"), test["src"])]
        status, _, answer = call(f"{server.url}/translate", {"text": tagged})
        assert status == 200 and [t["text"] for t in answer["translations"]] == [
            test["rev"][0], test["copy"][1]]
        info = call(f"{server.url}/info")[2]
        assert info["target_languages"] == ["copy", "rev"]
        assert info["defaults"]["tgt_lang"] == ""
    finally:
        assert server.stop() == 0
    one_line_error(invoke("serve", str(toy_run), "--port", "0", "--tgt-lang", "de"),
                   "--tgt-lang 'de': this model translates into copy, rev")


def test_ctranslate2_translates_into_the_language_asked_for(toy_run, tmp_path):
    pytest.importorskip("ctranslate2")
    from nmt_cli.ct2 import CTranslate2Translator
    from nmt_cli.ct2_export import export_ctranslate2

    ct2 = CTranslate2Translator.from_dir(export_ctranslate2(toy_run, tmp_path / "ct2"), "cpu")
    nmt = Translator.from_run(toy_run, "cpu")
    assert ct2.target_languages == ["copy", "rev"]
    test = toy_split(100, seed=2)["src"]
    for language in ("copy", "rev"):
        config = DecodeConfig(beam=3, tgt_lang=language)
        assert ct2.translate(test, config) == nmt.translate(test, config)
    with pytest.raises(UserError, match="names no target language"):
        ct2.translate(test, DecodeConfig())
    tagged = [f"<2{'rev' if i % 2 else 'copy'}> {src}" for i, src in enumerate(test)]
    config = DecodeConfig(beam=3)
    assert ct2.translate(tagged, config) == nmt.translate(tagged, config)


def test_the_python_api_scores_into_the_language_named(toy_run):
    from nmt_cli.checkpoint import load_run
    from nmt_cli.scoring import score_pairs

    run = load_run(toy_run, torch.device("cpu"))
    test = toy_split(20, seed=2)
    with pytest.raises(UserError, match="name one"):
        score_pairs(run, torch.device("cpu"), test["src"], test["rev"])
    asked = {language: [pair.log_prob for pair in score_pairs(
        run, torch.device("cpu"), test["src"], test["rev"], tgt_lang=language)]
        for language in ("copy", "rev")}
    assert all(r > c + 5 for r, c, s in zip(asked["rev"], asked["copy"], test["src"])
               if s.split() != s.split()[::-1])


def test_a_failed_prepare_leaves_the_corpus_it_would_replace(two_targets, tmp_path):
    config = apply_overrides(preset("transformer"), {"tokenizer.vocab_size": 300})
    prepare(two_targets, tmp_path / "plain", "en", "de", config.tokenizer, 100)
    ready = tmp_path / "ready"
    prepare(two_targets, ready, "en", "de,fr", config.tokenizer, 100)
    before = {p.name: p.read_bytes() for p in ready.iterdir()}
    with pytest.raises(UserError, match="--tokenizer .*plain: its tokenizer has no <2de> tag"):
        prepare(two_targets, ready, "en", "de,fr", config.tokenizer, 100,
                tokenizer_from=tmp_path / "plain", replace=True)
    assert {p.name: p.read_bytes() for p in ready.iterdir()} == before


def test_a_model_of_several_languages_does_not_fine_tune_into_one(toy_run, tmp_path):
    config = apply_overrides(preset("transformer"), {
        **TOY, "data.data_dir": str(toy_run.parent / "corpus"), "train.max_steps": 1,
        "data.tgt_lang": "rev", "train.finetune_from": str(toy_run)})
    with pytest.raises(UserError, match="a run into rev alone has none"):
        Trainer(config, prepare_run_dir(tmp_path / "child"), lambda event: None)
    # --dump-config printed these settings, which training then refuses
    one_line_error(invoke("train", "--data", str(toy_run.parent / "corpus"), "--tgt-lang", "rev",
                          "--finetune", str(toy_run), "--dump-config"),
                   "a run into rev alone has none")


def test_an_ensemble_translates_into_one_set_of_languages(toy_run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(toy_run, other)
    description = json.loads((other / "config.json").read_text())
    description["config"]["data"]["tgt_lang"] = "copy"
    (other / "config.json").write_text(json.dumps(description))
    with pytest.raises(UserError, match="must translate into the same languages"):
        Translator.from_run(toy_run, "cpu", ensemble=[other])
    description["config"]["data"]["tgt_lang"] = "rev,copy"  # the same, in another order
    (other / "config.json").write_text(json.dumps(description))
    ensemble = Translator.from_run(toy_run, "cpu", ensemble=[other])
    test = toy_split(10, seed=2)
    alone = Translator.from_run(toy_run, "cpu")
    for language in ("copy", "rev"):  # two copies of one model: its own translations
        config = DecodeConfig(tgt_lang=language)
        assert ensemble.translate(test["src"], config) == alone.translate(test["src"], config)


def test_an_export_made_before_it_recorded_its_languages_takes_its_runs(toy_run, tmp_path):
    pytest.importorskip("ctranslate2")
    from nmt_cli.ct2 import CTranslate2Translator, read_export
    from nmt_cli.ct2_export import export_ctranslate2

    export = export_ctranslate2(toy_run, tmp_path / "ct2")
    meta = json.loads((export / "nmt-export.json").read_text())
    del meta["target_languages"]
    (export / "nmt-export.json").write_text(json.dumps(meta))
    assert CTranslate2Translator.from_dir(export, "cpu").target_languages == ["copy", "rev"]
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{")
    for run in (tmp_path / "gone", tmp_path / "broken"):  # no run at hand: no languages
        meta["run"] = str(run)
        (export / "nmt-export.json").write_text(json.dumps(meta))
        assert read_export(export)[2] == []
        # but the tokenizer's tags name them
        assert CTranslate2Translator.from_dir(export, "cpu").target_languages == ["copy", "rev"]


def test_the_length_ratio_filter_does_not_count_the_tag(two_targets, tmp_path):
    tags = frozenset({4})
    assert uneven([4, 10], [11, 12], 1.5, tags) and not uneven([4, 10], [11, 12], 1.5)
    text = load_split(two_targets, "train", "en", "de,fr")
    tokenizer = Tokenizer.train(text.src, text.tgt, TokenizerConfig(vocab_size=300), tmp_path,
                                ["<2de>", "<2fr>"])
    tagged = encode_parallel(text, tokenizer, 100, 1.3)
    alone = encode_parallel(load_split(two_targets, "train", "en", "de"), tokenizer, 100, 1.3)
    assert tagged.uneven == alone.uneven > 10  # the filter bites (not on the copies)
    assert [line for line in tagged.kept if line < 201] == alone.kept


def test_word_neighbours_are_never_a_language_tag(toy_run):
    from nmt_cli.word_vectors import not_words

    tokenizer = Translator.from_run(toy_run, "cpu").run.tokenizer
    for side in ("src", "tgt"):
        found = invoke("embeddings", str(toy_run), "--neighbors", "a", "-k", "5000", "--side",
                       side, "--json")
        assert found.exit_code == 0, found.output
        labels = [n["label"] for n in json.loads(found.stdout)["neighbours"]]
        assert labels and not set(labels) & set(tokenizer.tags)
    assert len(tokenizer.tags) == 2 and set(tokenizer.tag_ids) <= not_words(tokenizer.src)
    refused = invoke("embeddings", str(toy_run), "--neighbors", "<2rev>")
    assert refused.exit_code == 1 and "the vocabulary has no piece of it" in refused.stderr


def test_learning_curves_draw_each_languages_bleu(toy_run, tmp_path):
    from nmt_cli.learning_curves import learning_curves
    from nmt_cli.pictures import draw_curves, read_png

    curve = learning_curves([toy_run])[0].to_json()
    records = [json.loads(line) for line in (toy_run / "metrics.jsonl").read_text().splitlines()
               if '"validate"' in line]
    assert curve["val_bleu_by_language"] == {
        language: [r[f"val_bleu_{language}"] for r in records] for language in ("copy", "rev")}
    assert curve["val_chrf_by_language"] == {
        language: [r[f"val_chrf_{language}"] for r in records] for language in ("copy", "rev")}
    drawn = draw_curves([curve], tmp_path / "each.png")
    plain = draw_curves([{**curve, "val_bleu_by_language": {}}], tmp_path / "plain.png")
    assert (read_png(drawn) != read_png(plain)).any()
    chrf = draw_curves([curve], tmp_path / "chrf.png", "chrf")
    plain = draw_curves([{**curve, "val_chrf_by_language": {}}], tmp_path / "plain.png", "chrf")
    assert (read_png(chrf) != read_png(plain)).any()
