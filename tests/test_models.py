"""Both model families: causal masking, padding invariance, cached decoding = teacher forcing."""

import pytest
import torch

from nmt_cli.tokenizer import PAD_ID, SOS_ID

from conftest import random_tokens, tiny_model

FAMILIES = [("transformer", {}), ("transformer", {"norm_first": False}),
            ("gru", {"attention": "additive"}), ("gru", {"attention": "dot"}),
            ("gru", {"attention": "general"})]
IDS = ["transformer-prenorm", "transformer-postnorm", "gru-additive", "gru-dot", "gru-general"]


def teacher_forced_input(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    tgt = random_tokens(batch, length, seed=seed)
    tgt[:, 0] = SOS_ID
    return tgt


@pytest.mark.parametrize(("arch", "changes"), FAMILIES, ids=IDS)
def test_changing_future_targets_leaves_earlier_outputs_unchanged(arch, changes):
    model = tiny_model(arch, **changes)
    src, tgt = random_tokens(2, 7), teacher_forced_input(2, 6)
    t = 3
    changed = tgt.clone()
    changed[:, t + 1 :] = random_tokens(2, 6 - t - 1, seed=9)
    with torch.no_grad():
        before, after = model(src, tgt), model(src, changed)
    assert torch.allclose(before[:, : t + 1], after[:, : t + 1], atol=1e-5)
    assert not torch.allclose(before[:, t + 1 :], after[:, t + 1 :], atol=1e-3)


@pytest.mark.parametrize(("arch", "changes"), FAMILIES, ids=IDS)
def test_extra_source_padding_leaves_outputs_unchanged(arch, changes):
    model = tiny_model(arch, **changes)
    src, tgt = random_tokens(2, 5), teacher_forced_input(2, 4)
    padded = torch.cat([src, torch.full((2, 4), PAD_ID)], dim=1)
    with torch.no_grad():
        assert torch.allclose(model(src, tgt), model(padded, tgt), atol=1e-5)


@pytest.mark.parametrize(("arch", "changes"), FAMILIES, ids=IDS)
def test_step_by_step_decoding_reproduces_teacher_forced_logits(arch, changes):
    model = tiny_model(arch, **changes)
    src = random_tokens(3, 6)
    src[2, 4:] = PAD_ID  # a shorter sentence in the batch
    tgt = teacher_forced_input(3, 7)
    with torch.no_grad():
        forced = model(src, tgt)  # (batch, tgt_len, vocab)
        state, steps = model.start(src), []
        for t in range(tgt.size(1)):
            logits, state = model.decode_step(tgt[:, t], state)
            steps.append(logits)
    assert torch.allclose(forced, torch.stack(steps, dim=1), atol=1e-5)


def test_the_encoder_skips_source_padding_with_the_same_loss_and_gradients(monkeypatch):
    from nmt_cli.loss import teacher_forced_loss
    from nmt_cli.models import transformer

    model = tiny_model("transformer").train()
    src, tgt = random_tokens(3, 6), teacher_forced_input(3, 6)
    src[1, 4:], src[2, 2:] = PAD_ID, PAD_ID  # 6 + 4 + 2 = 12 real tokens of 18
    norm_inputs = []
    model.encoder_layers[0].attention_block.norm.register_forward_hook(
        lambda module, inputs, output: norm_inputs.append(tuple(inputs[0].shape[:-1])))

    def loss_and_gradients():
        model.zero_grad()
        loss = teacher_forced_loss(model, src, tgt[:, :-1], tgt[:, 1:])
        loss.backward()
        return loss.detach(), [parameter.grad.clone() for parameter in model.parameters()]

    packed = loss_and_gradients()
    monkeypatch.setattr(transformer, "skip_padding", lambda src: None)
    padded = loss_and_gradients()
    assert norm_inputs == [(12,), (3, 6)]  # the real tokens' rows; then the padded batch
    assert torch.allclose(packed[0], padded[0])
    for skipping, not_skipping in zip(packed[1], padded[1]):
        assert torch.allclose(skipping, not_skipping, rtol=1e-4, atol=1e-6)


def test_state_select_reorders_the_cache():
    model = tiny_model("transformer")
    src, tgt = random_tokens(3, 5), teacher_forced_input(3, 4)
    order = torch.tensor([2, 0, 1])
    with torch.no_grad():
        state = model.start(src)
        for t in range(3):
            _, state = model.decode_step(tgt[:, t], state)
        reordered, _ = model.decode_step(tgt[order, 3], state.select(order))
        expected = model(src, tgt)[:, 3]
    assert torch.allclose(reordered, expected[order], atol=1e-5)


@pytest.mark.parametrize("strided", [True, False], ids=["strided-select", "select-then-copy"])
def test_the_self_attention_cache_grows_in_place_and_survives_selection(monkeypatch, strided):
    from nmt_cli.models.transformer import KeyValueCache

    monkeypatch.setattr(KeyValueCache, "FIRST_CAPACITY", 2)
    if not strided:  # the path of devices other than the CPU and CUDA
        monkeypatch.setattr(KeyValueCache, "STRIDED_OUTPUT_DEVICES", ())
    model = tiny_model("transformer")
    src, tgt = random_tokens(3, 5), teacher_forced_input(3, 7)
    order = torch.tensor([2, 0, 1])
    with torch.no_grad():
        expected = model(src, tgt)
        state, steps, buffers = model.start(src), [], []
        for t in range(tgt.size(1)):
            if t == 5:  # after the buffers grew twice: reorder, as beam search does
                state, tgt, expected = state.select(order), tgt[order], expected[order]
                steps = [step[order] for step in steps]
            logits, state = model.decode_step(tgt[:, t], state)
            steps.append(logits)
            buffers.append(state.cache[0][0])
    assert [buffer.size(1) for buffer in buffers] == [2, 2, 4, 4, 8, 8, 8]
    assert buffers[2].data_ptr() == buffers[3].data_ptr()  # written in place, not copied
    assert buffers[4].data_ptr() != buffers[5].data_ptr()  # select made new buffers
    assert torch.allclose(expected, torch.stack(steps, dim=1), atol=1e-5)


def test_beams_share_their_sentences_memory_keys_and_values():
    model = tiny_model("transformer")
    n, k = 3, 2
    src, tgt = random_tokens(n, 5), teacher_forced_input(n, 4)
    with torch.no_grad():
        expected = model(src, tgt)  # (n, 4, vocab)
        state = model.start(src).select(torch.arange(n).repeat_interleave(k), k)
        assert [key.size(0) for key, _ in state.memory_cache] == [n, n]  # not n * k
        for t in range(3):
            logits, state = model.decode_step(tgt[:, t].repeat_interleave(k), state)
            assert torch.allclose(logits, expected[:, t].repeat_interleave(k, 0), atol=1e-5)
        # sentence 0 finished; sentence 2 goes first, its two beams swapped
        state = state.select(torch.tensor([5, 4, 2, 3]))
        assert [key.size(0) for key, _ in state.memory_cache] == [2, 2]
        logits, _ = model.decode_step(tgt[[2, 2, 1, 1], 3], state)
    assert torch.allclose(logits, expected[[2, 2, 1, 1], 3], atol=1e-5)


def test_tied_embeddings_share_one_matrix():
    model = tiny_model("transformer")
    assert model.output_proj.weight is model.tgt_embedding.weight
    assert model.src_embedding is model.tgt_embedding
    untied = tiny_model("transformer", tie_embeddings=False)
    assert untied.output_proj.weight is not untied.tgt_embedding.weight


def test_gru_attention_weights_are_distributions_over_the_source():
    model = tiny_model("gru", attention="additive")
    src = random_tokens(2, 6)
    src[1, 3:] = PAD_ID
    with torch.no_grad():
        weights = model.attention_weights(src, teacher_forced_input(2, 4))
    assert weights.shape == (2, 4, 6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4))
    assert (weights[1, :, 3:] == 0).all()


def test_transformer_cross_attention_weights_ignore_padding():
    model = tiny_model("transformer")
    src = random_tokens(2, 6)
    src[0, 4:] = PAD_ID
    with torch.no_grad():
        weights = model.cross_attention_weights(src, teacher_forced_input(2, 3))
    assert len(weights) == 2 and weights[0].shape == (2, 4, 3, 6)
    assert (weights[-1][0, :, :, 4:] == 0).all()


def test_gru_without_teacher_forcing_feeds_back_its_own_predictions():
    model = tiny_model("gru", attention="additive")
    src, tgt = random_tokens(2, 5), teacher_forced_input(2, 6)
    torch.manual_seed(0)
    with torch.no_grad():
        free_running = model(src, tgt, teacher_forcing_ratio=0.0)
        state, tokens, steps = model.start(src), tgt[:, 0], []
        for _ in range(tgt.size(1)):
            logits, state = model.decode_step(tokens, state)
            steps.append(logits)
            tokens = logits.argmax(-1)
    assert torch.allclose(free_running, torch.stack(steps, dim=1), atol=1e-5)
    assert not torch.allclose(free_running, model(src, tgt), atol=1e-3)


def test_cpu_dropout_keeps_one_minus_p_and_rescales():
    from nmt_cli.dropout import Dropout

    dropout = Dropout(0.25)
    x = torch.ones(400, 500, requires_grad=True)
    torch.manual_seed(0)
    y = dropout(x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.005
    assert torch.allclose(y[kept], torch.full_like(y[kept], 1 / 0.75))
    y.sum().backward()
    assert torch.equal(x.grad != 0, kept)  # no gradient through dropped elements
    torch.manual_seed(0)
    assert torch.equal(dropout(x), y)  # seeded: reproducible (exact resume relies on it)
    assert torch.equal(dropout.eval()(x), x)


def test_relu_dropout_equals_relu_then_dropout_with_the_same_gradients():
    from nmt_cli.dropout import dropout, relu_dropout

    torch.manual_seed(0)
    x = torch.randn(300, 400, requires_grad=True)
    weights = torch.randn(300, 400)
    torch.manual_seed(1)
    fused = relu_dropout(x, 0.2)
    (grad_fused,) = torch.autograd.grad((fused * weights).sum(), x)
    torch.manual_seed(1)
    plain = dropout(torch.relu(x), 0.2)
    (grad_plain,) = torch.autograd.grad((plain * weights).sum(), x)
    assert torch.equal(fused, plain)
    assert torch.allclose(grad_fused, grad_plain)
    assert 0.35 < (grad_fused != 0).float().mean().item() < 0.45  # half pass ReLU, 80% kept


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_add_dropout_equals_the_sum_with_dropout_and_its_gradients(dtype):
    """In bf16 too the sum is made in float32, x scaled without a bf16 rounding between."""
    from nmt_cli.dropout import add_dropout, dropout

    torch.manual_seed(0)
    residual = torch.randn(300, 400, requires_grad=True)
    x = torch.randn(300, 400).to(dtype).requires_grad_()
    weights = torch.randn(300, 400)
    outputs, grads = [], []
    for fused in (True, False):
        torch.manual_seed(1)
        y = add_dropout(residual, x, 0.2) if fused else residual + dropout(x.float(), 0.2)
        outputs.append(y)
        grads.append(torch.autograd.grad((y * weights).sum(), (residual, x)))
    assert outputs[0].dtype == outputs[1].dtype == torch.float32
    assert torch.allclose(outputs[0], outputs[1], rtol=1e-6, atol=1e-6)
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][0], weights)
    assert grads[0][1].dtype == dtype and torch.equal(grads[0][1], grads[1][1])
    assert 0.75 < (grads[0][1] != 0).float().mean().item() < 0.85  # 80% kept
    assert torch.equal(add_dropout(residual, x, 0.2, training=False), residual + x)


def test_compiled_features_meet_new_lengths_without_recompiling(monkeypatch):
    import functools

    import torch._dynamo
    import torch.fx.experimental._config as shapes
    from torch._dynamo.utils import counters

    from nmt_cli.models import compile_features

    monkeypatch.setattr(shapes, "use_duck_shape", shapes.use_duck_shape)  # restored after
    # Dynamo's guards decide recompiles whatever the backend; "eager" skips code generation.
    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    torch._dynamo.reset()
    model = tiny_model("transformer")
    assert compile_features(model)
    assert model.length_multiple == 1  # lengths are padded to multiples of 8 on CUDA alone
    graphs = []
    with torch.no_grad():
        for batch, src_len, tgt_len in [(6, 9, 9), (6, 9, 7), (9, 9, 9), (4, 12, 15)]:
            model.features(random_tokens(batch, src_len), teacher_forced_input(batch, tgt_len))
            graphs.append(counters["stats"]["unique_graphs"])
    torch._dynamo.reset()
    assert graphs[-1] == graphs[0]  # the first batch's graph served every later one
    assert not compile_features(tiny_model("gru"))


class BFloat16Casts(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the shape of every tensor but a parameter cast to bfloat16."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if (func is torch.ops.aten._to_copy.default and kwargs.get("dtype") == torch.bfloat16
                and not isinstance(args[0], torch.nn.Parameter)):
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **kwargs)


@pytest.mark.parametrize("norm_first", [True, False], ids=["prenorm", "postnorm"])
def test_under_autocast_each_sublayer_input_is_cast_once(norm_first):
    # Autocast casts a product's float32 input anew for each product: the query, key and
    # value projections read one LayerNorm output, and every decoder layer reads the memory.
    model = tiny_model("transformer", norm_first=norm_first).train()
    src, tgt = random_tokens(2, 7), teacher_forced_input(2, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16), BFloat16Casts() as casts:
        model.features(src, tgt)
    # the encoder's sub-layers read the real source tokens' rows (rows, d), the others
    # (batch, len, d); the attention's projections, stacked in training, are weights: those
    # of W_Q, W_K, W_V in self-attention and of W_K, W_V in cross-attention, with their biases
    d = model.encoder_layers[0].self_attention.out_proj.in_features
    stacked = {(3 * d, d), (3 * d,), (2 * d, d), (2 * d,)}
    activations = [shape for shape in casts.shapes if shape not in stacked]
    layers = len(model.encoder_layers), len(model.decoder_layers)
    assert len(casts.shapes) - len(activations) == 2 * (layers[0] + 2 * layers[1])
    # one a sub-layer (2 an encoder layer, 3 a decoder layer), and the memory once
    assert len(activations) == 2 * layers[0] + 3 * layers[1] + 1
