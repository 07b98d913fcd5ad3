"""The softmax output layer with its cross-entropy loss, computed a slice of positions at a time.

For decoder features h (one row per target position) and the output matrix W (vocab x d):

    logits = h W^T,   p = softmax(logits),   loss = sum over positions of CE(p, target)

with label smoothing eps: CE = (1 - eps) * -log p[target] + eps * mean over the vocabulary of
-log p, which is the cross-entropy of p against the smoothed target distribution
q = (1 - eps) * onehot(target) + eps / vocab. Its gradient with respect to the logits is p - q.
Padding positions are left out before the projection, so they cost nothing.

The logits of a whole batch are large (4,096 positions x 8,000 words is 131 MB in float32, and
the softmax and its gradient need as much again each). `output_cross_entropy` never holds more
than one slice of them: during training it computes each slice's loss and, in the same pass,
its gradient p - q (written over the slice's logits), and from it the small gradients with
respect to h and W; then it frees the slice. The backward pass only scales those gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .devices import matmul_dtype, pads_rows, times_transposed
from .guided_alignment import guided_alignment_loss
from .special_tokens import PAD_ID

# Logits per slice on a CPU: 4M floats, 16 MB in float32, within a server CPU's L3 cache.
# At 8,000 words a slice is 524 positions; against 262 the output loss of a float32 training
# step took 4% less time (304 against 316 ms; the 8,000 x 256 weight gradient is updated half
# as many times), about 1% of the step.
SLICE_ELEMENTS = 2**22
# On an accelerator a slice is a few kernel launches, whatever its size: 64M logits (256 MB in
# float32) make one slice of a 12,500-token batch at a 5,000 vocabulary, a handful at 32,000.
ACCELERATOR_SLICE_ELEMENTS = 2**26


def rows_per_slice(vocab: int, device: torch.device) -> int:
    elements = SLICE_ELEMENTS if device.type == "cpu" else ACCELERATOR_SLICE_ELEMENTS
    return max(1, elements // vocab)


def _real_positions(features: torch.Tensor, targets: torch.Tensor,
                    positions: torch.Tensor | None = None):
    """Rows of `features` (flattened to positions) whose target is not padding. `positions`,
    when the caller knows them (data.Batch does, from the lengths), spares a device sync."""
    flat_targets = targets.reshape(-1)
    rows = positions if positions is not None else (flat_targets != PAD_ID).nonzero().squeeze(1)
    flat = features.reshape(-1, features.size(-1))
    return rows, flat.index_select(0, rows), flat_targets.index_select(0, rows)


def softmax_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, label_smoothing: float,
                          logits_sum: torch.Tensor | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
    """The summed cross-entropy of softmax(logits) (rows, vocab; float32) against the smoothed
    targets q, and its gradient with respect to the logits, p - q, written over `logits`.

    log p comes from log_softmax, exact even where p underflows to 0 in float32; p = exp(log p).
    With sum_v q_v = 1 and log p_v = logits_v - log sum_w exp(logits_w), the loss of a row is
    -sum_v q_v log p_v = -log p_target + eps * (logits_target - mean_v logits_v): it needs the
    logits' sum, which the output layer has cheaper than a pass over them (`logits_sum`).
    Two passes over the logits (log_softmax, exp) and the smoothing's subtraction, where the
    largest logit, the sum, softmax and the largest p made four: 524 x 8,000 logits took
    2.2 ms on two cores instead of 2.9, with the same loss and gradient."""
    eps, vocab = label_smoothing, logits.size(-1)
    targets = targets.unsqueeze(1)
    smoothing = 0.0
    if eps:  # read before log_softmax overwrites the logits
        logits_sum = logits.sum() if logits_sum is None else logits_sum
        smoothing = eps * (logits.gather(1, targets).sum() - logits_sum / vocab)
    log_p = torch.log_softmax(logits, dim=-1, out=logits)
    loss = smoothing - log_p.gather(1, targets).sum()
    p = log_p.exp_()
    if eps:
        p.sub_(eps / vocab)
    return loss, p.scatter_add_(1, targets, p.new_full(targets.shape, eps - 1))


class _OutputLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, features, weight, targets, label_smoothing, positions):
        rows, h, y = _real_positions(features, targets, positions)
        dtype = matmul_dtype(h)
        h, w = h.to(dtype), weight.to(dtype)
        grad_h = torch.empty(h.shape, dtype=torch.float32, device=h.device)
        grad_w = torch.zeros(w.shape, dtype=torch.float32, device=h.device)
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        step = rows_per_slice(w.size(0), h.device)
        # the sum of a slice's logits is (the sum of its h) . (the sum of the rows of W)
        word_sum = w.sum(0, dtype=torch.float32) if label_smoothing else None
        full_last = pads_rows(h) and h.size(0) > step  # the last slice padded: one shape
        for start in range(0, h.size(0), step):
            h_slice = h[start : start + step]
            real = h_slice.size(0)  # rows of real positions in this slice
            if full_last and real < step:
                h_slice = F.pad(h_slice, (0, 0, 0, step - real))
            logits = times_transposed(h_slice, w)[:real].float()
            logits_sum = (h[start : start + step].sum(0, dtype=torch.float32) @ word_sum
                          if label_smoothing else None)
            loss, grad_logits = softmax_cross_entropy(logits, y[start : start + step],
                                                      label_smoothing, logits_sum)
            grad_logits = grad_logits.to(dtype)
            if real < h_slice.size(0):
                grad_logits = F.pad(grad_logits, (0, 0, 0, h_slice.size(0) - real))
            grad_h[start : start + step] = times_transposed(grad_logits, w.T)[:real]  # g W
            if grad_logits.dtype == grad_w.dtype:  # float32: the sum is made in the product
                grad_w.addmm_(grad_logits.T, h_slice)
            else:  # bf16 products, summed in float32
                grad_w += grad_logits.T @ h_slice
            total += loss
        ctx.save_for_backward(rows, grad_h, grad_w)
        ctx.features_shape, ctx.features_dtype = features.shape, features.dtype
        ctx.weight_dtype = weight.dtype
        return total

    @staticmethod
    def backward(ctx, grad_total):
        rows, grad_h, grad_w = ctx.saved_tensors
        d = ctx.features_shape[-1]
        grad_features = torch.zeros(ctx.features_shape.numel() // d, d, dtype=grad_h.dtype,
                                    device=grad_h.device)
        grad_features.index_copy_(0, rows, grad_h * grad_total)
        grad_features = grad_features.view(ctx.features_shape).to(ctx.features_dtype)
        return grad_features, (grad_w * grad_total).to(ctx.weight_dtype), None, None, None


def output_cross_entropy(features: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         label_smoothing: float = 0.0,
                         positions: torch.Tensor | None = None) -> torch.Tensor:
    """Summed cross-entropy of softmax(features W^T) over non-pad targets.

    features (..., d), weight (vocab, d), targets (...) -> a float32 scalar. Equal to
    F.cross_entropy(features @ W.T, targets, ignore_index=PAD_ID, reduction="sum",
    label_smoothing=...), with the same gradients, in a fraction of the memory. `positions`:
    the flat indices of the non-pad targets, if known."""
    if torch.is_grad_enabled() and (features.requires_grad or weight.requires_grad):
        return _OutputLoss.apply(features, weight, targets, label_smoothing, positions)
    _, h, y = _real_positions(features, targets, positions)
    step = rows_per_slice(weight.size(0), h.device)
    total = torch.zeros((), dtype=torch.float32, device=h.device)
    for start in range(0, h.size(0), step):
        logits = F.linear(h[start : start + step], weight).float()
        total += F.cross_entropy(logits, y[start : start + step], reduction="sum",
                                 label_smoothing=label_smoothing)
    return total


def teacher_forced_loss(model: nn.Module, src: torch.Tensor, tgt_in: torch.Tensor,
                        tgt_out: torch.Tensor, teacher_forcing_ratio: float = 1.0,
                        label_smoothing: float = 0.0, positions: torch.Tensor | None = None,
                        alignment: torch.Tensor | None = None,
                        alignment_weight: float = 0.0) -> torch.Tensor:
    """The summed output loss of `model` reading the reference prefix `tgt_in` (teacher
    forcing) and predicting `tgt_out`: a float32 scalar. With `alignment`, the gold attention
    of the batch (guided_alignment.py), plus `alignment_weight` times the aligning layer's
    cross-entropy against it."""
    if alignment is None:
        features = model.features(src, tgt_in, teacher_forcing_ratio)
    else:
        features, attention = model.features_and_attention(src, tgt_in, teacher_forcing_ratio)
    loss = output_cross_entropy(features, model.output_proj.weight, tgt_out, label_smoothing,
                                positions)
    if alignment is None:
        return loss
    return loss + alignment_weight * guided_alignment_loss(attention, alignment)


class TeacherForcedLoss(nn.Module):
    """A model and its summed output loss as one module: the unit DistributedDataParallel wraps
    (its gradient averaging hooks in through the wrapped module's forward)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor,
                teacher_forcing_ratio: float = 1.0, label_smoothing: float = 0.0,
                positions: torch.Tensor | None = None, alignment: torch.Tensor | None = None,
                alignment_weight: float = 0.0):
        return teacher_forced_loss(self.model, src, tgt_in, tgt_out, teacher_forcing_ratio,
                                   label_smoothing, positions, alignment, alignment_weight)
