"""Corpus scores with sacreBLEU: BLEU, chrF and TER on detokenized text, with signatures.

Scores are computed as the `sacrebleu` command does with its defaults (cased BLEU, chrF with
character 6-grams), so they can be compared across papers; TER is cased too, where the command
lowercases it unless given --ter-case-sensitive. BLEU splits words with the tokenizer sacreBLEU
takes for the target language when it knows it (`-l`): zh for Chinese, ja-mecab for Japanese,
ko-mecab for Korean, 13a for the others; 13a splits no word of a language written without
spaces, so Chinese scored by it counts whole phrases as words.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sacrebleu.metrics import BLEU, CHRF, TER

from .checkpoint import BEST_WEIGHTS, corpus_record, read_config
from .config import BLEU_TOKENIZERS, DecodeConfig
from .corpus import text_record
from .data import ParallelText, corpus_dir, read_lines, read_parallel, split_pair
from .errors import UserError
from .files import atomic_write_text
from .languages import TAG, checked_sources
from .translate import load_engine

LANGUAGE_TOKENIZERS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}  # sacreBLEU's (-l)
EXTRAS = {"ja-mecab": "ja", "ko-mecab": "ko"}  # pip install "sacrebleu[ja]" brings MeCab
# letters of scripts written without spaces between words: CJK ideographs, kana, and Hangul
# (which spaces phrases, not words)
UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def bleu_tokenizer(language: str = "", tokenize: str = "auto") -> str:
    """The tokenizer BLEU splits words with: `tokenize` unless "auto", else sacreBLEU's own
    for the target `language` (a code such as "zh"; "" when not known)."""
    if tokenize not in BLEU_TOKENIZERS:
        raise UserError(f"--tokenize {tokenize!r}: choose from {', '.join(BLEU_TOKENIZERS)}")
    return LANGUAGE_TOKENIZERS.get(language, "13a") if tokenize == "auto" else tokenize


def bleu(lowercase: bool = False, tokenize: str = "13a") -> BLEU:
    """sacreBLEU's BLEU with `tokenize` (auto: 13a, no language being known here)."""
    tokenize = bleu_tokenizer(tokenize=tokenize)
    try:
        return BLEU(lowercase=lowercase, tokenize=tokenize)
    except RuntimeError:  # MeCab is not installed
        raise UserError(f"BLEU with tok:{tokenize} needs MeCab: pip install "
                        f"\"sacrebleu[{EXTRAS[tokenize]}]\", or choose another tokenizer with "
                        "--tokenize (char splits every character)") from None


def unspaced_warning(references: list[str], tokenize: str) -> str | None:
    """A warning when most letters of the references are of a script written without spaces
    (Chinese, Japanese, Korean) and BLEU's tokenizer does not split it into words."""
    if tokenize not in ("13a", "intl", "none"):
        return None
    letters = sum(len(line) - line.count(" ") for line in references)
    if letters == 0 or sum(len(UNSPACED.findall(line)) for line in references) < letters / 2:
        return None
    return (f"the references are mostly Chinese, Japanese or Korean, which tok:{tokenize} "
            "does not split into words: BLEU counts whole phrases as words; pass --tokenize "
            "zh, ja-mecab or ko-mecab, sacreBLEU's standard for these languages")


SCORERS = {
    "bleu": lambda lowercase, tokenize: bleu(lowercase, tokenize),
    "chrf": lambda lowercase, tokenize: CHRF(lowercase=lowercase),
    "ter": lambda lowercase, tokenize: TER(case_sensitive=not lowercase),
}


@dataclass(frozen=True)
class Score:
    metric: str  # BLEU | chrF2 | TER
    score: float
    signature: str  # e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3
    details: str  # sacreBLEU's one-line summary (n-gram precisions, brevity penalty, ...)


def evaluate(hypotheses: list[str], references: list[str],
             metrics: tuple[str, ...] = ("bleu",), lowercase: bool = False,
             tokenize: str = "13a") -> list[Score]:
    """Score detokenized hypotheses against one reference each; `tokenize`: BLEU's
    tokenizer (see bleu_tokenizer)."""
    if len(hypotheses) != len(references):
        raise UserError(f"{len(hypotheses):,} lines of hypotheses and {len(references):,} of "
                        "references; give one reference a hypothesis")
    if unknown := [name for name in metrics if name not in SCORERS]:
        raise UserError(f"unknown metric {unknown[0]!r}; choose from {', '.join(SCORERS)}")
    scores = []
    for name in metrics:
        metric = SCORERS[name](lowercase, tokenize)
        result = metric.corpus_score(hypotheses, [references])
        scores.append(Score(result.name, result.score, str(metric.get_signature()),
                            result.format(width=2)))
    return scores


@dataclass(frozen=True)
class Evaluation:
    """What was scored against what, and the scores."""

    hypotheses: str  # e.g. "runs/X on data/test.en", or a file of translations
    references: str
    sentences: int
    scores: list[Score]
    # The lines scored: translations, references, and the sources (None for a file of
    # translations scored without a model).
    translations: list[str] = field(default_factory=list, repr=False, compare=False)
    reference_lines: list[str] = field(default_factory=list, repr=False, compare=False)
    source_lines: list[str] | None = field(default=None, repr=False, compare=False)
    # How a run made the translations: its engine, weights and decoding settings (None for a
    # file of translations), so that a score can be cited and made again
    decoding: dict[str, Any] | None = None
    tokenize: str = "13a"  # BLEU's tokenizer


def evaluate_run(run_dir: Path, src: Path | None = None, ref: Path | None = None,
                 decode: DecodeConfig | None = None, metrics: tuple[str, ...] = ("bleu",),
                 lowercase: bool = False, quantize: str = "none",
                 engine: str = "torch", ensemble: list[Path] | None = None,
                 check_inputs: Callable[..., None] | None = None,
                 tokenize: str = "auto") -> Evaluation:
    """Translate `src` with a trained run and score the output against `ref`. Without them,
    the test split of the corpus the run was trained on. `engine`, `ensemble`: see
    load_engine; `check_inputs` is given the files to be read before they are (the command
    refuses to write over one); BLEU's tokenizer is `tokenize`, or sacreBLEU's for the
    language translated into."""
    if (src is None) != (ref is None):
        raise UserError("--src and --ref go together")
    decode = decode or DecodeConfig()
    translator = load_engine(engine, run_dir, decode.device, quantize, decode.precision,
                             ensemble)
    tag = translator.language_tag(decode, required=True)  # the test split's, checked first
    tokenize = bleu_tokenizer(decode.tgt_lang or next(iter(translator.target_languages), ""),
                              tokenize)
    if "bleu" in metrics:
        bleu(lowercase, tokenize)  # MeCab missing: said before anything is translated
    default_split = src is None or ref is None
    if default_split:
        src, ref = test_files_of_run(translator.run_dir, decode.tgt_lang)
    if check_inputs is not None:
        check_inputs(src, ref)
    text = read_parallel(src, ref)
    list(checked_sources(text.src, tag, translator.target_languages, f"{src}:", strict=True))
    if default_split:
        check_test_split(translator.run_dir, text, ref, decode.tgt_lang, translator.warn)
    hypotheses = translator.translate(text.src, decode)
    name = " + ".join(map(str, [run_dir, *(ensemble or [])]))
    decoding = {"engine": engine, "weights": BEST_WEIGHTS if engine == "torch" else
                "ctranslate2 export", "ensemble": [str(path) for path in ensemble or []],
                "quantize": quantize, **asdict(decode),
                "device": str(getattr(translator, "device", decode.device))}  # "auto" resolved
    return Evaluation(f"{name} on {src}", str(ref), len(text.tgt),
                      evaluate(hypotheses, text.tgt, metrics, lowercase, tokenize),
                      hypotheses, text.tgt, text.src, decoding, tokenize)


def evaluate_file(hyp: Path, ref: Path, metrics: tuple[str, ...] = ("bleu",),
                  lowercase: bool = False, tokenize: str = "auto") -> Evaluation:
    """Score a file of translations against a file of references, line by line (BLEU with
    `tokenize`; auto: 13a, the language not being known)."""
    tokenize = bleu_tokenizer(tokenize=tokenize)
    hypotheses, references = read_lines(hyp), read_lines(ref)
    if len(hypotheses) != len(references):
        raise UserError(f"--hyp {hyp} has {len(hypotheses):,} lines and --ref {ref} "
                        f"{len(references):,}; give a translation of each reference")
    return Evaluation(str(hyp), str(ref), len(references),
                      evaluate(hypotheses, references, metrics, lowercase, tokenize),
                      hypotheses, references, tokenize=tokenize)


def test_files_of_run(run_dir: Path, tgt_lang: str = "") -> tuple[Path, Path]:
    """The source and reference files of the test split of a run's corpus, into `tgt_lang`
    for a run with several target languages."""
    data = read_config(run_dir)[0].data
    folder = corpus_dir(data.data_dir)
    return split_pair(folder, "test", data.src_lang, tgt_lang or data.tgt_lang)


def check_test_split(run_dir: Path, text: ParallelText, ref: Path, tgt_lang: str,
                     warn: Callable[[str], None]) -> None:
    """Warn when the test split differs from the one the run's corpus held when it began
    (corpus.test_records; a run made before they were kept records none): its scores then
    cannot be set beside scores of that one."""
    language = tgt_lang or read_config(run_dir)[0].data.tgt_lang
    then = corpus_record(run_dir).get(f"test.{language}")
    now = text_record(text)
    if then is None or then.get("sha256") == now["sha256"]:  # the same pairs, in any file
        return
    what = (f"{then.get('file')} then, {ref.name} now" if then.get("file") != ref.name
            else f"{then['pairs']:,} pairs then, {now['pairs']:,} now"
            if then.get("pairs") != now["pairs"] else "as many pairs, but others")
    warn(f"{ref}: not the test split this run's corpus held when it began ({what}): its "
         "scores do not compare with scores on that one")


def save_translations(evaluation: Evaluation, path: Path) -> None:
    """Write the translations that were scored, one per line, in order."""
    atomic_write_text(Path(path), "".join(f"{line}\n" for line in evaluation.translations))


LENGTH_EDGES = (10, 20, 30)  # buckets 1-10, 11-20, 21-30 and 31+ words


@dataclass(frozen=True)
class LengthBucket:
    bucket: str  # e.g. "11-20" (words), or "31+"
    sentences: int
    bleu: float


def length_basis(evaluation: Evaluation) -> str:
    """Whose length sorts sentences into buckets: the source's, or the reference's when
    the evaluation scored a file of translations without its source."""
    return "source" if evaluation.source_lines is not None else "reference"


def bucket_labels(edges: tuple[int, ...]) -> list[str]:
    """(10, 20, 30) -> ["1-10", "11-20", "21-30", "31+"]."""
    lows = [1, *(edge + 1 for edge in edges)]
    return [f"{low}-{high}" for low, high in zip(lows, edges)] + [f"{lows[-1]}+"]


def bleu_by_length(evaluation: Evaluation, edges: tuple[int, ...] = LENGTH_EDGES,
                   lowercase: bool = False) -> list[LengthBucket]:
    """BLEU of each length bucket (length in whitespace-separated words of the source, see
    length_basis, less a language tag; a blank line counts in the first bucket). Empty
    buckets are left out, so the buckets' sentences add up to all sentences."""
    lines = (evaluation.source_lines if evaluation.source_lines is not None
             else evaluation.reference_lines)
    groups: dict[int, list[int]] = {}
    for row, line in enumerate(lines):
        words = line.split()
        words = words[1:] if words and TAG.fullmatch(words[0]) else words  # "<2fr> ..."
        groups.setdefault(bisect_left(edges, len(words)), []).append(row)
    labels, buckets = bucket_labels(edges), []
    for index, rows in sorted(groups.items()):
        hypotheses = [evaluation.translations[row] for row in rows]
        references = [evaluation.reference_lines[row] for row in rows]
        score = evaluate(hypotheses, references, ("bleu",), lowercase,
                         evaluation.tokenize)[0].score
        buckets.append(LengthBucket(labels[index], len(rows), score))
    return buckets
