"""Attention, each idea defined once.

Attention reads a set of values through keys: a query q is compared with every key k to give
scores; softmax turns the scores into weights that sum to 1 over the visible keys (masked keys
get weight 0); the context vector is the weighted sum of the values.

- scores of the Transformer: scaled dot product  softmax(Q Kᵀ / √d_k) V
- multi-head attention: h heads of d_k = d_model / h, each with its own projections
  Q = X W_Q, K = X W_K, V = X W_V, concatenated and projected by W_O
- scores of the GRU decoder: additive (Bahdanau)  vᵀ tanh(W_q q + W_k k),
  dot (Luong)  qᵀ k, general (Luong)  qᵀ W k
- masks: a padding mask hides <pad> keys; the causal mask hides the future
  (−∞ above the diagonal, so position t attends to positions ≤ t only)
- real positions: the layers that work on each position alone (projections, feed-forward,
  LayerNorm) can skip padding; only attention needs the padded (batch, len) layout
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .devices import in_row_blocks, matmul_dtype, stacked_linear
from .dropout import dropout as drop
from .dropout import keep_mask, kept
from .special_tokens import PAD_ID


def padding_mask(tokens: torch.Tensor) -> torch.Tensor:
    """True where a key is a real token: (batch, 1, len) from tokens (batch, len)."""
    return (tokens != PAD_ID).unsqueeze(1)


class _Rows(torch.autograd.Function):
    """Pick the rows of x at `rows`, or place x's rows there in a zero matrix of `size` rows;
    each is the other's gradient, since the rows are distinct. torch's own backward pass of a
    gather is a scatter-add, on the CPU 0.29 ms against 0.05 for a gather of 3,500 rows of
    256."""

    @staticmethod
    def forward(ctx, x, rows, size, place):
        ctx.save_for_backward(rows)
        ctx.size, ctx.place = x.size(0), place
        return _move_rows(x, rows, size, place)

    @staticmethod
    def backward(ctx, grad):
        (rows,) = ctx.saved_tensors
        return _move_rows(grad, rows, ctx.size, not ctx.place), None, None, None


def _move_rows(x: torch.Tensor, rows: torch.Tensor, size: int | None, place: bool
               ) -> torch.Tensor:
    if not place:
        return x.index_select(0, rows)
    # placed by a copy into zeros: a gather from x with a zero row appended (for padding)
    # first copied all of x (0.92 against 1.19 ms for 3,217 rows of 768 into 4,930)
    return x.new_zeros(size, x.size(1)).index_copy_(0, rows, x)


class RealPositions:
    """The real (not <pad>) positions of a padded batch of tokens (batch, len), so that the
    layers that work on each position alone run on the real tokens only, packed as the rows of
    one (rows, d) matrix, while attention still sees (batch, len, d) tensors, zero at padding
    (which its padding mask hides)."""

    def __init__(self, tokens: torch.Tensor):
        self.shape = tokens.shape
        self.rows = (tokens != PAD_ID).reshape(-1).nonzero().squeeze(1)  # each row's position

    def pack(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, len, d) -> (rows, d)."""
        return _Rows.apply(x.reshape(-1, x.size(-1)), self.rows, None, False)

    def unpack(self, rows: torch.Tensor) -> torch.Tensor:
        """(rows, d) -> (batch, len, d), zero at padding."""
        return _Rows.apply(rows, self.rows, self.shape.numel(), True).view(*self.shape, -1)


def causal_mask(size: int, device: torch.device | None = None) -> torch.Tensor:
    """True on and below the diagonal: (size, size). Query t may see keys 0..t."""
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis with masked scores set to −∞ (weight exactly 0)."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


def scaled_dot_product_attention(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    mask: torch.Tensor | None = None, causal: bool = False, dropout: float = 0.0,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """softmax(Q Kᵀ / √d_k) V over (..., len, d_k) tensors; `mask` is True where visible.

    The fast path is PyTorch's fused kernel. The same equation is written out when the
    weights are wanted (for heatmaps and tests), and for dropout on the CPU: there torch's
    fused kernel has none, and its fallback keeps float32 copies of every intermediate for the
    backward pass, where the written-out form keeps the weights and a boolean mask. In float32
    the written-out form runs head by head (`_HeadByHead`).
    """
    if not need_weights and (dropout == 0.0 or query.device.type != "cpu"):
        context = F.scaled_dot_product_attention(query, key, value, attn_mask=mask,
                                                 dropout_p=dropout, is_causal=causal)
        return context, None
    if causal:
        future = causal_mask(key.size(-2), query.device)[-query.size(-2):]
        mask = future if mask is None else mask & future
    if not need_weights and query.dim() == 4 and matmul_dtype(query) == torch.float32:
        return _HeadByHead.apply(query, key, value, mask, dropout), None
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (..., q_len, k_len)
    weights = masked_softmax(scores, mask)
    context = drop(weights, dropout) @ value  # (..., q_len, d_k)
    return context, (weights if need_weights else None)


class _HeadByHead(torch.autograd.Function):
    """The written-out attention with dropout, one head at a time: the same numbers (and the
    same dropout mask) with fewer copies. Q, K and V come as (batch, heads, len, d_head) views
    of projections laid out (batch, len, ..., heads, d_head); torch's batched product of such
    views copies them contiguous first. A product of one head's views, (batch, len, d_head)
    with rows one or more d_model apart, reads them in place (and is as fast), but writing its
    output into such a view took four times as long: each tensor made here is laid out
    (heads, batch, ...), one head after another. In a profiled float32 step on two cores the
    attention's copies fell from 44 to 22 ms; the step ran 1% faster."""

    @staticmethod
    def forward(ctx, query, key, value, mask, p):
        batch, heads, q_len, d_head = query.shape
        scale, keep_scale = 1 / math.sqrt(d_head), 1 / (1 - p)
        scores = query.new_empty(heads, batch, q_len, key.size(2))
        for h in range(heads):
            torch.baddbmm(scores[h], query[:, h], key[:, h].transpose(1, 2), beta=0,
                          alpha=scale, out=scores[h])  # Q Kᵀ / √d_k
        if mask is not None:
            visible = mask.reshape((1,) * (4 - mask.dim()) + mask.shape).transpose(0, 1)
            scores.masked_fill_(~visible, -math.inf)
        weights = torch.softmax(scores, dim=-1, out=scores)
        keep = keep_mask(weights.transpose(0, 1), p).transpose(0, 1)  # drawn batch first
        dropped = kept(weights, keep, keep_scale)
        context = query.new_empty(heads, batch, q_len, d_head)
        for h in range(heads):
            torch.bmm(dropped[h], value[:, h], out=context[h])
        ctx.save_for_backward(query, key, value, weights, dropped, keep)
        ctx.scale, ctx.keep_scale = scale, keep_scale
        return context.transpose(0, 1)  # (batch, heads, q_len, d_head)

    @staticmethod
    def backward(ctx, grad):
        query, key, value, weights, dropped, keep = ctx.saved_tensors
        grad_dropped = torch.empty_like(weights)
        grad_query, grad_key, grad_value = (x.new_empty(x.transpose(0, 1).shape)
                                            for x in (query, key, value))
        for h in range(query.size(1)):
            torch.bmm(grad[:, h], value[:, h].transpose(1, 2), out=grad_dropped[h])
            torch.bmm(dropped[h].transpose(1, 2), grad[:, h], out=grad_value[h])
        grad_weights = kept(grad_dropped, keep, ctx.keep_scale)
        grad_scores = torch.ops.aten._softmax_backward_data(grad_weights, weights, -1,
                                                            weights.dtype)
        for h in range(query.size(1)):
            torch.baddbmm(grad_query[h], grad_scores[h], key[:, h], beta=0, alpha=ctx.scale,
                          out=grad_query[h])
            torch.baddbmm(grad_key[h], grad_scores[h].transpose(1, 2), query[:, h], beta=0,
                          alpha=ctx.scale, out=grad_key[h])
        return (*(g.transpose(0, 1) for g in (grad_query, grad_key, grad_value)), None, None)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: self-attention when queries and keys come from the same sequence,
    encoder-decoder (cross) attention when the keys and values are the encoder's memory."""

    def __init__(self, d_model: int, num_heads: int, dropout: float):
        super().__init__()
        self.num_heads, self.d_head, self.dropout = num_heads, d_model // num_heads, dropout
        self.query_proj = nn.Linear(d_model, d_model)  # W_Q
        self.key_proj = nn.Linear(d_model, d_model)  # W_K
        self.value_proj = nn.Linear(d_model, d_model)  # W_V
        self.out_proj = nn.Linear(d_model, d_model)  # W_O

    def split_heads(self, x: torch.Tensor, real: RealPositions | None = None) -> torch.Tensor:
        """(batch, len, d_model), or (rows, d_model) at `real` positions
        -> (batch, heads, len, d_head)."""
        if real is not None:
            x = real.unpack(x)
        batch, length, _ = x.shape
        x = x.view(batch, length, self.num_heads, self.d_head)  # (batch, len, heads, d_head)
        return x.transpose(1, 2)  # (batch, heads, len, d_head)

    def projections(self, x: torch.Tensor, layers: tuple[nn.Linear, ...],
                    real: RealPositions | None = None) -> list[torch.Tensor]:
        """x W for each of `layers` (some of W_Q, W_K, W_V), each (batch, heads, len, d_head).
        In training they are one product of x with their weights side by side, and the
        gradient of x comes back from one product, already summed: on two CPU cores the
        products of Q, K and V (forward and backward, 3,584 x 256 by 256 x 768) took 11-12%
        less time than three products each; a whole self-attention layer, about 2% less."""
        if len(layers) == 1 or not torch.is_grad_enabled():
            return [self.split_heads(in_row_blocks(layer, x), real) for layer in layers]
        stacked = in_row_blocks(lambda rows: stacked_linear(layers, rows), x)
        if real is not None:
            stacked = real.unpack(stacked)
        # (batch, len, projections, heads, d_head), taken apart as views: their gradients
        # come back in one copy (unbind's stack), where a split of the product's columns
        # first copied each gradient contiguous and then concatenated them
        batch, length, _ = stacked.shape
        parts = stacked.view(batch, length, len(layers), self.num_heads, self.d_head)
        return [part.transpose(1, 2) for part in parts.unbind(2)]

    def keys_values(self, x: torch.Tensor, real: RealPositions | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """K = X W_K and V = X W_V, each (batch, heads, len, d_head): what a cache keeps."""
        key, value = self.projections(x, (self.key_proj, self.value_proj), real)
        return key, value

    def attend(
        self, x: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
        mask: torch.Tensor | None = None, causal: bool = False, need_weights: bool = False,
        real: RealPositions | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Queries from x (batch, q_len, d_model) attend over projected keys and values.

        `mask` is (batch, 1, k_len) or (q_len, k_len), True where visible. With `real`, x
        holds the rows of those positions only (rows, d_model), and so does the output.
        Returns the output (batch, q_len, d_model) and, if asked, the weights
        (batch, heads, q_len, k_len).
        """
        (query,) = self.projections(x, (self.query_proj,), real)  # (batch, heads, q_len, d_head)
        return self.attend_heads(query, key, value, mask, causal, need_weights, real)

    def attend_heads(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     mask: torch.Tensor | None, causal: bool, need_weights: bool,
                     real: RealPositions | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """`attend` from the projected queries (batch, heads, q_len, d_head) on."""
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, 1, k_len): the same for every head
        dropout = self.dropout if self.training else 0.0
        context, weights = scaled_dot_product_attention(query, key, value, mask, causal,
                                                        dropout, need_weights)
        batch, _, q_len, _ = context.shape
        context = context.transpose(1, 2).reshape(batch, q_len, -1)  # (batch, q_len, d_model)
        if real is not None:
            context = real.pack(context)  # (rows, d_model)
        return in_row_blocks(self.out_proj, context), weights

    def forward(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None = None,
                causal: bool = False, need_weights: bool = False,
                real: RealPositions | None = None):
        """`real`: x and memory hold only the rows of these positions (self-attention)."""
        if memory is not x:
            return self.attend(x, *self.keys_values(memory, real), mask, causal, need_weights,
                               real)
        query, key, value = self.projections(  # self-attention: Q, K and V all from x
            x, (self.query_proj, self.key_proj, self.value_proj), real)
        return self.attend_heads(query, key, value, mask, causal, need_weights, real)


class DotScore(nn.Module):
    """Luong dot score: score(q, k) = qᵀ k."""

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return keys

    def forward(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        """(batch, q_len, d), (batch, k_len, d) -> scores (batch, q_len, k_len)."""
        return query @ projected_keys.transpose(1, 2)


class GeneralScore(DotScore):
    """Luong general score: score(q, k) = qᵀ W k (W k is computed once per sentence)."""

    def __init__(self, size: int):
        super().__init__()
        self.key_proj = nn.Linear(size, size, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.key_proj(keys)


class _AdditiveEnergy(torch.autograd.Function):
    """vᵀ tanh(q + k) for every (query, key) pair. Autograd would keep the tanh, one
    (batch, q_len, k_len, d) tensor per decoder step; the backward pass recomputes it instead."""

    @staticmethod
    def forward(ctx, q, k, v):
        """q (batch, q_len, d), k (batch, k_len, d), v (d,) -> (batch, q_len, k_len)."""
        ctx.save_for_backward(q, k, v)
        return torch.tanh(q.unsqueeze(2) + k.unsqueeze(1)) @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v = ctx.saved_tensors
        hidden = (q.unsqueeze(2) + k.unsqueeze(1)).tanh_()  # (batch, q_len, k_len, d)
        grad_v = hidden.reshape(-1, v.numel()).t() @ grad.reshape(-1)
        # through tanh: d score / d (q + k) = v (1 - tanh²), in one fused pass
        grad_sum = torch.ops.aten.tanh_backward(grad.unsqueeze(-1) * v, hidden)
        grad_k = grad_sum.squeeze(1) if q.size(1) == 1 else grad_sum.sum(1)  # one decoder step
        return grad_sum.sum(2), grad_k, grad_v


class AdditiveScore(nn.Module):
    """Bahdanau additive score: score(q, k) = vᵀ tanh(W_q q + W_k k)."""

    def __init__(self, size: int):
        super().__init__()
        self.query_proj = nn.Linear(size, size, bias=False)  # W_q
        self.key_proj = nn.Linear(size, size, bias=False)  # W_k
        self.energy = nn.Linear(size, 1, bias=False)  # v

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.key_proj(keys)

    def forward(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        """(batch, q_len, d), (batch, k_len, d) -> scores (batch, q_len, k_len)."""
        query = self.query_proj(query)  # W_q q
        if not torch.is_grad_enabled():  # decoding (energy may be an int8 layer there)
            hidden = torch.tanh(query.unsqueeze(2)  # (batch, q_len, 1, d)
                                + projected_keys.unsqueeze(1))  # (batch, q_len, k_len, d)
            return self.energy(hidden).squeeze(-1)
        v = self.energy.weight.squeeze(0).to(query.dtype)
        return _AdditiveEnergy.apply(query, projected_keys.to(query.dtype), v)


class NoScore(DotScore):
    """No attention (the seq2seq bottleneck): one memory position, the encoder's summary
    vector, so the softmax gives it weight 1 and the context vector is that summary at every
    step, whatever the query."""

    def forward(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        return query.new_zeros(query.size(0), query.size(1), projected_keys.size(1))


def make_score(kind: str, size: int) -> nn.Module:
    """The GRU decoder's score function: additive | dot | general | none."""
    return {"additive": lambda: AdditiveScore(size), "dot": DotScore,
            "general": lambda: GeneralScore(size), "none": NoScore}[kind]()


def attend_with_scores(scores: torch.Tensor, values: torch.Tensor,
                       mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights = masked softmax of the scores; context vector = weighted sum of the values.

    scores (batch, q_len, k_len), values (batch, k_len, d), mask (batch, 1, k_len)
    -> context (batch, q_len, d), weights (batch, q_len, k_len).
    """
    weights = masked_softmax(scores, mask)
    return weights @ values, weights
