"""Corpus scores with sacreBLEU: BLEU, chrF and TER on detokenized text, with signatures.

Scores are computed exactly as the `sacrebleu` command does with its defaults (cased BLEU with
the 13a tokenizer, chrF with character 6-grams, TER), so they can be compared across papers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sacrebleu.metrics import BLEU, CHRF, TER

from .checkpoint import read_config
from .config import DecodeConfig
from .data import corpus_dir, find_split_file, read_lines, read_parallel
from .errors import UserError
from .translate import Translator

SCORERS = {
    "bleu": lambda lowercase: BLEU(lowercase=lowercase),
    "chrf": lambda lowercase: CHRF(lowercase=lowercase),
    "ter": lambda lowercase: TER(case_sensitive=not lowercase),
}


@dataclass(frozen=True)
class Score:
    metric: str  # BLEU | chrF2 | TER
    score: float
    signature: str  # e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3
    details: str  # sacreBLEU's one-line summary (n-gram precisions, brevity penalty, ...)


def evaluate(hypotheses: list[str], references: list[str],
             metrics: tuple[str, ...] = ("bleu",), lowercase: bool = False) -> list[Score]:
    """Score detokenized hypotheses against one reference each."""
    if len(hypotheses) != len(references):
        raise UserError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    scores = []
    for name in metrics:
        metric = SCORERS[name](lowercase)
        result = metric.corpus_score(hypotheses, [references])
        scores.append(Score(result.name, result.score, str(metric.get_signature()),
                            result.format(width=2)))
    return scores


def bleu(hypotheses: list[str], references: list[str]) -> float:
    return evaluate(hypotheses, references, ("bleu",))[0].score


@dataclass(frozen=True)
class Evaluation:
    """What was scored against what, and the scores."""

    hypotheses: str  # e.g. "runs/X on data/test.en", or a file of translations
    references: str
    sentences: int
    scores: list[Score]


def evaluate_run(run_dir: Path, src: Path | None = None, ref: Path | None = None,
                 decode: DecodeConfig | None = None, metrics: tuple[str, ...] = ("bleu",),
                 lowercase: bool = False, quantize: str = "none") -> Evaluation:
    """Translate `src` with a trained run and score the output against `ref`. Without them,
    the test split of the corpus the run was trained on."""
    if (src is None) != (ref is None):
        raise UserError("--src and --ref go together")
    if src is None or ref is None:
        src, ref = test_files_of_run(Path(run_dir))
    decode = decode or DecodeConfig()
    text = read_parallel(src, ref)
    translator = Translator.from_run(run_dir, decode.device, quantize=quantize)
    hypotheses = translator.translate(text.src, decode)
    return Evaluation(f"{run_dir} on {src}", str(ref), len(text.tgt),
                      evaluate(hypotheses, text.tgt, metrics, lowercase))


def evaluate_file(hyp: Path, ref: Path, metrics: tuple[str, ...] = ("bleu",),
                  lowercase: bool = False) -> Evaluation:
    """Score a file of translations against a file of references, line by line."""
    hypotheses, references = read_lines(hyp), read_lines(ref)
    return Evaluation(str(hyp), str(ref), len(references),
                      evaluate(hypotheses, references, metrics, lowercase))


def test_files_of_run(run_dir: Path) -> tuple[Path, Path]:
    """The source and reference files of the test split of a run's corpus."""
    data = read_config(run_dir)[0].data
    folder = corpus_dir(data.data_dir)
    return (find_split_file(folder, "test", data.src_lang),
            find_split_file(folder, "test", data.tgt_lang))
