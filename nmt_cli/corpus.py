"""The corpus a training run reads: one place that knows plain text from prepared corpora.

A plain corpus folder holds SPLIT.LANG[.gz] text: a new run trains its tokenizer on the
training text and encodes it in memory. A folder made by `nmt data prepare` holds a tokenizer
and the training pairs as id files (prepared.py), read a batch at a time. Either way the
validation set is read as text, since validation scores detokenized translations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import prepared
from .config import Config
from .data import EncodedText, ParallelText, corpus_dir, encode_parallel, load_split
from .distributed import World
from .errors import UserError
from .tokenizer import Tokenizer


@dataclass
class TrainingCorpus:
    tokenizer: Tokenizer
    train: EncodedText | prepared.PreparedText  # token ids of the kept training pairs
    val_text: ParallelText
    val: EncodedText

    def target_lengths(self) -> np.ndarray:
        return np.asarray(self.train.lengths()[1])

    def close(self) -> None:
        if isinstance(self.train, prepared.PreparedText):
            self.train.close()


def load_training_corpus(config: Config, run_dir: Path, world: World, new_run: bool,
                         report: Callable[[str], None]) -> TrainingCorpus:
    """Read the corpus of `config.data`. A new run's tokenizer is trained (or, for a prepared
    corpus, copied) into `run_dir` by rank 0; every rank then loads it from there."""
    data = config.data
    folder = corpus_dir(data.data_dir)
    is_prepared = prepared.is_prepared(folder)
    val_text = load_split(folder, "val", data.src_lang, data.tgt_lang)
    train_text = None if is_prepared else read_training_text(folder, config)
    if new_run and world.is_main:  # the other ranks load what rank 0 made
        if is_prepared:
            prepared.copy_tokenizer(folder, run_dir)
        else:
            Tokenizer.train(train_text.src, train_text.tgt, config.tokenizer, run_dir)
    world.barrier()
    if not world.is_main and not any(run_dir.glob("spm*.model")):
        raise UserError(f"rank {world.rank}: {run_dir} holds no tokenizer here; training on "
                        "several machines needs the run directory on a filesystem all share")
    tokenizer = Tokenizer.load(run_dir)
    if is_prepared:
        train = prepared.open_prepared(folder, data.src_lang, data.tgt_lang)
    else:
        train = encode_parallel(train_text, tokenizer, data.max_len)
        if not train.src:
            raise UserError(f"{folder}: no usable training pairs (all empty or too long)")
    report(f"train: {len(train.src):,} pairs kept, {train.empty:,} with an empty side "
           f"skipped, {train.too_long:,} longer than {data.max_len} tokens dropped"
           + (" (prepared)" if is_prepared else ""))
    val = encode_parallel(val_text, tokenizer, config.model.max_positions)
    return TrainingCorpus(tokenizer, train, val_text, val)


def read_training_text(folder: Path, config: Config) -> ParallelText:
    text = load_split(folder, "train", config.data.src_lang, config.data.tgt_lang)
    if not any(s.strip() and t.strip() for s, t in zip(text.src, text.tgt)):
        raise UserError(f"{folder}: no usable training pairs (every pair has an empty side)")
    return text
