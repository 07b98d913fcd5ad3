"""Inverted dropout: zero each element with probability p and scale the rest by 1/(1-p).

On the CPU the mask comes from `keep_mask`, and the backward pass keeps a boolean mask (1 byte
an element, where torch's float mask holds 4): torch's own bernoulli draw took about a quarter
of a Transformer training step there. The mask is applied as a product with its 0/1 values
read as bytes (`factor`): torch's CPU kernels for boolean masks (masked_fill, where, a
product with a bool tensor) took three to ten times as long. On other devices this is torch's
dropout. Inside torch.compile on the CPU too the mask comes from NumPy, which breaks the graph
at every dropout; yet compiled steps with torch's dropout compiled in ran 7-26% slower
(bench/RESULTS.md).

`add_dropout` is the residual connection's x + dropout(sublayer(x)) with the sum made in the
same pass as the mask's product: on two cores a float32 training step ran 2% faster, and its
peak memory fell by 41-70 MB (bench/RESULTS.md).

`relu_dropout` is ReLU followed by dropout, the inside of the Transformer's feed-forward
layer, as one step whose backward pass needs nothing but the output (which the next linear
layer keeps anyway): a kept element passed ReLU exactly where the output is above 0, the test
that ReLU's own backward kernel (threshold_backward) makes.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def keep_mask(x: torch.Tensor, p: float) -> torch.Tensor:
    """True where an element of x survives dropout (probability 1 - p), from 16 random bits per
    element. PyTorch's CPU generator (Mersenne Twister) draws one number at a time; the bits
    come from NumPy's SFC64 generator instead, twice as fast here, seeded by one draw of
    PyTorch's generator, so that `torch.manual_seed` and a saved RNG state still decide them.
    NumPy compares them too: torch's comparison of int16 with a number took six times as long
    (0.92 ms against 0.14 for 3.6M elements on a 2-core AMD EPYC)."""
    n = x.numel()
    seed = int(torch.randint(2**63 - 1, ()))
    words = np.random.SFC64(seed).random_raw((n + 3) // 4)  # 64 bits: four elements each
    keep = words.view(np.int16)[:n] >= round(-32768 + p * 65536)  # P(keep) = 1 - p, to 1/65536
    return torch.from_numpy(keep).view(x.shape)


def factor(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The boolean mask as 1.0 (kept) and 0.0 (dropped) in `dtype`, converted from its bytes."""
    return keep.view(torch.uint8).to(dtype)


def kept(x: torch.Tensor, keep: torch.Tensor, scale: float,
         plus: torch.Tensor | None = None) -> torch.Tensor:
    """x where `keep`, else 0, times `scale` (and `plus` added): one pass over x after the
    mask's conversion, written into the converted mask. Two in-place products took a third as
    long again (1.39 against 1.05 ms for 3,584 x 1,024 on two cores), and the residual
    connection's sum one more pass."""
    dtype = x.dtype if plus is None else torch.result_type(plus, x)
    mask = factor(keep, dtype)
    base = x.new_zeros((), dtype=dtype) if plus is None else plus
    return torch.addcmul(base, mask, x, value=scale, out=mask)


class _KeepAndScale(torch.autograd.Function):
    """x where `keep`, else 0, times `scale`; the backward pass needs only the boolean mask."""

    @staticmethod
    def forward(ctx, x, keep, scale):
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return kept(x, keep, scale)

    @staticmethod
    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return kept(grad, keep, ctx.scale), None, None


class _AddKeepAndScale(torch.autograd.Function):
    """residual + (x where `keep`, else 0, times `scale`), the sum in the same pass."""

    @staticmethod
    def forward(ctx, residual, x, keep, scale):
        ctx.save_for_backward(keep)
        ctx.scale, ctx.dtype = scale, x.dtype
        return kept(x, keep, scale, plus=residual)

    @staticmethod
    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return grad, kept(grad, keep, ctx.scale).to(ctx.dtype), None, None


class _ReluKeepAndScale(torch.autograd.Function):
    """ReLU(x) where `keep`, else 0, times `scale`; the backward pass reads only the output."""

    @staticmethod
    def forward(ctx, x, keep, scale):
        out = kept(x, keep, scale).relu_()
        ctx.save_for_backward(out)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (torch.ops.aten.threshold_backward(grad, out, 0.0).mul_(ctx.scale),  # out > 0
                None, None)


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, training=True)
    return _KeepAndScale.apply(x, keep_mask(x, p), 1.0 / (1.0 - p))


def add_dropout(residual: torch.Tensor, x: torch.Tensor, p: float,
                training: bool = True) -> torch.Tensor:
    """residual + dropout(x): the residual connection around a sub-layer, in one pass."""
    if not training or p == 0.0 or x.device.type != "cpu":
        return residual + dropout(x, p, training)
    return _AddKeepAndScale.apply(residual, x, keep_mask(x, p), 1.0 / (1.0 - p))


def relu_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """dropout(relu(x)) with the memory of one tensor, the output."""
    if not training or p == 0.0 or x.device.type != "cpu":
        return dropout(torch.relu(x), p, training)
    return _ReluKeepAndScale.apply(x, keep_mask(x, p), 1.0 / (1.0 - p))


class Dropout(nn.Module):
    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)
