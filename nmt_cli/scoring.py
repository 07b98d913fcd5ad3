"""Forced decoding: how probable a model finds a given translation of a source.

The decoder reads the given target's prefix, as in training (teacher forcing), and the
log-softmax of its output at each position gives log P(y_t | y_<t, x); their sum over the
target's pieces and <eos> is log P(y | x), the log-probability that search reports for a
translation it finds (<pad> and <sos> ruled out, as there). Low scores point at pairs the
model finds unlikely: misaligned or noisy pairs of a corpus, or the worse of two translations
of a source (reranking). `nmt score` prints them. An ensemble scores with the mean of its
models' distributions, as it decodes. The same pass can give each pair's word alignment, as
`nmt translate --alignment` gives a translation's (alignment.py): a given translation
aligned to its source.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from .alignment import Link, hypothesis_attention, word_alignments
from .checkpoint import Run
from .data import Batch
from .devices import mixed_precision
from .ensemble import Ensemble, mean_distribution
from .guided_alignment import ALIGNMENT_LAYER
from .languages import checked_sources, chosen_tag, target_languages
from .loss import rows_per_slice
from .prepared import read_pairs
from .search import forbid_special_tokens
from .special_tokens import EOS_ID
from .translate import encode_source


@dataclass(frozen=True)
class PairScore:
    """A target's log-probability given its source, piece by piece."""

    tokens: list[str]  # the target's pieces, then <eos>
    token_log_probs: list[float]  # log P of each, given the source and the pieces before it
    # (source word, target word) pairs when asked for (alignment.py); None for a target too long
    alignment: list[Link] | None = None

    @property
    def log_prob(self) -> float:
        return math.fsum(self.token_log_probs) if self.tokens else math.nan

    @property
    def per_token(self) -> float:
        return self.log_prob / len(self.tokens) if self.tokens else math.nan


def score_pairs(run: Run, device: torch.device, src_lines: list[str], tgt_lines: list[str],
                batch_size: int = 64, precision: str = "auto",
                warn: Callable[[str], None] = lambda message: None, tgt_lang: str = "",
                alignment: bool = False) -> list[PairScore]:
    """The score of each (source, target) pair, in order; the targets are in `tgt_lang` for
    a run of several target languages. A source longer than the model's positions is cut, as
    translation cuts it; a target too long for them cannot be scored (no tokens, a
    log-probability of NaN). With `alignment` (one model that attends), each score carries
    its pair's word alignment."""
    model, tokenizer = run.model.eval(), run.tokenizer
    languages = target_languages(run.config.data.tgt_lang)
    tag = chosen_tag(languages, tgt_lang, "tgt_lang")
    list(checked_sources(src_lines, tag, languages, "source line ", "tgt_lang", strict=True))
    src_ids = encode_source(tokenizer, src_lines, model.max_positions, warn, tag, languages)
    tgt_ids = [ids if line.strip() else [] for line, ids in
               zip(tgt_lines, tokenizer.encode_tgt(tgt_lines))]
    fits = [i for i, ids in enumerate(tgt_ids) if len(ids) < model.max_positions]
    if len(fits) < len(tgt_ids):
        warn(f"{len(tgt_ids) - len(fits):,} targets longer than the model's "
             f"{model.max_positions - 1:,} tokens were not scored")
    scores = [PairScore([], []) for _ in tgt_ids]
    fits.sort(key=lambda i: (len(src_ids[i]), len(tgt_ids[i])))  # little padding
    for start in range(0, len(fits), batch_size):
        rows = fits[start : start + batch_size]
        log_probs = target_log_probs(model, [src_ids[i] for i in rows],
                                     [tgt_ids[i] for i in rows], device, precision)
        for i, values in zip(rows, log_probs):
            scores[i] = PairScore(tokenizer.tgt.id_to_piece(tgt_ids[i] + [EOS_ID]), values)
    if alignment:
        weights = hypothesis_attention(model, [src_ids[i] for i in fits],
                                       [tgt_ids[i] for i in fits], device, ALIGNMENT_LAYER,
                                       batch_size)
        for i, read in zip(fits, weights):
            links = word_alignments(tokenizer, src_lines[i], src_ids[i], [tgt_ids[i]], [read],
                                    [tgt_lines[i]])
            scores[i] = dataclasses.replace(scores[i], alignment=links[0])
    return scores


def score_files(run: Run, device: torch.device, src_path: Path, tgt_path: Path,
                batch_size: int = 64, precision: str = "auto",
                warn: Callable[[str], None] = lambda message: None, tgt_lang: str = "",
                chunk_size: int = 10_000, alignment: bool = False
                ) -> Iterator[tuple[str, str, PairScore]]:
    """(source, target, score) for each line pair of two files, read a chunk at a time, so
    that memory does not grow with their length."""
    pairs = read_pairs(src_path, tgt_path)
    languages = target_languages(run.config.data.tgt_lang)
    tag = chosen_tag(languages, tgt_lang)
    read = 0
    while chunk := list(itertools.islice(pairs, chunk_size)):
        src, tgt = [s for s, _ in chunk], [t for _, t in chunk]
        list(checked_sources(src, tag, languages, f"{src_path}:", strict=True, first=read + 1))
        yield from zip(src, tgt, score_pairs(run, device, src, tgt, batch_size, precision, warn,
                                             tgt_lang, alignment))
        read += len(chunk)


@torch.inference_mode()
def target_log_probs(model, src_ids: list[list[int]], tgt_ids: list[list[int]],
                     device: torch.device, precision: str) -> list[list[float]]:
    """log P of each target piece and the closing <eos>, a list per pair. The logits are
    made a slice of positions at a time, as the training loss makes them."""
    batch = Batch.from_ids(src_ids, tgt_ids).to(device)
    models = list(model.models) if isinstance(model, Ensemble) else [model]
    with mixed_precision(device, precision):
        flats = []
        for each in models:
            features = each.features(batch.src, batch.tgt_in)
            flats.append(features.reshape(-1, features.size(-1))
                         .index_select(0, batch.tgt_positions))
        targets = batch.tgt_out.reshape(-1, 1).index_select(0, batch.tgt_positions)
        step = rows_per_slice(models[0].output_proj.weight.size(0) * len(models), device)
        chosen = torch.cat([
            torch.log_softmax(forbid_special_tokens(mean_distribution(
                [each.output_proj(flat[s : s + step]) for each, flat in zip(models, flats)])),
                -1).gather(1, targets[s : s + step]).squeeze(1)
            for s in range(0, targets.size(0), step)]).tolist()
    out, at = [], 0
    for ids in tgt_ids:
        out.append(chosen[at : at + len(ids) + 1])
        at += len(ids) + 1
    return out
