"""Attention: weights are a distribution over visible keys; masks hide what they should."""

import pytest
import torch
import torch.nn.functional as F

from nmt_cli.attention import (
    MultiHeadAttention,
    RealPositions,
    attend_with_scores,
    causal_mask,
    make_score,
    padding_mask,
    scaled_dot_product_attention,
)
from nmt_cli.tokenizer import PAD_ID


def test_scaled_dot_product_weights_sum_to_one_and_are_zero_on_masked_keys():
    torch.manual_seed(0)
    query, key, value = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]]).view(2, 1, 1, 5)
    context, weights = scaled_dot_product_attention(query, key, value, mask, need_weights=True)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 3))
    assert (weights[1, :, :, 3:] == 0).all()
    assert (weights[0] > 0).all()
    # The context vector is the weighted sum of the values.
    assert torch.allclose(context, weights @ value, atol=1e-6)


def test_fused_kernel_matches_the_written_out_equation():
    torch.manual_seed(0)
    query, key, value = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2]).view(2, 1, 1, 6)
    for causal, m in ((False, mask), (True, None)):
        fast, _ = scaled_dot_product_attention(query, key, value, m, causal=causal)
        slow, _ = scaled_dot_product_attention(query, key, value, m, causal, need_weights=True)
        assert torch.allclose(fast, slow, atol=1e-5)


def test_attention_dropout_on_the_cpu_drops_weights_with_a_seeded_boolean_mask():
    from nmt_cli.dropout import keep_mask

    torch.manual_seed(0)
    query, key, value = (torch.randn(2, 4, 6, 8, requires_grad=True) for _ in range(3))
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2]).view(2, 1, 1, 6)
    torch.manual_seed(1)
    context, weights = scaled_dot_product_attention(query, key, value, mask, dropout=0.3)
    assert weights is None  # not asked for
    _, full = scaled_dot_product_attention(query, key, value, mask, need_weights=True)
    torch.manual_seed(1)
    keep = keep_mask(full, 0.3)
    assert torch.allclose(context, (full * keep / 0.7) @ value, atol=1e-6)
    context.sum().backward()
    assert query.grad is not None and torch.isfinite(query.grad).all()


def test_float32_dropout_attention_head_by_head_equals_the_batched_equation():
    """The head-by-head path (float32, dropout, CPU) against the batched written-out equation
    with the same dropout mask, on the heads' views of (batch, len, d_model) projections, in
    value and in the gradients of Q, K and V."""
    import math

    from nmt_cli.dropout import dropout

    batch, heads, length, d_head = 3, 4, 7, 8
    torch.manual_seed(0)
    projections = [torch.randn(batch, length, heads * d_head) for _ in range(3)]
    mask = torch.ones(batch, 1, 1, length, dtype=torch.bool)
    mask[1, ..., 5:] = False
    for causal in (False, True):
        results = []
        for batched in (True, False):
            leaves = [x.clone().requires_grad_() for x in projections]
            q, k, v = (x.view(batch, length, heads, d_head).transpose(1, 2) for x in leaves)
            torch.manual_seed(5)  # the same dropout mask for both
            if batched:
                visible = mask & causal_mask(length) if causal else mask
                scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
                weights = torch.softmax(scores.masked_fill(~visible, -math.inf), dim=-1)
                context = dropout(weights, 0.3) @ v
            else:
                context, _ = scaled_dot_product_attention(q, k, v, mask, causal, dropout=0.3)
            (context * torch.linspace(-1, 1, context.numel()).view(context.shape)).sum().backward()
            results.append([context.detach()] + [x.grad for x in leaves])
        for expected, got in zip(*results):
            assert torch.allclose(got, expected, atol=1e-5)
        q, k, v = (x.view(batch, length, heads, d_head).transpose(1, 2) for x in projections)
        undropped, _ = scaled_dot_product_attention(q, k, v, mask, causal)
        assert not torch.allclose(results[1][0], undropped, atol=1e-3)  # dropout did drop


def test_additive_score_matches_autograd_of_the_written_out_formula():
    torch.manual_seed(0)
    score = make_score("additive", 6).double()
    query = torch.randn(2, 3, 6, dtype=torch.double, requires_grad=True)
    keys = torch.randn(2, 5, 6, dtype=torch.double, requires_grad=True)
    fast = score(query, score.project_keys(keys))
    written = score.energy(torch.tanh(score.query_proj(query).unsqueeze(2)
                                      + score.key_proj(keys).unsqueeze(1))).squeeze(-1)
    assert torch.allclose(fast, written)
    weights = torch.randn_like(fast)
    grads = torch.autograd.grad((fast * weights).sum(), [query, keys, *score.parameters()])
    expected = torch.autograd.grad((written * weights).sum(), [query, keys, *score.parameters()])
    for got, want in zip(grads, expected):
        assert torch.allclose(got, want)


def test_additive_score_decodes_with_int8_linear_layers():
    from nmt_cli.translate import quantize_int8

    torch.manual_seed(0)
    score = make_score("additive", 16)
    query, keys = torch.randn(3, 1, 16), torch.randn(3, 5, 16)
    quantized = quantize_int8(score, torch.device("cpu"))  # a quantized copy
    with torch.inference_mode():
        expected = score(query, score.project_keys(keys))
        scores = quantized(query, quantized.project_keys(keys))
    assert scores.shape == (3, 1, 5)
    assert torch.allclose(scores, expected, atol=0.05)


def test_real_positions_pack_the_real_tokens_rows_and_unpack_them_with_zero_padding():
    tokens = torch.tensor([[5, 6, 7], [8, PAD_ID, PAD_ID], [PAD_ID, 9, PAD_ID]])
    real = RealPositions(tokens)
    x = torch.randn(3, 3, 2, dtype=torch.float64, requires_grad=True)
    rows = real.pack(x)
    assert torch.equal(rows, x.detach()[tokens != PAD_ID])  # row by row, in order
    assert torch.equal(real.unpack(rows), x.detach() * (tokens != PAD_ID).unsqueeze(-1))
    # the gradients, each a gather of its own, against finite differences
    assert torch.autograd.gradcheck(real.pack, (x,))
    assert torch.autograd.gradcheck(real.unpack, (rows.detach().requires_grad_(),))


def test_causal_mask_hides_the_future():
    mask = causal_mask(4)
    assert mask.tolist() == [[True, False, False, False], [True, True, False, False],
                             [True, True, True, False], [True, True, True, True]]
    torch.manual_seed(0)
    x = torch.randn(1, 1, 4, 8)
    _, weights = scaled_dot_product_attention(x, x, x, causal=True, need_weights=True)
    assert (weights[0, 0].triu(diagonal=1) == 0).all()


def test_padding_mask_marks_real_tokens():
    tokens = torch.tensor([[5, 6, PAD_ID], [7, PAD_ID, PAD_ID]])
    assert padding_mask(tokens).tolist() == [[[True, True, False]], [[True, False, False]]]


@pytest.mark.parametrize("kind", ["additive", "dot", "general"])
def test_gru_scores_give_weights_over_unpadded_source(kind):
    torch.manual_seed(0)
    score = make_score(kind, 8)
    memory = torch.randn(2, 5, 8)
    query = torch.randn(2, 3, 8)
    mask = padding_mask(torch.tensor([[4, 4, 4, 4, 4], [4, 4, PAD_ID, PAD_ID, PAD_ID]]))
    context, weights = attend_with_scores(score(query, score.project_keys(memory)), memory, mask)
    assert weights.shape == (2, 3, 5)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3))
    assert (weights[1, :, 2:] == 0).all()
    assert torch.allclose(context, weights @ memory, atol=1e-6)


def test_multi_head_attention_returns_per_head_weights():
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4, dropout=0.0)
    x, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]]).unsqueeze(1)
    out, weights = attention(x, memory, mask, need_weights=True)
    fast, _ = attention(x, memory, mask)
    assert out.shape == (2, 3, 16) and weights.shape == (2, 4, 3, 5)
    assert torch.allclose(out, fast, atol=1e-5)
    assert (weights[1, :, :, 2:] == 0).all()


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_stacked_projections_give_the_values_and_gradients_of_separate_ones(kind):
    # In training, Q, K and V of self-attention (K and V of cross-attention) are one product
    # of the input with the projections' weights side by side.
    torch.manual_seed(0)
    attention = MultiHeadAttention(32, 4, dropout=0.0).train()
    x = torch.randn(3, 7, 32, requires_grad=True)
    memory = x if kind == "self" else torch.randn(3, 5, 32, requires_grad=True)
    inputs = [x] if kind == "self" else [x, memory]
    weights = list(attention.parameters())

    def heads(layer, source):
        return layer(source).view(3, -1, 4, 8).transpose(1, 2)

    out, _ = attention(x, memory, causal=kind == "self")
    context = F.scaled_dot_product_attention(
        heads(attention.query_proj, x), heads(attention.key_proj, memory),
        heads(attention.value_proj, memory), is_causal=kind == "self")
    expected = attention.out_proj(context.transpose(1, 2).reshape(3, 7, 32))
    torch.testing.assert_close(out, expected)
    grads = torch.autograd.grad(out.square().sum(), inputs + weights)
    expected_grads = torch.autograd.grad(expected.square().sum(), inputs + weights)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad)
