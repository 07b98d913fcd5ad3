"""Corpus scores with sacreBLEU: BLEU, chrF and TER on detokenized text, with signatures.

Scores are computed exactly as the `sacrebleu` command does with its defaults (cased BLEU with
the 13a tokenizer, chrF with character 6-grams, TER), so they can be compared across papers.
"""

from __future__ import annotations

from dataclasses import dataclass

from sacrebleu.metrics import BLEU, CHRF, TER

from .config import UserError

METRICS = {
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
        metric = METRICS[name](lowercase)
        result = metric.corpus_score(hypotheses, [references])
        scores.append(Score(result.name, result.score, str(metric.get_signature()),
                            result.format(width=2)))
    return scores


def bleu(hypotheses: list[str], references: list[str]) -> float:
    return evaluate(hypotheses, references, ("bleu",))[0].score
