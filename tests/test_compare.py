"""`nmt compare` (sacreBLEU's paired tests) and `nmt eval --save-hyp/--by-length`, as a user
runs them, bad input included."""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU
from test_cli import invoke, one_line_error
from test_nbest import train_tiny_run

from nmt_cli.evaluation import Evaluation, bleu_by_length, bucket_labels

from conftest import read_sample

SENTENCES = 150


@pytest.fixture(scope="module")
def systems(tmp_path_factory) -> dict[str, Path]:
    """A reference of the sample test set; A drops every seventh word of it, B is A with
    its lines shuffled, short is A's first 10 lines."""
    root = tmp_path_factory.mktemp("systems")
    reference = read_sample("test", "de", SENTENCES)
    a = [" ".join(w for i, w in enumerate(line.split()) if i % 7 != 3) for line in reference]
    b = a[:]
    random.Random(0).shuffle(b)
    files = {"ref": reference, "a": a, "b": b, "short": a[:10]}
    for name, lines in files.items():
        (root / f"{name}.de").write_text("".join(f"{line}\n" for line in lines),
                                         encoding="utf-8")
    return {name: root / f"{name}.de" for name in files}


def compare_json(*args: str) -> dict:
    result = invoke("compare", *args, "--samples", "200", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_system_against_itself_and_against_shuffled_lines(systems):
    out = compare_json("--ref", str(systems["ref"]), str(systems["a"]), str(systems["a"]),
                       str(systems["b"]))
    assert out["sentences"] == SENTENCES and set(out["signatures"]) == {"bootstrap", "ar"}
    first, itself, shuffled = out["systems"]
    references = systems["ref"].read_text(encoding="utf-8").splitlines()
    hypotheses = systems["a"].read_text(encoding="utf-8").splitlines()
    assert first["metrics"][0]["metric"] == "BLEU"
    assert first["metrics"][0]["score"] == pytest.approx(
        BLEU().corpus_score(hypotheses, [references]).score)
    for metric in first["metrics"]:
        assert metric["p_bootstrap"] is None and metric["p_ar"] is None
        assert metric["ci95"] > 0 and abs(metric["mean"] - metric["score"]) < metric["ci95"]
    for metric in itself["metrics"]:
        assert metric["p_bootstrap"] == 1.0 and metric["p_ar"] == 1.0
    for metric in shuffled["metrics"]:
        assert metric["p_bootstrap"] < 0.05 and metric["p_ar"] < 0.05
    again = compare_json("--ref", str(systems["ref"]), str(systems["a"]), str(systems["a"]),
                         str(systems["b"]))
    assert again == out  # seeded: the same intervals and p-values


def test_a_system_that_differs_only_where_no_metric_looks_is_not_significant(systems,
                                                                             tmp_path):
    """Double spaces and a space before the full stop change no statistic of BLEU (whose
    tokenizer splits the stop off) or chrF (which ignores spaces): p = 1, not the
    1/(samples + 1) that sacreBLEU gives a difference of exactly 0 everywhere."""
    lines = systems["a"].read_text(encoding="utf-8").splitlines()
    spaced, changed = tmp_path / "spaced.de", tmp_path / "changed.de"
    spaced.write_text("".join(f"{line.replace(' ', '  ').replace('.', ' .')}\n"
                              for line in lines), encoding="utf-8")
    changed.write_text("".join(f"{line}\n" for line in [lines[0] + " Hund", *lines[1:]]),
                       encoding="utf-8")
    out = compare_json("--ref", str(systems["ref"]), str(systems["a"]), str(spaced),
                       str(changed))
    _, alike, other = out["systems"]
    assert all(m["p_bootstrap"] == 1.0 and m["p_ar"] == 1.0 for m in alike["metrics"])
    assert all(m["p_bootstrap"] < 1.0 for m in other["metrics"])


def test_randomization_counts_the_trials_that_tie_with_the_observed_difference(systems,
                                                                              tmp_path):
    """Systems one sentence apart tie with the observed difference in every trial (swapping
    that sentence only turns its sign): p = 1, where sacreBLEU's count of the trials that
    exceed it gave 1/(trials + 1), the strongest evidence there is. Three sentences apart,
    a quarter of the trials keep all three or swap all three."""
    lines = systems["a"].read_text(encoding="utf-8").splitlines()
    apart = {}
    for count in (1, 3):
        apart[count] = tmp_path / f"apart{count}.de"
        apart[count].write_text("".join(
            f"{' '.join(reversed(line.split())) if i < count else line}\n"
            for i, line in enumerate(lines)), encoding="utf-8")
    out = compare_json("--ref", str(systems["ref"]), str(systems["a"]), str(apart[1]),
                       str(apart[3]))
    _, one, three = out["systems"]
    assert [m["p_ar"] for m in one["metrics"]] == [1.0, 1.0]
    assert all(0.15 < m["p_ar"] < 0.35 for m in three["metrics"]), three


def test_one_method_and_the_table(systems):
    out = compare_json("--ref", str(systems["ref"]), str(systems["a"]), str(systems["b"]),
                       "--method", "ar")
    assert list(out["signatures"]) == ["ar"]
    assert all(m["p_bootstrap"] is None and m["ci95"] > 0 for m in out["systems"][1]["metrics"])
    table = invoke("compare", "--ref", str(systems["ref"]), str(systems["a"]),
                   str(systems["b"]), "--samples", "100")
    assert table.exit_code == 0, table.output
    assert "p (bootstrap)" in table.stdout and "chrF2" in table.stdout


def test_bad_comparisons(systems, tmp_path):
    ref, a = str(systems["ref"]), str(systems["a"])
    one_line_error(invoke("compare", "--ref", ref, a, str(systems["short"])),
                   str(systems["short"]), "has 10 lines", f"has {SENTENCES}")
    one_line_error(invoke("compare", "--ref", ref, a, str(tmp_path)), str(tmp_path), "--src")
    one_line_error(invoke("compare", "--ref", ref, a), "at least two systems")
    one_line_error(invoke("compare", a, a), "--ref")
    one_line_error(invoke("compare", "--ref", ref, a, a, "--seed", "0"),
                   "--seed must be at least 1 (got 0)")
    one_line_error(invoke("compare", "--ref", ref, a, a, "--samples", "-5"),
                   "--samples must not be negative (got -5)")
    one_line_error(invoke("eval", "--hyp", str(systems["short"]), "--ref", ref),
                   f"--hyp {systems['short']} has 10 lines and --ref {ref} {SENTENCES}")


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A tiny run whose corpus has a 30-sentence test split."""
    return train_tiny_run(tmp_path_factory.mktemp("compare"), test_sentences=30)


DECODE = ["--beam", "1", "--max-len-b", "3"]


def test_eval_saves_its_translations_and_scores_by_length(tiny_run, tmp_path):
    saved = tmp_path / "hyp.de"
    out = json.loads(invoke("eval", "--run", str(tiny_run), *DECODE, "--save-hyp", str(saved),
                            "--by-length", "--json").stdout)
    assert len(saved.read_text(encoding="utf-8").splitlines()) == out["sentences"] == 30
    by_length = out["by_length"]
    assert by_length["length_of"] == "source"
    assert sum(b["sentences"] for b in by_length["buckets"]) == 30
    assert [b["bucket"] for b in by_length["buckets"]] == sorted(
        (b["bucket"] for b in by_length["buckets"]), key=bucket_labels((10, 20, 30)).index)
    rescored = json.loads(invoke("eval", "--hyp", str(saved), "--ref", out["reference"],
                                 "--json").stdout)
    assert rescored["scores"][0]["score"] == pytest.approx(out["scores"][0]["score"])
    # how the translations were made, to cite and make again; none for a file
    assert {key: out["decoding"][key] for key in ("engine", "weights", "quantize", "beam",
                                                  "max_len_b", "device", "sampling")} == {
        "engine": "torch", "weights": "model.safetensors", "quantize": "none", "beam": 1,
        "max_len_b": 3, "device": "cpu", "sampling": False}
    assert "decoding" not in rescored
    table = invoke("eval", "--run", str(tiny_run), *DECODE, "--by-length")
    assert table.exit_code == 0 and "BLEU by source length" in table.stdout
    assert ("decoded with engine torch, weights model.safetensors, beam 1, alpha 1.4, "
            "max_len_a 1.5, max_len_b 3\n") in table.stdout
    for option in (["--beam", "9"], ["--quantize", "int8"], ["--sampling"]):  # unused: refused
        one_line_error(invoke("eval", "--hyp", str(saved), "--ref", out["reference"], *option),
                       f"--hyp scores a file of translations: {option[0]} has nothing to do")
    one_line_error(invoke("eval", "--run", str(tiny_run), "-o", str(tmp_path / "x.png")),
                   "--by-length")


def test_eval_warns_when_the_test_split_is_not_the_one_the_run_began_beside(tmp_path):
    """A run records its corpus's test split (not read in training); eval of the default
    split says when those pairs changed since, since its scores then compare with nothing
    earlier. Resuming does not check it."""
    run = train_tiny_run(tmp_path, test_sentences=10)
    recorded = json.loads((run / "config.json").read_text())["corpus"]["test.de"]
    assert (recorded["file"], recorded["pairs"]) == ("test.de", 10)
    assert "warning" not in invoke("eval", "--run", str(run), *DECODE).stderr
    for plain in (tmp_path / "corpus").glob("test.*"):  # the same pairs, compressed: no warning
        packed = plain.with_name(f"{plain.name}.gz")
        packed.write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()
    gzipped = invoke("eval", "--run", str(run), *DECODE)
    assert gzipped.exit_code == 0 and "warning" not in gzipped.stderr, gzipped.output
    for packed in (tmp_path / "corpus").glob("test.*.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    references = tmp_path / "corpus" / "test.de"
    lines = references.read_text().splitlines()
    references.write_text("\n".join(["Ein anderer Satz."] + lines[1:]) + "\n")
    result = invoke("eval", "--run", str(run), *DECODE)
    assert result.exit_code == 0
    assert result.stderr == (f"warning: {references}: not the test split this run's corpus held "
                             "when it began (as many pairs, but others): its scores do not "
                             "compare with scores on that one\n")
    references.write_text("\n".join(lines[:9]) + "\n")
    (tmp_path / "corpus" / "test.en").write_text(
        "\n".join((tmp_path / "corpus" / "test.en").read_text().splitlines()[:9]) + "\n")
    assert "(10 pairs then, 9 now)" in invoke("eval", "--run", str(run), *DECODE).stderr
    resumed = invoke("train", "--resume", str(run), "--max-steps", "4")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads((run / "config.json").read_text())["corpus"]["test.de"] == recorded


def test_bleu_by_length_buckets_every_sentence_and_leaves_empty_buckets_out():
    sources = ["one two", "", " ".join(["w"] * 25), " ".join(["w"] * 40), "a b c"]
    references = ["das ist gut so", "", "x y z w v", "ja nein ja nein", "a b c d"]
    evaluation = Evaluation("h", "r", 5, [], references, references, sources)
    buckets = bleu_by_length(evaluation)
    assert [(b.bucket, b.sentences) for b in buckets] == [("1-10", 3), ("21-30", 1),
                                                          ("31+", 1)]
    assert all(b.bleu == pytest.approx(100.0) for b in buckets)
    assert bucket_labels((5, 15)) == ["1-5", "6-15", "16+"]
    tagged = [f"<2de> {' '.join(['w'] * 10)}", "<2fr> " + " ".join(["w"] * 30)]  # tags: no word
    evaluation = Evaluation("h", "r", 2, [], references[:2], references[:2], tagged)
    assert [b.bucket for b in bleu_by_length(evaluation)] == ["1-10", "21-30"]


def test_compare_translates_run_directories(tiny_run, systems, tmp_path):
    corpus = Path(json.loads((tiny_run / "config.json").read_text())["config"]["data"]
                  ["data_dir"])
    src, ref = str(corpus / "test.en"), str(corpus / "test.de")
    saved = tmp_path / "hyp.de"
    evaluated = json.loads(invoke("eval", "--run", str(tiny_run), *DECODE, "--chrf", "--json",
                                  "--save-hyp", str(saved)).stdout)
    out = compare_json("--ref", ref, "--src", src, str(saved), str(tiny_run), *DECODE)
    from_file, from_run = out["systems"]
    assert from_run["name"] == str(tiny_run)
    assert [m["score"] for m in from_run["metrics"]] == pytest.approx(
        [s["score"] for s in evaluated["scores"]])
    assert all(m["p_bootstrap"] == 1.0 for m in from_run["metrics"])  # the same output


def test_picture_of_bleu_by_length(tiny_run, tmp_path):
    pytest.importorskip("nmt_cli.pictures")
    from matplotlib.image import imread

    picture = tmp_path / "by-length.png"
    result = invoke("eval", "--run", str(tiny_run), *DECODE, "--by-length", "-o", str(picture))
    assert result.exit_code == 0, result.output
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert imread(picture).std() > 0  # not blank


def test_translating_never_imports_matplotlib():
    code = ("import sys; from nmt_cli.cli import app; import nmt_cli.compare, nmt_cli.evaluation; "
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.strip() == "False", result.stderr


CHINESE_REFERENCES = ["一个男人在海滩上骑马。", "两只狗在草地上奔跑。", "一个女孩在公园里弹吉他。"]
CHINESE_OUTPUTS = ["一个男人在沙滩上骑马。", "两条狗在草地上跑。", "一个女孩在公园弹吉他。"]


def test_chinese_is_scored_in_words_of_its_own_tokenizer(tmp_path):
    """13a splits no Chinese word: each line was one word, and BLEU was 0. --tokenize zh is
    what sacreBLEU takes for Chinese; without it, a warning says so."""
    ref, hyp = tmp_path / "ref.zh", tmp_path / "hyp.zh"
    ref.write_text("".join(f"{line}\n" for line in CHINESE_REFERENCES), encoding="utf-8")
    hyp.write_text("".join(f"{line}\n" for line in CHINESE_OUTPUTS), encoding="utf-8")
    plain = invoke("eval", "--hyp", str(hyp), "--ref", str(ref), "--json")
    assert plain.exit_code == 0 and "tok:13a" in json.loads(plain.stdout)["scores"][0]["signature"]
    assert plain.stderr.startswith("warning: the references are mostly Chinese, Japanese or "
                                   "Korean, which tok:13a does not split into words")
    split = invoke("eval", "--hyp", str(hyp), "--ref", str(ref), "--tokenize", "zh", "--json")
    score = json.loads(split.stdout)["scores"][0]
    assert split.exit_code == 0 and split.stderr == "" and "tok:zh" in score["signature"]
    expected = BLEU(tokenize="zh").corpus_score(CHINESE_OUTPUTS, [CHINESE_REFERENCES]).score
    assert score["score"] == pytest.approx(expected) and expected > 30
    assert json.loads(plain.stdout)["scores"][0]["score"] < 10
    compared = invoke("compare", "--ref", str(ref), str(hyp), str(ref), "--tokenize", "zh",
                      "--samples", "20", "--json")
    assert compared.exit_code == 0 and compared.stderr == "", compared.output
    assert "tok:zh" in json.loads(compared.stdout)["signatures"]["bootstrap"]["BLEU"]
    warned = invoke("compare", "--ref", str(ref), str(hyp), str(ref), "--samples", "20")
    assert warned.exit_code == 0 and "tok:13a does not split" in warned.stderr


def test_a_runs_target_language_chooses_the_bleu_tokenizer(tmp_path):
    """Japanese: sacreBLEU's ja-mecab (MeCab from sacrebleu's "ja" extra). Without MeCab,
    eval says what to install, and validation counts characters and says so at the start."""
    run = train_tiny_run(tmp_path, test_sentences=5, tgt_lang="ja")
    resumed = invoke("train", "--resume", str(run), "--max-steps", "4")
    assert resumed.exit_code == 0, resumed.output
    chars = invoke("eval", "--run", str(run), *DECODE, "--tokenize", "char", "--json")
    assert chars.exit_code == 0 and "tok:char" in json.loads(chars.stdout)["scores"][0][
        "signature"]
    if importlib.util.find_spec("MeCab") is not None:
        scored = json.loads(invoke("eval", "--run", str(run), *DECODE, "--json").stdout)
        assert "tok:ja-mecab" in scored["scores"][0]["signature"]
        return
    one_line_error(invoke("eval", "--run", str(run), *DECODE),
                   'BLEU with tok:ja-mecab needs MeCab: pip install "sacrebleu[ja]"')
    assert ("warning: validation BLEU into ja counts characters (tok:char): sacreBLEU's "
            'tok:ja-mecab needs MeCab (pip install "sacrebleu[ja]")') in " ".join(
                resumed.stderr.split())  # as one line, however the console wraps it
