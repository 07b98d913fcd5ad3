"""Ensemble decoding: models that decode as one, their next-token probabilities averaged."""

from __future__ import annotations

import math

import pytest
import torch

from nmt_cli.config import DecodeConfig
from nmt_cli.ensemble import Ensemble
from nmt_cli.search import search_nbest

from conftest import random_tokens, tiny_model


def results(model, config: DecodeConfig, nbest: int = 1):
    found = search_nbest(model, random_tokens(5, 6, seed=1), config, nbest)
    return [[(h.tokens, h.log_prob) for h in hyps] for hyps in found]


@pytest.mark.parametrize("arch", ["transformer", "gru"])
@pytest.mark.parametrize("beam", [1, 4])
def test_an_ensemble_of_one_model_or_of_its_copies_decodes_as_the_model(arch, beam):
    model, config = tiny_model(arch), DecodeConfig(beam=beam, max_len_b=8)
    alone = results(model, config, beam)
    for ensemble in (Ensemble([model]), Ensemble([model, model, model])):
        found = results(ensemble, config, beam)
        assert [[t for t, _ in hyps] for hyps in found] == [[t for t, _ in hyps] for hyps in alone]
        assert [p for hyps in found for _, p in hyps] == pytest.approx(
            [p for hyps in alone for _, p in hyps], abs=1e-3)


def test_each_step_gives_the_mean_of_the_models_probabilities():
    models = [tiny_model("transformer"), tiny_model("gru"), tiny_model("transformer", d_ff=32)]
    ensemble, src = Ensemble(models), random_tokens(3, 5, seed=2)
    prev = torch.tensor([1, 7, 9])
    with torch.inference_mode():
        mixed, _ = ensemble.decode_step(prev, ensemble.start(src))
        probs = [model.decode_step(prev, model.start(src))[0].softmax(-1) for model in models]
    assert mixed.exp() == pytest.approx((sum(probs) / 3), abs=1e-6)
    assert mixed.exp().sum(-1).tolist() == pytest.approx([1.0] * 3)
    config = DecodeConfig(beam=3, max_len_b=6)  # a Transformer and a GRU search as one
    for hyps in results(ensemble, config, nbest=3):
        assert len(hyps) == 3 and all(math.isfinite(p) and p < 0 for _, p in hyps)
    assert results(ensemble, config, 3) != results(models[0], config, 3)
