"""Model families behind one interface (see base.py)."""

from __future__ import annotations

from ..config import ModelConfig
from .base import DecoderState, Seq2Seq
from .gru import GRUSeq2Seq
from .transformer import Transformer

__all__ = ["DecoderState", "GRUSeq2Seq", "Seq2Seq", "Transformer", "build_model"]


def build_model(config: ModelConfig, src_vocab: int, tgt_vocab: int, joint_vocab: bool) -> Seq2Seq:
    family = {"transformer": Transformer, "gru": GRUSeq2Seq}[config.arch]
    return family(config, src_vocab, tgt_vocab, joint_vocab)
