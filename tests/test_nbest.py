"""N-best lists: ranked by the beam's score, the first equal to the beam's output, with true
log-probabilities and cross-attention; and `nmt translate --nbest --format` as a user runs it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error
from test_search import A, B, TableModel

from nmt_cli.alignment import hypothesis_attention
from nmt_cli.config import DecodeConfig
from nmt_cli.errors import UserError
from nmt_cli.evaluation import evaluate
from nmt_cli.search import (
    beam_search,
    beam_search_nbest,
    forbid_special_tokens,
    greedy_search_nbest,
    length_penalty,
    max_output_lengths,
    search,
    search_nbest,
)
from nmt_cli.special_tokens import EOS_ID, PAD_ID, SOS_ID
from nmt_cli.translate import Translator

from conftest import random_tokens, read_sample, tiny_model, write_corpus

# After <sos>: A 0.6, B 0.4. After A: <eos> 0.6, B 0.4. After B: <eos> 1.0.
# Finished, best first: "B" (0.4), "A" (0.36), "A B" (0.24).
TABLE = {SOS_ID: {A: 0.6, B: 0.4}, A: {EOS_ID: 0.6, B: 0.4}, B: {EOS_ID: 1.0}}


def test_nbest_on_a_known_table():
    model, src, limits = TableModel(TABLE), torch.tensor([[A, A, A]]), torch.tensor([3])
    for alpha in (0.0, 1.0):
        (hyps,) = beam_search_nbest(model, src, limits, beam_size=3, alpha=alpha)
        assert [h.tokens for h in hyps] == [[B], [A], [A, B]]
        assert [h.log_prob for h in hyps] == pytest.approx([math.log(p) for p in
                                                            (0.4, 0.36, 0.24)])
        lengths = (2, 2, 3)  # tokens scored, <eos> included
        assert [h.score for h in hyps] == pytest.approx(
            [h.log_prob / length_penalty(n, alpha) for h, n in zip(hyps, lengths)])
        assert beam_search(model, src, limits, beam_size=3, alpha=alpha) == [[B]]
    (greedy,) = greedy_search_nbest(model, src, limits)
    assert [h.tokens for h in greedy] == [[A]]
    assert greedy[0].log_prob == pytest.approx(math.log(0.36))


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_nbest_lists_are_sorted_and_start_with_the_beam_output(arch):
    model, src = tiny_model(arch), random_tokens(5, 6, seed=11)
    src[3, 4:] = PAD_ID
    config = DecodeConfig(beam=4, max_len_a=1.0, max_len_b=4)
    lists = search_nbest(model, src, config, nbest=4)
    assert [h[0].tokens for h in lists] == search(model, src, config)
    for hyps in lists:
        assert len(hyps) == 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert [hyps[:2] for hyps in lists] == search_nbest(model, src, config, nbest=2)


def test_greedy_log_prob_equals_that_of_beam_size_one():
    model, src = tiny_model("gru"), random_tokens(4, 5, seed=2)
    limits = max_output_lengths(src, 1.0, 3)
    greedy = greedy_search_nbest(model, src, limits, alpha=1.0)
    beam = beam_search_nbest(model, src, limits, beam_size=1, alpha=1.0)
    for (g,), (b,) in zip(greedy, beam):
        assert g.tokens == b.tokens
        assert g.log_prob == pytest.approx(b.log_prob, abs=1e-4)
        assert g.score == pytest.approx(b.score, abs=1e-4)


def test_log_prob_is_the_teacher_forced_log_probability():
    model, src = tiny_model("transformer"), random_tokens(3, 5, seed=8)
    eos_bias = torch.nn.Linear(model.output_proj.in_features, model.output_proj.out_features)
    eos_bias.weight = model.output_proj.weight
    with torch.no_grad():  # <eos> a little likelier: some hypotheses end, some reach the limit
        eos_bias.bias.zero_()
        eos_bias.bias[EOS_ID] = 1.5
    model.output_proj, endings, config = eos_bias, set(), DecodeConfig(beam=3)
    for row, hyps in enumerate(search_nbest(model, src, config, nbest=3)):
        for h in hyps:
            logits = model(src[row : row + 1], torch.tensor([[SOS_ID, *h.tokens]]))[0]
            log_probs = torch.log_softmax(forbid_special_tokens(logits), -1)  # (len + 1, vocab)
            scored = log_probs[torch.arange(len(h.tokens)), h.tokens].sum().item()
            ended = h.score == pytest.approx(
                h.log_prob / length_penalty(len(h.tokens) + 1, config.alpha))
            if ended:  # finished by <eos>, not by the length limit
                scored += log_probs[-1, EOS_ID].item()
            assert h.log_prob == pytest.approx(scored, abs=1e-4)
            endings.add(ended)
    assert endings == {True, False}


@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_attention_rows_sum_to_one_and_padding_changes_no_weight(arch):
    model = tiny_model(arch).eval()
    long, short = random_tokens(1, 7, seed=4)[0].tolist(), random_tokens(1, 3, seed=5)[0].tolist()
    sources, hypotheses = [long, short, long, short], [[5, 6, 7], [8], [], [9, 9, 9, 9, 9]]
    weights = hypothesis_attention(model, sources, hypotheses, torch.device("cpu"))
    assert [tuple(w.shape) for w in weights] == [(4, 8), (2, 4), (1, 8), (6, 4)]
    for w in weights:
        assert torch.allclose(w.sum(-1), torch.ones(len(w)), atol=1e-5)
    for i, (source, hypothesis) in enumerate(zip(sources, hypotheses)):  # one at a time
        alone = hypothesis_attention(model, [source], [hypothesis], torch.device("cpu"))[0]
        assert torch.allclose(alone, weights[i], atol=1e-6)
    two_by_two = hypothesis_attention(model, sources, hypotheses, torch.device("cpu"),
                                      batch_size=2)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(two_by_two, weights))


SETTINGS = ["--set", "model.d_model=32", "--set", "model.d_ff=64",
            "--set", "model.num_encoder_layers=1", "--set", "model.num_decoder_layers=1",
            "--set", "tokenizer.vocab_size=200", "--set", "train.validate_every=100"]


def train_tiny_run(root: Path, test_sentences: int = 0, tgt_lang: str = "de") -> Path:
    """A run trained for three steps, enough to translate, in seconds; its corpus has a test
    split of `test_sentences` pairs when asked, its German named `tgt_lang`."""
    splits = {"train": (read_sample("train", "en", 300), read_sample("train", "de", 300)),
              "val": (read_sample("val", "en", 5), read_sample("val", "de", 5))}
    if test_sentences:
        splits["test"] = (read_sample("test", "en", test_sentences),
                          read_sample("test", "de", test_sentences))
    corpus = write_corpus(root / "corpus", splits)
    for german in corpus.glob("*.de"):
        german.rename(german.with_suffix(f".{tgt_lang}"))
    result = invoke("train", "--data", str(corpus), "--run", str(root / "run"), "--tgt-lang",
                    tgt_lang, "--max-steps", "3", "--batch-tokens", "1024", *SETTINGS)
    assert result.exit_code == 0, result.output
    return root / "run"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("nbest"))


LINES = ["A small test.", "", "The computer is new."]


@pytest.fixture(scope="module")
def lines_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("input") / "in.en"
    path.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    return path


def translate(run: Path, lines_file: Path, *options: str) -> list[str]:
    result = invoke("translate", "--run", str(run), "-i", str(lines_file), "--beam", "3",
                    "--max-len-b", "4", *options)
    assert result.exit_code == 0, result.output
    return result.stdout.split("\n")[:-1]


def test_tsv_and_text_nbest_start_with_the_beam_output(tiny_run, lines_file):
    best = translate(tiny_run, lines_file)
    assert len(best) == 3 and best[1] == ""
    assert translate(tiny_run, lines_file, "--nbest", "1", "--format", "text") == best
    rows = [row.split("\t") for row in translate(tiny_run, lines_file, "--nbest", "3",
                                                 "--format", "tsv")]
    assert [(int(r[0]), int(r[1])) for r in rows] == [(1, 1), (1, 2), (1, 3), (2, 1),
                                                      (3, 1), (3, 2), (3, 3)]
    assert [r[4] for r in rows if r[1] == "1"] == best
    for line in (1, 3):
        scores = [float(r[2]) for r in rows if r[0] == str(line)]
        assert scores == sorted(scores, reverse=True)
    text = translate(tiny_run, lines_file, "--nbest", "3")  # 3 lines for each, the blank too
    assert text == [r[4] for r in rows[:3]] + ["", "", ""] + [r[4] for r in rows[4:]]


def test_jsonl_has_tokens_and_attention(tiny_run, lines_file):
    objects = [json.loads(line) for line in translate(
        tiny_run, lines_file, "--nbest", "2", "--format", "jsonl", "--attention")]
    assert [(o["line"], o["source"], len(o["hypotheses"])) for o in objects] == [
        (1, LINES[0], 2), (2, "", 1), (3, LINES[2], 2)]
    for hypothesis in objects[0]["hypotheses"] + objects[2]["hypotheses"]:
        assert hypothesis["tokens"] and {"text", "score", "log_prob"} <= hypothesis.keys()
        attention = hypothesis["attention"]
        assert attention["target"] == [*hypothesis["tokens"], "<eos>"][: len(
            attention["weights"])]
        assert len(attention["weights"][0]) == len(attention["source"])
        for row in attention["weights"]:
            assert sum(row) == pytest.approx(1.0, abs=1e-3)
    plain = json.loads(translate(tiny_run, lines_file, "--format", "jsonl")[0])
    assert "attention" not in plain["hypotheses"][0]


def test_bad_nbest_options(tiny_run):
    run = ["translate", "--run", str(tiny_run), "Hello."]
    one_line_error(invoke(*run, "--nbest", "4", "--beam", "3"), "--nbest 4 exceeds --beam 3")
    one_line_error(invoke(*run, "--nbest", "2", "--beam", "1"), "--nbest 2 exceeds --beam 1")
    one_line_error(invoke(*run, "--nbest", "0"), "--nbest must be at least 1")
    one_line_error(invoke(*run, "--attention", "--format", "tsv"), "--attention needs")


def test_the_python_api_refuses_a_string_for_its_lines(tiny_run):
    """A string's characters were translated one by one, 11 outputs for "A dog runs.";
    evaluate names an unknown metric in one line."""
    translator = Translator.from_run(tiny_run, "cpu")
    with pytest.raises(TypeError, match=r"a list of strings, e.g. \["):
        translator.translate("A dog runs.")
    with pytest.raises(TypeError, match="not a string"):
        next(translator.translate_nbest_stream("A dog runs."))
    assert len(translator.translate(["A dog runs."])) == 1
    with pytest.raises(UserError, match="unknown metric 'meteor'; choose from bleu, chrf, ter"):
        evaluate(["a"], ["a"], ("bleu", "meteor"))
    with pytest.raises(UserError, match="1 lines of hypotheses and 2 of references"):
        evaluate(["a"], ["a", "b"])
