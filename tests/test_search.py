"""Greedy and beam search over the model interface."""

import dataclasses
import math
from dataclasses import dataclass

import pytest
import torch

from nmt_cli.config import DecodeConfig
from nmt_cli.data import source_tensor
from nmt_cli.models.base import DecoderState, Seq2Seq
from nmt_cli.search import (
    beam_search,
    block_repeated_ngrams,
    greedy_search,
    length_limit,
    max_output_lengths,
    search,
    search_nbest,
    translate_ids,
)
from nmt_cli.tokenizer import EOS_ID, PAD_ID, SOS_ID

from conftest import random_tokens, tiny_model


def test_beam_size_one_equals_greedy():
    for arch in ("transformer", "gru"):
        model = tiny_model(arch)
        src = random_tokens(6, 7, seed=3)
        src[2, 5:] = PAD_ID
        limits = max_output_lengths(src, 1.0, 5)
        assert beam_search(model, src, limits, beam_size=1, alpha=1.0) == greedy_search(
            model, src, limits)


def test_the_length_limit_is_computed_as_on_float32_tensors():
    """The limit a * |src| + b is the same wherever it is computed: in float32, as a tensor
    computes it (0.7 * 90 is 62.99999... in float64, 63 in float32)."""
    lengths = torch.arange(0, 300)
    for a in (0.0, 0.5, 0.7, 1.1, 1.3, 1.5, 2.3):
        for b in (-3, 0, 2, 10):
            on_tensors = (a * lengths.float() + b).long().clamp(min=1).tolist()
            assert [length_limit(n, a, b) for n in range(300)] == on_tensors
    assert length_limit(90, 0.7, 0) == 63


def test_outputs_respect_the_length_limit_and_hold_no_special_tokens():
    model = tiny_model("transformer")
    ids = random_tokens(4, 6, seed=4).tolist()
    src = source_tensor(ids[:3] + [ids[3][:2]])  # 2 tokens: a limit of 0.5 * 2 + 1 = 2
    limits = max_output_lengths(src, 0.5, 1)
    assert limits.tolist() == [4, 4, 4, 2]
    for beam in (1, 4):
        outputs = search(model, src, DecodeConfig(beam=beam, max_len_a=0.5, max_len_b=1))
        for out, limit in zip(outputs, limits.tolist()):
            assert len(out) <= limit
            assert not {EOS_ID, PAD_ID, SOS_ID} & set(out)


@dataclass
class LastToken(DecoderState):
    last: torch.Tensor  # (batch,)


class TableModel(Seq2Seq):
    """A fixed next-token distribution given the previous token: search on a known problem."""

    def __init__(self, table: dict[int, dict[int, float]], vocab: int = 8):
        super().__init__()
        self.log_probs = torch.full((vocab, vocab), -1e9)
        for prev, nexts in table.items():
            for token, p in nexts.items():
                self.log_probs[prev, token] = math.log(p)

    def start(self, src):
        return LastToken(torch.full((src.size(0),), SOS_ID))

    def decode_step(self, prev_tokens, state):
        return self.log_probs[prev_tokens], LastToken(prev_tokens)


A, B = 4, 5
# After <sos>: A 0.6, B 0.4. After A: <eos> 0.4, else A or B. After B: <eos> 1.0.
# Greedy takes A then <eos> (0.24); the best sentence is B <eos> (0.4).
TABLE = {SOS_ID: {A: 0.6, B: 0.4}, A: {EOS_ID: 0.4, A: 0.3, B: 0.3}, B: {EOS_ID: 1.0}}


def test_beam_search_finds_what_greedy_misses():
    model, src = TableModel(TABLE), torch.tensor([[A, A, A]])
    limits = max_output_lengths(src, 1.0, 2)
    assert greedy_search(model, src, limits) == [[A]]
    assert beam_search(model, src, limits, beam_size=2, alpha=0.0) == [[B]]
    assert beam_search(model, src, limits, beam_size=1, alpha=0.0) == [[A]]


def test_length_penalty_favours_longer_hypotheses():
    # "A <eos>" has p 0.5; "B B B" (stopped by the length limit) has p 0.405 but is longer.
    table = {SOS_ID: {A: 0.5, B: 0.5}, A: {EOS_ID: 1.0}, B: {B: 0.9, EOS_ID: 0.1}}
    model, src = TableModel(table), torch.tensor([[A] * 4])
    limits = torch.tensor([3])
    assert beam_search(model, src, limits, beam_size=3, alpha=0.0) == [[A]]
    assert beam_search(model, src, limits, beam_size=3, alpha=5.0) == [[B, B, B]]


def test_translate_ids_restores_input_order_and_keeps_empty_inputs_empty():
    model = tiny_model("transformer")
    src_ids = [random_tokens(1, n, seed=n)[0].tolist() for n in (5, 1, 8, 3)]
    config = DecodeConfig(beam=2, batch_size=2)
    batched = translate_ids(model, src_ids + [[]], config, torch.device("cpu"))
    one_by_one = [translate_ids(model, [s], config, torch.device("cpu"))[0] for s in src_ids]
    assert batched[:4] == one_by_one
    assert batched[4] == []


def test_output_length_never_exceeds_what_the_model_can_position():
    model = tiny_model("transformer", max_positions=12)
    src = random_tokens(1, 11, seed=5)  # 11 tokens + <eos> fill the encoder's positions
    out = search(model, src, DecodeConfig(beam=1, max_len_a=3.0, max_len_b=10))
    assert len(out[0]) <= 12


def test_min_len_rules_out_eos_until_the_minimum_and_can_force_an_exact_length():
    # After B, <eos> has p 1.0: without a minimum both searches stop after one token.
    table = {SOS_ID: {B: 1.0}, B: {EOS_ID: 0.9, B: 0.1}}
    model, src = TableModel(table), torch.tensor([[A] * 9, [A, A] + [PAD_ID] * 7])
    for beam in (1, 3):
        assert search(model, src, DecodeConfig(beam=beam)) == [[B], [B]]
        at_least = search(model, src, DecodeConfig(beam=beam, min_len=4))
        assert at_least == [[B] * 4, [B] * 4]
        exact = DecodeConfig(beam=beam, min_len=6, max_len_a=0.0, max_len_b=6)
        assert search(model, src, exact) == [[B] * 6, [B] * 6]


def test_decoding_reads_from_the_device_at_most_once_a_step(monkeypatch):
    """Each host read (item, tolist, cpu) waits for the device: one a step at the most."""
    reads = []
    for name in ("item", "tolist", "cpu"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, **kwargs):
            reads.append(1)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    for arch in ("transformer", "gru"):
        model = tiny_model(arch)
        steps: list[int] = []

        def counted_step(*args, _step=model.decode_step, _steps=steps):
            _steps.append(1)
            return _step(*args)

        monkeypatch.setattr(model, "decode_step", counted_step)
        src = random_tokens(5, 6, seed=7)
        src[1, 3:] = PAD_ID
        limits = max_output_lengths(src, 1.0, 4)  # read before counting
        for beam in (1, 3):
            reads.clear()
            steps.clear()
            out = (greedy_search(model, src, limits) if beam == 1
                   else beam_search(model, src, limits, beam, 1.0))
            assert len(out) == 5 and steps
            start_up = 3  # the limits; the GRU packs its source by length (two reads)
            assert len(reads) <= len(steps) + start_up, (arch, beam, len(reads), len(steps))


def test_block_repeated_ngrams_rules_out_the_token_that_would_repeat_one():
    history = torch.tensor([[5, 6, 7, 5, 6], [5, 6, 7, 8, 9]])
    logits = torch.zeros(2, 12)
    banned = {n: [[i for i in row.isinf().nonzero().flatten().tolist() if i != PAD_ID]
                  for row in block_repeated_ngrams(logits, history, n)] for n in (1, 2, 3, 6)}
    assert banned[3] == [[7], []]  # "5 6" was followed by 7; "8 9" never came before
    assert banned[2] == [[7], []]  # "6" was followed by 7
    assert banned[1] == [[5, 6, 7], [5, 6, 7, 8, 9]]  # every token so far
    assert banned[6] == [[], []]  # no 6-gram yet
    assert not logits.isinf().any()  # a new tensor
    only_seen = torch.full((1, 12), float("-inf"))
    only_seen[0, 7] = 0.0  # <eos> ruled out (min_len), 7 the one token left: it stays
    assert torch.equal(block_repeated_ngrams(only_seen, history[:1], 3), only_seen)


def repeats(tokens: list[int], n: int) -> bool:
    grams = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


@pytest.mark.parametrize("arch", ["transformer", "gru"])
@pytest.mark.parametrize("settings", [{"beam": 1}, {"beam": 4}, {"sampling": True}])
def test_no_output_repeats_an_ngram_when_told_not_to(arch, settings):
    model = tiny_model(arch, vocab=12)  # untrained, few tokens: it repeats itself
    src = random_tokens(16, 8, vocab=12, seed=5)
    config = DecodeConfig(max_len_a=0.0, max_len_b=20, **settings)
    for n in (2, 3):
        assert any(repeats(out, n) for out in search(model, src, config))  # as a rule it does
        blocked = [hyps for hyps in search_nbest(model, src, dataclasses.replace(
            config, no_repeat_ngram=n), nbest=1 if settings.get("beam", 1) == 1 else 4)]
        assert all(not repeats(h.tokens, n) for hyps in blocked for h in hyps)


def test_greedy_outputs_that_repeat_nothing_are_left_as_they_are():
    """Blocking changes a greedy output only where it would have repeated an n-gram. (An
    untrained GRU: an untrained Transformer repeats one token in every output.)"""
    model = tiny_model("gru", vocab=50)
    src = random_tokens(32, 8, vocab=50, seed=11)
    config = DecodeConfig(beam=1, max_len_a=0.0, max_len_b=8)
    plain, blocked = search(model, src, config), search(
        model, src, dataclasses.replace(config, no_repeat_ngram=2))
    clean = [i for i, out in enumerate(plain) if not repeats(out, 2)]
    assert 0 < len(clean) < len(plain)  # both kinds are there
    assert [blocked[i] for i in clean] == [plain[i] for i in clean]
    assert all(blocked[i] != plain[i] for i in range(len(plain)) if i not in clean)
