"""Learning curves: the series of a run's metrics.jsonl, as plain numbers.

Training appends one record per step (kind "step": step, loss, lr, tokens_per_s over the last
20 steps' own time, elapsed: seconds since training began, validations included, as
train.max_time counts them) and one per validation (kind "validate": step, val_loss, val_bleu,
val_chrf, and val_bleu_LANG, val_chrf_LANG for each of several target languages). A
validation happens at the end of a step, so its time is that step's elapsed time.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .checkpoint import METRICS_FILE, check_run_dir, metrics_records, read_config
from .errors import UserError

LANGUAGE_BLEU = "val_bleu_"  # then a target language: validation.validate
LANGUAGE_CHRF = "val_chrf_"


@dataclass
class LearningCurve:
    run: str  # the run directory as given
    steps: list[int]
    minutes: list[float]  # training time at each step
    loss: list[float]  # training loss
    lr: list[float]
    tokens_per_s: list[float]
    val_steps: list[int]
    val_minutes: list[float]
    val_loss: list[float]
    val_bleu: list[float]
    # a run of several target languages: the validation BLEU of each (val_bleu_LANG)
    val_bleu_by_language: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    val_chrf: list[float | None] = dataclasses.field(default_factory=list)  # None: not logged
    val_chrf_by_language: dict[str, list[float | None]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def read_metrics(run_dir: Path) -> list[dict]:
    """The records of a run's metrics.jsonl (a line cut short by a crash is passed over)."""
    path = Path(run_dir) / METRICS_FILE
    check_run_dir(Path(run_dir))
    if not path.is_file():
        raise UserError(f"{run_dir}: no {METRICS_FILE} (not a run directory, or no step "
                        "trained yet)")
    return [record for _, record in metrics_records(path)]


def learning_curve(run_dir: Path | str) -> LearningCurve:
    """The training and validation series of one run."""
    records = read_metrics(Path(run_dir))
    steps = [r for r in records if r.get("kind") == "step"]
    validations = [r for r in records if r.get("kind") == "validate"]
    if not steps:
        raise UserError(f"{run_dir}: {METRICS_FILE} holds no training step yet")
    try:
        return series(str(run_dir), steps, validations)
    except KeyError as e:  # the values are numbers (metrics_records)
        raise UserError(f"{run_dir}: a record of {METRICS_FILE} lacks {e}") from None


def series(run: str, steps: list[dict], validations: list[dict]) -> LearningCurve:
    step_numbers = [r["step"] for r in steps]

    def minutes_at(step: int) -> float:  # the time of the last step record at or before it
        index = bisect.bisect_right(step_numbers, step) - 1
        return steps[index]["elapsed"] / 60 if index >= 0 else 0.0

    languages = [key.removeprefix(LANGUAGE_BLEU) for key in (validations or [{}])[0]
                 if key.startswith(LANGUAGE_BLEU)]
    return LearningCurve(
        run, step_numbers, [r["elapsed"] / 60 for r in steps], [r["loss"] for r in steps],
        [r["lr"] for r in steps], [r["tokens_per_s"] for r in steps],
        [r["step"] for r in validations], [minutes_at(r["step"]) for r in validations],
        [r["val_loss"] for r in validations], [r["val_bleu"] for r in validations],
        {language: [r[LANGUAGE_BLEU + language] for r in validations]
         for language in languages},
        [r.get("val_chrf") for r in validations],  # runs of older versions logged no chrF
        {language: [r.get(LANGUAGE_CHRF + language) for r in validations]
         for language in languages})


def learning_curves(run_dirs: list[Path | str]) -> list[LearningCurve]:
    if not run_dirs:
        raise UserError("name at least one run directory")
    return [learning_curve(run_dir) for run_dir in run_dirs]


def ranking_metric(run_dirs: list[Path | str]) -> str:
    """The validation score to draw by default: "chrf" when every run ranks its validations
    by chrF (train.best_metric), else "bleu" (a run ranked by loss, or without its config)."""
    def ranks_by(run_dir: Path | str) -> str:
        try:
            return read_config(Path(run_dir))[0].train.best_metric
        except UserError:
            return "bleu"

    return "chrf" if all(ranks_by(run_dir) == "chrf" for run_dir in run_dirs) else "bleu"
