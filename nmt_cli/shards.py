"""Corpora larger than memory: training pairs tokenized once into binary files of token ids.

`nmt data prepare --data DIR --out OUT` trains the tokenizer, then encodes DIR's training pairs
a chunk at a time into OUT:

    spm.model (or spm.src.model, spm.tgt.model)   the tokenizer
    train.src.bin, train.tgt.bin    the ids of every kept sentence, back to back (NumPy uint16,
                                    or uint32 for vocabularies over 65,535)
    train.index.bin                 (pairs, 4) int64: source offset, source length, target
                                    offset, target length (offsets count ids, not bytes)
    val.SRC, val.TGT                the validation text, copied as it was
    prepared.json                   languages, counts and settings; written last

`nmt train --data OUT` then reads each batch's sentences from the files as it needs them (with
pread, so no page of the files counts as the process's memory). In memory are only the lengths
(8 bytes a pair, for batching), so resident memory hardly grows with the corpus. The files are
plain arrays: np.memmap(OUT / "train.index.bin", np.int64, "r").reshape(-1, 4) reads the index.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import TokenizerConfig, UserError
from .data import ParallelText, encode_parallel, find_split_file, iter_lines
from .files import atomic_write
from .tokenizer import JOINT_FILE, SRC_FILE, TGT_FILE, Tokenizer

PREPARED = "prepared.json"
INDEX = "train.index.bin"
ROW = 4 * 8  # bytes of one index row
TOKENIZER_SAMPLE = 1_000_000  # sentence pairs the tokenizer trains on at most
CHUNK = 100_000  # sentence pairs encoded at a time


def is_prepared(data_dir: Path) -> bool:
    return (Path(data_dir) / PREPARED).is_file()


class MappedSide:
    """One side of the prepared pairs: `side[i]` reads sentence i's ids from the file."""

    def __init__(self, ids: Path, index: Path, dtype: str, column: int, pairs: int):
        self.dtype, self.column, self.pairs = np.dtype(dtype), column, pairs
        self.ids, self.index = os.open(ids, os.O_RDONLY), os.open(index, os.O_RDONLY)

    def __len__(self) -> int:
        return self.pairs

    def __getitem__(self, i) -> list[int]:
        row = np.frombuffer(os.pread(self.index, ROW, int(i) * ROW), dtype=np.int64)
        offset, length = int(row[self.column]), int(row[self.column + 1])
        size = self.dtype.itemsize
        return np.frombuffer(os.pread(self.ids, length * size, offset * size),
                             dtype=self.dtype).tolist()


@dataclass
class MappedText:
    """Prepared training pairs, with the same reading interface as data.EncodedText."""

    src: MappedSide
    tgt: MappedSide
    src_lengths: np.ndarray
    tgt_lengths: np.ndarray
    empty: int = 0
    too_long: int = 0

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        return self.src_lengths, self.tgt_lengths


def read_info(data_dir: Path) -> dict:
    try:
        return json.loads((Path(data_dir) / PREPARED).read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{Path(data_dir) / PREPARED}: cannot read ({e})") from None


def read_lengths(index: Path, pairs: int, rows: int = 1 << 18) -> np.ndarray:
    """(pairs, 2) int32 source and target lengths, read a slice of the index at a time."""
    lengths = np.empty((pairs, 2), dtype=np.int32)
    with open(index, "rb") as f:
        for start in range(0, pairs, rows):
            part = np.fromfile(f, dtype=np.int64, count=4 * min(rows, pairs - start))
            lengths[start : start + len(part) // 4] = part.reshape(-1, 4)[:, [1, 3]]
    return lengths


def open_prepared(data_dir: Path, src_lang: str, tgt_lang: str) -> MappedText:
    data_dir = Path(data_dir)
    info = read_info(data_dir)
    if (info.get("src_lang"), info.get("tgt_lang")) != (src_lang, tgt_lang):
        raise UserError(f"{data_dir}: prepared for {info.get('src_lang')}-{info.get('tgt_lang')}"
                        f", not {src_lang}-{tgt_lang}")
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
    lengths = read_lengths(paths[INDEX], pairs)
    return MappedText(
        MappedSide(paths["train.src.bin"], paths[INDEX], info["dtype"], 0, pairs),
        MappedSide(paths["train.tgt.bin"], paths[INDEX], info["dtype"], 2, pairs),
        lengths[:, 0], lengths[:, 1], info["empty"], info["too_long"])


def copy_tokenizer(data_dir: Path, run_dir: Path) -> None:
    for name in (JOINT_FILE, SRC_FILE, TGT_FILE):
        if (Path(data_dir) / name).is_file():
            shutil.copyfile(Path(data_dir) / name, Path(run_dir) / name)


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


def sample_pairs(src_path: Path, tgt_path: Path, limit: int, seed: int) -> ParallelText:
    """All pairs if there are at most `limit`, else a uniform sample of `limit` (reservoir)."""
    rng, sample = random.Random(seed), []
    for seen, pair in enumerate(read_pairs(src_path, tgt_path)):
        if seen < limit:
            sample.append(pair)
        elif (j := rng.randrange(seen + 1)) < limit:
            sample[j] = pair
    return ParallelText([s for s, _ in sample], [t for _, t in sample])


def prepare(data_dir: Path, out_dir: Path, src_lang: str, tgt_lang: str,
            tokenizer_config: TokenizerConfig, max_len: int, seed: int = 1,
            sample: int = TOKENIZER_SAMPLE) -> dict:
    """Tokenize `data_dir`'s training pairs into `out_dir` (see the module docstring)."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    src_path = find_split_file(data_dir, "train", src_lang)
    tgt_path = find_split_file(data_dir, "train", tgt_lang)
    val_paths = [find_split_file(data_dir, "val", lang) for lang in (src_lang, tgt_lang)]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PREPARED).unlink(missing_ok=True)  # not prepared until the end
    text = sample_pairs(src_path, tgt_path, sample, seed)
    tokenizer = Tokenizer.train(text.src, text.tgt, tokenizer_config, out_dir)
    del text
    vocab = max(tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
    dtype = np.uint16 if vocab <= 2**16 else np.uint32
    counts = {"pairs": 0, "empty": 0, "too_long": 0, "src_ids": 0, "tgt_ids": 0}
    names = ("train.src.bin", "train.tgt.bin", INDEX)
    outputs = [open(out_dir / f".{name}.tmp", "wb") for name in names]
    try:
        chunk: list[tuple[str, str]] = []
        for pair in read_pairs(src_path, tgt_path):
            chunk.append(pair)
            if len(chunk) == CHUNK:
                write_chunk(chunk, tokenizer, max_len, dtype, outputs, counts)
                chunk = []
        write_chunk(chunk, tokenizer, max_len, dtype, outputs, counts)
        for out in outputs:
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        for name, out in zip(names, outputs):
            out.close()
            (out_dir / f".{name}.tmp").unlink(missing_ok=True)
        raise
    for name, out in zip(names, outputs):
        out.close()
        os.replace(out_dir / f".{name}.tmp", out_dir / name)
    if not counts["pairs"]:
        raise UserError(f"{data_dir}: no usable training pairs (all empty or too long)")
    for path in val_paths:
        shutil.copyfile(path, out_dir / path.name)
    info = {"src_lang": src_lang, "tgt_lang": tgt_lang, "dtype": np.dtype(dtype).name,
            "max_len": max_len, "vocab_size": vocab, **counts, "source": str(data_dir.resolve())}
    atomic_write(out_dir / PREPARED, lambda tmp: Path(tmp).write_text(json.dumps(info, indent=2)))
    return info


def write_chunk(chunk, tokenizer, max_len, dtype, outputs, counts) -> None:
    """Encode one chunk of pairs; append their ids and index rows to the files."""
    text = ParallelText([s for s, _ in chunk], [t for _, t in chunk])
    encoded = encode_parallel(text, tokenizer, max_len)
    rows = np.zeros((len(encoded.src), 4), dtype=np.int64)
    for column, (side, key) in enumerate(zip((encoded.src, encoded.tgt), ("src_ids", "tgt_ids"))):
        lengths = np.fromiter(map(len, side), dtype=np.int64, count=len(side))
        rows[:, 2 * column] = counts[key] + np.cumsum(lengths) - lengths
        rows[:, 2 * column + 1] = lengths
        ids = np.fromiter((i for sentence in side for i in sentence), dtype=dtype,
                          count=int(lengths.sum()))
        outputs[column].write(ids.tobytes())
        counts[key] += int(lengths.sum())
    outputs[2].write(rows.tobytes())
    counts["pairs"] += len(encoded.src)
    counts["empty"] += encoded.empty
    counts["too_long"] += encoded.too_long
