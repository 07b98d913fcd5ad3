"""Attention maps of one translation, as plain numbers for heatmaps and JSON.

The sentence is translated as usual, then the model runs teacher-forced on its own output
(decoder input <sos> y1 .. yn, as in training) and returns its attention weights, each row a
softmax over the keys that sums to 1 (0 on masked keys):

    cross    encoder-decoder attention: rows are the output pieces y1 .. yn <eos> (each named
             by the piece its position predicts), columns the source pieces x1 .. xm <eos>
    encoder  the encoder's self-attention: source pieces against source pieces
    decoder  the decoder's masked self-attention over its inputs <sos> y1 .. yn: position t
             sees positions ≤ t only (0 above the diagonal)

The Transformer has one map per layer and head; the GRU has one cross-attention map, that of
its score (additive, dot or general). Layers and heads are counted from 1.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import torch

from .alignment import (
    piece_links,
    source_positions,
    text_positions,
    word_links,
)
from .checkpoint import Run
from .config import ATTENTION_KINDS, DecodeConfig, check_choice
from .data import Batch
from .devices import mixed_precision
from .errors import UserError
from .guided_alignment import aligning_attention, alignment_layer
from .models import Seq2Seq, Transformer, attention_by_layer
from .pictures import draw_attention
from .search import translate_ids
from .translate import Translator
from .validation import GREEDY

LAYER_WORDS = ("all",)  # --layer N | all (default: the last layer)
HEAD_WORDS = ("all", "mean")  # --head N | all (every head, then their mean) | mean


@dataclass
class HeadMap:
    layer: int  # from 1
    head: int | str  # from 1, or "mean" (the mean over the layer's heads)
    weights: list[list[float]]  # (rows, columns): each row sums to 1


@dataclass
class AttentionMaps:
    run: str
    model: str  # "transformer", or "gru" with its score, e.g. "gru (additive)"
    kind: str  # one of ATTENTION_KINDS
    translation: str
    source: list[str]  # SentencePiece pieces of the source, then <eos>
    output: list[str]  # pieces of the translation, then <eos>
    rows: list[str]  # the queries of each map
    columns: list[str]  # the keys of each map
    num_layers: int
    num_heads: int
    maps: list[HeadMap]
    # cross: what `nmt translate --alignment` reads, the mean of this layer's (from 1) first
    # alignment_heads heads (0: all): the [row, column] cells it links, at most one per source
    # piece (alignment.piece_links), and the [source word, output word] links they make; None
    # for the other kinds
    alignment_layer: int | None = None
    alignment_heads: int | None = None
    alignment_cells: list[list[int]] | None = None
    alignment: list[list[int]] | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def attention_maps(translator: Translator, sentence: str, kind: str = "cross",
                   layer: int | str | None = None, head: int | str = "all",
                   config: DecodeConfig | None = None, prefix: str = "") -> AttentionMaps:
    """Translate `sentence` (its translation opening with `prefix`, if any) and collect the
    maps of `kind` for `layer` (default: the last) and `head` (a number, "all" or "mean")."""
    check_choice("--kind", kind, ATTENTION_KINDS)
    run, config = translator.run, config or DecodeConfig()
    if config.split_sentences:
        raise UserError("--split-sentences: the maps are those of one translation; give one "
                        "sentence at a time")
    num_layers, num_heads = map_counts(run.model, kind)
    layer = parse_index("--layer", num_layers if layer is None else layer, num_layers,
                        LAYER_WORDS)
    head = parse_index("--head", head, num_heads, HEAD_WORDS)
    src_ids = translator.encode([sentence], config)[0]
    if not src_ids:
        raise UserError("the sentence is empty: give some text to translate")
    out_ids = translator.search([sentence], config, prefixes=[prefix])[1][0][0].tokens
    out_ids = out_ids[: run.model.max_positions - 1]  # <sos> and each token read, positioned
    return collect_maps(run, src_ids, out_ids, kind, layer, head, translator.device, sentence)


def collect_maps(run: Run, src_ids: list[int], out_ids: list[int], kind: str, layer: int | str,
                 head: int | str, device: torch.device, line: str) -> AttentionMaps:
    """The maps of `kind` for a source `line` (its ids) and its translation (token ids),
    `layer` and `head` as parse_index gives them."""
    num_layers, num_heads = map_counts(run.model, kind)
    layers = attention_weights(run.model, src_ids, out_ids, kind, device)
    source = [run.tokenizer.src.id_to_piece(i) for i in src_ids] + ["<eos>"]
    output = [run.tokenizer.tgt.id_to_piece(i) for i in out_ids] + ["<eos>"]
    rows, columns = {"cross": (output, source), "encoder": (source, source),
                     "decoder": (["<sos>", *output[:-1]],) * 2}[kind]
    model = run.config.model
    name = model.arch if model.arch != "gru" else f"gru ({model.attention})"
    maps = AttentionMaps(run.path.name or str(run.path), name, kind,
                         run.tokenizer.decode_tgt([out_ids])[0], source, output, rows, columns,
                         num_layers, num_heads, select_maps(layers, layer, head))
    if kind == "cross":
        aligned = alignment_layer(num_layers)
        source_words = source_positions(run.tokenizer, line, src_ids)
        output_words = text_positions(run.tokenizer.tgt, out_ids)
        heads = run.model.alignment_heads
        weights = aligning_attention(layers[aligned], heads)  # (rows, columns)
        maps.alignment_layer, maps.alignment_heads = aligned + 1, heads
        cells = piece_links(weights, source_words, output_words)
        maps.alignment_cells = [list(cell) for cell in cells]
        maps.alignment = [list(link) for link in word_links(cells, source_words, output_words)]
    return maps


def map_counts(model: Seq2Seq, kind: str) -> tuple[int, int]:
    """How many layers and heads the maps of `kind` have in `model`."""
    if isinstance(model, Transformer):
        layers = model.encoder_layers if kind == "encoder" else model.decoder_layers
        return len(layers), layers[0].self_attention.num_heads
    if kind != "cross":
        raise UserError(f"--kind {kind}: a GRU has no self-attention; its one map is "
                        "--kind cross")
    if model.attention == "none":
        raise UserError("this GRU has no attention (model.attention = none): there is no map "
                        "to show")
    return 1, 1


def parse_index(option: str, value: int | str, count: int, words: tuple[str, ...]) -> int | str:
    """A number from 1 to `count`, or one of `words`."""
    text = str(value).strip().lower()
    if text in words:
        return text
    if text.isdigit() and 1 <= int(text) <= count:
        return int(text)
    numbers = "1" if count == 1 else f"1..{count}"
    raise UserError(f"{option} must be {numbers} or {' or '.join(words)} (got {value!r}): "
                    f"this model has {count} {option.lstrip('-')}{'s' * (count != 1)}")


@torch.no_grad()
def attention_weights(model: Seq2Seq, src_ids: list[int], out_ids: list[int], kind: str,
                      device: torch.device) -> list[torch.Tensor]:
    """Teacher-forced weights of one sentence pair: per layer, (heads, rows, columns)."""
    batch = Batch.from_ids([src_ids], [out_ids]).to(device)
    layers = attention_by_layer(model, batch.src, batch.tgt_in, kind)
    return [weights[0].float().cpu() for weights in layers]


def select_maps(layers: list[torch.Tensor], layer: int | str,
                head: int | str) -> list[HeadMap]:
    """The maps of `layer` (a number or "all") and `head` (a number, "all" or "mean") from
    per-layer weights (heads, rows, columns)."""
    numbers = range(1, len(layers) + 1) if layer == "all" else [layer]
    maps = []
    for number in numbers:
        weights = layers[number - 1]  # (heads, rows, columns)
        heads = list(range(1, weights.size(0) + 1)) if head == "all" else [head]
        if head == "all" and weights.size(0) > 1:
            heads.append("mean")
        for name in heads:
            chosen = weights.mean(0) if name == "mean" else weights[name - 1]  # (rows, columns)
            maps.append(HeadMap(number, name, chosen.tolist()))
    return maps


def draw_validation_attention(run: Run, sentences: list[str], folder: Path, step: int,
                              device: torch.device, precision: str) -> list[Path]:
    """At a validation (train.attention_plots): the cross-attention of the model's greedy
    translation of each of `sentences`, its last layer's heads and their mean, drawn to
    folder/step-NNNNNN-K.png (K from 1) as `nmt attention` draws it."""
    src_ids = [ids[: run.model.max_positions - 1] for ids in run.tokenizer.encode_src(sentences)]
    with mixed_precision(device, precision):
        out_ids = translate_ids(run.model, src_ids, GREEDY, device)
    folder.mkdir(exist_ok=True)
    last, drawn = map_counts(run.model, "cross")[0], []
    for k, (src, out) in enumerate(zip(src_ids, out_ids), 1):
        if src:
            maps = collect_maps(run, src, out, "cross", last, "all", device, sentences[k - 1])
            maps.run = f"{maps.run} at step {step}"
            drawn.append(draw_attention(maps.to_json(), folder / f"step-{step:06d}-{k}.png"))
    return drawn
