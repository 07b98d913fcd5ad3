"""Subword regularization drawn by nmt: the same segmentations for the same seed in every
process, whatever SentencePiece release is installed.

SentencePiece 0.2.2 and later seed their sampler anew in each process (bench/RESULTS.md,
2026-12-07), so a run that let SentencePiece draw neither repeated nor resumed exactly. nmt reads
the model's pieces and scores and draws with Python's seeded generator instead:

- unigram (Kudo, 2018): every segmentation s of a sentence is a path through its lattice of
  pieces, score(s) the sum of its pieces' log-probabilities, and s is drawn with probability
  exp(alpha * score(s)) / Z: forward filtering sums the paths into each position, backward
  sampling picks the last piece, then the one before it, and so on. With nbest >= 2, s is
  drawn with that probability among SentencePiece's n best instead;
- bpe: BPE-dropout (Provilkov et al., 2020): the merges are applied best first, as in
  SentencePiece, and each is skipped with probability alpha.

SentencePiece still normalizes the text and lists the n best, which draw nothing at random.
As in SentencePiece, a character no piece holds is <unk> (a run of them one <unk>), or its
UTF-8 bytes under byte fallback. With SentencePiece's default training, no piece holds "▁"
after its first character: a word's pieces never reach into the next word, so each word's
lattice is built once and every occurrence of the word is drawn from it.
"""

from __future__ import annotations

import array
import bisect
import heapq
import itertools
import math
import random
import struct
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import sentencepiece as spm

# The kinds of piece in SentencePiece's model file (sentencepiece_model.proto)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
MAX_CACHED_WORDS = 200_000  # a unigram lattice takes about 1 KB (a word), plain BPE 0.3 KB
FLT_MIN, FLT_MAX = 1.1754943508222875e-38, 3.4028234663852886e38  # C's, for float
UNK_PENALTY = 10.0  # SentencePiece scores an unknown character this far below the worst piece
WORD_START = "\u2581"


def message_fields(data: bytes) -> dict[int, list[int | bytes]]:
    """A protobuf message's fields by number: varints as ints, anything else as its bytes."""
    fields: dict[int, list[int | bytes]] = {}
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value: int | bytes = varint()
        else:
            size = {1: 8, 5: 4}.get(wire) or varint()  # 64-bit, 32-bit, or length-delimited
            value, at = data[at:at + size], at + size
        fields.setdefault(number, []).append(value)
    return fields


@dataclass(frozen=True)
class Piece:
    ids: tuple[int, ...]
    score: float


@dataclass(frozen=True)
class WordLattice:
    """What backward sampling chooses among in a word, kept compact (a corpus holds many
    words): the pieces ending at each position `end` are those from ending[end] to
    ending[end + 1] in the other fields, which give where each starts, its ids, and the
    cumulative probability of each being the piece before those drawn so far."""
    ending: tuple[int, ...]
    starts: tuple[int, ...]
    ids: tuple[tuple[int, ...], ...]
    cumulative: array.array

    def draw(self, rng: random.Random) -> list[int]:
        pieces, end = [], len(self.ending) - 2
        while end:  # backward sampling, from the word's end to its start
            first, last = self.ending[end], self.ending[end + 1]
            k = bisect.bisect(self.cumulative, rng.random(), first, last) if last - first > 1 \
                else first
            pieces.append(self.ids[k])
            end = self.starts[k]
        return [i for piece in reversed(pieces) for i in piece]


class SubwordSampler:
    """Draws segmentations of text with one SentencePiece model."""

    def __init__(self, processor: spm.SentencePieceProcessor):
        self.processor = processor
        model = message_fields(processor.serialized_model_proto())
        trainer = message_fields(model.get(2, [b""])[0])
        self.model_type = MODEL_TYPES[trainer.get(3, [1])[0]]
        self.pieces: dict[str, Piece] = {}  # what a word may be cut into
        self.merge_ranks: dict[str, float] = {}  # bpe: -score of the merge that makes a piece
        byte_ids, normal_scores, user_ids = {}, [], {}
        for i, raw in enumerate(model.get(1, [])):
            fields = message_fields(raw)
            text, kind = fields[1][0].decode(), fields.get(3, [NORMAL])[0]
            score = struct.unpack("<f", fields[2][0])[0] if 2 in fields else 0.0
            if kind == NORMAL:
                self.pieces[text] = Piece((i,), score)
                self.merge_ranks[text] = -score
                normal_scores.append(score)
            elif kind == USER_DEFINED:
                user_ids[text] = i
            elif kind == BYTE:
                byte_ids[int(text[3:5], 16)] = i  # <0x41>
        # As SentencePiece's unigram model: the greatest score starts from FLT_MIN, the least
        # from FLT_MAX (unigram scores are log-probabilities, all below 0)
        self.max_score = max([FLT_MIN, *normal_scores])
        self.unk_score = min([FLT_MAX, *normal_scores]) - UNK_PENALTY
        # SentencePiece scores a user-defined piece len * max_score - 0.1, about -0.1 in a
        # unigram model: so high that it is nearly always kept whole
        for text, i in user_ids.items():
            self.pieces[text] = Piece((i,), len(text) * self.max_score - 0.1)
        self.user_defined = list(user_ids)
        self.byte_ids = [byte_ids[b] for b in range(256)] if len(byte_ids) == 256 else None
        self.unk_id = processor.unk_id()
        self.longest = max(map(len, self.pieces), default=1)
        self.openings = {text[:end] for text in self.pieces for end in range(1, len(text) + 1)}
        inner = {text.find(WORD_START, 1) >= 0 for text in self.pieces}
        self.by_word = True not in inner  # no piece reaches into the next word
        self.lattices: dict[float, dict[str, WordLattice]] = defaultdict(dict)  # alpha, word
        self.plain_merges: dict[str, tuple[list[int], int]] = {}  # per word: BPE's ids, merges

    def draw(self, lines: list[str], alpha: float, nbest: int, rng: random.Random
             ) -> list[list[int]]:
        """A segmentation of each line, drawn with `rng` (see the module's docstring)."""
        if self.model_type not in ("unigram", "bpe"):  # word, char: one segmentation
            return self.processor.encode(lines)
        if self.model_type == "unigram" and nbest > 1:
            return [self.among_best(line, alpha, nbest, rng) for line in lines]
        drawn = []
        for text in self.processor.normalize(lines):
            ids: list[int] = []
            for word in self.words(text):
                ids += (self.merge(word, alpha, rng) if self.model_type == "bpe"
                        else self.lattice(word, alpha).draw(rng))
            drawn.append(self.one_unknown_per_run(ids))
        return drawn

    def words(self, text: str) -> list[str]:
        """`text` cut before each "▁" where no piece reaches across one; else whole."""
        if not self.by_word:
            return [text] if text else []
        return [WORD_START + word if i or text.startswith(WORD_START) else word
                for i, word in enumerate(text.split(WORD_START)) if word or i]

    def unknown(self, char: str) -> tuple[int, ...]:
        if self.byte_ids is None:
            return (self.unk_id,)
        return tuple(self.byte_ids[b] for b in char.encode())

    def lattice(self, word: str, alpha: float) -> WordLattice:
        """Forward filtering over every segmentation of `word`, done once per word and alpha
        (for the first MAX_CACHED_WORDS words)."""
        if (found := self.lattices[alpha].get(word)) is not None:
            return found
        ending: list[list[tuple[int, tuple[int, ...], float]]] = [[] for _ in word] + [[]]
        for start in range(len(word)):
            one_char = False
            for end in range(start + 1, min(len(word), start + self.longest) + 1):
                if (text := word[start:end]) not in self.openings:
                    break  # no piece opens so
                if (piece := self.pieces.get(text)) is not None:
                    ending[end].append((start, piece.ids, piece.score))
                    one_char |= end == start + 1
            if not one_char:
                ending[start + 1].append((start, self.unknown(word[start]), self.unk_score))
        log_total = [0.0] * (len(word) + 1)  # log of the summed weight of the paths to each end
        cumulative = array.array("d")
        for end in range(1, len(word) + 1):
            logits = [log_total[start] + alpha * score for start, _, score in ending[end]]
            top = max(logits)
            weights = [math.exp(logit - top) for logit in logits]
            total = sum(weights)
            log_total[end] = top + math.log(total)
            cumulative.extend(itertools.accumulate(weight / total for weight in weights))
            cumulative[-1] = 1.0  # above any number random() gives
        nodes = [node for nodes in ending for node in nodes]
        found = WordLattice((0, *itertools.accumulate(map(len, ending))),
                            tuple(start for start, _, _ in nodes),
                            tuple(piece for _, piece, _ in nodes), cumulative)
        if len(cached := self.lattices[alpha]) < MAX_CACHED_WORDS:
            cached[word] = found
        return found

    def merge(self, word: str, dropout: float, rng: random.Random) -> list[int]:
        """BPE as SentencePiece applies it, highest-scored pair first (the leftmost of equals),
        each merge skipped with probability `dropout`. Until a merge is skipped, the merges are
        those of plain BPE, known once per word: most occurrences draw only to find none is."""
        if (plain := self.plain_merges.get(word)) is None:
            plain = self.merge_drawing(word, 0.0, iter(()), rng)
            if len(self.plain_merges) < MAX_CACHED_WORDS:
                self.plain_merges[word] = plain
        ids, merges = plain
        if dropout >= 1:  # every merge skipped, nothing drawn
            return self.merge_drawing(word, dropout, iter(()), rng)[0]
        draws: list[float] = []
        for _ in range(merges if dropout > 0 else 0):
            draws.append(rng.random())
            if draws[-1] < dropout:  # skipped: the merges from here on are others
                return self.merge_drawing(word, dropout, iter(draws), rng)[0]
        return ids

    def merge_drawing(self, word: str, dropout: float, drawn: Iterator[float],
                      rng: random.Random) -> tuple[list[int], int]:
        """BPE of `word` with dropout, drawing from `drawn` first: its ids and how many merges
        it made."""
        symbols = self.first_symbols(word)
        after = list(range(1, len(symbols))) + [-1]
        before = list(range(-1, len(symbols) - 1))
        ranks = self.merge_ranks
        pairs = [(ranks[text], left, left + 1, len(text)) for left in range(len(symbols) - 1)
                 if (text := symbols[left] + symbols[left + 1]) in ranks]
        heapq.heapify(pairs)  # the best pair first, the leftmost of equals
        merges = 0
        while pairs:
            _, left, right, text_len = heapq.heappop(pairs)
            first, second = symbols[left], symbols[right]
            if not first or not second or len(first) + len(second) != text_len:
                continue  # one side has merged since the pair was found
            if dropout >= 1:
                continue
            if dropout > 0:
                draw = next(drawn, None)
                if (rng.random() if draw is None else draw) < dropout:
                    continue
            merges += 1
            symbols[left] = merged = first + second
            symbols[right] = ""
            after[left] = following = after[right]
            if following >= 0:
                before[following] = left
                if (rank := ranks.get(text := merged + symbols[following])) is not None:
                    heapq.heappush(pairs, (rank, left, following, len(text)))
            if (preceding := before[left]) >= 0:
                if (rank := ranks.get(text := symbols[preceding] + merged)) is not None:
                    heapq.heappush(pairs, (rank, preceding, left, len(text)))
        ids: list[int] = []
        for symbol in filter(None, symbols):
            piece = self.pieces.get(symbol)
            ids += piece.ids if piece is not None else self.unknown(symbol)
        return ids, merges

    def first_symbols(self, word: str) -> list[str]:
        """`word` in characters, a user-defined piece kept whole (the longest that fits)."""
        if not self.user_defined:
            return list(word)
        symbols, at = [], 0
        while at < len(word):
            whole = max((text for text in self.user_defined if word.startswith(text, at)),
                        key=len, default=word[at])
            symbols.append(whole)
            at += len(whole)
        return symbols

    def among_best(self, line: str, alpha: float, nbest: int, rng: random.Random) -> list[int]:
        """One of SentencePiece's `nbest` best segmentations of `line`, with probability
        exp(alpha * score) over their sum."""
        candidates = self.processor.nbest_encode(line, nbest_size=nbest)
        if not candidates:
            return []
        length = len(self.processor.normalize(line))
        logits = [alpha * self.score(ids, length) for ids in candidates]
        top = max(logits)
        cumulative = list(itertools.accumulate(math.exp(logit - top) for logit in logits))
        # random() is the one draw that Python keeps the same across its releases
        k = bisect.bisect(cumulative, rng.random() * cumulative[-1])
        return candidates[min(k, len(candidates) - 1)]

    def score(self, ids: list[int], length: int) -> float:
        """The score of a unigram segmentation of a normalized text of `length` characters:
        its pieces' scores, and unk_score for each character no piece holds."""
        total, known = 0.0, 0
        for i in ids:
            text = self.processor.id_to_piece(i)
            if (piece := self.pieces.get(text)) is not None and piece.ids == (i,):
                total += piece.score
                known += len(text)
        return total + (length - known) * self.unk_score

    def one_unknown_per_run(self, ids: list[int]) -> list[int]:
        """One <unk> for a run of unknown characters, as SentencePiece gives."""
        if self.byte_ids is not None or self.unk_id not in ids:
            return ids
        return [i for k, i in enumerate(ids) if i != self.unk_id or not k
                or ids[k - 1] != self.unk_id]
