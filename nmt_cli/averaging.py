"""Averages of weights: checkpoints kept for `nmt average`, and an exponential moving average.

Late in training the optimizer wanders around a good region rather than settling in it; the
mean of several points of that walk tends to sit nearer its middle and often translates
better than any one of them, at no cost to the model's size or speed.

    train.keep_last = K  each validation's weights stay as step-N.safetensors, the latest K of
                         them; `average_run` writes a run directory holding their mean.
    train.ema_decay = d  after each update taken, ema = d_n ema + (1 - d_n) weights in float32,
                         where d_n = min(d, (1 + n) / (10 + n)) after n updates, so that the
                         random weights of the first steps fade in tens of steps, not in
                         1 / (1 - d). It is validated beside the weights and saved as
                         ema-last.safetensors, and as ema.safetensors when its BLEU is the best
                         yet (the rule of the trained weights). The trained weights alone pick
                         model.safetensors and drive early stopping and the plateau schedule:
                         with EMA on, training goes exactly as it would without it.

The EMA is part of the training state, so a resumed run continues it exactly.
"""

from __future__ import annotations

import copy
import json
import math
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from . import checkpoint
from .config import TrainConfig
from .corpus import TrainingCorpus
from .errors import UserError
from .files import atomic_write_bytes, atomic_write_text
from .models import Seq2Seq
from .optim import Updater
from .tokenizer import JOINT_FILE, SRC_FILE, TGT_FILE
from .validation import selection_score, validate

AVERAGE_FILE = "average.json"  # in an averaged run directory: what was averaged


def ema_decay_at(decay: float, updates: int) -> float:
    """The decay of the update that follows `updates` others."""
    return min(decay, (1 + updates) / (10 + updates))


def ema_copy(model: Seq2Seq) -> Seq2Seq:
    """A float32 copy of `model` to hold the average, outside autograd. Made before the model
    is compiled (compile_features puts a compiled function on the instance, which a copy would
    share). cuDNN wants a GRU's weights in one flat buffer, which a copy does not inherit."""
    average = copy.deepcopy(model).float().eval().requires_grad_(False)
    for module in average.modules():
        if isinstance(module, torch.nn.RNNBase):
            module.flatten_parameters()
    return average


class Averages:
    """What a run keeps beside its weights: the last `train.keep_last` validations' weights and
    the EMA (None when train.ema_decay is 0). It wraps validation and saving, so the training
    loop calls `update` after each update taken and needs to know nothing else."""

    def __init__(self, model: Seq2Seq, t: TrainConfig, state: dict[str, Any] | None = None):
        """Made before `model` is compiled; `state`: the training state of a resumed run."""
        self.keep_last, self.decay, self.metric = t.keep_last, t.ema_decay, t.best_metric
        self.ema = ema_copy(model) if self.decay else None
        self.updates, self.best_score = 0, -math.inf  # validation.selection_score
        self.improved = False  # the EMA's score was the best yet at the latest validation
        if self.ema is not None and state is not None:
            self.load_state_dict(state)

    @torch.no_grad()
    def update(self, model: Seq2Seq) -> None:
        """Move the average toward `model`'s weights, after an update was taken."""
        if self.ema is None:
            return
        weight = 1.0 - ema_decay_at(self.decay, self.updates)
        current = [p.detach().float() for p in model.parameters()]
        torch._foreach_lerp_(list(self.ema.parameters()), current, weight)  # one launch on CUDA
        self.updates += 1

    def validate(self, model: Seq2Seq, corpus: TrainingCorpus, t: TrainConfig,
                 device: torch.device, outputs: Path, first: bool,
                 stopping: Callable[[], bool] = lambda: False
                 ) -> tuple[dict[str, Any], list[dict]]:
        """validation.validate of `model`, then of the EMA (its translations beside, in
        ema-step-N.txt): its scores join the others as ema_val_loss, ema_val_bleu and so on,
        and ema_best (its score by train.best_metric is the best yet; at the `first`
        validation, whatever it is)."""
        metrics, samples = validate(model, corpus, t, device, outputs, stopping)
        if self.ema is None:
            return metrics, samples
        scores, _ = validate(self.ema, corpus, t, device, outputs.with_name(f"ema-{outputs.name}"),
                             stopping)
        score = selection_score(scores, self.metric)
        self.improved = first or score > self.best_score  # as in progress.py
        self.best_score = max(self.best_score, score)
        return {**metrics, **{f"ema_{k}": v for k, v in scores.items()},
                "ema_best": self.improved}, samples

    def save_training(self, run_dir: Path, progress: dict[str, Any], model: Seq2Seq,
                      updater: Updater, rng: list[dict[str, Any]], best: bool,
                      extra: dict[str, Any] | None = None) -> None:
        """checkpoint.save_training with the EMA in the training state and its weights beside.
        A save at a validation keeps the weights as step-N.safetensors. Every weights file is
        written before the state (after a crash between the two, the resumed run writes them
        again), and the oldest kept ones beyond train.keep_last are deleted once all is."""
        step = progress["step"]
        kept = self.keep_last > 0 and progress["validated_at"] == step
        if kept:
            checkpoint.save_weights(model, run_dir / checkpoint.kept_name(step))
        if self.ema is not None:
            checkpoint.save_weights(self.ema, run_dir / checkpoint.EMA_LAST_WEIGHTS)
            if self.improved and progress["validated_at"] == step:
                checkpoint.save_weights(self.ema, run_dir / checkpoint.EMA_WEIGHTS)
        extra = dict(extra or {})
        if self.ema is not None:
            extra["ema"] = self.state_dict()
        checkpoint.save_training(run_dir, progress, model, updater, rng, best, extra)
        if kept:
            for _, path in checkpoint.kept_weights(run_dir)[:-self.keep_last]:
                path.unlink()

    def summary(self) -> dict[str, float]:
        """For the end of training: the EMA's best validation score, when there is an EMA."""
        return {"ema_best_score": self.best_score} if self.ema is not None else {}

    def state_dict(self) -> dict[str, Any]:
        return {"weights": self.ema.state_dict(), "updates": self.updates,
                "best_score": self.best_score}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        try:
            ema = state["ema"]
            self.ema.load_state_dict(ema["weights"])
            best = ema["best_score"] if "best_score" in ema else ema["best_bleu"]  # older runs
            self.updates, self.best_score = int(ema["updates"]), float(best)
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise UserError(f"{checkpoint.TRAIN_STATE}: its EMA weights do not match this run "
                            f"({type(e).__name__})") from None


def average_run(run_dir: Path, output: Path | None = None, last: int | None = None,
                best: int | None = None, ema: bool = False) -> tuple[Path, list[Path]]:
    """Write a run directory whose weights are the mean of some of `run_dir`'s kept ones: the
    `last` K, the `best` K by the run's train.best_metric (neither: all kept), or with `ema`
    its best EMA weights. Config and tokenizer are copied, so every command takes it. Returns
    the new directory (default: RUN-lastK, RUN-bestK, RUN-ema) and the files averaged."""
    run_dir = Path(run_dir)
    check_selection(last, best, ema)
    config = checkpoint.read_config(run_dir)[0]  # a one-line error if this is no run directory
    sources = ([ema_weights(run_dir)] if ema
               else choose_checkpoints(run_dir, last, best, config.train.best_metric))
    label = "ema" if ema else f"best{best}" if best else f"last{len(sources)}"
    output = (Path(output) if output
              else run_dir.resolve().with_name(f"{run_dir.resolve().name}-{label}"))
    own = run_dir / checkpoint.BEST_WEIGHTS  # kept weights of another model would not fit it
    weights = mean_weights(sources, own if own.is_file() else None)
    created = make_output_dir(output)
    try:
        for name in (checkpoint.CONFIG_FILE, JOINT_FILE, SRC_FILE, TGT_FILE):
            if (run_dir / name).is_file():
                atomic_write_bytes(output / name, (run_dir / name).read_bytes())
        atomic_write_bytes(output / checkpoint.BEST_WEIGHTS, checkpoint.weights_file(weights))
        atomic_write_text(output / AVERAGE_FILE, json.dumps(
            {"run": str(run_dir.resolve()), "weights": [p.name for p in sources]}) + "\n")
    except BaseException:
        if created:
            shutil.rmtree(output, ignore_errors=True)
        raise
    return output, sources


def check_selection(last: int | None, best: int | None, ema: bool) -> None:
    given = [name for name, chosen in (("--last", last is not None), ("--best", best is not None),
                                       ("--ema", ema)) if chosen]
    if len(given) > 1:
        raise UserError(f"{' and '.join(given)} exclude each other; give one")
    for name, count in (("--last", last), ("--best", best)):
        if count is not None and count < 1:
            raise UserError(f"{name} must be at least 1 (got {count})")


def ema_weights(run_dir: Path) -> Path:
    path = run_dir / checkpoint.EMA_WEIGHTS
    if not path.is_file():
        raise UserError(f"{run_dir}: no {checkpoint.EMA_WEIGHTS}; train with "
                        "--set train.ema_decay=0.999 to keep an average of the weights")
    return path


def choose_checkpoints(run_dir: Path, last: int | None, best: int | None,
                       metric: str = "bleu") -> list[Path]:
    """The kept weights to average, oldest first: the last `last`, the `best` with the best
    validation score by `metric` (ties: the earlier), or all of them."""
    kept = checkpoint.kept_weights(run_dir)
    if not kept:
        raise UserError(f"{run_dir}: no kept checkpoints (step-N.safetensors); train with "
                        "--set train.keep_last=K to keep the last K")
    scores = validation_scores(run_dir, metric) if best else {}
    if best:
        kept = [(step, path) for step, path in kept if step in scores]
    wanted = best or last or len(kept)
    if len(kept) < wanted:
        option, which = ("--best", " with a validation score") if best else ("--last", "")
        raise UserError(f"{run_dir}: {option} {wanted} asks for {wanted} checkpoints, but only "
                        f"{len(kept)} are kept{which} (train.keep_last sets how many)")
    if best:
        kept = sorted(sorted(kept, key=lambda item: (-scores[item[0]], item[0]))[:best])
    return [path for _, path in kept[-wanted:]]


def validation_scores(run_dir: Path, metric: str) -> dict[int, float]:
    """validation.selection_score by step, from the run's metrics.jsonl."""
    path = run_dir / checkpoint.METRICS_FILE
    if not path.is_file():
        raise UserError(f"{run_dir}: no {checkpoint.METRICS_FILE} to rank checkpoints by")
    return {r["step"]: selection_score(r, metric) for _, r in checkpoint.metrics_records(path)
            if r.get("kind") == "validate" and "step" in r and f"val_{metric}" in r}


def mean_weights(paths: list[Path], model: Path | None = None) -> dict[str, torch.Tensor]:
    """The element-wise mean of the weights files `paths`, one tensor at a time, summed in
    float64 and returned in each tensor's own type: the mean of identical weights is those
    weights, and that of two float32 tensors is exact (then rounded once). Each file must hold
    the tensors of `model` (the run's own weights; none: the first file), by name and shape."""
    like = model or paths[0]
    unlike = f"{like}, so not this run's model" if model else f"{like}"
    with ExitStack() as stack:
        files = [stack.enter_context(open_weights(path)) for path in paths]
        reference = stack.enter_context(open_weights(model)) if model else files[0]
        names = sorted(reference.keys())
        for path, f in zip(paths, files):
            if sorted(f.keys()) != names:
                raise UserError(f"{path}: holds other tensors than {unlike}")
        mean = {}
        for name in names:
            shape = list(reference.get_slice(name).get_shape())
            tensors = [f.get_tensor(name) for f in files]
            for path, tensor in zip(paths, tensors):
                if list(tensor.shape) != shape:
                    raise UserError(f"{path}: {name} has shape {list(tensor.shape)}, not "
                                    f"{shape} as in {like}")
            if not tensors[0].is_floating_point():
                mean[name] = tensors[0]
                continue
            total = sum((t.double() for t in tensors[1:]), tensors[0].double())
            mean[name] = (total / len(tensors)).to(tensors[0].dtype)
    return mean


def open_weights(path: Path):
    try:
        return safe_open(path, framework="pt")
    except (SafetensorError, OSError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UserError(f"{path}: unreadable weights ({first})") from None


def make_output_dir(output: Path) -> bool:
    """Create `output`, refusing one that holds files; True when it did not exist before."""
    if output.exists() and not output.is_dir():
        raise UserError(f"-o {output}: a file, not a directory; choose a new directory")
    if output.exists() and any(output.iterdir()):
        raise UserError(f"-o {output}: already holds files; choose a new directory")
    created = not output.exists()
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"-o {output}: cannot create directory ({e.strerror})") from None
    return created
