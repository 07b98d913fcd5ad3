"""Corpora larger than memory: training pairs tokenized once into binary files of token ids.

`nmt data prepare --data DIR --out OUT` trains the tokenizer (or, with `--tokenizer RUN`, takes
that run's, to fine-tune it), then encodes DIR's training pairs a chunk at a time into OUT:

    spm.model (or spm.src.model, spm.tgt.model)   the tokenizer
    train.src.bin, train.tgt.bin    the ids of every kept sentence, back to back (NumPy uint16,
                                    or uint32 for vocabularies over 65,535)
    train.index.bin                 (pairs, 4) int64: source offset, source length, target
                                    offset, target length (offsets count ids, not bytes)
    val.SRC, val.TGT                the validation text, copied as it was
    test.SRC, test.TGT              the test text, likewise, when DIR has one in every
                                    language (what `nmt eval` scores by default)
    prepared.json                   languages, counts and settings (the tokenizer's too),
                                    and the SHA-256 of the files' contents, which a run
                                    records to resume on the same pairs; written last

They are made in the folder OUT/.preparing (.OUT.preparing beside a new OUT) and take their
place in OUT once all are written: a prepare that fails (or is stopped) leaves a corpus
prepared in OUT before as it was.

With `--alignments FILE` (a file for each target language: guided_alignment.py), the word
links of each kept pair are checked and written beside them:

    train.align.bin                 every kept pair's links, back to back, each a source and
                                    a target word position (uint16, or uint32 for a
                                    data.max_len over 65,536)
    train.align.index.bin           (pairs, 2) int64: offset and count of each pair's
                                    positions (two a link)

`nmt train --data OUT` then reads each batch's sentences from the files as it needs them, with
positioned reads (os.pread) rather than a memory map, so that no page of the files counts as
the process's memory. In memory are only the lengths (8 bytes a pair, for batching), so
resident memory hardly grows with the corpus; a batch's links are read with its ids. The
files are plain arrays, so other tools can map them: np.memmap(OUT / "train.index.bin",
np.int64, "r").reshape(-1, 4) reads the index.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .config import (
    TOKENIZER_SAMPLE,
    Config,
    TokenizerConfig,
    apply_overrides,
    check_alignment_files,
)
from .data import (
    SPLITS,
    EncodedText,
    ParallelText,
    encode_parallel,
    iter_lines,
    load_split,
    split_pair,
)
from .errors import UserError, in_file
from .files import atomic_write
from .guided_alignment import (
    WordAlignments,
    checked_links,
    counted_alike,
    counts_differ,
    tokenizer_starts,
)
from .languages import (
    check_languages,
    check_tags,
    language_tags,
    tag_line,
    tagged_languages,
    target_languages,
)
from .tokenizer import JOINT_FILE, SRC_FILE, TGT_FILE, Tokenizer, copy_tokenizer

PREPARED = "prepared.json"
INDEX = "train.index.bin"
ROW = 4 * 8  # bytes of one index row
LINKS, LINK_INDEX = "train.align.bin", "train.align.index.bin"  # with --alignments
LINK_ROW = 2 * 8
CHUNK = 100_000  # sentence pairs encoded at a time
# the tokenizer settings that made the prepared corpus's tokenizer, which prepared.json records
# (subword sampling is the training run's own, and needs the text)
TOKENIZER_MADE_WITH = ("vocab_size", "model_type", "joint", "character_coverage", "byte_fallback")


def is_prepared(data_dir: Path) -> bool:
    return (Path(data_dir) / PREPARED).is_file()


class PreparedSide:
    """One side of the prepared pairs: `side[i]` reads sentence i's ids from the id file."""

    def __init__(self, ids: Path, index: Path, dtype: str, column: int, pairs: int,
                 vocab: int | None = None, row: int = ROW):
        self.dtype, self.column, self.pairs, self.vocab = np.dtype(dtype), column, pairs, vocab
        self.row = row  # bytes of one index row
        self.path = ids
        self.ids: BinaryIO = open(ids, "rb", buffering=0)
        self.index: BinaryIO = open(index, "rb", buffering=0)

    def __len__(self) -> int:
        return self.pairs

    def __getitem__(self, i) -> list[int]:
        row = np.frombuffer(os.pread(self.index.fileno(), self.row, int(i) * self.row),
                            dtype=np.int64)
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


class PreparedLinks:
    """The word links of the prepared pairs: `links[i]` reads pair i's (links, 2) source and
    target word positions from train.align.bin; `linked` pairs have any."""

    def __init__(self, data_dir: Path, dtype: str, pairs: int, linked: int):
        self.side = PreparedSide(data_dir / LINKS, data_dir / LINK_INDEX, dtype, 0, pairs,
                                 row=LINK_ROW)
        self.linked = linked

    def __len__(self) -> int:
        return self.side.pairs

    def __getitem__(self, i) -> np.ndarray:
        return np.asarray(self.side[i], dtype=np.int64).reshape(-1, 2)

    def close(self) -> None:
        self.side.close()


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
    links: PreparedLinks | None = None  # of a corpus prepared with --alignments
    unlinked: int = 0  # kept pairs that go without links (guided_alignment.counted_alike)
    alignments: WordAlignments | None = None  # the links, when training teaches them

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        return self.src_lengths, self.tgt_lengths

    def close(self) -> None:
        """Close the id files (garbage collection closes them too)."""
        self.src.close()
        self.tgt.close()
        if self.links is not None:
            self.links.close()


@dataclass
class PairCounts:
    """What preparing a corpus wrote and skipped; saved in prepared.json."""

    pairs: int = 0
    empty: int = 0  # pairs with an empty side, skipped
    too_long: int = 0  # pairs over max_len tokens on either side, dropped
    uneven: int = 0  # pairs over max_len_ratio, dropped
    src_ids: int = 0  # ids written to train.src.bin
    tgt_ids: int = 0
    links: int = 0  # with --alignments: links written to train.align.bin (two positions each)
    unlinked: int = 0  # kept pairs whose words SentencePiece counts otherwise: none written


def read_info(data_dir: Path) -> dict:
    try:
        info = json.loads((Path(data_dir) / PREPARED).read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{Path(data_dir) / PREPARED}: cannot read ({e})") from None
    if not isinstance(info, dict):
        raise UserError(f"{Path(data_dir) / PREPARED}: expected an object")
    return info


def read_lengths(index: Path, pairs: int, files: dict[str, int], rows: int = 1 << 18
                 ) -> np.ndarray:
    """(pairs, sides) int32 lengths of each side (source and target; the links'), read a
    slice of the index (an offset and a length a side) at a time, each checked to lie within
    its file (`files`: the name of each side's, and the ids, or positions, it holds)."""
    width = 2 * len(files)
    lengths = np.empty((pairs, len(files)), dtype=np.int32)
    with open(index, "rb") as f:
        for start in range(0, pairs, rows):
            part = np.fromfile(f, dtype=np.int64, count=width * min(rows, pairs - start))
            part = part.reshape(-1, width)
            for column, (name, total) in zip(range(0, width, 2), files.items()):
                offsets, counts = part[:, column], part[:, column + 1]
                bad = (offsets < 0) | (counts < 0) | (offsets + counts > total)
                if bad.any():
                    row = start + int(np.argmax(bad))
                    raise UserError(f"{index}: pair {row + 1} points outside {name}; prepare "
                                    "the corpus again")
            lengths[start : start + len(part)] = part[:, 1::2]
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
    check_counts(data_dir / PREPARED, info)
    paths = {name: data_dir / name for name in (INDEX, "train.src.bin", "train.tgt.bin")}
    pairs, itemsize = info["pairs"], np.dtype(info["dtype"]).itemsize
    try:
        sizes = {name: path.stat().st_size for name, path in paths.items()}
    except OSError as e:
        raise UserError(f"{data_dir}: damaged prepared corpus ({e}); prepare it again") from None
    expected = {INDEX: pairs * ROW, "train.src.bin": info["src_ids"] * itemsize,
                "train.tgt.bin": info["tgt_ids"] * itemsize}
    for name, size in sizes.items():
        if size != expected[name]:
            raise UserError(f"{paths[name]}: {size:,} bytes where {expected[name]:,} were "
                            "written; prepare the corpus again")
    lengths = read_lengths(paths[INDEX], pairs, {"train.src.bin": info["src_ids"],
                                                 "train.tgt.bin": info["tgt_ids"]})
    return PreparedText(
        PreparedSide(paths["train.src.bin"], paths[INDEX], info["dtype"], 0, pairs, vocab[0]),
        PreparedSide(paths["train.tgt.bin"], paths[INDEX], info["dtype"], 2, pairs, vocab[1]),
        lengths[:, 0], lengths[:, 1], info["empty"], info["too_long"], info["max_len"],
        info.get("uneven", 0), info.get("max_len_ratio", 0.0),  # not in older corpora
        open_links(data_dir, info), info.get("unlinked", 0))


ID_TYPES = ("uint16", "uint32")  # what prepare writes ids and links as


def check_counts(path: Path, info: dict) -> None:
    """prepared.json's counts must be whole numbers, and its id types those prepare writes:
    an edited or damaged one is named, not read (nor a negative id with it)."""
    linked = bool(info.get("alignments"))
    for key in ("pairs", "src_ids", "tgt_ids", "empty", "too_long", "max_len",
                *(key for key in ("uneven", "unlinked") if key in info), *["links"] * linked):
        if type(info.get(key)) is not int or info[key] < 0:
            raise UserError(f"{path}: {key} is {info.get(key)!r}, not a count; prepare the "
                            "corpus again")
    for key in ("dtype", *["link_dtype"] * linked):
        if info.get(key) not in ID_TYPES:
            raise UserError(f"{path}: {key} is {info.get(key)!r}, not one of "
                            f"{', '.join(ID_TYPES)}; prepare the corpus again")
    ratio = info.get("max_len_ratio", 0.0)
    if type(ratio) not in (int, float) or not 0 <= ratio < math.inf:
        raise UserError(f"{path}: max_len_ratio is {ratio!r}, not a ratio; prepare the corpus "
                        "again")


def open_links(data_dir: Path, info: dict) -> PreparedLinks | None:
    """The word links of a corpus prepared with --alignments, checked against prepared.json
    (its index row by row); None for one prepared without."""
    if not info.get("alignments"):
        return None
    paths = data_dir / LINKS, data_dir / LINK_INDEX
    pairs, positions = info["pairs"], 2 * info["links"]  # checked by check_counts
    dtype = np.dtype(info["link_dtype"])
    expected = positions * dtype.itemsize, pairs * LINK_ROW
    try:
        sizes = [path.stat().st_size for path in paths]
    except OSError as e:
        raise UserError(f"{data_dir}: damaged word links ({e}); prepare it again") from None
    for path, size, wanted in zip(paths, sizes, expected):
        if size != wanted:
            raise UserError(f"{path}: {size:,} bytes where {wanted:,} were written; prepare "
                            "the corpus again")
    lengths = read_lengths(paths[1], pairs, {LINKS: positions})
    return PreparedLinks(data_dir, dtype.name, pairs, int(np.count_nonzero(lengths)))


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
    if info.get("alignments"):  # the files its links were read from
        recorded["data.alignments"] = ",".join(info["alignments"])
    with in_file(Path(data_dir) / PREPARED):
        adopted = apply_overrides(config, recorded)
    if adopted.model.arch == "transformer" and adopted.data.max_len > (
            most := adopted.model.max_positions):  # a fine-tuned parent's (a GRU has no limit)
        raise UserError(f"{data_dir}: prepared with data.max_len {adopted.data.max_len}, longer "
                        f"than the model reads (model.max_positions {most}); prepare it again "
                        f"with --set data.max_len={most}")
    changed = [f"{key.removeprefix('tokenizer.')}={adopted.get(key)!r}" for key in recorded
               if adopted.get(key) != config.get(key)]
    return adopted, changed


def filter_settings(info: dict) -> dict[str, Any]:
    """The length filters a corpus was prepared with (no ratio before it was recorded)."""
    kept = {"data.max_len": info["max_len"]} if "max_len" in info else {}
    return {**kept, "data.max_len_ratio": info.get("max_len_ratio", 0.0)}


def check_filters(data_dir: Path, config: Config) -> None:
    """A resumed run needs the pairs it started with: its corpus, prepared again with another
    data.max_len_ratio, would hand it others; and the same word links (data.alignments).
    (Runs made before the filters were adopted kept their own data.max_len in config.json,
    so that one is not compared.)"""
    info = read_info(data_dir)
    ratio = filter_settings(info)["data.max_len_ratio"]
    if ratio != config.data.max_len_ratio:
        raise UserError(f"{data_dir}: prepared again with data.max_len_ratio={ratio!r}; this "
                        f"run trained with {config.data.max_len_ratio!r}: prepare it as "
                        "before, or start a new run")
    alignments = ",".join(info.get("alignments", []))
    if alignments != config.data.alignments:
        raise UserError(f"{data_dir}: prepared again with data.alignments={alignments!r}; this "
                        f"run trained with {config.data.alignments!r}: prepare it as before, "
                        "or start a new run")


def read_pairs(src_path: Path, tgt_path: Path):
    """(src, tgt) lines in step; a line-count mismatch is an error naming both files."""
    missing, count = object(), 0
    src_lines, tgt_lines = iter_lines(src_path), iter_lines(tgt_path)
    while True:
        src, tgt = next(src_lines, missing), next(tgt_lines, missing)
        if src is missing and tgt is missing:
            return
        if src is missing or tgt is missing:
            shorter, longer = (src_path, tgt_path) if src is missing else (tgt_path, src_path)
            raise UserError(f"line counts differ: {shorter} has {count:,} "
                            f"line{'s' * (count != 1)}, {longer} more")
        count += 1
        yield src, tgt


def tagged_pairs(files: list[tuple[Path, Path, str]]):
    """The pairs of each (source file, target file, language tag) in turn, every source
    opened by its tag ("": none)."""
    for src_path, tgt_path, tag in files:
        for src, tgt in read_pairs(src_path, tgt_path):
            yield tag_line(src, tag), tgt


def linked_pairs(files: list[tuple[Path, Path, str]], alignments: list[Path]):
    """The (source, target, links) of tagged_pairs, the links read from the same line of
    each language's file of alignments and checked (guided_alignment.checked_links)."""
    tagged = len(files) > 1
    for (src_path, tgt_path, tag), path in zip(files, alignments):
        lines, pairs = iter_lines(path), read_pairs(src_path, tgt_path)
        for number, (pair, line) in enumerate(itertools.zip_longest(pairs, lines), start=1):
            if pair is None or line is None:  # count the longer one's rest
                total = number + sum(1 for _ in (pairs if line is None else lines))
                raise (counts_differ(path, number - 1, total) if line is None else
                       counts_differ(path, total, number - 1))
            src = tag_line(pair[0], tag)
            yield src, pair[1], checked_links(line, src, pair[1], tagged, f"{path}:{number}")


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
            max_ratio: float = 0.0, alignments: list[Path] | None = None,
            replace: bool = False) -> dict:
    """Tokenize `data_dir`'s training pairs into `out_dir` (see the module docstring), with a
    tokenizer trained on a sample of them, or the one of the run `tokenizer_from` (made with
    `tokenizer_config`), e.g. to fine-tune that run on them; with the word links of the
    files `alignments` (one for each target language). A corpus prepared there before is
    replaced only with `replace`."""
    data_dir, out_dir = Path(data_dir), Path(out_dir)
    check_languages(tgt_lang, "--tgt-lang")
    if alignments:
        check_alignment_files(",".join(map(str, alignments)), tgt_lang)
    files = [(*split_pair(data_dir, "train", src_lang, language), tag)
             for language, tag in tagged_languages(tgt_lang)]
    val_paths = split_files(data_dir, "val", src_lang, target_languages(tgt_lang))
    load_split(data_dir, "val", src_lang, tgt_lang)  # read as training reads it: now, not then
    if out_dir.resolve() == data_dir.resolve():
        raise UserError(f"--out {out_dir}: the same folder as --data; choose another")
    put_back(out_dir)  # what a prepare killed there while its files moved left
    if is_prepared(out_dir) and not replace:
        raise UserError(f"--out {out_dir}: holds a prepared corpus already; add --force to "
                        "replace it (a run trained on it resumes on the new one only if its "
                        "tokenizer, data.max_len_ratio and pairs are the same)")
    check_out_folder(out_dir)
    if tokenizer_from is not None:  # before anything is written
        check_tags(Tokenizer.load(Path(tokenizer_from)), tgt_lang,
                   f"--tokenizer {tokenizer_from}", "prepare the corpus without --tokenizer")
    before = read_info(out_dir) if is_prepared(out_dir) else {}
    languages = {src_lang, *target_languages(tgt_lang), str(before.get("src_lang", src_lang)),
                 *str(before.get("tgt_lang", tgt_lang)).split(",")}  # either's split copies
    with staged(out_dir, languages) as stage:
        if tokenizer_from is None:
            text = sample_pairs(tagged_pairs(files), sample, seed)
            tokenizer = Tokenizer.train(text.src, text.tgt, tokenizer_config, stage,
                                        language_tags(tgt_lang))
            del text
        else:
            copy_tokenizer(tokenizer_from, stage)
            tokenizer = Tokenizer.load(stage)
        vocab = max(tokenizer.src_vocab_size, tokenizer.tgt_vocab_size)
        dtype = np.uint16 if vocab <= 2**16 else np.uint32
        # a kept pair's words, each a piece or more, number fewer than max_len
        link_dtype = (np.uint16 if max_len <= 2**16 else np.uint32) if alignments else None
        pairs = linked_pairs(files, alignments) if alignments else tagged_pairs(files)
        writer = IdFileWriter(stage, dtype, link_dtype)
        counts = write_id_files(pairs, tokenizer, max_len, max_ratio, writer)
        if not counts.pairs:
            raise UserError(f"{data_dir}: no usable training pairs (all empty, too long or, with "
                            "data.max_len_ratio, uneven)")
        for path in val_paths + files_of_test_split(data_dir, src_lang,
                                                    target_languages(tgt_lang)):
            shutil.copyfile(path, stage / path.name)
        info = {"src_lang": src_lang, "tgt_lang": tgt_lang, "dtype": np.dtype(dtype).name,
                "max_len": max_len, "max_len_ratio": max_ratio, "vocab_size": vocab,
                **asdict(counts), "sha256": writer.digest.hexdigest(),
                "source": str(data_dir.resolve()),
                "tokenizer": {key: getattr(tokenizer_config, key) for key in TOKENIZER_MADE_WITH}}
        if alignments:
            info.update(alignments=[str(Path(path).resolve()) for path in alignments],
                        link_dtype=np.dtype(link_dtype).name)
        else:
            del info["links"], info["unlinked"]
        atomic_write(stage / PREPARED,
                     lambda tmp: Path(tmp).write_text(json.dumps(info, indent=2)))
    return info


def made_files() -> tuple[str, ...]:
    """The files preparing makes beside prepared.json and the split copies: the tokenizer,
    the ids and their index, the word links."""
    return (JOINT_FILE, SRC_FILE, TGT_FILE, *IdFileWriter.NAMES, LINKS, LINK_INDEX)


def written_by_prepare(name: str, languages: set[str]) -> bool:
    """Whether `name` is a file that preparing a corpus writes: its tokenizer, ids, word
    links, prepared.json, and the copies of the validation and test files (NAME.LANG or
    NAME.LANG.gz, LANG one of `languages`)."""
    if name == PREPARED or name in made_files():
        return True
    stem, _, language = name.removesuffix(".gz").partition(".")
    return language in languages and (stem in SPLITS["val"] + SPLITS["test"]
                                      or stem.startswith("test_"))


def check_out_folder(out_dir: Path) -> None:
    """Outside a prepared corpus, preparing writes over nothing it did not write: not the
    validation and test files of a corpus as text, nor the tokenizer of a run."""
    if not out_dir.is_dir() or is_prepared(out_dir):
        return
    held = text_corpus_files(out_dir)
    if any(name.startswith("train.") for name in held):  # prepare never writes text there
        raise UserError(f"--out {out_dir}: holds a corpus as text ({', '.join(held[:4])}"
                        f"{', ...' if len(held) > 4 else ''}), whose validation and test files "
                        "preparing would replace; choose a new or empty folder")
    if made := [name for name in made_files() if (out_dir / name).exists()]:
        raise UserError(f"--out {out_dir}: holds {', '.join(made)}, which preparing would "
                        "replace, and is no prepared corpus (a run?); choose a new or empty "
                        "folder")


@contextlib.contextmanager
def staged(out_dir: Path, languages: set[str]):
    """A folder to prepare a corpus in: inside `out_dir` when there is one (on its file
    system, so that the files move in by renaming), else beside it. Should preparing fail,
    it is removed and `out_dir` stays as it was (a corpus prepared there before still trains
    and resumes). Once it is done, the files an earlier prepare wrote into `out_dir` (with
    `languages`) move aside, the new ones move in, prepared.json last, and the old ones go;
    should a move fail, the old ones come back."""
    inside = out_dir.is_dir()
    stage = out_dir / ".preparing" if inside else out_dir.parent / f".{out_dir.name}.preparing"
    shutil.rmtree(stage, ignore_errors=True)  # what a killed prepare left
    stage.mkdir(parents=True)
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if not inside:
        stage.rename(out_dir)
        return
    aside = out_dir / SET_ASIDE
    aside.mkdir()
    try:  # prepared.json out first and in last: never a prepared corpus of old and new files
        for path in sorted(out_dir.iterdir(), key=lambda path: path.name != PREPARED):
            if path.is_file() and written_by_prepare(path.name, languages):
                path.rename(aside / path.name)
        (aside / INCOMING).write_text("".join(f"{path.name}\n" for path in stage.iterdir()))
        for path in sorted(stage.iterdir(), key=lambda path: path.name == PREPARED):
            path.rename(out_dir / path.name)
    except BaseException:
        put_back(out_dir)
        shutil.rmtree(stage, ignore_errors=True)
        raise
    shutil.rmtree(stage)
    shutil.rmtree(aside)


SET_ASIDE = ".replaced"  # in a prepared corpus's folder, the old files while new ones move in
INCOMING = ".incoming"  # in SET_ASIDE, the names of the new files, once the old are all there


def check_whole(folder: Path) -> None:
    """A folder that a prepare left half-replaced (killed while its files moved: staged) is
    named as such, not read as a corpus of text with no training files."""
    if (folder / SET_ASIDE).is_dir() and not is_prepared(folder):
        raise UserError(f"{folder}: an `nmt data prepare` was stopped there while it replaced "
                        "the prepared corpus; run it again, which first puts back the corpus "
                        "that was there")


def put_back(out_dir: Path) -> None:
    """The corpus that a replacing prepare set aside (staged), back in `out_dir`, unless the
    new one moved in whole (its prepared.json is there): what a failed move, or a prepare
    killed while the files moved, left is one whole corpus again, the old or the new."""
    aside = out_dir / SET_ASIDE
    if not aside.is_dir():
        return
    if not is_prepared(out_dir):
        if (incoming := aside / INCOMING).is_file():  # every file of that name is a new one
            for name in incoming.read_text().split():
                (out_dir / name).unlink(missing_ok=True)
            incoming.unlink()
        for path in sorted(aside.iterdir(), key=lambda path: path.name == PREPARED):
            path.rename(out_dir / path.name)
    shutil.rmtree(aside)


def text_corpus_files(folder: Path) -> list[str]:
    """The names of the files in `folder` that a split would be read from as text (train.en,
    valid.de.gz, test_2016.fr, ...; not prepared ids: train.src.bin), in order."""
    stems = {name for names in SPLITS.values() for name in names}
    return sorted(path.name for path in folder.iterdir() if path.is_file() and (
        (parts := path.name.removesuffix(".gz").split("."))[0] in stems
        or parts[0].startswith("test_")) and len(parts) == 2)


def split_files(data_dir: Path, split: str, src_lang: str, tgt_langs: list[str]) -> list[Path]:
    """The files of `split`: its source file and target file into each language (split_pair),
    each once."""
    pairs = [split_pair(data_dir, split, src_lang, language) for language in tgt_langs]
    return list(dict.fromkeys(path for pair in pairs for path in pair))


def files_of_test_split(data_dir: Path, src_lang: str, tgt_langs: list[str]) -> list[Path]:
    """The test split's files (split_files); none unless it has a pair into each language."""
    try:
        return split_files(data_dir, "test", src_lang, tgt_langs)
    except UserError:
        return []


def write_id_files(pairs, tokenizer: Tokenizer, max_len: int, max_ratio: float,
                   writer: IdFileWriter) -> PairCounts:
    """Encode (src, tgt) pairs, or (src, tgt, links), a chunk at a time into the writer's
    files; all or nothing."""
    try:
        chunk: list[tuple] = []
        for pair in pairs:
            chunk.append(pair)
            if len(chunk) == CHUNK:
                writer.write(*encode_chunk(chunk, tokenizer, max_len, max_ratio))
                chunk = []
        writer.write(*encode_chunk(chunk, tokenizer, max_len, max_ratio))
    except BaseException:
        writer.discard()
        raise
    writer.commit()
    return writer.counts


def encode_chunk(chunk: list[tuple], tokenizer: Tokenizer, max_len: int, max_ratio: float
                 ) -> tuple[EncodedText, list[np.ndarray] | None, int]:
    """The ids of the pairs of `chunk` that encoding keeps; and, for pairs with links, the
    links of each kept one, and how many go without: those whose words SentencePiece counts
    otherwise than whitespace does (counted_alike)."""
    text = ParallelText([pair[0] for pair in chunk], [pair[1] for pair in chunk])
    encoded = encode_parallel(text, tokenizer, max_len, max_ratio)
    if not chunk or len(chunk[0]) == 2:
        return encoded, None, 0
    starts, tagged, links, differ = tokenizer_starts(tokenizer), bool(tokenizer.tags), [], 0
    for line, src, tgt in zip(encoded.kept, encoded.src, encoded.tgt):
        alike = counted_alike(starts, src, tgt, text.src[line], text.tgt[line], tagged)
        links.append(chunk[line][2] if alike else chunk[line][2][:0])
        differ += not alike
    return encoded, links, differ


class IdFileWriter:
    """Appends encoded pairs to the id and index files of a prepared corpus, written under
    temporary names until `commit`."""

    NAMES = ("train.src.bin", "train.tgt.bin", INDEX)

    def __init__(self, out_dir: Path, dtype: type, link_dtype: type | None = None):
        self.out_dir, self.dtype, self.counts = Path(out_dir), dtype, PairCounts()
        self.link_dtype = link_dtype  # with word links, the type of their positions
        self.names = self.NAMES + ((LINKS, LINK_INDEX) if link_dtype else ())
        self.files = [open(self.temporary(name), "wb") for name in self.names]
        self.digest = hashlib.sha256()  # of all it writes: what a run records of its pairs

    def temporary(self, name: str) -> Path:
        return self.out_dir / f".{name}.tmp"

    def put(self, file: int, data: bytes) -> None:
        self.files[file].write(data)
        self.digest.update(data)

    def write(self, encoded: EncodedText, links: list[np.ndarray] | None = None,
              unlinked: int = 0) -> None:
        """Append the ids of each side, and one index row per pair; and the `links` of each
        pair, and their index row (`unlinked`: pairs that go without)."""
        c = self.counts
        src_offsets, src_lengths, c.src_ids = self.append_ids(0, encoded.src, c.src_ids)
        tgt_offsets, tgt_lengths, c.tgt_ids = self.append_ids(1, encoded.tgt, c.tgt_ids)
        rows = np.stack([src_offsets, src_lengths, tgt_offsets, tgt_lengths], axis=1)
        self.put(2, rows.astype(np.int64).tobytes())  # (pairs, 4)
        if links:
            counts = np.fromiter(map(len, links), dtype=np.int64, count=len(links))
            offsets = 2 * (c.links + np.cumsum(counts) - counts)  # in positions, two a link
            self.put(3, np.concatenate(links).astype(self.link_dtype).tobytes())
            rows = np.stack([offsets, 2 * counts], axis=1)
            self.put(4, rows.astype(np.int64).tobytes())  # (pairs, 2)
            c.links, c.unlinked = c.links + int(counts.sum()), c.unlinked + unlinked
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
        self.put(file, ids.tobytes())
        return offsets, lengths, written + int(lengths.sum())

    def commit(self) -> None:
        """Make the files durable and give them their real names."""
        for name, out in zip(self.names, self.files):
            out.flush()
            os.fsync(out.fileno())
            out.close()
            os.replace(self.temporary(name), self.out_dir / name)

    def discard(self) -> None:
        for name, out in zip(self.names, self.files):
            out.close()
            self.temporary(name).unlink(missing_ok=True)
