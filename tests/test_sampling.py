"""Random sampling (DecodeConfig.sampling): the distribution it draws from, and its seeds."""

from __future__ import annotations

import math

import pytest
import torch

from nmt_cli.config import DecodeConfig, check_engine
from nmt_cli.errors import UserError
from nmt_cli.search import Sampler, search_nbest, translate_nbest
from nmt_cli.service import ServeConfig, check_settings

from conftest import random_tokens, tiny_model

PROBS = [0.5, 0.3, 0.15, 0.05]


def frequencies(config: DecodeConfig, draws: int = 20_000) -> list[float]:
    logits = torch.tensor(PROBS).log().repeat(draws, 1)
    drawn = Sampler(config, torch.Generator().manual_seed(0))(logits)
    return (torch.bincount(drawn, minlength=len(PROBS)).float() / draws).tolist()


@pytest.mark.parametrize("settings, expected", [
    ({}, PROBS),
    ({"sampling_topk": 2}, [0.5 / 0.8, 0.3 / 0.8, 0, 0]),
    ({"sampling_topp": 0.7}, [0.5 / 0.8, 0.3 / 0.8, 0, 0]),  # 0.5 < 0.7 <= 0.8
    ({"sampling_topp": 0.85}, [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0]),
    ({"temperature": 0.5}, [p * p / sum(q * q for q in PROBS) for p in PROBS]),
])
def test_draws_follow_the_cut_and_tempered_distribution(settings, expected):
    found = frequencies(DecodeConfig(sampling=True, **settings))
    assert found == pytest.approx(expected, abs=0.015)
    assert all(f == 0 for f, e in zip(found, expected) if e == 0)


@pytest.mark.parametrize("arch", ["transformer", "gru"])
@pytest.mark.parametrize("settings", [{"temperature": 1e-3}, {"sampling_topk": 1},
                                      {"sampling_topp": 1e-6}])
def test_sampling_cut_to_the_most_probable_token_is_greedy_search(arch, settings):
    model, src = tiny_model(arch), random_tokens(5, 6, seed=2)
    greedy = search_nbest(model, src, DecodeConfig(beam=1, max_len_b=8))
    drawn = search_nbest(model, src, DecodeConfig(sampling=True, max_len_b=8, **settings))
    assert [h[0].tokens for h in drawn] == [h[0].tokens for h in greedy]
    for g, d in zip(greedy, drawn):  # the model's own log-probability, not the tempered one
        assert d[0].log_prob == pytest.approx(g[0].log_prob, abs=1e-4)


def test_a_seed_gives_the_same_draws_and_nbest_lists_hold_that_many_ranked():
    model, device = tiny_model(), torch.device("cpu")
    src_ids = random_tokens(6, 5, seed=4).tolist()
    config = DecodeConfig(sampling=True, max_len_b=8)
    first = translate_nbest(model, src_ids, config, device, nbest=4)
    again = translate_nbest(model, src_ids, config, device, nbest=4)
    other = translate_nbest(model, src_ids, DecodeConfig(sampling=True, max_len_b=8,
                                                         sampling_seed=2), device, nbest=4)
    assert first == again and first != other
    for hyps in first:
        assert len(hyps) == 4
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        assert all(math.isfinite(h.log_prob) and h.log_prob < 0 for h in hyps)
    assert len({tuple(h.tokens) for hyps in first for h in hyps}) > len(first)  # they vary


def test_what_sampling_cannot_be_asked():
    with pytest.raises(UserError, match="ctranslate2 engine searches only"):
        check_engine("ctranslate2", DecodeConfig(sampling=True))
    with pytest.raises(UserError, match="ctranslate2 engine searches only"):
        check_settings(ServeConfig(engine="ctranslate2"), DecodeConfig(sampling=True))
    for name, bad in (("sampling_topp", 0.0), ("temperature", 0.0), ("sampling_topk", -1),
                      ("sampling_seed", -1)):
        with pytest.raises(UserError, match=f"--{name.replace('_', '-')} must lie in"):
            DecodeConfig(sampling=True, **{name: bad})
    model = tiny_model()
    with pytest.raises(UserError, match="--nbest must be at most 1000"):
        search_nbest(model, random_tokens(1, 3), DecodeConfig(sampling=True), nbest=1001)
