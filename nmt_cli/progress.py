"""How far a training run has got, and the rules that end it.

Everything here is saved in the training state, so a resumed run stops where an uninterrupted
one would have: at the first limit reached (steps, training time, epochs), when the validation
score (train.best_metric) has not improved for `patience` validations, or after too many
NaN/inf steps in a row.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import TrainConfig
from .errors import UserError


@dataclass
class TrainingProgress:
    step: int = 0  # updates taken
    epoch: int = 0
    batch_in_epoch: int = 0  # index of the next batch of this epoch
    best_score: float = -math.inf  # validation.selection_score of the best weights
    # the best score of the validations on schedule (every train.validate_every steps), and how
    # many have not beaten it: patience counts these, and not a run's validation at a limit
    # between them, so a run extended past that limit goes on as if it had had none
    patience_score: float = -math.inf
    bad_validations: int = 0
    bad_steps: int = 0  # consecutive steps with a NaN/inf loss or gradient
    skipped_steps: int = 0  # all skipped steps, fp16 overflows included
    overflow_steps: int = 0  # fp16 overflows: skipped while the loss scale shrinks; harmless
    validated_at: int = -1  # step of the latest validation
    train_time: float = 0.0  # seconds spent training so far

    @classmethod
    def from_state(cls, saved: dict) -> TrainingProgress:
        """The progress saved in a training state (by this version, or by one that ranked
        validations by BLEU alone, in `best_bleu`)."""
        saved = dict(saved)
        if "best_bleu" in saved:
            saved["best_score"] = saved.pop("best_bleu")
        saved.setdefault("patience_score", saved.get("best_score", -math.inf))  # older states
        progress = cls(**saved)
        for f in dataclasses.fields(cls):  # whole numbers where the defaults are
            value = getattr(progress, f.name)
            if not (type(value) is int or type(f.default) is float and type(value) is float):
                raise TypeError(f"progress {f.name} is {value!r}")
        return progress

    @property
    def at_start(self) -> bool:
        return self.step == 0 and self.epoch == 0 and self.batch_in_epoch == 0

    def updates(self, epoch_batches: Callable[[int], list], per_update: int, t: TrainConfig,
                upcoming: Callable[[list], None] = lambda update: None
                ) -> Iterator[tuple[list, float]]:
        """The batches of each update, epoch after epoch, from where this progress stands,
        each with the fraction of its epoch done after it; until a limit is reached. Before
        an update is handed out, `upcoming` is told the next one of the same epoch."""
        while not self.limit_reached(t):
            batches = epoch_batches(self.epoch)
            while self.batch_in_epoch < len(batches):
                update = batches[self.batch_in_epoch : self.batch_in_epoch + per_update]
                self.batch_in_epoch += len(update)
                upcoming(batches[self.batch_in_epoch : self.batch_in_epoch + per_update])
                yield update, self.batch_in_epoch / len(batches)
            self.epoch, self.batch_in_epoch = self.epoch + 1, 0

    def limit_reached(self, t: TrainConfig) -> bool:
        return bool((t.max_steps and self.step >= t.max_steps)
                    or (t.max_time and self.train_time >= t.max_time)
                    or (t.epochs and self.epoch >= t.epochs))

    def fraction_done(self, t: TrainConfig, epoch_fraction: float, taking: int = 0) -> float:
        """How far along the nearest limit (steps, time or epochs) training is, in [0, 1];
        `taking`: steps under way, counted as done (as epoch_fraction counts their batches)."""
        fractions = [(self.step + taking) / t.max_steps if t.max_steps else 0.0,
                     self.train_time / t.max_time if t.max_time else 0.0,
                     (self.epoch + epoch_fraction) / t.epochs if t.epochs else 0.0]
        return min(max(fractions), 1.0)

    def count_step(self, loss: float, overflow: bool = False) -> bool:
        """Count a step's outcome; True when its loss was finite (the update was taken). An
        fp16 overflow is skipped without counting toward divergence."""
        if math.isfinite(loss):
            self.step, self.bad_steps = self.step + 1, 0
            return True
        self.skipped_steps += 1
        if overflow:
            self.overflow_steps += 1
        else:
            self.bad_steps += 1
        return False

    def check_divergence(self, t: TrainConfig, run_dir: Path) -> None:
        """Too many NaN/inf steps in a row end training; the last good state is kept."""
        if self.bad_steps >= t.max_bad_steps:
            raise UserError(f"training diverged: {self.bad_steps} steps in a row with a NaN/inf "
                            f"loss or gradient (at step {self.step}); the last good checkpoint "
                            f"is in {run_dir}; try a lower train.lr")

    def count_validation(self, score: float, on_schedule: bool = True) -> bool:
        """Record a validation's score; True when it is the best so far (the first always
        is, whatever its score: a run always has best weights). Only validations
        `on_schedule` count toward patience."""
        first, self.validated_at = self.validated_at < 0, self.step
        improved = first or score > self.best_score
        if improved:
            self.best_score = score
        if on_schedule and (score > self.patience_score or self.patience_score == -math.inf):
            self.patience_score, self.bad_validations = score, 0
        elif on_schedule:
            self.bad_validations += 1
        return improved

    def out_of_patience(self, t: TrainConfig) -> bool:
        return t.patience > 0 and self.bad_validations >= t.patience


class TokenRate:
    """Target tokens per second over the last `steps` steps: the time they took, not that of
    the validations between them (which once made every validation look like a slowdown)."""

    def __init__(self, steps: int = 20):
        self.window: deque[tuple[float, int]] = deque(maxlen=steps)

    def add(self, seconds: float, tokens: int) -> float:
        """Record a step of `tokens` target tokens that took `seconds`; returns the rate."""
        self.window.append((seconds, tokens))
        spent = sum(s for s, _ in self.window)
        return sum(n for _, n in self.window) / spent if spent > 0 else 0.0
