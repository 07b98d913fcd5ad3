"""Export a Transformer run to CTranslate2, through CTranslate2's own model description.

CTranslate2 describes a Transformer as a tree of named weights (`ctranslate2.specs`); a
converter fills that tree and CTranslate2 writes, checks and quantizes the model. The tree is
filled here from nmt's modules, piece by piece:

  nmt                                        CTranslate2
  embeddings × √d_model + positions          embeddings, scale_embeddings, position_encodings
  sinusoids interleaved (sin even, cos odd)  the table itself (its own sinusoids are laid
                                             out as [sin | cos] halves, from position 1)
  Residual.norm (before or after, eps 1e-5)  each sub-layer's layer_norm, pre_norm
  W_Q, W_K, W_V of self-attention            linear[0]: [W_Q; W_K; W_V] stacked
  cross-attention W_Q | W_K, W_V | W_O       linear[0] | linear[1] = [W_K; W_V] | linear[2]
  FeedForward expand, contract (ReLU)        ffn.linear_0, ffn.linear_1
  encoder_norm, decoder_norm (pre-norm)      encoder/decoder layer_norm
  output_proj (no bias; maybe tied)          decoder.projection

The vocabularies are the SentencePiece pieces in id order, so CTranslate2's token ids are
nmt's, and its special tokens are named as nmt's: sources end with <eos>, the decoder starts
from <sos>. Importing this module needs the `ct2` extra (ct2.import_ctranslate2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ._version import __version__
from .checkpoint import BEST_WEIGHTS, EXPORT_FILE, Run, load_run
from .config import EXPORT_QUANTIZATIONS, check_choice
from .ct2 import import_ctranslate2
from .errors import UserError
from .files import sha256_of
from .guided_alignment import ALIGNMENT_LAYER, alignment_layer
from .languages import target_languages
from .models.transformer import DecoderLayer, EncoderLayer, Transformer
from .special_tokens import EOS_ID, SOS_ID, UNK_ID
from .tokenizer import JOINT_FILE, SRC_FILE, TGT_FILE

ctranslate2 = import_ctranslate2()
from ctranslate2.converters import Converter  # noqa: E402
from ctranslate2.specs import attention_spec, common_spec, transformer_spec  # noqa: E402

LAYER_NORM_EPS = 1e-5  # torch's nn.LayerNorm default, which nmt's layers use


def array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy().copy()


def set_linear(spec: common_spec.LinearSpec, *layers: nn.Linear) -> None:
    """One linear layer, or several stacked along their outputs (a fused projection)."""
    spec.weight = array(torch.cat([layer.weight for layer in layers]))
    if layers[0].bias is not None:
        spec.bias = array(torch.cat([layer.bias for layer in layers]))


def set_layer_norm(spec: common_spec.LayerNormSpec, norm: nn.LayerNorm) -> None:
    spec.gamma, spec.beta = array(norm.weight), array(norm.bias)


def set_self_attention(spec: attention_spec.MultiHeadAttentionSpec, attention, norm) -> None:
    set_layer_norm(spec.layer_norm, norm)
    set_linear(spec.linear[0], attention.query_proj, attention.key_proj, attention.value_proj)
    set_linear(spec.linear[1], attention.out_proj)


def set_cross_attention(spec: attention_spec.MultiHeadAttentionSpec, attention, norm) -> None:
    set_layer_norm(spec.layer_norm, norm)
    set_linear(spec.linear[0], attention.query_proj)
    set_linear(spec.linear[1], attention.key_proj, attention.value_proj)
    set_linear(spec.linear[2], attention.out_proj)


def set_feed_forward(spec: transformer_spec.FeedForwardSpec, layer) -> None:
    set_layer_norm(spec.layer_norm, layer.feed_forward_block.norm)
    set_linear(spec.linear_0, layer.feed_forward.expand)
    set_linear(spec.linear_1, layer.feed_forward.contract)


def set_encoder(spec: transformer_spec.TransformerEncoderSpec, model: Transformer) -> None:
    spec.embeddings[0].weight = array(model.src_embedding.weight)
    spec.position_encodings.encodings = array(model.positional_encoding.encoding)
    if isinstance(model.encoder_norm, nn.LayerNorm):  # pre-norm's final LayerNorm
        set_layer_norm(spec.layer_norm, model.encoder_norm)
    layer: EncoderLayer
    for layer_spec, layer in zip(spec.layer, model.encoder_layers):
        set_self_attention(layer_spec.self_attention, layer.self_attention,
                           layer.attention_block.norm)
        set_feed_forward(layer_spec.ffn, layer)


def set_decoder(spec: transformer_spec.TransformerDecoderSpec, model: Transformer) -> None:
    spec.embeddings.weight = array(model.tgt_embedding.weight)
    spec.position_encodings.encodings = array(model.positional_encoding.encoding)
    if isinstance(model.decoder_norm, nn.LayerNorm):
        set_layer_norm(spec.layer_norm, model.decoder_norm)
    set_linear(spec.projection, model.output_proj)
    layer: DecoderLayer
    for layer_spec, layer in zip(spec.layer, model.decoder_layers):
        set_self_attention(layer_spec.self_attention, layer.self_attention,
                           layer.self_attention_block.norm)
        set_cross_attention(layer_spec.attention, layer.cross_attention,
                            layer.cross_attention_block.norm)
        set_feed_forward(layer_spec.ffn, layer)


class RunConverter(Converter):
    """Fills CTranslate2's Transformer description from a loaded nmt run."""

    def __init__(self, run: Run):
        self.run = run

    def _load(self) -> transformer_spec.TransformerSpec:
        model, tokenizer, config = self.run.model, self.run.tokenizer, self.run.config.model
        spec = transformer_spec.TransformerSpec.from_config(
            (config.num_encoder_layers, config.num_decoder_layers), config.num_heads,
            pre_norm=config.norm_first, activation=common_spec.Activation.RELU,
            # the attention CTranslate2 returns: this layer's first heads averaged, as
            # guided_alignment.aligning_attention reads them (0 there: every head)
            alignment_layer=alignment_layer(config.num_decoder_layers),
            alignment_heads=config.alignment_heads or config.num_heads)
        set_encoder(spec.encoder, model)
        set_decoder(spec.decoder, model)
        piece = tokenizer.tgt.id_to_piece  # <unk>, <sos>, <eos>: nmt's own names
        spec.config.unk_token, spec.config.eos_token = piece(UNK_ID), piece(EOS_ID)
        spec.config.bos_token = spec.config.decoder_start_token = piece(SOS_ID)
        spec.config.add_source_eos = True  # nmt's sources end with <eos>, never start with <sos>
        spec.config.layer_norm_epsilon = LAYER_NORM_EPS
        spec.register_source_vocabulary(vocabulary(tokenizer.src))
        spec.register_target_vocabulary(vocabulary(tokenizer.tgt))
        return spec


def vocabulary(processor) -> list[str]:
    """The pieces of a SentencePiece model, in id order."""
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def tokenizer_files(run_dir: Path) -> list[Path]:
    joint = run_dir / JOINT_FILE
    return [joint] if joint.exists() else [run_dir / SRC_FILE, run_dir / TGT_FILE]


def check_export_dir(out_dir: Path, run_dir: Path, force: bool) -> None:
    """A one-line error unless `out_dir` may be written: absent, empty, or (with `force`) an
    earlier export, which is replaced. Never the run itself, nor a folder that holds it."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"-o {out_dir}: a file, not a directory")
    if (above := next((folder for folder in out_dir.parents if folder.exists()), None)) \
            is not None and not above.is_dir():  # else named by the temporary folder
        raise UserError(f"-o {out_dir}: {above} is a file, not a directory")
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return
    if run_dir.resolve().is_relative_to(out_dir.resolve()):
        raise UserError(f"-o {out_dir}: it holds the run {run_dir}, which replacing it would "
                        "delete; write the export elsewhere")
    if not force:
        raise UserError(f"-o {out_dir}: directory already holds files; add --force to "
                        "replace an earlier export")
    if not (out_dir / EXPORT_FILE).is_file():
        raise UserError(f"-o {out_dir}: holds files but no {EXPORT_FILE}, so it is not an "
                        "earlier export; --force replaces only one of those")


def export_ctranslate2(run_dir: Path, out_dir: Path, quantization: str = "float32",
                       force: bool = False) -> Path:
    """Write a CTranslate2 model of a Transformer run into `out_dir`, with the run's
    SentencePiece model(s) beside it and nmt-export.json (what the ct2 engine reads). The
    export is made in a temporary folder and renamed into place: never half written."""
    check_choice("--quantization", quantization, EXPORT_QUANTIZATIONS)
    out_dir = Path(out_dir)
    if (Path(run_dir) / EXPORT_FILE).is_file():
        raise UserError(f"{run_dir}: a CTranslate2 export, not a run; export the run it came "
                        "from")
    check_export_dir(out_dir, Path(run_dir), force)
    run = load_run(Path(run_dir), torch.device("cpu"))
    if not isinstance(run.model, Transformer):
        raise UserError(f"{run_dir}: a {run.config.model.arch.upper()} run; CTranslate2 has "
                        "no such architecture (it runs Transformers only)")
    partial = out_dir.parent / f".{out_dir.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    RunConverter(run).convert(str(partial), quantization=quantization, force=True)
    for path in tokenizer_files(run.path):
        shutil.copyfile(path, partial / path.name)
    (partial / EXPORT_FILE).write_text(json.dumps({
        "format": "ctranslate2", "nmt_version": __version__, "run": str(run.path.resolve()),
        # what translating from the run's folder checks: weights replaced since, no export
        "weights_sha256": sha256_of(run.path / BEST_WEIGHTS),
        "quantization": quantization, "max_positions": run.config.model.max_positions,
        "target_languages": target_languages(run.config.data.tgt_lang),
        "alignment_layer": ALIGNMENT_LAYER,  # the rule; alignment_layer() the layer it picks
        "ctranslate2_version": ctranslate2.__version__}, indent=2) + "\n")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    partial.rename(out_dir)
    return out_dir
