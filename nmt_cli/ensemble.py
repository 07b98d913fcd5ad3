"""Ensemble decoding: several trained models translate as one.

At each step every model reads the same prefix and gives its distribution over the next
token; the ensemble's is their mean, P(y_t) = 1/n * sum_i P_i(y_t), computed from the models'
log-probabilities as logsumexp_i(log P_i) - log n. Search sees one model (the `Seq2Seq`
interface), so greedy and beam search, n-best lists and sampling work unchanged.

The models must share one tokenizer: the same source pieces go in, and their outputs are
distributions over the same target pieces. Runs trained on one corpus with the same tokenizer
settings share it (SentencePiece's training is deterministic), as do fine-tuned runs and
their parent. Their architectures may differ (a Transformer with a GRU, say).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .models.base import DecoderState, Seq2Seq


@dataclass
class EnsembleState(DecoderState):
    states: list[DecoderState]  # one per model

    def select(self, indices: torch.Tensor, beams: int | None = None) -> EnsembleState:
        return EnsembleState([state.select(indices, beams) for state in self.states])


class Ensemble(Seq2Seq):
    def __init__(self, models: list[Seq2Seq]):
        super().__init__()
        self.models = nn.ModuleList(models)
        self.max_positions = min(model.max_positions for model in models)

    def start(self, src: torch.Tensor) -> EnsembleState:
        return EnsembleState([model.start(src) for model in self.models])

    def decode_step(self, prev_tokens: torch.Tensor,
                    state: EnsembleState) -> tuple[torch.Tensor, EnsembleState]:
        """The log of the mean of the models' next-token probabilities (batch, vocab): as
        logits, since a softmax of log-probabilities gives them back."""
        steps = [model.decode_step(prev_tokens, own)
                 for model, own in zip(self.models, state.states)]
        return mean_distribution([logits for logits, _ in steps]), \
            EnsembleState([own for _, own in steps])


def mean_distribution(logits: list[torch.Tensor]) -> torch.Tensor:
    """log(1/n * sum_i softmax(logits_i)), in float32: the models' mean distribution, as
    logits (each model's own, unchanged, when there is one)."""
    if len(logits) == 1:
        return logits[0].float()
    log_probs = torch.stack([torch.log_softmax(each.float(), -1) for each in logits])
    return torch.logsumexp(log_probs, 0) - math.log(len(logits))
