"""The interface every model family implements, and the only one search code sees.

    encode(src)                      -> memory the decoder attends over
    init_state(src, memory)          -> DecoderState (batch-first tensors)
    decode_step(prev_tokens, state)  -> logits of the next token, new state
    features(src, tgt_in)            -> decoder features of every target position (teacher
                                        forcing); output_proj turns features into logits
    forward(src, tgt_in)             -> logits of every target position

A state reorders itself with `select(indices)`: beam search uses it to follow the surviving
hypotheses, and to drop finished sentences from the batch.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F
from torch import nn


class DecoderState:
    """Batch-first tensors (and lists/tuples of them) describing partial decodes."""

    def select(self, indices: torch.Tensor) -> DecoderState:
        """The state of rows `indices` (batch dimension first everywhere)."""
        def pick(value):
            if isinstance(value, torch.Tensor):
                return value.index_select(0, indices)
            if isinstance(value, (list, tuple)):
                return type(value)(pick(v) for v in value)
            return value

        return dataclasses.replace(self, **{f.name: pick(getattr(self, f.name))
                                            for f in dataclasses.fields(self)})


def keep_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """True where an element of x survives dropout (probability 1 - p), from 16 random bits per
    element: four elements per 64-bit draw of PyTorch's CPU generator, which draws one number
    at a time."""
    n = x.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device)
    bits = words.random_(-(2**63), 2**63 - 1).view(torch.int16)[:n].view(x.shape)
    return bits >= round(-32768 + p * 65536)  # P(keep) = 1 - p, to 1/65536


class _KeepAndScale(torch.autograd.Function):
    """x where `keep`, else 0, times `scale`; the backward pass needs only the boolean mask
    (1 byte an element, where a float mask would hold 4)."""

    @staticmethod
    def forward(ctx, x, keep, scale):
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return x.masked_fill(~keep, 0.0).mul_(scale)

    @staticmethod
    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return grad.masked_fill(~keep, 0.0).mul_(ctx.scale), None, None


class Dropout(nn.Module):
    """Inverted dropout: zero each element with probability p and scale the rest by 1/(1-p).

    On the CPU the mask comes from `keep_mask`: torch's own bernoulli mask took about a
    quarter of a Transformer training step there. Elsewhere this is torch's dropout."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.device.type != "cpu":
            return F.dropout(x, self.p, training=True)
        return _KeepAndScale.apply(x, keep_mask(x, self.p), 1.0 / (1.0 - self.p))


class Seq2Seq(nn.Module):
    """An encoder-decoder translation model."""

    max_positions: int = 1_000_000  # longest source or target sequence, special tokens included
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

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor,
                teacher_forcing_ratio: float = 1.0) -> torch.Tensor:
        """Logits of every target position: (batch, tgt_len, vocab)."""
        return self.output_proj(self.features(src, tgt_in, teacher_forcing_ratio))

    def start(self, src: torch.Tensor) -> DecoderState:
        """Encode and build the initial decoder state in one call."""
        return self.init_state(src, self.encode(src))
