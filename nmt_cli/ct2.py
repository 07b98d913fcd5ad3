"""Decoding with CTranslate2: the `ctranslate2` engine of `nmt translate` and `nmt eval`.

An export (ct2_export.py) holds a CTranslate2 model whose token ids are nmt's, the
SentencePiece model(s) and nmt-export.json. `CTranslate2Translator.from_dir(path)` gives an
`Engine` (translate.py): lines in, n-best lists of `Translation`s out, encoded and
detokenized by the same functions as PyTorch's engine. It searches as nmt's own search does:

- the same output limit per sentence (a × source length + b, at least min_len). CTranslate2
  takes one limit per batch, so a batch is decoded under its longest limit. Greedy search
  stops each sentence at its own (a callback after each token). After a beam search, a
  sentence whose search ran up to its own limit is decoded again under it; the others found
  what their own limit would have given: a search changes only at the limit's last step,
  and the longest hypothesis returned (<eos> counted) tells the step the search ended at
  (fewer than `beam` hypotheses had finished before that step, so one returned finished
  at it);
- <pad> and <sos> are never produced, nor <eos> before min_len, nor a repeated n-gram of
  no_repeat_ngram tokens;
- beam search finishes a sentence once `beam` hypotheses have ended, as nmt's does, and the
  hypotheses are then ranked by nmt's GNMT penalty, log P / ((5 + length) / 6) ** alpha.
  CTranslate2 divides by length ** penalty instead; it is given a tiny penalty (RANK_PENALTY,
  nonzero so that it waits for `beam` finished hypotheses rather than stopping at the first),
  its scores are turned back into log P, and nmt's penalty applied to them;
- a target prefix is CTranslate2's target_prefix: the output limit counts it, its tokens add
  nothing to log P, and a beam left with fewer live hypotheses than its width (while the
  prefix is forced up to the limit) fills them with copies scored -1e10, which are dropped.

Options it cannot honour (--attention, --device mps; --alignment with an export made before
nmt gave alignments) are one-line errors.
Without the `ct2` extra, `import_ctranslate2` says in one line how to install it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from .alignment import word_alignments
from .checkpoint import BEST_WEIGHTS, CONFIG_FILE, EXPORT_FILE, read_config
from .config import DecodeConfig, check_engine
from .errors import UserError
from .files import sha256_of
from .guided_alignment import ALIGNMENT_LAYER
from .languages import target_languages
from .search import Hypothesis, check_nbest, finished, output_limit
from .special_tokens import EOS_ID, PAD_ID, SOS_ID
from .tokenizer import Tokenizer
from .translate import Engine, Translation, detokenize, encode_prefixes, encode_source

INSTALL_HINT = 'CTranslate2 is not installed; install it with: pip install "nmt-cli[ct2]"'
EXPORT_DIR = "ctranslate2"
RANK_PENALTY = 1e-3  # CTranslate2's length penalty exponent: ranks by about log P, never 0
NO_HYPOTHESIS = -1e9  # CTranslate2 scores the copies that fill a beam -1e10
COMPUTE_TYPES = {"auto": "default", "fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def import_ctranslate2():
    """The ctranslate2 module, or a one-line error saying how to install it."""
    try:
        import ctranslate2
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    return ctranslate2


def find_export(path: Path) -> Path:
    """An export directory: `path` itself, or the ctranslate2/ folder of a run directory."""
    path = Path(path)
    for candidate in (path, path / EXPORT_DIR):
        if (candidate / EXPORT_FILE).is_file():
            return candidate
    arch = read_config(path)[0].model.arch if (path / CONFIG_FILE).is_file() else "transformer"
    if arch != "transformer":  # which no export can be made of
        raise UserError(f"{path}: a {arch.upper()} run, and CTranslate2 runs Transformers "
                        "only; translate it with --engine torch")
    raise UserError(f"{path}: no CTranslate2 export (nor in {path / EXPORT_DIR}); make one "
                    f"with `nmt export {path} --format ctranslate2`")


def read_export(path: Path) -> tuple[Path, int, list[str], bool, str | None]:
    """The run an export came from, the positions its model has, its target languages (an
    export made before they were recorded: its run's, when that is at hand, else none),
    whether its model returns the attention that word alignments read (ALIGNMENT_LAYER's;
    exports made before alignments were: another layer's, one head's), and the SHA-256 of the
    weights exported (none recorded before it was)."""
    file = path / EXPORT_FILE
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
        run = Path(meta["run"])
        if "target_languages" in meta:
            languages = [str(language) for language in meta["target_languages"]]
        else:
            languages = run_languages(run)
        aligns = meta.get("alignment_layer") == ALIGNMENT_LAYER
        digest = meta.get("weights_sha256")
        return (run, int(meta["max_positions"]), languages, aligns,
                digest if isinstance(digest, str) else None)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UserError(f"{file}: unreadable ({type(e).__name__}: {e})") from None


def check_up_to_date(path: Path, run_dir: Path, recorded: str | None) -> None:
    """An export in a run's folder was made from the run's best weights as they are now (their
    SHA-256 `recorded` at export), not from those a resumed or fine-tuned run has since
    replaced (exports made before the weights were recorded are not checked)."""
    weights = run_dir / BEST_WEIGHTS
    if recorded is not None and weights.is_file() and sha256_of(weights) != recorded:
        raise UserError(f"{path}: exported from weights of {run_dir} replaced since; export "
                        f"it again (nmt export {run_dir} --format ctranslate2 --force)")


def run_languages(run: Path) -> list[str]:
    """The target languages of a run; none when it is not at hand."""
    try:
        return target_languages(read_config(run)[0].data.tgt_lang)
    except UserError:
        return []


def compute_type(precision: str, quantize: str) -> str:
    """CTranslate2's compute type for nmt's --precision and --quantize: auto keeps the type
    the model was exported in; int8 weights compute the rest in --precision (int8_bfloat16)."""
    if quantize == "int8":
        return "int8" if precision == "auto" else f"int8_{COMPUTE_TYPES[precision]}"
    return COMPUTE_TYPES[precision]


class CTranslate2Translator(Engine):
    """An export loaded into a `ctranslate2.Translator`."""

    def __init__(self, translator, tokenizer: Tokenizer, max_positions: int, run_dir: Path,
                 target_languages: list[str], warn: Callable[[str], None] | None = None,
                 aligns: bool = True):
        self.translator, self.tokenizer, self.max_positions = translator, tokenizer, max_positions
        self.run_dir = run_dir  # the run it was exported from
        self.target_languages = target_languages
        self.aligns = aligns  # its attention is what word alignments read (read_export)
        self.warn = warn or (lambda message: print(f"warning: {message}", file=sys.stderr))
        piece = tokenizer.tgt.id_to_piece
        self.eos, self.never = piece(EOS_ID), [[piece(PAD_ID)], [piece(SOS_ID)]]

    @classmethod
    def from_dir(cls, path: Path | str, device: str = "auto", precision: str = "auto",
                 quantize: str = "none", threads: int = 0) -> CTranslate2Translator:
        """Load an export (or a run directory's ctranslate2/ export) onto `device` (auto:
        CUDA if CTranslate2 sees a GPU, else the CPU) with `threads` CPU threads (0: as
        many as PyTorch uses). On a CPU each thread decodes batches of its own (CTranslate2's
        inter_threads, sharing the weights), each batch on one thread: on 2 cores that
        decoded 3.4x as many sentences/s greedy as two threads on each batch, and one
        sentence took 14 ms instead of 81."""
        ctranslate2 = import_ctranslate2()
        if device == "mps":
            raise UserError("--device mps: CTranslate2 runs on cpu or cuda only")
        path = find_export(path)
        run_dir, max_positions, languages, aligns, digest = read_export(path)
        if (path.parent / CONFIG_FILE).is_file() and path.name == EXPORT_DIR:  # a run's own
            run_dir = path.parent
            check_up_to_date(path, run_dir, digest)
        try:
            translator = ctranslate2.Translator(
                str(path), device=device, compute_type=compute_type(precision, quantize),
                inter_threads=threads or torch.get_num_threads(), intra_threads=1)
        except (ValueError, RuntimeError) as e:
            raise UserError(f"{path}: cannot load the CTranslate2 model ({e})") from None
        tokenizer = Tokenizer.load(path)  # whose tags name the languages an export does not
        return cls(translator, tokenizer, max_positions, run_dir, languages or tokenizer.languages,
                   aligns=aligns)

    def decode_nbest(self, lines: list[str], config: DecodeConfig, nbest: int = 1,
                     attention: bool = False, prefixes: list[str] | None = None,
                     alignment: bool = False,
                     terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """The `nbest` best translations of each line (at most config.beam), best first;
        with `prefixes` (one per line, "" for none), each opens with its line's prefix; with
        `alignment`, each carries its word alignment to the line. No glossary `terms`."""
        check_nbest(nbest, config)
        check_engine("ctranslate2", config)
        if terms and any(terms):
            raise UserError("terms (--glossary, --terms-file): the ctranslate2 engine cannot "
                            "place them; use the torch engine")
        if attention:
            self.check_attention("--attention")
        if alignment:
            self.check_alignment("--alignment")
        src_ids = encode_source(self.tokenizer, lines, self.max_positions, self.warn,
                                self.language_tag(config), self.target_languages)
        found, maps = self.search(src_ids, config, encode_prefixes(
            self.tokenizer, prefixes, lines, self.max_positions, self.warn), alignment)
        found = [hyps[:nbest] for hyps in found]
        links = [None] * len(found) if not alignment else [
            word_alignments(self.tokenizer, line, src, [h.tokens for h in hyps],
                            [torch.tensor(m).reshape(-1, len(src)) for m in own])
            for line, src, hyps, own in zip(lines, src_ids, found, maps)]
        return [detokenize(self.tokenizer, src, hyps, alignments=a)
                for src, hyps, a in zip(src_ids, found, links)]

    def check_attention(self, option: str) -> None:
        raise UserError(f"{option}: the ctranslate2 engine gives no attention weights; use "
                        "--engine torch")

    def check_alignment(self, option: str) -> None:
        if not self.aligns:
            raise UserError(f"{option}: this export was made before nmt gave word alignments "
                            "and returns another attention; make it again (`nmt export "
                            f"{self.run_dir} --format ctranslate2 --force`)")

    def search(self, src_ids: list[list[int]], config: DecodeConfig,
               prefixes: list[list[int]] | None = None, attention: bool = False
               ) -> tuple[list[list[Hypothesis]], list[list[list]]]:
        """Each source's `beam` hypotheses ranked as nmt ranks them (none for an empty
        source), each opening with its prefix (if any); with `attention`, beside them the
        attention of each as CTranslate2 returns it while it searches (the export's
        alignment layer, heads averaged: a row per target token, a column per source piece
        but <eos>), which word alignments read. Sentences are decoded in nmt's batches,
        sorted by length (see decode); after a beam search, one that reached its own limit,
        shorter than the batch's, is decoded again under it, with the others of that
        limit."""
        found: list[list[Hypothesis]] = [[] for _ in src_ids]
        maps: list[list[list]] = [[] for _ in src_ids]
        rows = sorted((i for i, ids in enumerate(src_ids) if ids), key=lambda i: len(src_ids[i]))
        prefixes = prefixes or []
        limits = {i: output_limit(len(src_ids[i]), config, self.max_positions,
                                  len(prefixes[i]) if prefixes else 0) for i in rows}
        again: dict[int, list[int]] = {}
        batches = [rows[start : start + config.batch_size]
                   for start in range(0, len(rows), config.batch_size)]
        for batch, results in self.decode_all(src_ids, prefixes, batches, config, limits,
                                               attention):
            longest = max(limits[i] for i in batch)
            for i, result in zip(batch, results):
                if (config.beam > 1 and limits[i] < longest
                        and max(map(len, result.hypotheses)) >= limits[i]):
                    again.setdefault(limits[i], []).append(i)
                else:
                    found[i], maps[i] = self.ranked(result, config.alpha)
        for group, results in self.decode_all(src_ids, prefixes, list(again.values()), config,
                                              limits, attention):
            for i, result in zip(group, results):
                found[i], maps[i] = self.ranked(result, config.alpha)
        if attention and config.beam > 1:
            for i, first in self.first_rows(src_ids, rows, config):
                maps[i] = [[first, *weights[1:]] for weights in maps[i]]
        return found, maps

    def first_rows(self, src_ids: list[list[int]], rows: list[int],
                   config: DecodeConfig) -> Iterator[tuple[int, list[float]]]:
        """Each source's attention at the first step (read from <sos> alone, the same for
        every hypothesis), by one step of greedy search: CTranslate2's beam search returns
        one first row for a whole batch, the same in every sentence's hypotheses (seen with
        CTranslate2 4.8.5); the rows after it are each hypothesis's own."""
        results = self.translator.translate_batch(
            [self.tokenizer.src.id_to_piece(src_ids[i]) for i in rows], beam_size=1,
            max_decoding_length=1, max_batch_size=min(config.batch_size, len(rows)),
            max_input_length=0,
            return_attention=True)
        for i, result in zip(rows, results):
            yield i, result.attention[0][0]

    def decode_all(self, src_ids: list[list[int]], prefixes: list[list[int]],
                   groups: list[list[int]], config: DecodeConfig, limits: dict[int, int],
                   attention: bool = False):
        """Each group of rows with CTranslate2's results for it. Every group is submitted
        before any is waited for, so that CTranslate2's threads decode them side by side."""
        pending = [self.decode(src_ids, prefixes, group, config, limits, attention)
                   for group in groups]
        for group, results in zip(groups, pending):
            try:
                found = [result.result() for result in results]
            except (ValueError, RuntimeError) as e:  # an export edited or damaged since
                raise UserError(f"{self.run_dir}: CTranslate2 failed ({str(e)[:200]}); "
                                "export the run again") from None
            yield group, found

    def decode(self, src_ids: list[list[int]], prefixes: list[list[int]], rows: list[int],
               config: DecodeConfig, limits: dict[int, int], attention: bool = False) -> list:
        """CTranslate2's results for the sources `rows` (with their target prefixes, if
        any) under the longest of their output limits, to come (each `.result()` waits for
        its own). Greedy search stops each sentence at its own: CTranslate2 calls back after
        every token it picks, the prefix's included, and ends the sentence when the call
        says so."""
        sources = [self.tokenizer.src.id_to_piece(src_ids[i]) for i in rows]
        forced = [self.tokenizer.tgt.id_to_piece(prefixes[i]) or None
                  for i in rows] if prefixes else None
        own = [limits[i] for i in rows]
        options = self.options(config, max(own))
        # no larger than the sentences there: CTranslate2 reserves room for the number asked
        options["max_batch_size"] = min(config.batch_size, len(rows))
        options["return_attention"] = attention
        if config.beam == 1:
            options["callback"] = lambda step: step.step + 1 >= own[step.batch_id]
        return self.translator.translate_batch(sources, forced, **options)

    def options(self, config: DecodeConfig, limit: int) -> dict:
        """translate_batch's options for one group of sentences whose output limit is `limit`."""
        return {"beam_size": config.beam, "num_hypotheses": config.beam,
                "length_penalty": RANK_PENALTY,
                "max_input_length": 0, "max_decoding_length": limit,
                "min_decoding_length": min(config.min_len, limit),
                "no_repeat_ngram_size": config.no_repeat_ngram,
                "suppress_sequences": self.never, "return_scores": True,
                "return_end_token": True, "asynchronous": True}

    def ranked(self, result, alpha: float) -> tuple[list[Hypothesis], list[list]]:
        """A result's hypotheses (<eos> kept where they ended with it) as nmt's, best first,
        and their attention (empty lists when none was asked for). Its score is log P /
        length ** RANK_PENALTY over the tokens scored, <eos> included."""
        out = []
        attention = result.attention or [[] for _ in result.hypotheses]
        for pieces, score, weights in zip(result.hypotheses, result.scores, attention):
            if score < NO_HYPOTHESIS:
                continue
            ended = bool(pieces) and pieces[-1] == self.eos
            tokens = self.tokenizer.tgt.piece_to_id(pieces[:-1] if ended else pieces)
            out.append((finished(tokens, score * len(pieces) ** RANK_PENALTY, ended, alpha),
                        weights))
        out.sort(key=lambda pair: pair[0].score, reverse=True)
        return [h for h, _ in out], [weights for _, weights in out]
