"""Target prefixes (forced decoding): every hypothesis opens with the prefix, the search goes
on from where the prefix leaves the decoder, and only what follows the prefix is scored; and
`nmt translate --prefix / --prefix-file` as a user runs it."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch
from test_cli import invoke, one_line_error
from test_nbest import train_tiny_run
from test_search import A, B, TableModel

from nmt_cli.config import DecodeConfig
from nmt_cli.data import source_tensor
from nmt_cli.errors import UserError
from nmt_cli.search import forbid_special_tokens, prefix_tensor, search_nbest, translate_nbest
from nmt_cli.special_tokens import EOS_ID, SOS_ID
from nmt_cli.translate import Translator, encode_prefixes

from conftest import random_tokens, same_up_to_rounding, tiny_model

CPU = torch.device("cpu")
LIMIT = {"max_len_a": 0.0, "max_len_b": 30}
CONFIGS = {"greedy": DecodeConfig(beam=1, **LIMIT),
           "beam4": DecodeConfig(beam=4, alpha=1.0, **LIMIT),
           "sampling": DecodeConfig(beam=1, sampling=True, sampling_topk=5, **LIMIT)}


def teacher_forced_log_probs(model, src: list[int], out: list[int]) -> list[float]:
    """log P of each token of `out`, then of <eos>, given the tokens before it (<pad> and
    <sos> ruled out, as search rules them out)."""
    with torch.no_grad():
        logits = model(source_tensor([src]), torch.tensor([[SOS_ID] + out]))[0].float()
    log_probs = torch.log_softmax(forbid_special_tokens(logits), -1)
    return log_probs[torch.arange(len(out) + 1), out + [EOS_ID]].tolist()


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("arch", ["transformer", "gru"])
def test_hypotheses_open_with_the_prefix_and_score_only_what_follows(arch, name):
    """Every hypothesis holds its sentence's prefix first; its log-probability is that of the
    tokens after the prefix (and <eos>) under teacher forcing; the first token after the
    prefix is the model's best next token given the prefix (greedy), so the search really
    goes on from the prefix. A sentence without a prefix decodes as with none."""
    model, config = tiny_model(arch), CONFIGS[name]
    src_ids = [random_tokens(1, n, seed=n)[0].tolist() for n in (6, 4, 9, 5)]
    prefixes = [[7, 9, 7], [], [11], [20, 21, 22, 23, 24, 25]]
    nbest = config.beam
    found = translate_nbest(model, src_ids, config, CPU, nbest, prefixes=prefixes)
    plain = translate_nbest(model, src_ids, config, CPU, nbest)
    assert found[1] == plain[1]
    for src, prefix, hyps in zip(src_ids, prefixes, found):
        assert len(hyps) == nbest
        for h in hyps:
            assert h.tokens[: len(prefix)] == prefix and len(h.tokens) > len(prefix)
            assert math.isfinite(h.log_prob)
            ended = len(h.tokens) < LIMIT["max_len_b"]  # else stopped by the limit
            scored = teacher_forced_log_probs(model, src, h.tokens)[len(prefix):]
            assert h.log_prob == pytest.approx(sum(scored if ended else scored[:-1]), abs=1e-4)
        if name == "greedy":
            with torch.no_grad():
                logits = model(source_tensor([src]), torch.tensor([[SOS_ID] + prefix]))[0, -1]
            next_token = int(forbid_special_tokens(logits[None])[0].argmax())
            assert hyps[0].tokens[len(prefix)] == next_token
    assert [h[0].tokens for h in found] != [h[0].tokens for h in plain]


def test_a_prefix_the_model_finds_unlikely_is_followed_all_the_same():
    """After <sos> the table gives A 0.6, B 0.4 and (nearly) never <eos> or 6: forced "6 6",
    the search follows it at no cost, then goes on as the table says (after 6: <eos>)."""
    table = {SOS_ID: {A: 0.6, B: 0.4}, A: {EOS_ID: 1.0}, B: {EOS_ID: 1.0}, 6: {EOS_ID: 1.0}}
    model, src = TableModel(table), torch.tensor([[A, A, A], [A, A, A]])
    forced = prefix_tensor([[6, 6], []], CPU)
    for config in (DecodeConfig(beam=1), DecodeConfig(beam=3, alpha=0.0)):
        hyps = search_nbest(model, src, config, config.beam, forced=forced)
        assert (hyps[0][0].tokens, hyps[0][0].log_prob) == ([6, 6], pytest.approx(0.0))
        assert all(h.tokens[:2] == [6, 6] and h.log_prob < -1e8 for h in hyps[0][1:])
        assert [h.tokens for h in hyps[1]][:2] == [[A], [B]][: config.beam]


def test_right_after_the_prefix_only_the_best_candidate_may_end_the_translation():
    """As in CTranslate2: there the beam expands the prefix alone, and the prefix with <eos>
    would often beat the translations that go on. Forced "6": after it A 0.5, <eos> 0.3,
    B 0.2; <eos> ranks second, so the prefix alone is no hypothesis. Where <eos> ranks
    first, it is."""
    src, forced = torch.tensor([[A, A, A]]), prefix_tensor([[6]], CPU)
    config = DecodeConfig(beam=3, alpha=0.0)
    for after, wanted in (({A: 0.5, EOS_ID: 0.3, B: 0.2}, [[6, A], [6, B]]),
                          ({EOS_ID: 0.5, A: 0.3, B: 0.2}, [[6], [6, A], [6, B]])):
        table = {SOS_ID: {A: 1.0}, 6: after, A: {EOS_ID: 1.0}, B: {EOS_ID: 1.0}}
        (hyps,) = search_nbest(TableModel(table), src, config, 3, forced=forced)
        assert [h.tokens for h in hyps][: len(wanted)] == wanted
        assert ([6] in [h.tokens for h in hyps]) == (wanted[0] == [6])


def test_the_length_limit_counts_the_prefix_and_makes_room_for_a_longer_one():
    model = tiny_model("transformer")
    src_ids = [random_tokens(1, 5, seed=1)[0].tolist()]
    prefix = [[8, 9, 10, 11, 12, 13, 14]]
    for beam in (1, 3):
        tight = DecodeConfig(beam=beam, max_len_a=0.0, max_len_b=4)
        (hyps,) = translate_nbest(model, src_ids, tight, CPU, 1, prefixes=prefix)
        assert hyps[0].tokens == prefix[0] and hyps[0].log_prob == 0.0
        roomy = dataclasses.replace(tight, max_len_b=9, min_len=9)
        (hyps,) = translate_nbest(model, src_ids, roomy, CPU, 1, prefixes=prefix)
        assert hyps[0].tokens[:7] == prefix[0] and len(hyps[0].tokens) == 9


def test_a_prefix_longer_than_the_model_can_position_is_cut_with_a_warning():
    model = tiny_model("transformer", max_positions=12)
    src_ids = [random_tokens(1, 5, seed=1)[0].tolist()]
    prefix = list(range(10, 30))
    for beam in (1, 3):
        (hyps,) = translate_nbest(model, src_ids, DecodeConfig(beam=beam), CPU, 1,
                                  prefixes=[prefix])
        assert hyps[0].tokens == prefix[:12]


def test_a_prefix_that_repeats_itself_is_kept_and_the_rest_does_not_repeat_it():
    """--no-repeat-ngram applies to what the search chooses, with the prefix as history."""
    model = tiny_model("transformer")
    src_ids = [random_tokens(1, 8, seed=n)[0].tolist() for n in range(6)]
    prefix = [9, 10, 9, 10]
    config = DecodeConfig(beam=3, no_repeat_ngram=2, min_len=12, max_len_a=0.0, max_len_b=12)
    for hyps in translate_nbest(model, src_ids, config, CPU, 3, prefixes=[prefix] * 6):
        for h in hyps:
            assert h.tokens[:4] == prefix and math.isfinite(h.log_prob)
            grams = [tuple(h.tokens[i : i + 2]) for i in range(3, len(h.tokens) - 1)]
            assert len(set(grams)) == len(grams) and (9, 10) not in grams


# The engine and the command line, on a run trained for three steps.

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    return train_tiny_run(tmp_path_factory.mktemp("prefix"))


LINES = ["A man rides a horse.", "", "Two dogs play in the snow."]


def test_the_translator_opens_each_translation_with_its_text_prefix(tiny_run):
    translator = Translator.from_run(tiny_run, "cpu")
    config = DecodeConfig(beam=3, max_len_a=0.0, max_len_b=8)
    found = translator.translate_nbest(LINES, config, 2, prefixes=["Ein Mann", "Hallo", ""])
    assert [h.text for h in found[1]] == [""]  # a blank line stays blank
    pieces = translator.run.tokenizer.tgt.encode("Ein Mann", out_type=str)
    assert all(h.tokens[: len(pieces)] == pieces and h.text.startswith("Ein Mann")
               for h in found[0])
    assert same_up_to_rounding(found[2], translator.translate_nbest(LINES[2:], config, 2)[0])
    with pytest.raises(Exception, match="2 target prefixes for 3 lines"):
        translator.translate(LINES, config, prefixes=["a", "b"])
    with pytest.raises(UserError, match=r"prefix '中文' has a character the model's vocabulary"):
        translator.translate(LINES[:1], config, prefixes=["中文"])  # it would write "⁇"
    warnings: list[str] = []
    long = "Ein Mann " * 40
    ids = encode_prefixes(translator.run.tokenizer, [long, "Ein"], ["x", "y"], 20,
                          warnings.append)
    assert [len(i) for i in ids] == [20, len(translator.run.tokenizer.encode_tgt(["Ein"])[0])]
    assert len(warnings) == 1 and "was cut to the model's 20" in warnings[0]


def test_translate_prefix_options(tiny_run, tmp_path):
    source, prefixes = tmp_path / "in.en", tmp_path / "prefix.de"
    source.write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    prefixes.write_text("Ein Mann\n\nZwei\n", encoding="utf-8")
    common = ["--run", str(tiny_run), "--beam", "2", "--max-len-b", "4"]
    result = invoke("translate", *common, "-i", str(source), "--prefix-file", str(prefixes))
    assert result.exit_code == 0, result.output
    out = result.stdout.split("\n")[:-1]
    assert out[0].startswith("Ein Mann") and out[1] == "" and out[2].startswith("Zwei")
    translator = Translator.from_run(tiny_run, "cpu")
    config = DecodeConfig(beam=2, max_len_b=4)
    assert out == translator.translate(LINES, config, prefixes=["Ein Mann", "", "Zwei"])
    assert result.stderr == ""  # line 2, blank, has no prefix
    prefixes.write_text("Ein Mann\nHallo\nZwei\n", encoding="utf-8")
    result = invoke("translate", *common, "-i", str(source), "--prefix-file", str(prefixes))
    assert result.stdout.split("\n")[1] == "" and result.stderr == (
        f"warning: input line 2 is blank, and so is its translation: --prefix-file "
        f"{prefixes}:2 is left out\n")
    result = invoke("translate", *common, LINES[0], "--prefix", "Zwei")
    assert result.exit_code == 0, result.output
    assert result.stdout == translator.translate(LINES[:1], config, prefixes=["Zwei"])[0] + "\n"

    short, long = tmp_path / "short.de", tmp_path / "long.de"
    short.write_text("Ein\n\n", encoding="utf-8")
    odd = tmp_path / "odd.de"
    odd.write_text("Ein\n中文\nZwei\n", encoding="utf-8")  # not in a model of Latin script
    long.write_text("Ein\n\nZwei\nDrei\n", encoding="utf-8")
    kept = tmp_path / "kept.de"
    kept.write_text("an earlier translation\n", encoding="utf-8")
    for options, message in (
            (["--prefix-file", str(short)], f"--prefix-file {short} has 2 lines and the input 3"),
            (["--prefix-file", str(long)], f"--prefix-file {long} has 4 lines and the input 3"),
            (["--prefix-file", str(long), "--prefix", "Ein"], "--prefix and --prefix-file"),
            (["--prefix-file", str(kept), "-o", str(kept)], "is also the input"),
            (["--prefix-file", str(tmp_path / "none")], "file not found"),
            (["--prefix", "\udcff"], "--prefix: invalid UTF-8"),
            (["--prefix", "中文"], "--prefix: '中文' has a character the model's vocabulary"),
            (["--prefix-file", str(odd)], f"--prefix-file {odd}:2: '中文' has a character")):
        result = invoke("translate", *common, "-i", str(source), "-o", str(kept), *options)
        one_line_error(result, message)
        assert kept.read_text(encoding="utf-8") == "an earlier translation\n"  # not opened
    for prefix_lines, message in (("Ein\n", "has fewer lines than the input"),
                                  ("Ein\nZwei\nDrei\n", "has more lines than the input")):
        short.write_text(prefix_lines, encoding="utf-8")  # stdin: found as it is read
        result = invoke("translate", *common, "--prefix-file", str(short),
                        input=b"A man.\nTwo dogs.\n")
        one_line_error(result, message)
