"""Word alignment from attention: which source word each word of a translation comes from.

Attention weights are a soft alignment (Bahdanau et al., 2015, drew them as one). A hard
alignment links each target piece to the source piece it attends to most, over the
teacher-forced cross-attention of one decoder layer, averaged over its heads; pieces then map
to the words they belong to (a piece that opens with "▁" starts a word), and the links of a
word pair count once. The result is the Pharaoh format that fast_align writes and Marian and
fairseq print: "0-0 1-2 2-1", source-target pairs of 0-based word positions, words split at
whitespace as the user wrote them (a language tag the line opens with is its word 0, linked
to nothing).

Which attention aligns best was measured on 30 hand-aligned sentence pairs of Multi30k's
validation set (bench/alignment.py, bench/RESULTS.md): the Transformer's second-to-last decoder
layer, as Garg et al. (2019) found, read at the step that outputs the target piece.
"""

from __future__ import annotations

import torch

from .data import pad, source_tensor
from .languages import TAG
from .models import Seq2Seq, attention_by_layer
from .special_tokens import EOS_PIECE, SOS_ID

WORD_START = "\u2581"  # SentencePiece's mark of a space before a piece
ALIGNMENT_LAYER = -2  # the decoder layer read, counted from the top (a one-layer decoder: it)

Link = tuple[int, int]  # (source word, target word)


def alignment_layer(num_layers: int) -> int:
    """The index, from 0, of the decoder layer whose attention aligns (ALIGNMENT_LAYER, or
    the only one)."""
    return num_layers + max(ALIGNMENT_LAYER, -num_layers)


def word_positions(pieces: list[str], first: int = 0) -> list[int | None]:
    """The word each piece belongs to, counted from `first`: a piece that opens with "▁"
    starts the next one. <eos> and language tags are not text: None (a line that opened with
    its own tag counts it as word 0, and its text from `first` = 1)."""
    positions: list[int | None] = []
    word = first - 1
    for piece in pieces:
        if piece == EOS_PIECE or TAG.fullmatch(piece):
            positions.append(None)
            continue
        if piece.startswith(WORD_START) or word < first:
            word += 1
        positions.append(word)
    return positions


def hard_links(weights: torch.Tensor, source_words: list[int | None],
               target_words: list[int | None]) -> list[Link]:
    """(source word, target word) pairs, sorted: each target piece of the text linked to the
    source piece of the text with the highest weight in its row. `weights` has a row per
    target piece (the pieces' own, already shifted) and a column per source piece."""
    columns = [i for i, word in enumerate(source_words) if word is not None]
    if not columns:
        return []
    links = set()
    for row, target_word in enumerate(target_words[: weights.size(0)]):
        if target_word is None:
            continue
        best = columns[int(weights[row, columns].argmax())]
        links.add((source_words[best], target_word))
    return sorted(links)


def pharaoh(links: list[Link]) -> str:
    """Links as "0-0 1-2 2-1"."""
    return " ".join(f"{source}-{target}" for source, target in links)


@torch.inference_mode()
def hypothesis_attention(model: Seq2Seq, sources: list[list[int]], hypotheses: list[list[int]],
                         device: torch.device, layer: int = -1,
                         batch_size: int = 64) -> list[torch.Tensor]:
    """The cross-attention of each hypothesis over its source (source ids without <eos>, a
    hypothesis's tokens), under teacher forcing from <sos> + its tokens: (tokens + 1,
    source tokens + 1) per pair, float32 on the CPU, a row per step that outputs a token
    (then <eos>) and a column per source token (then <eos>). The Transformer's is decoder
    layer `layer`'s (counted from the top: -1 the last; ALIGNMENT_LAYER for alignments),
    averaged over heads; the GRU has one. Read `batch_size` pairs at a time, padded: padding
    is masked, so it changes no weight."""
    out = []
    for start in range(0, len(hypotheses), batch_size):
        chunk_sources = sources[start : start + batch_size]
        chunk = hypotheses[start : start + batch_size]
        src = source_tensor(chunk_sources).to(device)  # (pairs, src_len)
        tgt_in = pad([([SOS_ID] + h)[: model.max_positions] for h in chunk]).to(device)
        layers = attention_by_layer(model, src, tgt_in)
        weights = layers[max(layer, -len(layers))].mean(1).float().cpu()  # (pairs, tgt, src)
        out += [w[: len(h) + 1, : len(s) + 1] for w, s, h in zip(weights, chunk_sources, chunk)]
    return out


def word_alignment(source_pieces: list[str], target_pieces: list[str], weights: torch.Tensor,
                   line: str) -> list[Link]:
    """The hard word alignment of one translation of `line`, from its hypothesis_attention at
    ALIGNMENT_LAYER."""
    words = line.split()
    own_tag = bool(words) and TAG.fullmatch(words[0]) is not None
    return hard_links(weights, word_positions(source_pieces, first=int(own_tag)),
                      word_positions(target_pieces))
