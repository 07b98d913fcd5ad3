"""The corpus a training run reads: one place that knows plain text from prepared corpora.

A plain corpus folder holds SPLIT.LANG[.gz] text: a new run trains its tokenizer on the
training text (a fine-tuning run takes its parent's) and encodes it in memory. A folder made
by `nmt data prepare` holds a tokenizer and the training pairs as id files (prepared.py), read
a batch at a time. Either way the validation set is read as text, since validation scores
detokenized translations.

Under subword regularization (tokenizer.sampling_alpha) each epoch reads the plain training text
segmented anew, a draw of its own that the seed and the epoch fix (so a resumed run reads the
same pieces).

A run records the pairs it began with (corpus_record, in its config.json): their number and a
SHA-256 of them, as text or as prepared ids. Resumed, it checks that it reads the same ones:
other training pairs would give it other batches, and other validation pairs another early
stop and schedule, so it would not go on as it began.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import finetune, prepared
from .config import Config
from .data import (
    EncodedText,
    ParallelText,
    corpus_dir,
    encode_parallel,
    fits,
    kept_report,
    load_split,
    read_parallel,
    split_pair,
    uneven,
)
from .distributed import World
from .errors import UserError
from .guided_alignment import (
    WordAlignments,
    alignment_files,
    kept_alignments,
    read_alignments,
    tokenizer_starts,
)
from .languages import language_tags, rows_by_language, target_languages
from .tokenizer import Tokenizer, copy_tokenizer, tokenizer_files


@dataclass
class TrainingCorpus:
    tokenizer: Tokenizer
    train: EncodedText | prepared.PreparedText  # token ids of the kept training pairs
    val_text: ParallelText
    val: EncodedText
    # the run's settings as the corpus has them: a prepared corpus's tokenizer and filters
    config: Config
    text: ParallelText | None = None  # under subword sampling: the kept pairs as text,
    best: EncodedText | None = None  # and their best segmentations
    tgt_lengths: np.ndarray | None = None
    record: dict[str, dict[str, Any]] | None = None  # corpus_record

    @functools.cached_property
    def val_rows(self) -> dict[str, list[int]]:
        """The validation rows of each target language, found once."""
        return rows_by_language(self.val_text.parts, self.config.data.tgt_lang)

    def target_lengths(self) -> np.ndarray:
        """Of the pairs as the epoch reads them: read once an epoch, not per step."""
        if self.tgt_lengths is None:
            self.tgt_lengths = np.asarray(self.train.lengths()[1])
        return self.tgt_lengths

    def for_epoch(self, seed: int) -> EncodedText | prepared.PreparedText:
        """The training pairs as the epoch of `seed` reads them: under subword sampling, drawn
        anew (a drawn pair over data.max_len tokens, or over data.max_len_ratio, keeps its
        best segmentation)."""
        if self.text is None or self.best is None:
            return self.train
        data, tokenizer = self.config.data, self.config.tokenizer
        src, tgt = self.tokenizer.sample(self.text.src, self.text.tgt, tokenizer.sampling_alpha,
                                         tokenizer.sampling_nbest, seed)
        for i, (s, t) in enumerate(zip(src, tgt)):
            if not fits(s, t, data.max_len) or uneven(s, t, data.max_len_ratio,
                                                      self.tokenizer.tag_ids):
                src[i], tgt[i] = self.best.src[i], self.best.tgt[i]
        self.train = EncodedText(src, tgt, kept=self.best.kept, alignments=self.best.alignments)
        self.tgt_lengths = None
        return self.train

    def close(self) -> None:
        if isinstance(self.train, prepared.PreparedText):
            self.train.close()


def load_training_corpus(config: Config, run_dir: Path, world: World, new_run: bool,
                         report: Callable[[str], None], parent: Path | None = None,
                         recorded: dict[str, dict[str, Any]] | None = None) -> TrainingCorpus:
    """Read the corpus of `config.data`. A new run's tokenizer is trained into `run_dir` by
    rank 0, or copied there: from a prepared corpus, or from the `parent` run it fine-tunes
    (finetune.py). Every rank then loads it from there. A resumed run's corpus must hold the
    pairs `recorded` when it began (none recorded: not checked)."""
    data = config.data
    folder = corpus_dir(data.data_dir)
    if not str(data.data_dir) and new_run:  # an empty $CORPUS in --set data.data_dir=$CORPUS
        report(f"data.data_dir is empty (no --data): training on the sample corpus that comes "
               f"with nmt ({folder})")
    prepared.check_whole(folder)
    is_prepared = prepared.is_prepared(folder)
    if is_prepared and config.tokenizer.sampling_alpha:
        raise UserError(f"tokenizer.sampling_alpha: {folder} holds token ids (nmt data prepare);"
                        " subword sampling segments text, so it needs the plain-text corpus")
    if is_prepared:  # before its files are looked for
        info = prepared.check_pair(folder, data.src_lang, data.tgt_lang)
    if parent is not None:
        finetune.check_parent_languages(parent, data.tgt_lang)
    val_text = load_split(folder, "val", data.src_lang, data.tgt_lang)
    train_text = None if is_prepared else read_training_text(folder, config)
    # read before the tokenizer trains: a bad file stops the run at once
    links = (read_alignments(alignment_files(data.alignments), train_text)
             if config.guided() and not is_prepared else None)
    if is_prepared and new_run:  # a resumed run's config.json says it already
        config, changed = prepared.with_its_settings(folder, config)
        if changed:
            report(f"{folder} was prepared with {', '.join(changed)}; the run takes its "
                   "tokenizer and pairs, and those settings")
    elif is_prepared:
        prepared.check_filters(folder, config)
        if tokenizer_files(folder) != tokenizer_files(run_dir):  # its ids name other pieces
            raise UserError(f"{folder}: prepared again with another tokenizer than this run's: "
                            f"prepare it as before (nmt data prepare --tokenizer {run_dir}), "
                            "or start a new run")
    record = corpus_record(info if is_prepared else train_text, val_text)
    check_ranks_read_the_same(world, record, folder)
    if not new_run:
        check_same_pairs(recorded or {}, record, folder, run_dir)
        record |= {split: then for split, then in (recorded or {}).items()
                   if split.startswith("test")}  # the test split as the run began
    else:
        record |= test_records(folder, data.src_lang, data.tgt_lang)
    if new_run and world.is_main:  # the other ranks load what rank 0 made
        if is_prepared or parent is not None:
            copy_tokenizer(folder if is_prepared else parent, run_dir)
        else:
            made = Tokenizer.train(train_text.src, train_text.tgt, config.tokenizer, run_dir,
                                   language_tags(data.tgt_lang))
            if (pieces := max(made.src_vocab_size, made.tgt_vocab_size)) < \
                    config.tokenizer.vocab_size:  # SentencePiece stops where the text does
                report(f"tokenizer: {pieces:,} pieces, fewer than tokenizer.vocab_size "
                       f"{config.tokenizer.vocab_size:,}: all that this corpus gives")
    world.barrier()
    if not world.is_main and not any(run_dir.glob("spm*.model")):
        raise UserError(f"rank {world.rank}: {run_dir} holds no tokenizer here; {SHARED}")
    tokenizer = Tokenizer.load(run_dir)
    digests = world.everyones(hashlib.sha256(b"".join(tokenizer_files(run_dir).values()))
                              .hexdigest())
    if others := [str(rank) for rank, digest in enumerate(digests) if digest != digests[0]]:
        raise UserError(f"{run_dir}: rank {', '.join(others)} reads another tokenizer there "
                        f"than rank 0; {SHARED}")
    if is_prepared:
        train = prepared.open_prepared(folder, data.src_lang, data.tgt_lang,
                                       (tokenizer.src_vocab_size, tokenizer.tgt_vocab_size))
        max_len, max_ratio = train.max_len, train.max_ratio
    else:
        max_len, max_ratio = data.max_len, data.max_len_ratio
        train = encode_parallel(train_text, tokenizer, max_len, max_ratio)
        if not train.src:
            raise UserError(f"{folder}: no usable training pairs (all empty, too long or, "
                            "with data.max_len_ratio, uneven)")
    report("train: " + kept_report(len(train.src), train.empty, train.too_long, max_len,
                                   train.uneven, max_ratio)
           + (" (prepared)" if is_prepared else ""))
    if links is not None:
        train.alignments, differ = kept_alignments(links, train_text, train, tokenizer)
    elif is_prepared and config.guided():  # its files hold the links
        if train.links is None:
            raise UserError(f"data.alignments: {folder} was prepared without word alignments; "
                            "prepare it again with --alignments")
        train.alignments = WordAlignments(train.links, *tokenizer_starts(tokenizer))
        differ = train.unlinked
    if train.alignments is not None:
        linked = (train.links.linked if is_prepared
                  else sum(len(links) > 0 for links in train.alignments.links))
        blank = len(train.src) - linked - differ  # their lines name no link
        report(f"data.alignments: word links for {linked:,} of the kept pairs"
               + (f"; {differ:,} whose words SentencePiece counts otherwise than whitespace "
                  "does train without" if differ else "")
               + (f"; {blank:,} have a blank line: no links" if blank else "")
               + (" (prepared)" if is_prepared else ""))
    val = encode_parallel(val_text, tokenizer, config.model.max_positions)
    if not val.src:
        raise UserError(f"val: none of its {len(val_text.src):,} pairs can be scored ("
                        f"{val.empty:,} have a blank side, {val.too_long:,} are longer than "
                        f"model.max_positions): the validation loss and scores need pairs of "
                        "sentences")
    if val.empty:
        report(f"val: {val.empty:,} of {len(val_text.src):,} pairs have a blank side: the "
               "validation loss leaves them out, and BLEU and chrF score their translations")
    if val.too_long:
        report(f"val: {val.too_long:,} of {len(val_text.src):,} pairs are longer than "
               f"model.max_positions ({config.model.max_positions:,} tokens): the validation "
               "loss leaves them out, and BLEU and chrF score their translations of the "
               "sources cut to that length")
    if not config.tokenizer.sampling_alpha:
        return TrainingCorpus(tokenizer, train, val_text, val, config, record=record)
    kept = ParallelText([train_text.src[i] for i in train.kept],
                        [train_text.tgt[i] for i in train.kept])
    return TrainingCorpus(tokenizer, train, val_text, val, config, kept, train, record=record)


SHARED = "training on several machines needs the run directory on a filesystem all share"


def corpus_record(train: ParallelText | dict, val: ParallelText) -> dict[str, dict[str, Any]]:
    """What a run records of its training pairs, read as text or prepared (`train`: the
    corpus's prepared.json), and of its validation pairs."""
    if isinstance(train, ParallelText):
        return {"train": text_record(train), "val": text_record(val)}
    made = {key: train[key] for key in ("pairs", "src_ids", "tgt_ids", "sha256") if key in train}
    return {"train": {"kind": "prepared", **made}, "val": text_record(val)}  # sha256: of its ids


def text_record(text: ParallelText, lines: int = 10_000) -> dict[str, Any]:
    """The number of pairs and the SHA-256 of their lines, a source line then its target line,
    each ended by a newline (which no line holds)."""
    digest = hashlib.sha256()
    for start in range(0, len(text.src), lines):
        pairs = zip(text.src[start : start + lines], text.tgt[start : start + lines])
        digest.update("".join(f"{line}\n" for line in itertools.chain.from_iterable(pairs))
                      .encode("utf-8", "surrogatepass"))
    return {"kind": "text", "pairs": len(text.src), "sha256": digest.hexdigest()}


def test_records(folder: Path, src_lang: str, tgt_lang: str) -> dict[str, dict[str, Any]]:
    """The record of the test split into each target language ("test.de": its file and
    text_record), for `nmt eval` to tell whether it scores the pairs the run began beside;
    none for a corpus without one."""
    records = {}
    for language in target_languages(tgt_lang):
        try:
            src, tgt = split_pair(folder, "test", src_lang, language)
            records[f"test.{language}"] = {"file": tgt.name,
                                           **text_record(read_parallel(src, tgt))}
        except UserError:  # no test split, or an unreadable one: eval will say so
            continue
    return records


def check_same_pairs(recorded: dict[str, dict[str, Any]], record: dict[str, dict[str, Any]],
                     folder: Path, run_dir: Path) -> None:
    """The pairs a resumed run reads are those it `recorded` when it began (what both records
    hold is compared: a corpus prepared before prepared.json held a digest has only counts).
    The test split is not compared: training never reads it."""
    for split, then in recorded.items():
        if split.startswith("test"):
            continue
        if what := difference(then, record.get(split, {}), ("then", "now")):
            raise UserError(f"{folder}: its {split} pairs are not those this run began with "
                            f"({what}): resume it on those, or train on these from its "
                            f"weights (--finetune {run_dir})")


def check_ranks_read_the_same(world: World, record: dict[str, dict[str, Any]], folder: Path
                              ) -> None:
    """Every rank reads the training and validation pairs that rank 0 reads. On several
    machines each reads its own copy of the corpus: with other pairs, its epochs would hold
    other batches, and the ranks would wait on each other at different steps."""
    records = world.everyones({split: r for split, r in record.items()
                               if not split.startswith("test")})
    for rank, theirs in enumerate(records[1:], 1):
        for split, ours in records[0].items():
            if what := difference(ours, theirs.get(split, {}), ("at rank 0", f"at rank {rank}")):
                raise UserError(f"{folder}: rank {rank} reads other {split} pairs than rank 0 "
                                f"({what}): every machine must hold the same corpus")


def difference(first: dict[str, Any], second: dict[str, Any], where: tuple[str, str]
               ) -> str | None:
    """How two records of a split differ, in words (None when they agree where both say)."""
    differ = {key for key in first.keys() & second.keys() if first[key] != second[key]}
    if "kind" in differ:
        return f"{first['kind']} {where[0]}, {second['kind']} {where[1]}"
    if "pairs" in differ:
        return f"{first['pairs']:,} pairs {where[0]}, {second['pairs']:,} {where[1]}"
    return "as many, but others" if differ else None


def read_training_text(folder: Path, config: Config) -> ParallelText:
    text = load_split(folder, "train", config.data.src_lang, config.data.tgt_lang)
    if not any(s.strip() and t.strip() for s, t in zip(text.src, text.tgt)):
        raise UserError(f"{folder}: no usable training pairs (every pair has an empty side)")
    return text
