"""Corpora larger than memory: training pairs tokenized once into binary files of token ids.

`nmt data prepare --data DIR --out OUT` trains the tokenizer (or, with `--tokenizer RUN`, takes
that run's, to fine-tune it), then encodes DIR's training pairs a chunk at a time into OUT:

    spm.model (or spm.src.model, spm.tgt.model)   the tokenizer
    train.src.bin, train.tgt.bin    the ids of every kept sentence, back to back (NumPy uint16,
                                    or uint32 for vocabularies over 65,535)
    train.index.bin                 (pairs, 4) int64: source offset, source length, target
                                    offset, target length (offsets count ids, not bytes)
    val.SRC, val.TGT                the validation text, copied as it was
    prepared.json                   languages, counts and settings (the tokenizer's too);
                                    written last

`nmt train --data OUT` then reads each batch's sentences from the files as it needs them, with
positioned reads (os.pread) rather than a memory map, so that no page of the files counts as
the process's memory. In memory are only the lengths (8 bytes a pair, for batching), so
resident memory hardly grows with the corpus. The files are plain arrays, so other tools can
map them: np.memmap(OUT / "train.index.bin", np.int64, "r").reshape(-1, 4) reads the index.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .config import Config, TokenizerConfig, apply_overrides
from .data import EncodedText, ParallelText, encode_parallel, find_split_file, iter_lines
from .errors import UserError, in_file
from .files import atomic_write
from .languages import (
    check_languages,
    check_tags,
    language_tags,
    tag_line,
    tagged_languages,
    target_languages,
)
from .tokenizer import Tokenizer, copy_tokenizer

PREPARED = "prepared.json"
INDEX = "train.index.bin"
ROW = 4 * 8  # bytes of one index row
TOKENIZER_SAMPLE = 1_000_000  # sentence pairs the tokenizer trains on at most
CHUNK = 100_000  # sentence pairs encoded at a time
# the tokenizer settings that made the prepared corpus's tokenizer, which prepared.json records
# (subword sampling is the training run's own, and needs the text)
TOKENIZER_MADE_WITH = ("vocab_size", "model_type", "joint", "character_coverage", "byte_fallback")


def is_prepared(data_dir: Path) -> bool:
    return (Path(data_dir) / PREPARED).is_file()


class PreparedSide:
    """One side of the prepared pairs: `side[i]` reads sentence i's ids from the id file."""

    def __init__(self, ids: Path, index: Path, dtype: str, column: int, pairs: int,
                 vocab: int | None = None):
        self.dtype, self.column, self.pairs, self.vocab = np.dtype(dtype), column, pairs, vocab
        self.path = ids
        self.ids: BinaryIO = open(ids, "rb", buffering=0)
        self.index: BinaryIO = open(index, "rb", buffering=0)

    def __len__(self) -> int:
        return self.pairs

    def __getitem__(self, i) -> list[int]:
        row = np.frombuffer(os.pread(self.index.fileno(), ROW, int(i) * ROW), dtype=np.int64)
        offset, length = int(row[self.column]), int(row[self.column + 1])
        size = self.dtype.itemsize
        ids = np.frombuffer(os.pread(self.ids.fileno(), length * size, offset * size),
                            dtype=self.dtype)
        if self.vocab is not None and len(ids) and ids.max() >= self.vocab:
            raise UserError(f"{self.path}: sentence {int(i) + 1} holds id {ids.max()}, outside "
                            f"the vocabulary of {self.vocab:,}; prepare the corpus again")
        return ids.tolist()

    def close(self) -> None:
        self.ids.close()
        self.index.close()


@dataclass
class PreparedText:
    """Prepared training pairs, with the same reading interface as data.EncodedText."""

    src: PreparedSide
    tgt: PreparedSide
    src_lengths: np.ndarray
    tgt_lengths: np.ndarray
    empty: int = 0
    too_long: int = 0
    max_len: int = 0  # the limit that too_long counts against
    uneven: int = 0
    max_ratio: float = 0.0  # the limit that uneven counts against (data.max_len_ratio)
    alignments: None = None  # guided alignment reads the plain-text corpus

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        return self.src_lengths, self.tgt_lengths

    def close(self) -> None:
        """Close the id files (garbage collection closes them too)."""
        self.src.close()
        self.tgt.close()


@dataclass
class PairCounts:
    """What preparing a corpus wrote and skipped; saved in prepared.json."""

    pairs: int = 0
    empty: int = 0  # pairs with an empty side, skipped
    too_long: int = 0  # pairs over max_len tokens on either side, dropped
    uneven: int = 0  # pairs over max_len_ratio, dropped
    src_ids: int = 0  # ids written to train.src.bin
    tgt_ids: int = 0


def read_info(data_dir: Path) -> dict:
    try:
        info = json.loads((Path(data_dir) / PREPARED).read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{Path(data_dir) / PREPARED}: cannot read ({e})") from None
    if not isinstance(info, dict):
        raise UserError(f"{Path(data_dir) / PREPARED}: expected an object")
    return info


def read_lengths(index: Path, pairs: int, ids: tuple[int, int], rows: int = 1 << 18
                 ) -> np.ndarray:
    """(pairs, 2) int32 source and target lengths, read a slice of the index at a time,
    each sentence checked to lie within its id file (`ids`: the ids in each)."""
    lengths = np.empty((pairs, 2), dtype=np.int32)
    with open(index, "rb") as f:
        for start in range(0, pairs, rows):
            part = np.fromfile(f, dtype=np.int64, count=4 * min(rows, pairs - start))
            part = part.reshape(-1, 4)
            for column, total in zip((0, 2), ids):
                offsets, counts = part[:, column], part[:, column + 1]
                bad = (offsets < 0) | (counts < 0) | (offsets + counts > total)
                if bad.any():
                    row = start + int(np.argmax(bad))
                    raise UserError(f"{index}: pair {row + 1} points outside its id file; "
                                    "prepare the corpus again")
            lengths[start : start + len(part)] = part[:, [1, 3]]
    return lengths


def check_pair(data_dir: Path, src_lang: str, tgt_lang: str) -> dict:
    """The prepared.json of data_dir, when it was prepared for these languages."""
    info = read_info(data_dir)
    if (info.get("src_lang"), info.get("tgt_lang")) != (src_lang, tgt_lang):
        raise UserError(f"{data_dir}: prepared for {info.get('src_lang')}-{info.get('tgt_lang')}"
                        f", not {src_lang}-{tgt_lang}; prepare it for {src_lang}-{tgt_lang}"
                        ", or train for its languages")
    return info


def open_prepared(data_dir: Path, src_lang: str, tgt_lang: str,
                  vocab: tuple[int, int] | tuple[None, None] = (None, None)) -> PreparedText:
    """The prepared pairs of data_dir, checked against prepared.json; with `vocab` (source
    and target sizes), each sentence read is checked to hold ids of that vocabulary."""
    data_dir = Path(data_dir)
    info = check_pair(data_dir, src_lang, tgt_lang)
    paths = {name: data_dir / name for name in (INDEX, "train.src.bin", "train.tgt.bin")}
    try:
        pairs, itemsize = int(info["pairs"]), np.dtype(info["dtype"]).itemsize
        sizes = {name: path.stat().st_size for name, path in paths.items()}
        expected = {INDEX: pairs * ROW, "train.src.bin": info["src_ids"] * itemsize,
                    "train.tgt.bin": info["tgt_ids"] * itemsize}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{data_dir}: damaged prepared corpus ({e}); prepare it again") from None
    for name, size in sizes.items():
        if size != expected[name]:
            raise UserError(f"{paths[name]}: {size:,} bytes where {expected[name]:,} were "
                            "written; prepare the corpus again")
    lengths = read_lengths(paths[INDEX], pairs, (info["src_ids"], info["tgt_ids"]))
    return PreparedText(
        PreparedSide(paths["train.src.bin"], paths[INDEX], info["dtype"], 0, pairs, vocab[0]),
        PreparedSide(paths["train.tgt.bin"], paths[INDEX], info["dtype"], 2, pairs, vocab[1]),
        lengths[:, 0], lengths[:, 1], info["empty"], info["too_long"], info["max_len"],
        info.get("uneven", 0), info.get("max_len_ratio", 0.0))  # not in older corpora


def with_its_settings(data_dir: Path, config: Config) -> tuple[Config, list[str]]:
    """`config` with the settings recorded in data_dir's prepared.json: a run on a prepared
    corpus uses the tokenizer made there and the pairs its length filters kept, whatever its
    own settings say, and its config.json should say so. Also returns the settings that
    changed, as `key=value`."""
    info = read_info(data_dir)
    recorded = info.get("tokenizer", {})  # none before this was recorded
    if not isinstance(recorded, dict):
        raise UserError(f"{Path(data_dir) / PREPARED}: tokenizer: expected a table of settings")
    recorded = {f"tokenizer.{key}": value for key, value in recorded.items()
                if key in TOKENIZER_MADE_WITH}
    recorded.update(filter_settings(info))
    with in_file(Path(data_dir) / PREPARED):
        adopted = apply_overrides(config, recorded)
    changed = [f"{key.removeprefix('tokenizer.')}={adopted.get(key)!r}" for key in recorded
               if adopted.get(key) != config.get(key)]
    return adopted, changed


def filter_settings(info: dict) -> dict[str, Any]:
    """The length filters a corpus was prepared with (no ratio before it was recorded)."""
    kept = {"data.max_len": info["max_len"]} if "max_len" in info else {}
    return {**kept, "data.max_len_ratio": info.get("max_len_ratio", 0.0)}


def check_filters(data_dir: Path, config: Config) -> None:
    """A resumed run needs the pairs it started with: its corpus, prepared again with another
    data.max_len_ratio, would hand it others. (Runs made before the filters were adopted
    kept their own data.max_len in config.json, so that one is not compared.)"""
    ratio = filter_settings(read_info(data_dir))["data.max_len_ratio"]
    if ratio != config.data.max_len_ratio:
        raise UserError(f"{data_dir}: prepared again with data.max_len_ratio={ratio!r}; this "
                        f"run trained with {config.data.max_len_ratio!r}: prepare it as "
                        "before, or start a new run")


def read_pairs(src_path: Path, tgt_path: Path):
    """(src, tgt) lines in step; a line-count mismatch is an error naming both files."""
    missing = object()
    src_lines, tgt_lines = iter_lines(src_path), iter_lines(tgt_path)
    while True:
        src, tgt = next(src_lines, missing), next(tgt_lines, missing)
        if src is missing and tgt is missing:
            return
        if src is missing or tgt is missing:
            raise UserError(f"line counts differ: {src_path} and {tgt_path}")
        yield src, tgt


def tagged_pairs(files: list[tuple[Path, Path, str]]):
    """The pairs of each (source file, target file, language tag) in turn, every source
    opened by its tag ("": none)."""
    for src_path, tgt_path, tag in files:
        for src, tgt in read_pairs(src_path, tgt_path):
            yield tag_line(src, tag), tgt


def sample_pairs(pairs, limit: int, seed: int) -> ParallelText:
    """All pairs if there are at most `limit`, else a uniform sample of `limit` (reservoir)."""
    rng, sample = random.Random(seed), []
    for seen, pair in enumerate(pairs):
        if seen < limit:
            sample.append(pair)
        elif (j := rng.randrange(seen + 1)) < limit:
            sample[j] = pair
    return ParallelText([s for s, _ in sample], [t for _, t in sample])


def prepare(data_dir: Path, out_dir: Path, src_lang: str, tgt_lang: str,
            tokenizer_config: TokenizerConfig, max_len: int, seed: int = 1,
            sample: int = TOKENIZER_SAMPLE, tokenizer_from: Path | None = None,
            max_ratio: float = 0.0) -> dict:
    """Tokenize `data_dir`'s training pairs into `out_dir` (see the module docstring), with a
    tokenizer trained on a sample of them, or the one of the run `tokenizer_from` (made with
    `tokenizer_config`), e.g. to fine-tune that run on them."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    check_languages(tgt_lang, "--tgt-lang")
    src_path = find_split_file(data_dir, "train", src_lang)
    files = [(src_path, find_split_file(data_dir, "train", language), tag)
             for language, tag in tagged_languages(tgt_lang)]
    val_paths = [find_split_file(data_dir, "val", lang)
                 for lang in (src_lang, *target_languages(tgt_lang))]
    if out_dir.resolve() == data_dir.resolve():
        raise UserError(f"--out {out_dir}: the same folder as --data; choose another")
    if tokenizer_from is not None:  # before anything is written
        check_tags(Tokenizer.load(Path(tokenizer_from)), tgt_lang,
                   f"--tokenizer {tokenizer_from}", "prepare the corpus without --tokenizer")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PREPARED).unlink(missing_ok=True)  # not prepared until the end
    if tokenizer_from is None:
        text = sample_pairs(tagged_pairs(files), sample, seed)
        tokenizer = Tokenizer.train(text.src, text.tgt, tokenizer_config, out_dir,
                                    language_tags(tgt_lang))
        del text
    else:
        copy_tokenizer(tokenizer_from, out_dir)
        tokenizer = Tokenizer.load(out_dir)
    vocab = max(tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
    dtype = np.uint16 if vocab <= 2**16 else np.uint32
    counts = write_id_files(tagged_pairs(files), tokenizer, max_len, max_ratio,
                            IdFileWriter(out_dir, dtype))
    if not counts.pairs:
        raise UserError(f"{data_dir}: no usable training pairs (all empty, too long or, with "
                        "data.max_len_ratio, uneven)")
    for path in val_paths:
        shutil.copyfile(path, out_dir / path.name)
    info = {"src_lang": src_lang, "tgt_lang": tgt_lang, "dtype": np.dtype(dtype).name,
            "max_len": max_len, "max_len_ratio": max_ratio, "vocab_size": vocab,
            **asdict(counts),
            "source": str(data_dir.resolve()),
            "tokenizer": {key: getattr(tokenizer_config, key) for key in TOKENIZER_MADE_WITH}}
    atomic_write(out_dir / PREPARED, lambda tmp: Path(tmp).write_text(json.dumps(info, indent=2)))
    return info


def write_id_files(pairs, tokenizer: Tokenizer, max_len: int, max_ratio: float,
                   writer: IdFileWriter) -> PairCounts:
    """Encode (src, tgt) pairs a chunk at a time into the writer's files; all or nothing."""
    try:
        chunk: list[tuple[str, str]] = []
        for pair in pairs:
            chunk.append(pair)
            if len(chunk) == CHUNK:
                writer.write(encode_chunk(chunk, tokenizer, max_len, max_ratio))
                chunk = []
        writer.write(encode_chunk(chunk, tokenizer, max_len, max_ratio))
    except BaseException:
        writer.discard()
        raise
    writer.commit()
    return writer.counts


def encode_chunk(chunk: list[tuple[str, str]], tokenizer: Tokenizer, max_len: int,
                 max_ratio: float) -> EncodedText:
    text = ParallelText([s for s, _ in chunk], [t for _, t in chunk])
    return encode_parallel(text, tokenizer, max_len, max_ratio)


class IdFileWriter:
    """Appends encoded pairs to the id and index files of a prepared corpus, written under
    temporary names until `commit`."""

    NAMES = ("train.src.bin", "train.tgt.bin", INDEX)

    def __init__(self, out_dir: Path, dtype: type):
        self.out_dir, self.dtype, self.counts = Path(out_dir), dtype, PairCounts()
        self.files = [open(self.temporary(name), "wb") for name in self.NAMES]

    def temporary(self, name: str) -> Path:
        return self.out_dir / f".{name}.tmp"

    def write(self, encoded: EncodedText) -> None:
        """Append the ids of each side, and one index row per pair."""
        c = self.counts
        src_offsets, src_lengths, c.src_ids = self.append_ids(0, encoded.src, c.src_ids)
        tgt_offsets, tgt_lengths, c.tgt_ids = self.append_ids(1, encoded.tgt, c.tgt_ids)
        rows = np.stack([src_offsets, src_lengths, tgt_offsets, tgt_lengths], axis=1)
        self.files[2].write(rows.astype(np.int64).tobytes())  # (pairs, 4)
        c.pairs += len(encoded.src)
        c.empty += encoded.empty
        c.too_long += encoded.too_long
        c.uneven += encoded.uneven

    def append_ids(self, file: int, sentences: list[list[int]], written: int):
        """Append sentences to id file `file`; returns their offsets and lengths (in ids) and
        the new count of ids in the file."""
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        offsets = written + np.cumsum(lengths) - lengths
        ids = np.fromiter((i for sentence in sentences for i in sentence), dtype=self.dtype,
                          count=int(lengths.sum()))
        self.files[file].write(ids.tobytes())
        return offsets, lengths, written + int(lengths.sum())

    def commit(self) -> None:
        """Make the files durable and give them their real names."""
        for name, out in zip(self.NAMES, self.files):
            out.flush()
            os.fsync(out.fileno())
            out.close()
            os.replace(self.temporary(name), self.out_dir / name)

    def discard(self) -> None:
        for name, out in zip(self.NAMES, self.files):
            out.close()
            self.temporary(name).unlink(missing_ok=True)
