"""Prepared corpora: ids written once, read back exactly, trained on like the text."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import nmt_cli.prepared
from nmt_cli.cli import app
from nmt_cli.config import UserError, apply_overrides, preset
from nmt_cli.data import encode_parallel, load_split, make_batch
from nmt_cli.prepared import check_filters, is_prepared, open_prepared, prepare
from nmt_cli.tokenizer import Tokenizer
from nmt_cli.training import Trainer, prepare_run_dir, resume

from conftest import read_sample, write_corpus

SETTINGS = {"model.d_model": 32, "model.num_heads": 4, "model.num_encoder_layers": 1,
            "model.num_decoder_layers": 1, "model.d_ff": 64, "tokenizer.vocab_size": 300,
            "train.batch_tokens": 600, "data.max_len": 30, "data.max_len_ratio": 1.5}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"), {
        "train": (read_sample("train", "en", 300) + [""], read_sample("train", "de", 300) + ["x"]),
        "val": (read_sample("val", "en", 10), read_sample("val", "de", 10))})


@pytest.fixture(scope="module")
def prepared(corpus, tmp_path_factory):
    config = apply_overrides(preset("transformer"), SETTINGS)
    out = tmp_path_factory.mktemp("prepared")
    prepare(corpus, out, "en", "de", config.tokenizer, config.data.max_len,
            max_ratio=config.data.max_len_ratio)
    return out


def test_prepared_ids_read_back_exactly_what_encoding_the_text_gives(corpus, prepared):
    text = load_split(corpus, "train", "en", "de")
    expected = encode_parallel(text, Tokenizer.load(prepared), 30, 1.5)
    mapped = open_prepared(prepared, "en", "de")
    assert len(mapped.src) == len(expected.src) == 300 - expected.too_long - expected.uneven
    assert mapped.uneven == expected.uneven > 0 and mapped.max_ratio == 1.5
    assert [mapped.src[i] for i in range(len(mapped.src))] == expected.src
    assert [mapped.tgt[i] for i in range(len(mapped.tgt))] == expected.tgt
    assert mapped.empty == expected.empty == 1
    assert list(mapped.src_lengths) == [len(s) for s in expected.src]


def test_training_from_prepared_ids_equals_training_from_text(corpus, prepared, tmp_path):
    losses = {}
    for name, data in (("text", corpus), ("prepared", prepared)):
        config = apply_overrides(preset("transformer"), {
            **SETTINGS, "data.data_dir": str(data), "train.max_steps": 4})
        trainer = Trainer(config, prepare_run_dir(tmp_path / name), lambda e: None)
        losses[name] = [trainer.train_step([b])[0] for b in trainer.epoch_batches(0)[:4]]
    assert losses["prepared"] == losses["text"]


def test_a_corpus_prepared_again_with_another_tokenizer_is_not_resumed_on(corpus, tmp_path):
    """Its ids name other pieces than the run's tokenizer does: resuming on them would train
    on nonsense. Nor is a prepared corpus replaced without --force."""
    config = apply_overrides(preset("transformer"), {**SETTINGS, "train.max_steps": 1})
    out = tmp_path / "prepared"
    prepare(corpus, out, "en", "de", config.tokenizer, 30)
    run_dir = prepare_run_dir(tmp_path / "run")
    Trainer(apply_overrides(config, {"data.data_dir": str(out)}), run_dir, lambda e: None).run()
    bpe = apply_overrides(config, {"tokenizer.model_type": "bpe"}).tokenizer
    with pytest.raises(UserError, match="holds a prepared corpus already; add --force"):
        prepare(corpus, out, "en", "de", bpe, 30)
    prepare(corpus, out, "en", "de", bpe, 30, replace=True)
    with pytest.raises(UserError, match=f"prepared again with another tokenizer than this "
                                        f"run's: prepare it as before \\(nmt data prepare "
                                        f"--tokenizer {run_dir}\\)"):
        resume(run_dir, {"train.max_steps": 2})
    prepare(corpus, out, "en", "de", bpe, 30, tokenizer_from=run_dir, replace=True)
    resume(run_dir, {"train.max_steps": 2})
    assert json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 2


def test_a_corpus_prepared_again_from_other_pairs_is_not_resumed_on(corpus, tmp_path):
    """With the run's tokenizer but another data.max_len, or from text with a word changed,
    it holds other pairs (prepared.json's digest of the ids tells them apart); prepared again
    as before, the same ones."""
    config = apply_overrides(preset("transformer"), {**SETTINGS, "train.max_steps": 1})
    out, run_dir = tmp_path / "prepared", prepare_run_dir(tmp_path / "run")
    prepare(corpus, out, "en", "de", config.tokenizer, 30)
    Trainer(apply_overrides(config, {"data.data_dir": str(out)}), run_dir, lambda e: None).run()
    changed = shutil.copytree(corpus, tmp_path / "changed")
    lines = (changed / "train.de").read_text().splitlines()
    lines[1] = lines[1].replace("Garten", "Haus")  # a short pair, kept
    (changed / "train.de").write_text("".join(f"{line}\n" for line in lines))
    for data, max_len, what in ((corpus, 8, r"\d+ pairs then, \d+ now"),
                                (changed, 30, "as many, but others")):
        prepare(data, out, "en", "de", config.tokenizer, max_len, tokenizer_from=run_dir,
                replace=True)
        with pytest.raises(UserError, match=f"its train pairs are not those this run began "
                                            f"with \\({what}\\)"):
            resume(run_dir, {"train.max_steps": 2})
    prepare(corpus, out, "en", "de", config.tokenizer, 30, tokenizer_from=run_dir, replace=True)
    resume(run_dir, {"train.max_steps": 2})
    assert json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 2


def test_a_corpus_prepared_again_leaves_no_split_of_the_one_before(corpus, tmp_path):
    """Prepared again (--force) from a corpus with gzipped validation files and no test split,
    the folder held the old val.en beside the new val.en.gz, and val.en was read; and the old
    test split, which `nmt eval` scored."""
    config = apply_overrides(preset("transformer"), SETTINGS)
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(corpus, first)
    shutil.copytree(corpus, second)
    for lang in ("en", "de"):
        (first / f"test.{lang}").write_text("".join(f"{line}\n" for line in read_sample(
            "test", lang, 5)), encoding="utf-8")
        (second / f"val.{lang}").unlink()
        subprocess.run(["gzip", "-c", str(corpus / f"val.{lang}")], check=True,
                       stdout=(second / f"val.{lang}.gz").open("wb"))
    out = tmp_path / "prepared"
    prepare(first, out, "en", "de", config.tokenizer, 30)
    assert {"val.en", "test.en", "test.de"} <= {p.name for p in out.iterdir()}
    prepare(second, out, "en", "de", config.tokenizer, 30, replace=True)
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(("val.", "test"))) == [
        "val.de.gz", "val.en.gz"]


def test_a_run_on_a_prepared_corpus_is_scored_on_the_test_split_copied_there(corpus, prepared,
                                                                            tmp_path):
    """The test files go with the validation files (none when the corpus has no test
    split), so that `nmt eval --run` finds them."""
    assert not list(prepared.glob("test*"))
    folder = tmp_path / "corpus"
    shutil.copytree(corpus, folder)
    for lang in ("en", "de"):
        (folder / f"test.{lang}").write_text("".join(f"{line}\n" for line in read_sample(
            "test", lang, 7)), encoding="utf-8")
    config = apply_overrides(preset("transformer"), SETTINGS)
    prepare(folder, tmp_path / "prepared", "en", "de", config.tokenizer, config.data.max_len)
    assert (tmp_path / "prepared" / "test.de").read_text() == (folder / "test.de").read_text()
    config = apply_overrides(config, {"data.data_dir": str(tmp_path / "prepared"),
                                      "train.max_steps": 1})
    run = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None).run()
    result = CliRunner().invoke(app, ["eval", "--run", str(run), "--beam", "1",
                                      "--max-len-b", "3", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sentences"] == 7


def test_subword_sampling_asks_for_the_text_of_a_prepared_corpus(prepared, tmp_path):
    config = apply_overrides(preset("transformer"), {
        **SETTINGS, "data.data_dir": str(prepared), "tokenizer.sampling_alpha": 0.1})
    with pytest.raises(UserError, match=r"tokenizer.sampling_alpha: .* plain-text corpus"):
        Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)


def test_guided_alignment_asks_for_a_corpus_prepared_with_the_links(prepared, tmp_path):
    links = tmp_path / "train.align"
    links.write_text("0-0\n")
    config = apply_overrides(preset("transformer"), {
        **SETTINGS, "data.data_dir": str(prepared), "data.alignments": str(links)})
    with pytest.raises(UserError, match=r"data.alignments: .* was prepared without word "
                                        r"alignments; prepare it again with --alignments"):
        Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)


def write_links(path, sources: list[str], targets: list[str], word: int) -> str:
    """Links that tie every target word to source word `word` (or the last, if fewer), and
    none for a pair with an empty side."""
    lines = [" ".join(f"{min(word, len(s.split()) - 1)}-{k}" for k in range(len(t.split())))
             if s.split() else "" for s, t in zip(sources, targets)]
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def linked(corpus, tmp_path_factory) -> tuple:
    """The corpus with a second target language, "fr" (the English itself), and links for
    each: German's to the first source word, the other's to the second."""
    folder = tmp_path_factory.mktemp("linked") / "corpus"
    shutil.copytree(corpus, folder)
    text = load_split(corpus, "train", "en", "de")
    for split in ("train", "val"):
        shutil.copyfile(folder / f"{split}.en", folder / f"{split}.fr")
    return folder, (write_links(folder.parent / "de.align", text.src, text.tgt, 0),
                    write_links(folder.parent / "fr.align", text.src, text.src, 1))


@pytest.mark.parametrize("tgt_lang", ["de", "de,fr"])
def test_training_on_prepared_links_equals_training_on_the_text_and_its_links(linked, tmp_path,
                                                                              tgt_lang):
    folder, files = linked
    files = list(files[: len(tgt_lang.split(","))])
    config = apply_overrides(preset("transformer"), {
        **SETTINGS, "data.tgt_lang": tgt_lang, "data.alignments": ",".join(files),
        "train.max_steps": 4})
    out = tmp_path / "prepared"
    info = prepare(folder, out, "en", tgt_lang, config.tokenizer, 30, max_ratio=1.5,
                   alignments=files)
    assert info["alignments"] == files and info["links"] > 1000
    losses, golds = {}, {}
    for name, data in (("text", folder), ("prepared", out)):
        trainer = Trainer(apply_overrides(config, {"data.data_dir": str(data)}),
                          prepare_run_dir(tmp_path / f"run-{name}"), lambda e: None)
        pairs = trainer.corpus.train
        golds[name] = make_batch(pairs, np.arange(len(pairs.src))).alignment
        losses[name] = [trainer.train_step([b])[0] for b in trainer.epoch_batches(0)[:4]]
    assert golds["text"].sum() > 1000 and torch.equal(golds["prepared"], golds["text"])
    assert losses["prepared"] == losses["text"]


def test_links_go_unread_where_their_weight_is_0_and_are_checked_on_resuming(linked, tmp_path):
    folder, files = linked
    config = apply_overrides(preset("transformer"), {**SETTINGS, "train.max_steps": 1})
    out = tmp_path / "prepared"
    prepare(folder, out, "en", "de", config.tokenizer, 30, max_ratio=1.5, alignments=files[:1])
    config = apply_overrides(config, {"data.data_dir": str(out)})
    events = []
    guided = Trainer(config, prepare_run_dir(tmp_path / "guided"), events.append)
    assert guided.config.data.alignments == files[0]  # the corpus's, in the run's config
    assert guided.corpus.train.alignments is not None
    kept = len(guided.corpus.train.src)  # every kept pair: SentencePiece counts words alike
    assert any(f"data.alignments: word links for {kept} of the kept pairs (prepared)" ==
               event.get("message") for event in events), events
    unread = apply_overrides(config, {"train.alignment_weight": 0.0})
    assert Trainer(unread, prepare_run_dir(tmp_path / "plain"),
                   lambda e: None).corpus.train.alignments is None
    check_filters(out, guided.config)
    prepare(folder, out, "en", "de", config.tokenizer, 30, max_ratio=1.5,  # without, now
            replace=True)
    assert not (out / "train.align.bin").exists()
    with pytest.raises(UserError, match=r"prepared again with data.alignments=''; this run "
                                        r"trained with '.*de.align'"):
        check_filters(out, guided.config)


def test_pairs_whose_alignment_line_is_blank_are_not_counted_as_linked(linked, tmp_path):
    folder, files = linked
    lines = Path(files[0]).read_text().splitlines()
    blanked = tmp_path / "blank.align"
    blanked.write_text("".join(f"{'' if i < 5 else line}\n" for i, line in enumerate(lines)))
    config = apply_overrides(preset("transformer"), {**SETTINGS, "data.alignments": str(blanked)})
    out = tmp_path / "prepared"
    prepare(folder, out, "en", "de", config.tokenizer, 30, max_ratio=1.5, alignments=[blanked])
    for data, where in ((folder, ""), (out, " (prepared)")):
        events = []
        trainer = Trainer(apply_overrides(config, {"data.data_dir": str(data)}),
                          prepare_run_dir(tmp_path / f"run-{data.name}"), events.append)
        if data == folder:  # the lines each kept pair came from
            blank = sum(line < 5 for line in trainer.corpus.train.kept)
        kept = len(trainer.corpus.train.src)
        assert 0 < blank < 5
        assert f"data.alignments: word links for {kept - blank} of the kept pairs; {blank} " \
               f"have a blank line: no links{where}" in [e.get("message") for e in events]


def test_bad_or_damaged_links_are_one_line_errors(linked, tmp_path):
    folder, files = linked
    short = tmp_path / "short.align"
    short.write_text("0-0\n0-0\n")
    lines = Path(files[0]).read_text().splitlines()
    bad = tmp_path / "bad.align"
    bad.write_text("".join(f"{line}\n" for line in [lines[0], "0-0 50-0", *lines[2:]]))
    words = len(load_split(folder, "train", "en", "de").src[1].split())
    long = tmp_path / "long.align"
    long.write_text("".join(f"{line}\n" for line in [*lines, "0-0"]))
    for path, message in ((short, f"{short}: 2 lines of alignments for 301 training pairs"),
                          (long, f"{long}: 302 lines of alignments for 301 training pairs"),
                          (bad, f"{bad}:2: 50-0 names source word 50, but that training pair's "
                                f"source has {words} words")):
        out = tmp_path / path.stem
        result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare", "--data",
                                 str(folder), "--out", str(out), "--alignments", str(path),
                                 "--set", "tokenizer.vocab_size=300"],
                                capture_output=True, text=True)
        assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
        assert message in result.stderr
        assert not is_prepared(out) and not list(out.glob(".*.tmp"))
    out = tmp_path / "prepared"
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare", "--data",
                             str(folder), "--out", str(out), "--alignments", files[0],
                             "--set", "tokenizer.vocab_size=300"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "word links, none for 0 pairs whose words SentencePiece counts" in result.stderr
    links = open_prepared(out, "en", "de").links
    text = load_split(folder, "train", "en", "de")
    assert links[0].tolist() == [[0, k] for k in range(len(text.tgt[0].split()))]
    index = np.fromfile(out / "train.align.index.bin", np.int64).reshape(-1, 2)
    index[6, 0] = 10**9  # past the end of train.align.bin
    index.tofile(out / "train.align.index.bin")
    with pytest.raises(UserError, match=r"train.align.index.bin: pair 7 points outside "
                                        r"train.align.bin; prepare the corpus again"):
        open_prepared(out, "en", "de")
    (out / "train.align.bin").write_bytes(b"\0")
    with pytest.raises(UserError, match=r"train.align.bin: 1 bytes where .* were written"):
        open_prepared(out, "en", "de")


def test_a_run_on_a_prepared_corpus_records_the_tokenizer_settings_it_was_made_with(
        prepared, tmp_path):
    config = apply_overrides(preset("transformer"), {
        **SETTINGS, "data.data_dir": str(prepared), "tokenizer.vocab_size": 32000,
        "tokenizer.model_type": "bpe", "data.max_len": 50, "data.max_len_ratio": 3.0})
    events = []
    Trainer(config, prepare_run_dir(tmp_path / "run"), events.append)
    messages = [event.get("message", "") for event in events]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert (saved["tokenizer"]["vocab_size"], saved["tokenizer"]["model_type"]) == (300, "unigram")
    assert (saved["data"]["max_len"], saved["data"]["max_len_ratio"]) == (30, 1.5)
    assert any("prepared with vocab_size=300, model_type='unigram', data.max_len=30, "
               "data.max_len_ratio=1.5" in m for m in messages)
    assert any("longer than 30 tokens dropped, " in m and "with one side over 1.5 times as "
               "long as the other dropped (prepared)" in m for m in messages)


def test_only_the_settings_that_made_the_tokenizer_are_taken(corpus, prepared, tmp_path):
    sampling = apply_overrides(preset("transformer"), {**SETTINGS, "tokenizer.sampling_alpha": 0.1})
    out = tmp_path / "prepared"
    prepare(corpus, out, "en", "de", sampling.tokenizer, 30)  # sampling belongs to the run
    info = json.loads((out / "prepared.json").read_text())
    assert set(info["tokenizer"]) == {"vocab_size", "model_type", "joint", "character_coverage",
                                      "byte_fallback"}
    config = apply_overrides(preset("transformer"), {**SETTINGS, "data.data_dir": str(out)})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)
    assert trainer.config.tokenizer.sampling_alpha == 0.0
    trainer.train_step([trainer.epoch_batches(0)[0]])
    del info["tokenizer"]  # as written before the settings were recorded: nothing is taken
    (out / "prepared.json").write_text(json.dumps(info))
    config = apply_overrides(config, {"tokenizer.model_type": "bpe"})
    trainer = Trainer(config, prepare_run_dir(tmp_path / "older"), lambda e: None)
    assert trainer.config.tokenizer.model_type == "bpe"


def test_a_resumed_run_keeps_the_tokenizer_settings_it_started_with(prepared, tmp_path):
    copy = tmp_path / "prepared"
    shutil.copytree(prepared, copy)
    config = apply_overrides(preset("transformer"), {
        **SETTINGS, "data.data_dir": str(copy), "train.max_steps": 2})
    run = prepare_run_dir(tmp_path / "run")
    Trainer(config, run, lambda e: None).run()
    info = json.loads((copy / "prepared.json").read_text())
    info["tokenizer"]["model_type"] = "bpe"  # prepared again since, differently
    (copy / "prepared.json").write_text(json.dumps(info))
    resume(run, {"train.max_steps": 3})
    saved = json.loads((run / "config.json").read_text())["config"]
    assert (saved["tokenizer"]["model_type"], saved["train"]["max_steps"]) == ("unigram", 3)


def test_damaged_or_mismatched_prepared_corpora_are_one_line_errors(prepared, tmp_path):
    with pytest.raises(UserError, match="prepared for en-de, not en-fr"):
        open_prepared(prepared, "en", "fr")
    dumped = CliRunner().invoke(app, ["train", "--data", str(prepared), "--tgt-lang", "fr",
                                      "--dump-config"])  # printed what training refuses
    assert dumped.exit_code == 1 and "prepared for en-de, not en-fr" in dumped.output
    damaged = tmp_path / "damaged"
    subprocess.run(["cp", "-r", str(prepared), str(damaged)], check=True)
    ids = damaged / "train.tgt.bin"
    ids.write_bytes(ids.read_bytes()[:-2])
    with pytest.raises(UserError, match="train.tgt.bin: .* bytes where .* were written"):
        open_prepared(damaged, "en", "de")
    ids.write_bytes((prepared / "train.tgt.bin").read_bytes())
    index_path = damaged / "train.index.bin"
    whole = np.fromfile(index_path, np.int64).reshape(-1, 4)
    for row, column, value, name in ((5, 1, -1, "src"),  # a negative source length
                                     (7, 2, 10**9, "tgt")):  # a target offset past its file
        index = whole.copy()
        index[row, column] = value
        index.tofile(index_path)
        with pytest.raises(UserError, match=rf"index.bin: pair {row + 1} points outside "
                                            rf"train.{name}.bin; prepare the corpus again"):
            open_prepared(damaged, "en", "de")
    whole.tofile(index_path)
    src_ids = np.fromfile(damaged / "train.src.bin", np.uint16)
    src_ids[whole[0, 0]] = 299  # the vocabulary has 300 ids: fine
    src_ids[whole[3, 0]] = 300  # not
    src_ids.tofile(damaged / "train.src.bin")
    text = open_prepared(damaged, "en", "de", (300, 300))
    assert text.src[0][0] == 299
    with pytest.raises(UserError, match=r"train.src.bin: sentence 4 holds id 300, outside"):
        text.src[3]
    info = json.loads((damaged / "prepared.json").read_text())
    (damaged / "prepared.json").write_text("[]")
    with pytest.raises(UserError, match=r"prepared.json: expected an object"):
        open_prepared(damaged, "en", "de")
    for key, value in (("empty", None), ("too_long", "x"), ("src_ids", "11852"),
                       ("pairs", True), ("tgt_ids", -1), ("dtype", "object"), ("dtype", "int8"),
                       ("max_len_ratio", "2")):  # each a traceback, or ids read as negative
        edited = {**info, key: value} if value is not None else {
            k: v for k, v in info.items() if k != key}
        (damaged / "prepared.json").write_text(json.dumps(edited))
        with pytest.raises(UserError, match=rf"prepared.json: {key} is {value!r}, not "):
            open_prepared(damaged, "en", "de")
    info["tokenizer"]["model_type"] = "wordpiece"
    (damaged / "prepared.json").write_text(json.dumps(info))
    config = apply_overrides(preset("transformer"), {**SETTINGS, "data.data_dir": str(damaged)})
    with pytest.raises(UserError, match=r"prepared.json: .*tokenizer.model_type"):
        Trainer(config, prepare_run_dir(tmp_path / "run"), lambda e: None)


def test_a_failed_prepare_leaves_no_prepared_corpus(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", {"train": (["a", "b"], ["c"]),
                                                "val": (["a"], ["c"])})
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare", "--data",
                             str(corpus), "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "line counts differ" in result.stderr
    assert not is_prepared(out) and not list(out.glob(".*.tmp"))


def test_a_prepare_that_fails_once_the_tokenizer_is_made_leaves_nothing_of_it(corpus, tmp_path):
    """Every pair over data.max_len: the tokenizer and the (empty) id files were left in the
    folder, which then looked like half a prepared corpus; a folder made for it goes too."""
    config = apply_overrides(preset("transformer"), SETTINGS)
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    for out in (tmp_path / "made", kept):
        with pytest.raises(UserError, match="no usable training pairs"):
            prepare(corpus, out, "en", "de", config.tokenizer, 1)
    assert not (tmp_path / "made").exists()
    assert [path.name for path in kept.iterdir()] == ["notes.txt"]


def test_prepare_checks_the_validation_files_as_training_would(corpus, tmp_path):
    unequal = shutil.copytree(corpus, tmp_path / "corpus")
    (unequal / "val.de").write_text("Ein Hund.\n")
    config = apply_overrides(preset("transformer"), SETTINGS)
    with pytest.raises(UserError, match=r"line counts differ: .*val.en has 10 lines, "
                                        r".*val.de has 1"):
        prepare(unequal, tmp_path / "out", "en", "de", config.tokenizer, 30)
    assert not (tmp_path / "out").exists()


def test_prepare_refuses_to_write_into_the_corpus_it_reads(corpus):
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare", "--data",
                             str(corpus), "--out", str(corpus)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "the same folder as --data" in result.stderr
    assert not (corpus / "prepared.json").exists() and not list(corpus.glob("*.bin"))
    a_file = next(corpus.glob("train.*"))
    for option, given, message in (("--out", a_file, f"--out {a_file}: a file, not a folder"),
                                   ("--data", a_file, f"corpus folder {a_file}: a file, not")):
        args = {"--data": str(corpus), "--out": str(corpus.parent / "out"), option: str(given)}
        result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare",
                                 *[x for pair in args.items() for x in pair]],
                                capture_output=True, text=True)
        assert result.returncode == 1 and result.stderr.startswith(f"error: {message}")


def test_prepare_refuses_settings_it_would_not_use(corpus, tmp_path):
    """--set data.tgt_lang=fr prepared the German targets, saying nothing."""
    out = tmp_path / "out"
    for setting, hint in (("data.tgt_lang=fr", "; give --tgt-lang"),
                          ("model.d_model=32", "")):
        result = CliRunner().invoke(app, ["data", "prepare", "--data", str(corpus), "--out",
                                          str(out), "--set", setting])
        assert result.exit_code == 1 and result.stderr == (
            f"error: --set {setting}: nmt data prepare takes tokenizer.*, data.max_len, "
            f"data.max_len_ratio, train.seed{hint}\n")
    assert not out.exists()


def test_prepare_refuses_to_write_over_a_corpus_of_text(corpus, tmp_path):
    """--out naming another corpus folder would have lost its validation and test files, and
    left its training text beside ids that training then reads instead; --force is for
    prepared corpora only."""
    other = shutil.copytree(corpus, tmp_path / "other")
    (other / "test_2016.de").write_text("Ein Test.\n")
    before = {path.name: path.read_bytes() for path in other.iterdir()}
    config = apply_overrides(preset("transformer"), SETTINGS)
    for replace in (False, True):
        with pytest.raises(UserError, match=r"--out .*other: holds a corpus as text \("
                                            r"test_2016.de, train.de, train.en, val.de, \.\.\.\)"
                                            r", whose validation and test files preparing "
                                            r"would replace; choose a new or empty folder"):
            prepare(corpus, other, "en", "de", config.tokenizer, 30, replace=replace)
    assert {path.name: path.read_bytes() for path in other.iterdir()} == before
    leftover = tmp_path / "leftover"  # the copies a prepare that failed midway leaves
    leftover.mkdir()
    for name in ("val.en", "val.de"):
        shutil.copyfile(corpus / name, leftover / name)
    prepare(corpus, leftover, "en", "de", config.tokenizer, 30)
    assert is_prepared(leftover)


def test_a_failed_prepare_leaves_the_corpus_prepared_there_before(corpus, tmp_path):
    """--force deleted the prepared corpus first: one that then failed (an odd line count,
    Ctrl-C, a vocabulary too small) left a folder its runs could not resume on. And --out
    naming a run directory took its tokenizer."""
    config = apply_overrides(preset("transformer"), {**SETTINGS, "train.max_steps": 1})
    out, run_dir = tmp_path / "prepared", prepare_run_dir(tmp_path / "run")
    prepare(corpus, out, "en", "de", config.tokenizer, 30)
    Trainer(apply_overrides(config, {"data.data_dir": str(out)}), run_dir, lambda e: None).run()
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    broken = shutil.copytree(corpus, tmp_path / "broken")
    lines = (broken / "train.de").read_text().splitlines()
    (broken / "train.de").write_text("".join(f"{line}\n" for line in lines[:-1]))
    too_small = apply_overrides(config, {"tokenizer.vocab_size": 10}).tokenizer
    for data, tokenizer, message in ((broken, config.tokenizer, "line counts differ"),
                                     (corpus, too_small, "vocab_size 10 is too small")):
        with pytest.raises(UserError, match=message):
            prepare(data, out, "en", "de", tokenizer, 30, replace=True)
        assert {path.name: path.read_bytes() for path in out.iterdir()} == before
        assert [path.name for path in tmp_path.iterdir() if "preparing" in path.name] == []
    resume(run_dir, {"train.max_steps": 2})
    assert json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 2
    # a file that fails to move in (another file system, a full disk): the old ones move back
    rename = Path.rename

    def failing(path, target):
        if path.parent.name == ".preparing" and path.name == "train.tgt.bin":
            raise OSError(18, "Invalid cross-device link")
        return rename(path, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "rename", failing)
        with pytest.raises(OSError, match="cross-device"):
            prepare(corpus, out, "en", "de", config.tokenizer, 20, replace=True)
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    # a prepare killed while the old files move out, or the new ones in (the move fails and
    # nothing puts the old files back): the next prepare there puts them back first
    for where, name in ((out, "train.src.bin"), (out / ".preparing", "train.tgt.bin")):
        def killed(path, target, where=where, name=name):
            if path.parent == where and path.name == name:
                raise KeyboardInterrupt
            return rename(path, target)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Path, "rename", killed)
            patch.setattr(nmt_cli.prepared, "put_back", lambda out_dir: None)
            with pytest.raises(KeyboardInterrupt):
                prepare(corpus, out, "en", "de", config.tokenizer, 20, replace=True)
        assert not (out / "prepared.json").exists()
        with pytest.raises(UserError, match="an `nmt data prepare` was stopped there"):
            resume(run_dir, {"train.max_steps": 3})  # not "no train file for language 'en'"
        with pytest.raises(UserError, match="line counts differ"):
            prepare(broken, out, "en", "de", config.tokenizer, 20, replace=True)
        assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    for name in ("test.py", "dev.log", "test_plan.md", "notes.txt"):  # a user's own files
        (out / name).write_text("mine")
    prepare(corpus, out, "en", "de", config.tokenizer, 20, replace=True)
    assert {"test.py", "dev.log", "test_plan.md", "notes.txt"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / "prepared.json").read_text())["max_len"] == 20
    assert not [path for path in out.iterdir() if path.name.startswith(".")]
    spm = (run_dir / "spm.model").read_bytes()
    with pytest.raises(UserError, match=r"--out .*run: holds spm\.model, which preparing "
                                        r"would replace, and is no prepared corpus \(a run\?\)"):
        prepare(corpus, run_dir, "en", "de", config.tokenizer, 30, replace=True)
    assert (run_dir / "spm.model").read_bytes() == spm


def test_prepare_command_writes_a_corpus_that_train_reads(corpus, tmp_path):
    out = tmp_path / "prepared"
    result = subprocess.run([sys.executable, "-m", "nmt_cli", "data", "prepare", "--data",
                             str(corpus), "--out", str(out), "--set", "tokenizer.vocab_size=300"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "prepared.json").read_text())["pairs"] == 300


def test_a_resumed_run_refuses_its_corpus_prepared_again_with_another_ratio(prepared, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(prepared, again)
    info = json.loads((again / "prepared.json").read_text())
    (again / "prepared.json").write_text(json.dumps({**info, "max_len_ratio": 2.0}))
    config = apply_overrides(preset("transformer"), {**SETTINGS, "data.data_dir": str(again)})
    with pytest.raises(UserError, match=r"prepared again with data.max_len_ratio=2.0; this run "
                                        r"trained with 1.5"):
        check_filters(again, config)
    check_filters(prepared, config)  # as prepared: fine


def test_only_a_transformer_reads_at_most_max_positions_of_a_prepared_corpus(prepared):
    """A GRU has no table of positions: its corpus may be prepared longer (it was refused)."""
    from nmt_cli.prepared import with_its_settings

    limit = json.loads((prepared / "prepared.json").read_text())["max_len"] - 1
    for arch, refused in (("gru", False), ("transformer", True)):
        config = apply_overrides(preset(arch), {"model.max_positions": limit,
                                                "data.max_len": limit})
        if refused:
            with pytest.raises(UserError, match=f"model.max_positions {limit}"):
                with_its_settings(prepared, config)
        else:
            assert with_its_settings(prepared, config)[0].data.max_len == limit + 1
