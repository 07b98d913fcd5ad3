"""Parallel text: finding, reading and checking corpus files; token-count batches.

A corpus directory holds `SPLIT.LANG` or `SPLIT.LANG.gz` files. Reading checks what users
get wrong (missing or empty files, mismatched line counts, bad UTF-8) and names the file and
line. `Batch` is the one place where teacher forcing shifts the target: the decoder reads
`<sos> y1 .. yn` and learns to predict `y1 .. yn <eos>`.
"""

from __future__ import annotations

import gzip
import itertools
import os
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from .errors import UserError
from .languages import tag_line, tagged_languages
from .special_tokens import EOS_ID, PAD_ID, SOS_ID
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .guided_alignment import WordAlignments

SPLITS = {"train": ("train",), "val": ("val", "valid", "dev"), "test": ("test",)}


def sample_corpus() -> Path:
    """The small English-German sample corpus that ships inside the package."""
    return Path(str(resources.files("nmt_cli") / "sample"))


def corpus_dir(data_dir: str | Path) -> Path:
    """The folder a `data.data_dir` setting names; empty means the sample corpus."""
    return Path(data_dir) if str(data_dir) else sample_corpus()


def split_pair(data_dir: Path, split: str, src_lang: str, tgt_lang: str) -> tuple[Path, Path]:
    """The source and target files of `split`, of one name: val.en and val.de (either may be
    gzipped), or test_2017.en and test_2017.de, never one test set's sources beside another's
    references. Named test sets (test_2016_flickr, test_2017_mscoco) are taken in order of
    name, after a plain `test`; the first held in both languages is the pair."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise UserError(f"corpus folder {data_dir}: "
                        f"{'a file, not a folder' if data_dir.exists() else 'no such directory'}")
    languages = (src_lang, tgt_lang)
    names = split_names(data_dir, split, languages)
    found = []
    for name in names:
        found.append([file_named(data_dir, name, lang) for lang in languages])
        if None not in found[-1]:
            return found[-1][0], found[-1][1]
    for name in names:  # a link to nothing or a folder, where a file of the split should be
        for lang in languages:
            for path in candidates(data_dir, name, lang):
                if path.is_symlink() and not path.exists():
                    raise UserError(f"{path}: a link to {os.readlink(path)}, which is not a "
                                    "file")
                if path.is_dir():
                    raise UserError(f"{path}: a folder, not a file")
    for side, lang in enumerate(languages):
        if not any(files[side] for files in found):
            looked = " or ".join(f"{n}.{lang}[.gz]" for n in SPLITS[split])
            raise UserError(f"{data_dir}: no {split} file for language {lang!r} "
                            f"(looked for {looked})")
    alone = ", ".join(path.name for files in found for path in files if path)
    raise UserError(f"{data_dir}: no {split} file in {src_lang!r} has one of the same name in "
                    f"{tgt_lang!r} ({alone}); name a pair alike, as {names[0]}.{src_lang} and "
                    f"{names[0]}.{tgt_lang}")


def split_names(data_dir: Path, split: str, languages: Iterable[str]) -> list[str]:
    """The names the files of `split` may have in `data_dir`, in the order they are looked
    for: SPLITS's, then, for the test split, the named test sets there in any of `languages`
    (test_2016_flickr, test_2017_mscoco), in order of name."""
    names = list(SPLITS[split])
    if split == "test":
        names += sorted({path.name.removesuffix(".gz").removesuffix(f".{lang}")
                         for lang in languages for end in ("", ".gz")
                         for path in Path(data_dir).glob(f"test_*.{lang}{end}")})
    return names


def candidates(data_dir: Path, name: str, lang: str) -> tuple[Path, Path]:
    """NAME.LANG and NAME.LANG.gz in `data_dir`, in the order they are looked for."""
    return Path(data_dir) / f"{name}.{lang}", Path(data_dir) / f"{name}.{lang}.gz"


def file_named(data_dir: Path, name: str, lang: str) -> Path | None:
    """NAME.LANG, else NAME.LANG.gz, in `data_dir`; None when neither is there."""
    return next((path for path in candidates(data_dir, name, lang) if path.is_file()), None)


def iter_lines(path: Path, empty_ok: bool = False) -> Iterator[str]:
    """The lines of a UTF-8 text file (optionally gzip), one at a time, with clear errors:
    a missing, unreadable or (unless `empty_ok`) empty file, or bad UTF-8 (named by file and
    line). A pipe reads as a file does (`-i <(zcat news.en.gz)`)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: file not found")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a file")
    opener = gzip.open if path.suffix == ".gz" else open
    number = 0
    try:
        with opener(path, "rb") as f:
            for text in decode_lines(f, str(path)):
                number += 1
                yield text
    except (OSError, EOFError, zlib.error) as e:
        raise UserError(f"{path}: cannot read ({e})") from None
    if number == 0 and not empty_ok:
        raise UserError(f"{path}: file is empty")


def decode_lines(lines: Iterable[bytes], name: str) -> Iterator[str]:
    """Lines of bytes (a file, stdin) as text: UTF-8, without line ends or a leading byte-order
    mark; bad UTF-8 is an error named by `name` and line, and so are lines ended by a carriage
    return alone (classic Mac OS), which would read as one line."""
    for number, line in enumerate(lines, start=1):
        if number == 1 and not line.endswith(b"\n") and b"\r" in line.rstrip(b"\r"):
            raise UserError(f"{name}: holds carriage returns (CR) and no line feed, as files "
                            "whose lines end in CR alone (classic Mac OS) do; convert them: "
                            "tr '\\r' '\\n'")
        try:
            text = line.removesuffix(b"\n").decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as e:
            raise UserError(f"{name}:{number}: invalid UTF-8 at byte {e.start}") from None
        yield text.removeprefix("\ufeff") if number == 1 else text


def check_utf8(text: str, name: str) -> str:
    """Text from the command line, whose undecodable bytes Python keeps as lone surrogates."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        at = len(text[:e.start].encode("utf-8"))
        raise UserError(f"{name}: invalid UTF-8 at byte {at}") from None
    return text


def read_lines(path: Path, empty_ok: bool = False) -> list[str]:
    """All lines of a text file (see iter_lines)."""
    return list(iter_lines(path, empty_ok))


@dataclass
class ParallelText:
    src: list[str]
    tgt: list[str]
    # with several target languages (load_split): how many pairs each has, in turn
    parts: list[int] = field(default_factory=list)


def read_parallel(src_path: Path, tgt_path: Path) -> ParallelText:
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise UserError(f"line counts differ: {src_path} has {len(src)} lines, "
                        f"{tgt_path} has {len(tgt)}")
    return ParallelText(src, tgt)


def load_split(data_dir: Path, split: str, src_lang: str, tgt_lang: str) -> ParallelText:
    """The pairs of SPLIT.SRC and SPLIT.TGT; with several target languages (data.tgt_lang
    "de,fr"), those of each in turn, every source opened by its language's tag."""
    text = ParallelText([], [])
    for language, tag in tagged_languages(tgt_lang):
        pairs = read_parallel(*split_pair(data_dir, split, src_lang, language))
        text.src += [tag_line(line, tag) for line in pairs.src]
        text.tgt += pairs.tgt
        text.parts.append(len(pairs.src))
    return text


@dataclass
class EncodedText:
    """Token ids of kept sentence pairs (no special tokens yet) and what was dropped."""

    src: list[list[int]]
    tgt: list[list[int]]
    empty: int = 0
    too_long: int = 0
    uneven: int = 0  # pairs whose sides differ too much in length (data.max_len_ratio)
    kept: list[int] = field(default_factory=list)  # the line of each kept pair
    alignments: WordAlignments | None = None  # word links of the kept pairs, if given

    def lengths(self) -> tuple[list[int], list[int]]:
        return [len(s) for s in self.src], [len(t) for t in self.tgt]


def kept_report(pairs: int, empty: int, too_long: int, max_len: int, uneven: int = 0,
                max_ratio: float = 0.0) -> str:
    """What filtering the training pairs kept and dropped, in one line."""
    return (f"{pairs:,} pairs kept, {empty:,} with an empty side skipped, {too_long:,} longer "
            f"than {max_len} tokens dropped" + (f", {uneven:,} with one side over {max_ratio:g} "
                                               "times as long as the other dropped"
                                               if max_ratio else ""))


def fits(src: list[int], tgt: list[int], max_len: int) -> bool:
    """Whether both sides of a pair, each with its <eos>, stay within `max_len` tokens."""
    return max(len(src), len(tgt)) + 1 <= max_len


def uneven(src: list[int], tgt: list[int], max_ratio: float,
           tags: frozenset[int] = frozenset()) -> bool:
    """Whether one side of a pair has more than `max_ratio` times the tokens of the other
    (data.max_len_ratio; 0: never): a sign of a misaligned pair, as in Moses' clean-corpus-n.
    A language tag opening the source (one of the ids `tags`) does not count."""
    if max_ratio <= 0:
        return False
    lengths = (len(src) - (bool(src) and src[0] in tags), len(tgt))
    return max(lengths) > max_ratio * min(lengths)


def encode_parallel(text: ParallelText, tokenizer: Tokenizer, max_len: int,
                    max_ratio: float = 0.0) -> EncodedText:
    """Tokenize, skip pairs with an empty side, and drop pairs over `max_len` tokens and
    (with `max_ratio`) pairs whose sides differ too much in length."""
    src_ids, tgt_ids = tokenizer.encode_src(text.src), tokenizer.encode_tgt(text.tgt)
    encoded = EncodedText([], [])
    for line, (s, t) in enumerate(zip(src_ids, tgt_ids)):
        if not s or not t:
            encoded.empty += 1
        elif not fits(s, t, max_len):
            encoded.too_long += 1
        elif uneven(s, t, max_ratio, tokenizer.tag_ids):
            encoded.uneven += 1
        else:
            encoded.src.append(s)
            encoded.tgt.append(t)
            encoded.kept.append(line)
    return encoded


def pad(sequences: list[list[int]], multiple: int = 1) -> torch.Tensor:
    """Right-pad id lists with <pad> into a (batch, length) tensor: the longest list's length,
    rounded up to a multiple of `multiple`."""
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    length = -(-int(lengths.max()) // multiple) * multiple
    out = np.full((len(sequences), length), PAD_ID, dtype=np.int64)
    # all the ids in one array, written where a row's real positions are: for a batch of 180
    # sentences 0.07 ms, where a tensor a row took 1.1
    out[np.arange(length) < lengths[:, None]] = np.fromiter(
        itertools.chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(out)


def source_tensor(src_ids: list[list[int]], multiple: int = 1) -> torch.Tensor:
    """Source sentences end in <eos>: (batch, src_len), src_len a multiple of `multiple`."""
    return pad([s + [EOS_ID] for s in src_ids], multiple)


@dataclass
class Batch:
    src: torch.Tensor  # (batch, src_len)
    tgt_in: torch.Tensor  # (batch, tgt_len): <sos> y1 .. yn
    tgt_out: torch.Tensor  # (batch, tgt_len): y1 .. yn <eos>
    tgt_positions: torch.Tensor  # (real target tokens,): flat indices of non-pad tgt_out
    # with word alignments (guided_alignment.py): the gold attention (batch, tgt_len, src_len)
    alignment: torch.Tensor | None = None

    @classmethod
    def from_ids(cls, src_ids: list[list[int]], tgt_ids: list[list[int]],
                 multiple: int = 1) -> Batch:
        """The teacher-forcing shift, done here and nowhere else. Source and target are padded
        to lengths that are multiples of `multiple` (`Seq2Seq.length_multiple`)."""
        tgt_out = pad([t + [EOS_ID] for t in tgt_ids], multiple)
        lengths = np.fromiter((len(t) + 1 for t in tgt_ids), dtype=np.int64, count=len(tgt_ids))
        starts = np.arange(len(tgt_ids)) * tgt_out.size(1)  # each row's first flat index
        positions = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        positions += np.arange(int(lengths.sum()))
        return cls(source_tensor(src_ids, multiple), pad([[SOS_ID] + t for t in tgt_ids], multiple),
                   tgt_out, torch.from_numpy(positions))

    @property
    def num_tgt_tokens(self) -> int:
        return len(self.tgt_positions)

    def pin_memory(self) -> Batch:
        """Page-locked copies, which a CUDA device reads while the host goes on."""
        return Batch(*(tensor.pin_memory() for tensor in self.tensors()))

    def to(self, device: torch.device) -> Batch:
        non_blocking = device.type == "cuda"
        return Batch(*(tensor.to(device, non_blocking=non_blocking) for tensor in self.tensors()))

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return (self.src, self.tgt_in, self.tgt_out, self.tgt_positions,
                *(() if self.alignment is None else (self.alignment,)))


def token_batches(src_lens, tgt_lens, batch_tokens: int,
                  generator: torch.Generator | None = None) -> list[np.ndarray]:
    """Group sentence indices into batches of at most `batch_tokens` padded tokens.

    Sentences are sorted by length (ties broken at random) so that a batch holds sentences of
    similar length and little padding; the batch order is then shuffled. The padded size of a
    batch is sentences x (longest side + 1), the +1 for <eos>/<sos>. Indices are kept in NumPy
    arrays: a few bytes a sentence, for corpora of millions of pairs.
    """
    src_lens, tgt_lens = np.asarray(src_lens), np.asarray(tgt_lens)
    n = len(src_lens)
    noise = torch.randperm(n, generator=generator).numpy() if generator else np.arange(n)
    order = np.lexsort((noise, src_lens, tgt_lens))  # by target, then source length, then noise
    batches = group_by_budget(order, src_lens, tgt_lens, batch_tokens)
    if generator is not None:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
    return batches


def group_by_budget(order, src_lens, tgt_lens, batch_tokens: int) -> list[np.ndarray]:
    """Cut `order` into consecutive batches of at most `batch_tokens` padded tokens."""
    order = np.asarray(order, dtype=np.int64)
    sizes = (np.maximum(np.asarray(src_lens), np.asarray(tgt_lens))[order] + 1).tolist()
    cuts, count, longest = [], 0, 0
    for position, size in enumerate(sizes):
        if count and (count + 1) * max(longest, size) > batch_tokens:
            cuts.append(position)
            count, longest = 0, 0
        count += 1
        longest = max(longest, size)
    return np.split(order, cuts) if len(order) else []


def make_batch(encoded: EncodedText, indices, multiple: int = 1) -> Batch:
    src, tgt = [encoded.src[i] for i in indices], [encoded.tgt[i] for i in indices]
    batch = Batch.from_ids(src, tgt, multiple)
    if encoded.alignments is not None:
        batch.alignment = encoded.alignments.targets(indices, src, tgt, batch.src.size(1),
                                                     batch.tgt_out.size(1))
    return batch


class BatchLoader:
    """The tensors of training batches, on the training device. With `prefetch` (the default
    on CUDA) the batches of the next update are built in a background thread, in page-locked
    memory, while the current update runs, and copied to the device without blocking. Lengths
    are padded to a multiple of `multiple` (`Seq2Seq.length_multiple`)."""

    def __init__(self, data: EncodedText, device: torch.device, multiple: int = 1,
                 prefetch: bool | None = None):
        self.data, self.device, self.multiple = data, device, multiple
        prefetch = device.type == "cuda" if prefetch is None else prefetch
        self.background = ThreadPoolExecutor(1, "batches") if prefetch else None
        self.ready: dict[bytes, Future] = {}

    def prefetch(self, batches: list[np.ndarray]) -> None:
        if self.background is not None:
            for indices in batches:
                self.ready[np.asarray(indices).tobytes()] = self.background.submit(
                    self.build, indices)

    def build(self, indices) -> Batch:
        batch = make_batch(self.data, indices, self.multiple)
        return batch.pin_memory() if self.device.type == "cuda" else batch

    def get(self, indices) -> Batch:
        """The batch of these sentence pairs, prefetched or built now."""
        future = self.ready.pop(np.asarray(indices).tobytes(), None)
        return (future.result() if future else self.build(indices)).to(self.device)

    def close(self) -> None:
        if self.background is not None:
            self.background.shutdown(cancel_futures=True)
        self.ready.clear()
