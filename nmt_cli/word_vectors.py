"""Word vectors: pretrained embeddings to start from, and the nearest neighbours of a word.

Word2vec and GloVe place words used in similar contexts close together. `model.src_embeddings`
and `model.tgt_embeddings` name such a file in text format (one `word v1 .. vd` per line; a
word2vec header line `count dim` is allowed): every SentencePiece piece whose surface form
(the piece without its leading "▁") has a vector starts from it, the others from the usual
random values. `nmt embeddings --neighbors WORD` lists the pieces (or words) nearest to a word
by cosine similarity, in a trained run or in a vector file; `-o FILE.png` draws them (and
`--words`) as a map: each vector on the first two principal components of the vectors drawn,
where words used alike lie close together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .config import ModelConfig
from .errors import UserError
from .models import Seq2Seq
from .special_tokens import EOS_ID
from .tokenizer import WORD_START, Tokenizer, source_tags


def surface(piece: str) -> str:
    return piece.removeprefix(WORD_START)


def map_label(piece: str) -> str:
    """How a word map names a piece: a word's first piece as the word ("dog" for "▁dog"), a
    piece from inside a word marked as BERT's vocabularies mark one ("##s" for "s"), and the
    bare "▁" as it is; so that no two pieces share a label."""
    if piece == WORD_START:
        return piece
    return surface(piece) if piece.startswith(WORD_START) else f"##{piece}"


def read_vectors(path: Path, dim: int | None = None,
                 wanted: set[str] | None = None) -> dict[str, np.ndarray]:
    """The vectors of a text-format file, of the `wanted` words only (all if None). Every
    vector must have `dim` values, the model's d_model (or as many as the first one)."""
    vectors: dict[str, np.ndarray] = {}
    needed = "(model.d_model)"
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for number, line in enumerate(f, start=1):
                fields = line.rstrip("\n").rstrip().split(" ")
                if number == 1 and len(fields) == 2 and all(x.isdigit() for x in fields):
                    continue  # word2vec's header: vector count and size
                vector = parse_line(path, number, fields, dim, needed)
                if dim is None:
                    dim, needed = len(vector), f"(as on line {number})"
                if wanted is None or fields[0] in wanted:
                    vectors[fields[0]] = vector
    except FileNotFoundError:
        raise UserError(f"{path}: vector file not found") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e.reason})") from None
    return vectors


def parse_line(path: Path, number: int, fields: list[str], dim: int | None,
               needed: str) -> np.ndarray:
    """A line's vector (parsed once), which must have `dim` values when given (`needed`:
    why, for the error)."""
    size = len(fields) - 1
    if size < 1 or not fields[0]:
        raise UserError(f"{path}:{number}: expected a word and its vector")
    if dim is not None and size != dim:
        raise UserError(f"{path}:{number}: a vector of {size} values where {dim} are needed "
                        f"{needed}")
    try:
        with np.errstate(over="ignore"):  # a value past float32's range: inf, refused below
            vector = np.asarray(fields[1:], dtype=np.float32)
    except ValueError:
        raise UserError(f"{path}:{number}: the vector holds something other than numbers"
                        ) from None
    if not np.isfinite(vector).all():
        raise UserError(f"{path}:{number}: the vector holds a value that is not a finite "
                        "number")
    return vector


def initialise_embeddings(model: Seq2Seq, tokenizer: Tokenizer,
                          config: ModelConfig) -> list[str]:
    """Copy pretrained vectors into the embeddings the config names; returns one line per
    file saying how many pieces it covered."""
    messages = []
    for side, path in (("src", config.src_embeddings), ("tgt", config.tgt_embeddings)):
        if not path:
            continue
        embedding = model.src_embedding if side == "src" else model.tgt_embedding
        processor = tokenizer.src if side == "src" else tokenizer.tgt
        pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
        vectors = read_vectors(Path(path), embedding.embedding_dim, {surface(p) for p in pieces})
        found = 0
        with torch.no_grad():
            for i, piece in enumerate(pieces[EOS_ID + 1 :], start=EOS_ID + 1):
                vector = vectors.get(surface(piece))
                if vector is not None:
                    embedding.weight[i] = torch.from_numpy(vector)
                    found += 1
        messages.append(f"model.{side}_embeddings: {found:,} of {len(pieces):,} pieces "
                        f"({100 * found / len(pieces):.1f}%) start from {path}")
    return messages


def freeze_embeddings(model: Seq2Seq, config: ModelConfig, finetuning: bool) -> None:
    """model.freeze_embeddings: keep the embeddings that pretrained vectors started fixed (a
    tied output layer with them), or, when fine-tuning, those of the parent run, all of them.
    Applied to new and resumed runs alike: whether a weight trains is not saved."""
    if not config.freeze_embeddings:
        return
    for side, path in (("src", config.src_embeddings), ("tgt", config.tgt_embeddings)):
        if path or finetuning:
            embedding = model.src_embedding if side == "src" else model.tgt_embedding
            embedding.weight.requires_grad_(False)


@dataclass(frozen=True)
class Neighbour:
    label: str  # a piece or a word
    similarity: float  # cosine


def nearest(matrix: torch.Tensor, labels: list[str], query: int, k: int,
            skip: list[int] | None = None) -> list[Neighbour]:
    """The k rows most similar to row `query` by cosine similarity (itself, and the rows of
    `skip`, left out)."""
    unit = torch.nn.functional.normalize(matrix.float(), dim=1)
    similarity = unit @ unit[query]  # (rows,)
    left_out = [query, *(skip or [])]
    similarity[left_out] = -2.0
    top = similarity.topk(min(k, len(labels) - len(set(left_out))))
    return [Neighbour(labels[i], float(s)) for s, i in zip(top.values, top.indices)]


def run_neighbours(model: Seq2Seq, tokenizer: Tokenizer, word: str, k: int,
                   side: str = "src") -> tuple[str, list[Neighbour]]:
    """The pieces nearest to `word` in a trained model's embeddings: the word's own piece if
    the vocabulary has one, else its first piece."""
    processor, matrix = run_embeddings(model, tokenizer, side)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    query = piece_id(processor, word, "--neighbors")
    return pieces[query], nearest(matrix, pieces, query, k, sorted(not_words(processor)))


def not_words(processor) -> set[int]:
    """The pieces that stand for no text (see stands_for_text)."""
    tags = set(source_tags(processor).values())
    return {i for i in range(processor.get_piece_size())
            if not stands_for_text(processor, i, tags)}


def stands_for_text(processor, i: int, tags: set[int]) -> bool:
    """Whether piece `i` stands for text: not <pad>, <unk>, <sos>, <eos>, a language tag (of
    `tags`), nor a byte of byte_fallback."""
    return not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i)
                or i in tags)


def run_embeddings(model: Seq2Seq, tokenizer: Tokenizer, side: str = "src"):
    """The SentencePiece model and the embedding matrix (pieces, d_model) of one side."""
    processor = tokenizer.src if side == "src" else tokenizer.tgt
    embedding = model.src_embedding if side == "src" else model.tgt_embedding
    return processor, embedding.weight.detach()


def piece_id(processor, word: str, option: str) -> int:
    """The piece that stands for `word` (given as `option`): its own if the vocabulary has
    one, else its first that holds some of it (not the bare word start "▁", nor a piece of
    not_words)."""
    if len(word.split()) != 1:
        raise UserError(f"{option} {word!r}: give one word")
    query = processor.piece_to_id(WORD_START + word)
    if query != processor.unk_id():
        return query
    tags = set(source_tags(processor).values())
    known = [i for i in processor.encode(word)
             if stands_for_text(processor, i, tags) and processor.id_to_piece(i) != WORD_START]
    if not known:
        raise UserError(f"{option} {word!r}: the vocabulary has no piece of it")
    return known[0]


def run_vectors(model: Seq2Seq, tokenizer: Tokenizer, words: list[str], side: str = "src",
                pieces: list[str] | None = None) -> tuple[list[str], torch.Tensor, list[str]]:
    """`pieces`, then the pieces that stand for `words`, in a trained model's embeddings (each
    once), and their vectors: (pieces, d_model); and, for each word, the piece it stands as."""
    processor, matrix = run_embeddings(model, tokenizer, side)
    stand_ins = [piece_id(processor, word, "--words") for word in words]
    ids = list(dict.fromkeys([processor.piece_to_id(piece) for piece in pieces or []]
                             + stand_ins))
    return ([processor.id_to_piece(i) for i in ids], matrix[ids].float(),
            [processor.id_to_piece(i) for i in stand_ins])


def file_vectors(path: Path, words: list[str]) -> tuple[list[str], torch.Tensor]:
    """`words` (each once) and their vectors in a vector file: (words, dim)."""
    words = list(dict.fromkeys(words))
    vectors = read_vectors(path, wanted=set(words))
    for word in words:
        if word not in vectors:
            raise UserError(f"{path}: no vector for {word!r}")
    return words, torch.from_numpy(np.stack([vectors[word] for word in words])).float()


def principal_components(matrix: torch.Tensor, count: int = 2
                         ) -> tuple[torch.Tensor, list[float]]:
    """Each row of `matrix` (a vector) on the `count` directions along which the rows vary
    most (principal component analysis): the rows less their mean, times the first right
    singular vectors; and the share of the variance each direction holds. (rows, count)"""
    centred = matrix.double() - matrix.double().mean(0)
    _, singular, right = torch.linalg.svd(centred, full_matrices=False)  # right: (k, dim)
    variance = singular**2
    return (centred @ right[:count].T).float(), (variance[:count] / variance.sum()).tolist()


def file_neighbours(path: Path, word: str, k: int) -> list[Neighbour]:
    """The words nearest to `word` in a vector file."""
    vectors = read_vectors(path)
    if word not in vectors:
        raise UserError(f"{path}: no vector for {word!r}")
    labels = list(vectors)
    matrix = torch.from_numpy(np.stack([vectors[w] for w in labels]))
    return nearest(matrix, labels, labels.index(word), k)
