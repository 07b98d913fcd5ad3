"""Word alignment from attention: which source word each word of a translation comes from.

Attention weights are a soft alignment (Bahdanau et al., 2015, drew them as one). A hard
alignment links each source piece to the target piece that attends to it most, over the
teacher-forced cross-attention of one decoder layer, averaged over its heads, preferring the
links that the target side confirms (piece_links); pieces then map to the words they belong
to, and the links of a word pair count once. Every word of the line is linked; a word of the
translation may be linked to none (an article the source lacks) or to several. The result is the
Pharaoh format that fast_align writes and Marian and fairseq print: "0-0 1-2 2-1",
source-target pairs of 0-based word positions. Words are split at whitespace as Python's
str.split does: those of the line as the user wrote it (a language tag the line opens with is
its word 0, linked to nothing), and those of the translation's text.

Which attention aligns best, and how to read it, was measured on 30 hand-aligned sentence
pairs of Multi30k's validation set (bench/alignment.py, bench/RESULTS.md): the Transformer's
second-to-last decoder layer, as Garg et al. (2019) found, read at the step that outputs the
target piece. Reading it the other way, each target piece's most attended source piece, left
a third of the links wrong: the step that outputs an article attends to the noun after it.
"""

from __future__ import annotations

import codecs
from collections.abc import Collection, Iterator

import sentencepiece as spm
import torch

from .data import pad, source_tensor
from .guided_alignment import ALIGNMENT_LAYER, Link, aligning_attention
from .models import Seq2Seq, attention_by_layer
from .special_tokens import SOS_ID, UNK_ID
from .tokenizer import WORD_START, Tokenizer

UNKNOWN_SURFACE = " \u2047 "  # what SentencePiece decodes <unk> to
# hypothesis_attention's bound on pairs x target x source positions read at once (about 100 MB
# of weights for 4 heads and 3+3 layers)
ATTENTION_CELLS = 2**20


def source_positions(tokenizer: Tokenizer, line: str, src_ids: list[int]) -> list[int | None]:
    """The word of `line` that each of its source ids comes from; None for a language tag
    (line_positions for the rest)."""
    words = line.split()
    tagged = src_ids[:1] != [] and src_ids[0] in tokenizer.tag_ids  # added, or the line's own
    own = tagged and words[:1] != [] and tokenizer.tags.get(words[0]) == src_ids[0]
    first = 1 if own else 0
    ids = src_ids[1:] if tagged else src_ids
    return [None] * tagged + [None if p is None else first + p
                              for p in line_positions(tokenizer.src, words[first:], ids)]


def line_positions(processor: spm.SentencePieceProcessor, words: list[str],
                   ids: list[int]) -> list[int | None]:
    """The word of `words` (a line's, as str.split gives them) that each of the line's ids
    comes from. Each word is encoded alone: SentencePiece never joins pieces across a space,
    so their ids are the line's, and this holds where SentencePiece and Python disagree about
    what a space is (a zero-width space splits a word into pieces of two words, but is no
    space to str.split). Where even so they differ, the ids are read as text
    (text_positions)."""
    if not words:
        return [None] * len(ids)
    encoded = processor.encode(words)
    if [i for word in encoded for i in word][: len(ids)] == ids:
        return [k for k, word in enumerate(encoded) for _ in word][: len(ids)]
    return [None if p is None else min(p, len(words) - 1)
            for p in text_positions(processor, ids)]


def text_positions(processor: spm.SentencePieceProcessor, ids: list[int]) -> list[int | None]:
    """The word of the decoded text (split as str.split does) that each id falls in: that of
    its first character that is no space. A piece of spaces alone belongs to the next word
    (None when none follows), a piece that adds no character to the text (a byte piece after
    the first of a character) to that of the piece before."""
    positions: list[int | None] = []
    words, in_word = 0, False  # words begun so far
    for surface in surfaces(processor, ids):
        word = None
        for character in surface:
            if character.isspace():
                in_word = False
                continue
            if not in_word:
                words, in_word = words + 1, True
            word = words - 1 if word is None else word
        if word is None and not surface and positions:
            word = positions[-1]
        positions.append(word if word is not None else -1 - words)  # -1 - (the next word)
    return [p if p >= 0 else (-1 - p if -1 - p < words else None) for p in positions]


def surfaces(processor: spm.SentencePieceProcessor, ids: list[int]) -> list[str]:
    """The text each id becomes when the ids are decoded together: "▁" a space, <unk> " ⁇ ",
    a control piece nothing, and a byte piece the characters its byte completes in UTF-8
    (nothing for the first bytes of a character; an invalid byte: "\ufffd", as
    SentencePiece writes one)."""
    out: list[str] = []
    spell = codecs.getincrementaldecoder("utf-8")("replace")
    for i, next_id in zip(ids, [*ids[1:], None]):
        if processor.is_byte(i):
            last = next_id is None or not processor.is_byte(next_id)  # of its run
            out.append(spell.decode(bytes([int(processor.id_to_piece(i)[1:-1], 16)]), last))
        elif processor.is_unknown(i):
            out.append(UNKNOWN_SURFACE)
        elif processor.is_control(i):
            out.append("")
        else:
            out.append(processor.id_to_piece(i).replace(WORD_START, " "))
    return out


def piece_links(weights: torch.Tensor, source_words: list[int | None],
                target_words: list[int | None]) -> list[tuple[int, int]]:
    """The (target piece, source piece) cells that link words. Each source piece of a word
    is linked to the target piece of a word that attends to it most (the highest weight of
    its column); of a source word's links, those the target side confirms (its target word
    has a piece that attends most to a piece of it: the highest weight of a row) are kept
    alone where there are any. `weights` has a row per target piece (and maybe more) and a
    column per source piece (and maybe more); the words are those of source_positions and
    text_positions (None: no word)."""
    rows = [r for r, word in enumerate(target_words[: weights.size(0)]) if word is not None]
    columns = [c for c, word in enumerate(source_words[: weights.size(1)]) if word is not None]
    if not rows or not columns:
        return []
    grid = weights[rows][:, columns]  # (target pieces, source pieces) of words
    confirmed = {(source_words[columns[c]], target_words[rows[r]])
                 for r, c in enumerate(grid.argmax(1).tolist())}  # each row's best column
    by_word: dict[int, list[tuple[tuple[int, int], bool]]] = {}
    for c, r in enumerate(grid.argmax(0).tolist()):  # each column's best row
        word = source_words[columns[c]]
        by_word.setdefault(word, []).append(
            ((rows[r], columns[c]), (word, target_words[rows[r]]) in confirmed))
    return sorted(cell for links in by_word.values() for cell, sure in links
                  if sure or not any(sure for _, sure in links))


def hard_links(weights: torch.Tensor, source_words: list[int | None],
               target_words: list[int | None]) -> list[Link]:
    """The (source word, target word) pairs of piece_links, sorted, each once."""
    return word_links(piece_links(weights, source_words, target_words), source_words,
                      target_words)


def word_links(cells: list[tuple[int, int]], source_words: list[int | None],
               target_words: list[int | None]) -> list[Link]:
    """The (source word, target word) pairs of (target piece, source piece) cells, sorted,
    each once."""
    return sorted({(source_words[column], target_words[row]) for row, column in cells})


def pharaoh(links: list[Link]) -> str:
    """Links as "0-0 1-2 2-1"."""
    return " ".join(f"{source}-{target}" for source, target in links)


def hypothesis_attention(model: Seq2Seq, sources: list[list[int]], hypotheses: list[list[int]],
                         device: torch.device, layer: int = -1,
                         batch_size: int = 64) -> list[torch.Tensor]:
    """The cross-attention of each hypothesis over its source (source ids without <eos>, a
    hypothesis's tokens), under teacher forcing from <sos> + its tokens: (tokens + 1,
    source tokens + 1) per pair, float32 on the CPU, a row per step that outputs a token
    (then <eos>) and a column per source token (then <eos>). The Transformer's is decoder
    layer `layer`'s (counted from the top: -1 the last), averaged over its heads; with
    ALIGNMENT_LAYER, the attention that aligns words (`aligning_attention`). The GRU has one
    layer of one head. Up to `batch_size` pairs are read at a time, padded (padding is
    masked, so it changes no weight), fewer when they are long."""
    return [read[0] for read in layers_attention(model, sources, hypotheses, device, (layer,),
                                                 batch_size)]


@torch.inference_mode()
def layers_attention(model: Seq2Seq, sources: list[list[int]], hypotheses: list[list[int]],
                     device: torch.device, layers: tuple[int, ...],
                     batch_size: int = 64) -> list[list[torch.Tensor]]:
    """hypothesis_attention of several layers from one pass: for each pair, a map per layer
    of `layers`."""
    out = []
    for start, end in attention_batches(sources, hypotheses, batch_size):
        chunk_sources, chunk = sources[start:end], hypotheses[start:end]
        src = source_tensor(chunk_sources).to(device)  # (pairs, src_len)
        tgt_in = pad([([SOS_ID] + h)[: model.max_positions] for h in chunk]).to(device)
        every = attention_by_layer(model, src, tgt_in)
        means = [aligning_attention(every[max(layer, -len(every))],  # (pairs, tgt, src)
                                    model.alignment_heads if layer == ALIGNMENT_LAYER else 0
                                    ).float().cpu() for layer in layers]
        out += [[w[i, : len(h) + 1, : len(s) + 1] for w in means]
                for i, (s, h) in enumerate(zip(chunk_sources, chunk))]
    return out


def attention_batches(sources: list[list[int]], hypotheses: list[list[int]],
                      batch_size: int) -> Iterator[tuple[int, int]]:
    """(start, end) of consecutive pairs read together: at most `batch_size`, and, past the
    first, no more than ATTENTION_CELLS padded (source, target) positions in all. Every
    layer's weights are kept at once, a tensor of that many cells per head and layer."""
    start = 0
    while start < len(hypotheses):
        end, longest_source, longest_target = start, 0, 0
        while end < len(hypotheses) and end - start < batch_size:
            source = max(longest_source, len(sources[end]) + 1)
            target = max(longest_target, len(hypotheses[end]) + 1)
            if end > start and (end - start + 1) * source * target > ATTENTION_CELLS:
                break
            end, longest_source, longest_target = end + 1, source, target
        yield start, end
        start = end


def word_alignments(tokenizer: Tokenizer, line: str, src_ids: list[int],
                    hypotheses: list[list[int]], weights: list[torch.Tensor],
                    texts: list[str] | None = None) -> list[list[Link]]:
    """The hard word alignment of each translation (its tokens) of `line` (whose source ids
    are `src_ids`), from its hypothesis_attention at ALIGNMENT_LAYER: the line's words are
    found once for all its hypotheses. The words of a translation are those of its tokens'
    text, or, given `texts` (translations made elsewhere, encoded into the tokens), those of
    its text as written."""
    source = source_positions(tokenizer, line, src_ids)
    return [hard_links(w, source, text_positions(tokenizer.tgt, tokens) if texts is None else
                       line_positions(tokenizer.tgt, texts[k].split(), tokens))
            for k, (tokens, w) in enumerate(zip(hypotheses, weights))]


def unknown_words(tokenizer: Tokenizer, line: str) -> list[int]:
    """The words of `line` (as str.split gives them) that the source vocabulary cannot spell:
    a piece of each is <unk> (a character it lacks). A language tag is none."""
    words = line.split()
    return [k for k, ids in enumerate(tokenizer.src.encode(words) if words else [])
            if UNK_ID in ids and not (k == 0 and words[0] in tokenizer.tags)]


def copy_unknown(line: str, text: str, links: list[Link], unknown: list[int],
                 kept: Collection[int] = ()) -> tuple[str, list[Link]]:
    """`text`, a translation of `line`, with each of the line's `unknown` words copied in
    place of the words of the translation aligned to it (to it alone, where some are): the
    first of them takes the copy, and the words beside it aligned to unknown words alone
    go. A model cannot spell such a word, so what it writes there is made up; a name is
    better copied (OpenNMT's replace_unk does so for the <unk>s a model writes). The links
    follow the words (a known word's link to the word replaced, to the copy: every word of
    the line stays linked); a word unlinked stays as it is, and so do the words at the
    positions `kept` (a target prefix's, a glossary term's)."""
    if not unknown:
        return text, links
    source, words = line.split(), text.split()
    sources: dict[int, set[int]] = {}  # target word: the source words linked to it
    for s, t in links:
        sources.setdefault(t, set()).add(s)
    copies: dict[int, list[int]] = {}  # target word: the source words copied there
    gone: set[int] = set()
    unknown_words = set(unknown)
    made_up = {t for t, linked_to in sources.items() if linked_to <= unknown_words}
    for s in unknown:
        linked = sorted(t for t, linked_to in sources.items() if s in linked_to and t not in kept)
        chosen = [t for t in linked if t in made_up] or linked
        if chosen:
            copies.setdefault(chosen[0], []).append(s)
            # the words made up beside it: chosen is sorted, so its first run is where
            # each word is the first's position plus its own
            gone.update(t for k, t in enumerate(chosen[1:], 1)
                        if t == chosen[0] + k and t in made_up)
    copied = {s for there in copies.values() for s in there}
    out: list[str] = []
    moved: list[Link] = []
    for j, word in enumerate(words):
        if j in copies:
            moved += [(s, len(out) + k) for k, s in enumerate(copies[j])]
            moved += [(s, len(out)) for s in sorted(sources.get(j, set()) - copied)]
            out += [source[s] for s in copies[j]]
        elif j not in gone:
            moved += [(s, len(out)) for s in sorted(sources.get(j, ()))]
            out.append(word)
    return " ".join(out), sorted(moved)
