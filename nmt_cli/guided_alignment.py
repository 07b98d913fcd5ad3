"""Guided alignment: teaching one layer of cross-attention to follow given word alignments.

Attention learns to align on its own, roughly (alignment.py reads it). Given the word
alignments of the training pairs, as fast_align or eflomal write them ("0-0 1-2 2-1": pairs of
0-based source-target word positions, words split at whitespace), training can also teach it
(Garg et al., 2019; Marian's and OpenNMT's "guided alignment"). For each target piece t whose
word has links, the gold distribution G_t spreads evenly over the source pieces of the words
its word is linked to; the loss adds

    weight * sum over such t of  -sum_s G_ts log A_ts

to the output's cross-entropy, where A is the cross-attention that alignment.py reads, at the
step that outputs t: the Transformer's (`aligning_attention`: the decoder layer
ALIGNMENT_LAYER's, averaged over its first model.alignment_heads heads, or all of them), or
the GRU's one attention (Bahdanau's or Luong's; Liu et al., 2016 taught the first so).

Links are kept per word, and mapped to pieces batch by batch (`WordAlignments.targets`): a
piece opening with SentencePiece's space mark starts a word. So they hold for any segmentation
of the pair, each epoch's own under subword sampling. A model of several target languages
reads a file for each language's pairs; the tag that opens each of their sources is a piece
that starts no word, so the links count the words after it. An aligner gives the links of
each direction; `symmetrize` joins the two (`nmt data symmetrize`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch

from .data import EncodedText, ParallelText, iter_lines, read_lines
from .errors import UserError
from .tokenizer import WORD_START, Tokenizer

TINY = 1e-9  # the least attention weight whose log the loss takes (a masked one is 0)
# The decoder layer whose cross-attention aligns words, counted from the top (a one-layer
# decoder: it): the one alignment.py reads, chosen by bench/alignment.py, and the one taught
ALIGNMENT_LAYER = -2


def alignment_layer(num_layers: int) -> int:
    """The index, from 0, of the decoder layer whose attention aligns (ALIGNMENT_LAYER, or
    the only one)."""
    return num_layers + max(ALIGNMENT_LAYER, -num_layers)


def aligning_attention(weights: torch.Tensor, heads: int) -> torch.Tensor:
    """The attention that aligns words, from the aligning layer's weights (..., heads, rows,
    columns): its first `heads` heads averaged (model.alignment_heads), all where it is 0.
    fairseq teaches one head (Garg et al., 2019) and OpenNMT a given count; on Multi30k,
    every head aligned better (bench/guided.py)."""
    return weights[..., : heads or None, :, :].mean(-3)


Link = tuple[int, int]  # (source word, target word), positions from 0
# the links next to a link, diagonals too, that grow-diag-final-and may add
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def parse_links(line: str, where: str) -> list[Link]:
    """The links of a line in the Pharaoh format ("0-0 1-2"); `where` (FILE:LINE) names it
    in an error."""
    links = []
    for token in line.split():
        pair = token.split("-")
        if len(pair) != 2 or not all(p.isascii() and p.isdigit() for p in pair):
            raise UserError(f"{where}: {token!r} is no link; expected source-target word "
                            "positions such as 0-0 1-2")
        links.append((int(pair[0]), int(pair[1])))
    return links


def alignment_files(alignments: str) -> list[Path]:
    """The files that data.alignments names: one for each target language, in
    data.tgt_lang's order, separated by commas."""
    return [Path(name) for name in alignments.split(",")]


def word_count(line: str, tagged: bool) -> int:
    """The words of a training line, whitespace-split, that links count: with several target
    languages (`tagged`), those after the language tag that opens a source line."""
    words = len(line.split())
    return words - 1 if tagged and words else words


def read_alignments(paths: list[Path], text: ParallelText) -> list[np.ndarray]:
    """The links of each line of Pharaoh-format files, as (links, 2) arrays of source and
    target word positions, checked against the words of the training pairs `text`: one file
    for its pairs, or one for each target language's pairs in turn (text.parts), whose
    sources open with a language tag that the links do not count. An empty line is a pair
    without links."""
    tagged = len(paths) > 1
    parts = text.parts if tagged else [len(text.src)]
    links: list[np.ndarray] = []
    for path, first, pairs in zip(paths, itertools.accumulate([0, *parts]), parts):
        links += read_links(path, text.src[first : first + pairs],
                            text.tgt[first : first + pairs], tagged)
    return links


def read_links(path: Path, src: list[str], tgt: list[str], tagged: bool) -> list[np.ndarray]:
    """The links of one file, for the pairs `src`, `tgt` (see read_alignments)."""
    lines = read_lines(path)
    if len(lines) != len(src):
        raise counts_differ(path, len(lines), len(src))
    return [checked_links(line, source_line, target_line, tagged, f"{path}:{number}")
            for number, (line, source_line, target_line) in enumerate(zip(lines, src, tgt),
                                                                      start=1)]


def counts_differ(path: Path, lines: int, pairs: int) -> UserError:
    """The error for a file of alignments whose line count is not its pairs'."""
    return UserError(f"{path}: {lines:,} line{'s' * (lines != 1)} of alignments for "
                     f"{pairs:,} training pair{'s' * (pairs != 1)}")


def checked_links(line: str, source_line: str, target_line: str, tagged: bool,
                  where: str) -> np.ndarray:
    """The links of `line` as a (links, 2) array, each checked to name words of the training
    pair `source_line`, `target_line`; `where` (FILE:LINE) names the line in an error."""
    found = parse_links(line, where)
    for side, count in enumerate((word_count(source_line, tagged), len(target_line.split()))):
        for link in found:
            if link[side] >= count:
                name = ("source", "target")[side]
                raise UserError(f"{where}: {link[0]}-{link[1]} names {name} word "
                                f"{link[side]}, but that training pair's {name} has "
                                f"{count} word{'s' * (count != 1)} (counted from 0)")
    return np.array(found, dtype=np.int32).reshape(-1, 2)


def grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    """Word alignments of the two directions joined (Koehn et al., 2005), as fast_align's
    atools joins them: the links both give, grown by the links either gives next to one
    (diagonals too) that align a word not aligned yet, until none is added; then each
    direction's links between two words both not aligned yet."""
    union, joined = forward | reverse, forward & reverse
    sources, targets = {s for s, _ in joined}, {t for _, t in joined}

    def add(link: Link) -> None:
        joined.add(link)
        sources.add(link[0])
        targets.add(link[1])

    grown = True
    while grown:
        grown = False
        for s, t in sorted(joined):
            for ds, dt in NEIGHBOURS:
                link = (s + ds, t + dt)
                if link in union and link not in joined and (
                        link[0] not in sources or link[1] not in targets):
                    add(link)
                    grown = True
    for direction in (forward, reverse):
        for link in sorted(direction):
            if link[0] not in sources and link[1] not in targets:
                add(link)
    return joined


def symmetrize(forward: Path, reverse: Path) -> Iterator[str]:
    """The lines of two files of word alignments, one of each direction (source-target
    positions in both), joined by grow-diag-final-and."""
    numbered = enumerate(itertools.zip_longest(iter_lines(forward), iter_lines(reverse)),
                         start=1)
    for number, (one, other) in numbered:
        if one is None or other is None:
            shorter, longer = (forward, reverse) if one is None else (reverse, forward)
            lines = number - 1
            raise UserError(f"{shorter} has {lines:,} line{'s' * (lines != 1)}, {longer} more")
        joined = grow_diag_final_and(set(parse_links(one, f"{forward}:{number}")),
                                     set(parse_links(other, f"{reverse}:{number}")))
        yield " ".join(f"{s}-{t}" for s, t in sorted(joined))


def word_starts(processor: spm.SentencePieceProcessor) -> np.ndarray:
    """For each id of the vocabulary, whether its piece opens a word."""
    return np.array([processor.id_to_piece(i).startswith(WORD_START)
                     for i in range(processor.get_piece_size())])


def piece_words(starts: np.ndarray, ids: list[int]) -> np.ndarray:
    """The word (from 0) that each id falls in; -1 before the first word."""
    return np.cumsum(starts[np.asarray(ids, dtype=np.int64)]) - 1


@dataclass
class WordAlignments:
    """The word links of the kept training pairs, and what maps pieces to words."""

    # per kept pair: (links, 2) source and target word positions (prepared.PreparedLinks
    # reads those of a prepared corpus from its files)
    links: Sequence[np.ndarray]
    src_starts: np.ndarray  # per source id: whether it opens a word
    tgt_starts: np.ndarray

    def targets(self, indices, src_ids: list[list[int]], tgt_ids: list[list[int]],
                src_len: int, tgt_len: int) -> torch.Tensor:
        """The gold attention of a batch of pairs (the pairs `indices`, read as these ids),
        (batch, tgt_len, src_len): row t of a pair spreads evenly over the source pieces of
        the words linked to target piece t's word, and is 0 where it has none (as are the
        rows of <eos> and padding, and the columns of the source's <eos>)."""
        gold = np.zeros((len(src_ids), tgt_len, src_len), dtype=np.float32)
        for row, (i, src, tgt) in enumerate(zip(indices, src_ids, tgt_ids)):
            links = self.links[i]
            if not len(links):
                continue
            source, target = (piece_words(self.src_starts, src),
                              piece_words(self.tgt_starts, tgt))
            words = np.zeros((target.max() + 2, source.max() + 2), dtype=np.float32)
            kept = (links[:, 0] <= source.max()) & (links[:, 1] <= target.max())
            words[links[kept, 1], links[kept, 0]] = 1.0
            pieces = words[target][:, source]  # index -1 reads the last row: one of zeros
            gold[row, : len(tgt), : len(src)] = pieces
        sums = gold.sum(-1, keepdims=True)
        np.divide(gold, sums, out=gold, where=sums > 0)
        return torch.from_numpy(gold)


def kept_alignments(links: list[np.ndarray], text: ParallelText, kept: EncodedText,
                    tokenizer: Tokenizer) -> tuple[WordAlignments, int]:
    """The links (`read_alignments`) of the pairs of `text` that encoding kept, and how many
    of those go without: the pairs whose words SentencePiece counts otherwise than
    whitespace does (a character its normalisation drops, say). A language tag is a piece of
    its own that opens no word, so the links of a tagged source count its words alike."""
    starts = tokenizer_starts(tokenizer)
    kept_links, differ = [], 0
    for line, src, tgt in zip(kept.kept, kept.src, kept.tgt):
        same = counted_alike(starts, src, tgt, text.src[line], text.tgt[line],
                             bool(tokenizer.tags))
        kept_links.append(links[line] if same else links[line][:0])
        differ += not same
    return WordAlignments(kept_links, *starts), differ


def tokenizer_starts(tokenizer: Tokenizer) -> tuple[np.ndarray, np.ndarray]:
    """For each source id and each target id, whether its piece opens a word."""
    return word_starts(tokenizer.src), word_starts(tokenizer.tgt)


def counted_alike(starts: tuple[np.ndarray, np.ndarray], src: list[int], tgt: list[int],
                  source_line: str, target_line: str, tagged: bool) -> bool:
    """Whether the pieces `src`, `tgt` of a pair hold as many words, by the word starts of
    tokenizer_starts, as its lines hold by whitespace (word_count), as its links count them."""
    return bool(piece_words(starts[0], src)[-1] + 1 == word_count(source_line, tagged)
                and piece_words(starts[1], tgt)[-1] + 1 == len(target_line.split()))


def guided_alignment_loss(attention: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
    """The summed cross-entropy of the attention rows (batch, tgt_len, src_len) against the
    gold rows (WordAlignments.targets); rows of zeros count nothing. A float32 scalar."""
    return -(gold * attention.float().clamp_min(TINY).log()).sum()
