"""Model families behind one interface (see base.py)."""

from __future__ import annotations

import torch

from ..config import ModelConfig
from ..errors import UserError
from .base import DecoderState, Seq2Seq
from .gru import GRUSeq2Seq
from .transformer import Transformer

__all__ = ["DecoderState", "GRUSeq2Seq", "Seq2Seq", "Transformer", "build_model",
           "compile_features"]


def build_model(config: ModelConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool) -> Seq2Seq:
    family = {"transformer": Transformer, "gru": GRUSeq2Seq}[config.arch]
    try:
        return family(config, src_vocab, tgt_vocab, joint_vocab)
    except (MemoryError, RuntimeError) as e:  # sizes from a settings file, such as d_ff 1e9
        if not isinstance(e, MemoryError) and "alloc" not in str(e):
            raise
        raise UserError(f"model: not enough memory for d_model {config.d_model}, d_ff "
                        f"{config.d_ff}, {config.num_encoder_layers}+{config.num_decoder_layers} "
                        f"layers and vocabularies of {src_vocab:,}/{tgt_vocab:,}") from None


# On CUDA, a compiled graph holds only for batches whose lengths are multiples of 8, or only
# for those whose lengths are not, as in the batch that compiled it: PyTorch's fused attention
# kernels want their inputs (the padding mask, the per-head softmax statistics) in rows
# aligned to 8 elements, and the compiler guards on whether they are. On an H200 the first
# batch of the other kind compiled everything again, once in the 20 timed steps of both runs
# (guard: the target length % 8; bench/RESULTS.md). Lengths padded to a multiple of 8 keep
# every batch of one kind, as fairseq's pad-to-multiple does.
ALIGNMENT = 8


def compile_features(model: Seq2Seq) -> bool:
    """torch.compile a Transformer's teacher-forced features, with dynamic shapes (batches
    vary in length). The output loss stays eager, and so does the GRU: its step loop, cuDNN
    call and packing break graphs, so compiling it gains little. True when compiled."""
    if not isinstance(model, Transformer):
        return False
    on_cuda = next(model.parameters()).device.type == "cuda"
    if on_cuda and model.max_positions % ALIGNMENT == 0:  # padding stays inside the table
        model.length_multiple = ALIGNMENT
    # Without this, sizes equal in the first batch (its source and target lengths, say)
    # share one symbol, and the first batch where they differ compiles everything again.
    import torch.fx.experimental._config as shapes

    shapes.use_duck_shape = False
    model.features = torch.compile(model.features, dynamic=True)
    return True


def attention_by_layer(model: Seq2Seq, src: torch.Tensor, tgt_in: torch.Tensor,
                       kind: str = "cross") -> list[torch.Tensor]:
    """Teacher-forced attention weights, per layer (batch, heads, rows, columns): "cross"
    (decoder positions over the source), "encoder" or "decoder" self-attention. The GRU has
    one layer of cross-attention with one head."""
    if isinstance(model, Transformer):
        if kind == "cross":
            return model.cross_attention_weights(src, tgt_in)
        encoder, decoder = model.self_attention_weights(src, tgt_in)
        return encoder if kind == "encoder" else decoder
    return [model.attention_weights(src, tgt_in).unsqueeze(1)]  # (batch, 1, tgt_len, src_len)
