"""The sliced output layer + cross-entropy equals the plain one, in value and in gradients."""

import pytest
import torch
import torch.nn.functional as F

from nmt_cli import devices
from nmt_cli import loss as loss_module
from nmt_cli.loss import output_cross_entropy
from nmt_cli.tokenizer import PAD_ID

from conftest import WITH_AND_WITHOUT_ONEDNN


def problem(seed: int = 0, batch: int = 5, length: int = 7, d: int = 16, vocab: int = 50):
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(batch, length, d, generator=generator, requires_grad=True)
    weight = torch.randn(vocab, d, generator=generator, requires_grad=True)
    targets = torch.randint(4, vocab, (batch, length), generator=generator)
    targets[1, 3:] = PAD_ID
    targets[4, 1:] = PAD_ID
    return features, weight, targets


def plain(features, weight, targets, label_smoothing):
    logits = features @ weight.T
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                           ignore_index=PAD_ID, label_smoothing=label_smoothing,
                           reduction="sum")


@pytest.mark.parametrize("onednn", WITH_AND_WITHOUT_ONEDNN)  # AMD CPUs: oneDNN products
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("slice_elements", [50, 120, 2**22])  # 1 row, 2 rows, all at once
def test_sliced_loss_and_gradients_equal_the_plain_computation(monkeypatch, label_smoothing,
                                                                slice_elements, onednn):
    monkeypatch.setattr(loss_module, "SLICE_ELEMENTS", slice_elements)
    monkeypatch.setattr(devices, "onednn_float32", lambda: onednn)
    features, weight, targets = problem()
    expected = plain(features, weight, targets, label_smoothing)
    expected_grads = torch.autograd.grad(2.5 * expected, (features, weight))
    got = output_cross_entropy(features, weight, targets, label_smoothing)
    got_grads = torch.autograd.grad(2.5 * got, (features, weight))
    assert torch.allclose(got, expected, rtol=1e-5)
    for g, e in zip(got_grads, expected_grads):
        assert torch.allclose(g, e, atol=1e-5)
    assert got_grads[0][1, 3:].abs().sum() == 0  # padding positions get no gradient
    with torch.no_grad():
        assert torch.allclose(output_cross_entropy(features, weight, targets, label_smoothing),
                              expected, rtol=1e-5)


def test_sliced_loss_under_bf16_autocast_stays_close_to_float32():
    features, weight, targets = problem(seed=1)
    expected = plain(features, weight, targets, 0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = output_cross_entropy(features, weight, targets, 0.1)
    got.backward()
    assert got.dtype == torch.float32
    assert abs(got.item() - expected.item()) / expected.item() < 0.02
    assert features.grad.dtype == torch.float32 and weight.grad.dtype == torch.float32
    expected_grads = torch.autograd.grad(expected, (features, weight))
    for g, e in zip((features.grad, weight.grad), expected_grads):
        assert (g - e).norm() / e.norm() < 0.02  # the gradients too, to bf16's precision


def test_softmax_cross_entropy_gradient_is_p_minus_q():
    logits = torch.randn(3, 6, generator=torch.Generator().manual_seed(2))
    targets = torch.tensor([1, 5, 0])
    loss, grad = loss_module.softmax_cross_entropy(logits.clone(), targets, 0.3)
    q = torch.full((3, 6), 0.3 / 6)
    q[torch.arange(3), targets] += 0.7
    assert torch.allclose(grad, torch.softmax(logits, -1) - q, atol=1e-6)
    assert torch.allclose(loss, -(q * torch.log_softmax(logits, -1)).sum(), rtol=1e-6)


def test_softmax_cross_entropy_stays_exact_where_target_probabilities_underflow():
    """Logits 1,000 apart: most p are 0 in float32, yet the loss comes out right (its log
    normaliser is taken from the largest p, never below 1/vocab)."""
    generator = torch.Generator().manual_seed(3)
    logits = torch.randn(16, 500, generator=generator) * 1000
    targets = torch.randint(0, 500, (16,), generator=generator)
    expected = F.cross_entropy(logits.double(), targets, reduction="sum", label_smoothing=0.1)
    loss, grad = loss_module.softmax_cross_entropy(logits.clone(), targets, 0.1)
    assert torch.isfinite(grad).all()
    assert abs(loss.item() - expected.item()) / expected.item() < 1e-5


class ProductRows(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the row count of the first operand of every matrix product."""

    def __init__(self):
        super().__init__()
        self.rows = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.mm.default:
            self.rows.append(args[0].shape[0])
        if func is torch.ops.aten.addmm_.default:  # self + mat1 mat2
            self.rows.append(args[1].shape[0])
        return func(*args, **(kwargs or {}))


def test_a_padded_last_slice_changes_no_loss_or_gradient(monkeypatch):
    """Where bf16 products pay for new shapes (devices.pads_rows), the last slice is padded to
    the others' rows: each product then has one shape, and the padding counts for nothing."""
    monkeypatch.setattr(loss_module, "SLICE_ELEMENTS", 200)  # 4 rows a slice; 25 real rows
    monkeypatch.setattr(loss_module, "pads_rows", lambda h: True)
    monkeypatch.setattr(devices, "onednn_float32", lambda: False)  # as in bf16: aten's products
    features, weight, targets = problem()
    expected = plain(features, weight, targets, 0.1)
    expected_grads = torch.autograd.grad(expected, (features, weight))
    with ProductRows() as products:
        got = output_cross_entropy(features, weight, targets, 0.1)
    got_grads = torch.autograd.grad(got, (features, weight))
    assert torch.allclose(got, expected, rtol=1e-5)
    for g, e in zip(got_grads, expected_grads):
        assert torch.allclose(g, e, atol=1e-5)
    logits_rows = products.rows[::3]  # h W^T, then the two gradient products, per slice
    assert len(logits_rows) == 7 and set(logits_rows) == {4}
