"""The interface every model family implements, and the only one search code sees.

    encode(src)                      -> memory the decoder attends over
    init_state(src, memory)          -> DecoderState (batch-first tensors)
    decode_step(prev_tokens, state)  -> logits of the next token, new state
    features(src, tgt_in)            -> decoder features of every target position (teacher
                                        forcing); output_proj turns features into logits
    forward(src, tgt_in)             -> logits of every target position

A state reorders itself with `select(indices)`: beam search uses it to follow the surviving
hypotheses, and to drop finished sentences from the batch. A state is stepped once, without
gradients: a step may write into buffers it shares with the state it came from (the
Transformer's key/value cache); `select` makes new ones.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn


class DecoderState:
    """Batch-first tensors (and lists/tuples of them) describing partial decodes."""

    def select(self, indices: torch.Tensor, beams: int | None = None) -> DecoderState:
        """The state of rows `indices` (batch dimension first everywhere). `beams`: how many
        rows each sentence has from now on, when that changes (beam search's start); rows of
        one sentence are always next to each other, so a state may keep what its beams share
        once per sentence."""
        return dataclasses.replace(self, **{f.name: pick_rows(getattr(self, f.name), indices)
                                            for f in dataclasses.fields(self)})


def pick_rows(value, indices: torch.Tensor):
    """Rows `indices` of a tensor, or of each tensor in a (nested) list or tuple; anything
    else as it is."""
    if isinstance(value, torch.Tensor):
        return value.index_select(0, indices)
    if isinstance(value, (list, tuple)):
        return type(value)(pick_rows(v, indices) for v in value)
    return value


class Seq2Seq(nn.Module):
    """An encoder-decoder translation model."""

    max_positions: int = 1_000_000  # longest source or target sequence, special tokens included
    length_multiple: int = 1  # training batches pad source and target lengths to multiples of it
    alignment_heads: int = 0  # the aligning layer's heads that word alignments read (0: all)
    output_proj: nn.Linear  # the softmax layer: features (..., d) -> logits (..., vocab)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def init_state(self, src: torch.Tensor, memory: torch.Tensor) -> DecoderState:
        raise NotImplementedError

    def decode_step(self, prev_tokens: torch.Tensor,
                    state: DecoderState) -> tuple[torch.Tensor, DecoderState]:
        """prev_tokens (batch,) -> next-token logits (batch, vocab) and the advanced state."""
        raise NotImplementedError

    def features(self, src: torch.Tensor, tgt_in: torch.Tensor,
                 teacher_forcing_ratio: float = 1.0) -> torch.Tensor:
        """Teacher forcing: (batch, src_len), (batch, tgt_len) -> features (batch, tgt_len, d),
        the inputs of the output projection. Training feeds them to `output_cross_entropy`.

        With a ratio below 1, a model that supports it feeds back its own predictions."""
        raise NotImplementedError

    def features_and_attention(self, src: torch.Tensor, tgt_in: torch.Tensor,
                               teacher_forcing_ratio: float = 1.0
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """`features`, and the attention that aligns words (batch, tgt_len, src_len): what
        guided alignment teaches (guided_alignment.py)."""
        raise NotImplementedError

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor,
                teacher_forcing_ratio: float = 1.0) -> torch.Tensor:
        """Logits of every target position: (batch, tgt_len, vocab)."""
        return self.output_proj(self.features(src, tgt_in, teacher_forcing_ratio))

    def start(self, src: torch.Tensor) -> DecoderState:
        """Encode and build the initial decoder state in one call."""
        return self.init_state(src, self.encode(src))
