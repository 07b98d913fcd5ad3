"""The training loop: teacher forcing, label-smoothed cross-entropy, validation, checkpoints.

Each step feeds the decoder the reference prefix (<sos> y1 .. yn, see data.Batch), computes
softmax cross-entropy against y1 .. yn <eos> (with label smoothing, padding ignored), clips the
gradient norm and takes an AdamW step under the learning-rate schedule. Every
`validate_every` steps the model is scored on the validation set (loss, perplexity and BLEU of
greedy translations); the best weights by BLEU are kept. Progress is reported through an
`on_event` callback so that this module knows nothing about how it is displayed.

A run can stop at any moment and go on exactly where it was: the training state holds the
weights, optimizer moments, schedule, random states and the position in the epoch's batches.
SIGINT/SIGTERM finish the current step, save, and raise `TrainingInterrupted`.

Started by torchrun, the same loop trains data-parallel (see distributed.py): each rank takes its
share of every batch, and only rank 0 writes the run directory, validates and reports.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import signal
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import checkpoint, distributed, shards
from .config import (
    RUNS_DIR,
    Config,
    DecodeConfig,
    UserError,
    apply_overrides,
    mixed_precision,
    resolve_device,
)
from .data import EncodedText, ParallelText, encode_parallel, load_split, make_batch, token_batches
from .evaluate import bleu
from .loss import TeacherForcedLoss, output_cross_entropy
from .models import build_model
from .optim import fast_matmuls, make_optimizer, make_scaler, make_scheduler
from .search import translate_ids
from .tokenizer import Tokenizer

Event = dict[str, Any]


class TrainingInterrupted(Exception):
    """Training stopped on a signal after saving its state; `signum` says which."""

    def __init__(self, signum: int, run_dir: Path, step: int):
        super().__init__(f"interrupted at step {step}; resume with: nmt train --resume {run_dir}")
        self.signum, self.run_dir, self.step = signum, run_dir, step


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def new_run_dir(config: Config, runs_dir: Path = Path(RUNS_DIR)) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return runs_dir / f"{stamp}-{config.model.arch}"


def prepare_run_dir(run_dir: Path) -> Path:
    run_dir = Path(run_dir)
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UserError(f"--run {run_dir}: directory already holds files; choose a new one "
                        "or continue it with --resume")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--run {run_dir}: cannot create directory ({e.strerror})") from None
    return run_dir


@dataclass
class Progress:
    step: int = 0  # updates taken
    epoch: int = 0
    batch_in_epoch: int = 0  # index of the next batch of this epoch
    best_bleu: float = -1.0
    bad_validations: int = 0
    bad_steps: int = 0  # consecutive steps with a NaN/inf loss or gradient
    skipped_steps: int = 0
    validated_at: int = -1  # step of the latest validation
    train_time: float = 0.0  # seconds spent training so far


@contextmanager
def stop_signals():
    """Turn the first SIGINT/SIGTERM into a request to stop after the current step; a second
    one stops at once (KeyboardInterrupt). Yields a list that receives the signal number."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    received: list[int] = []

    def handler(signum, frame):
        if received:
            raise KeyboardInterrupt
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class Trainer:
    def __init__(self, config: Config, run_dir: Path, on_event: Callable[[Event], None],
                 state: dict[str, Any] | None = None):
        """A new run, or with `state` (a loaded training state) the continuation of one."""
        resume = state is not None
        device = resolve_device(config.train.device)
        self.world = distributed.init(device.type)
        self.device = distributed.device_for(self.world, device)
        self.config, self.run_dir = config, run_dir
        self.emit = on_event if self.world.is_main else (lambda event: None)
        seed_everything(config.train.seed)
        self.tokenizer, self.train_data, self.val_text, self.val_data = self.load_data(resume)
        self.tgt_lengths = np.asarray(self.train_data.lengths()[1])  # read once, not per step
        if self.world.is_main:
            checkpoint.save_config(run_dir, config, self.tokenizer)
        self.model = build_model(config.model, self.tokenizer.src_vocab_size,
                                 self.tokenizer.tgt_vocab_size, self.tokenizer.joint)
        self.model.to(self.device)
        fast_matmuls(self.device)
        self.ddp = distributed.wrap(TeacherForcedLoss(self.model), self.world, self.device)
        self.loss = torch.compile(self.ddp, dynamic=True) if config.train.compile else self.ddp
        self.optimizer = make_optimizer(self.model, config, self.device)
        self.scheduler = make_scheduler(self.optimizer, config)
        self.scaler = make_scaler(config, self.device)
        self.progress = Progress()
        if resume:
            self.restore(state)
        params = sum(p.numel() for p in self.model.parameters())
        where = f"resuming at step {self.progress.step}" if resume else "starting"
        self.emit({"kind": "info", "message": f"{config.model.arch}: {params:,} parameters "
                   f"on {self.device.type}; {where}; run directory {run_dir}"})

    def load_data(self, resume: bool) -> tuple[Tokenizer, EncodedText, ParallelText, EncodedText]:
        """The tokenizer, encoded training pairs, and validation text and ids. A corpus made
        by `nmt data prepare` brings its tokenizer and is read from its id files."""
        data, data_dir = self.config.data, Path(self.config.data.data_dir)
        prepared = shards.is_prepared(data_dir)
        val_text = load_split(data_dir, "val", data.src_lang, data.tgt_lang)
        if prepared:
            train_text = None
        else:
            train_text = load_split(data_dir, "train", data.src_lang, data.tgt_lang)
            if not any(s.strip() and t.strip() for s, t in zip(train_text.src, train_text.tgt)):
                raise UserError(f"{data.data_dir}: no usable training pairs (every pair has an "
                                "empty side)")
        if not resume and self.world.is_main:  # the other ranks load what rank 0 made
            if prepared:
                shards.copy_tokenizer(data_dir, self.run_dir)
            else:
                Tokenizer.train(train_text.src, train_text.tgt, self.config.tokenizer,
                                self.run_dir)
        self.world.barrier()
        tokenizer = Tokenizer.load(self.run_dir)
        if prepared:
            train = shards.open_prepared(data_dir, data.src_lang, data.tgt_lang)
        else:
            train = encode_parallel(train_text, tokenizer, data.max_len)
            if not train.src:
                raise UserError(f"{data.data_dir}: no usable training pairs (all empty or too "
                                "long)")
        self.emit({"kind": "info", "message": f"train: {len(train.src):,} pairs kept, "
                   f"{train.empty:,} with an empty side skipped, {train.too_long:,} longer than "
                   f"{data.max_len} tokens dropped" + (" (prepared)" if prepared else "")})
        val = encode_parallel(val_text, tokenizer, self.config.model.max_positions)
        return tokenizer, train, val_text, val

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.config.train.seed * 100_003 + epoch)
        return token_batches(*self.train_data.lengths(), self.config.train.batch_tokens,
                             generator)

    def train_step(self, batches: list[list[int]]) -> tuple[float, int]:
        """One update on `batches` (train.accum of them per rank); returns the mean loss per
        target token and the count. A NaN/inf loss or gradient skips the update (the loss
        comes back as NaN)."""
        self.model.train()
        t = self.config.train
        indices = np.concatenate(batches)
        tokens = int(self.tgt_lengths[indices].sum()) + len(indices)  # <eos> included
        mine, counts = self.world.share(batches)
        self.optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=self.device)
        for n, indices in enumerate(mine):
            batch = make_batch(self.train_data, indices).to(self.device)
            last = n == len(mine) - 1  # ranks average their gradients after the last batch
            with self.ddp.no_sync() if self.world.size > 1 and not last else nullcontext():
                with mixed_precision(self.device, t.precision):
                    loss_sum = self.loss(batch.src, batch.tgt_in, batch.tgt_out,
                                         t.teacher_forcing_ratio, t.label_smoothing)
                loss_sum = loss_sum if counts else loss_sum * 0.0
                # DDP averages over N ranks: scaled by N, the average is the whole update's.
                scaled = loss_sum * (self.world.size / tokens)
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
            total += loss_sum.detach()
        loss = self.world.total(total) / tokens
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.clip_norm)
        if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
            if self.scaler:
                self.scaler.update()  # a smaller loss scale next time
            self.optimizer.zero_grad(set_to_none=True)
            return float("nan"), tokens
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if not isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            self.scheduler.step()
        return loss.item(), tokens

    @torch.inference_mode()
    def validate(self) -> dict[str, float]:
        """Loss and perplexity (no label smoothing), and BLEU of greedy translations."""
        self.model.eval()
        total_loss, total_tokens = 0.0, 0
        for indices in token_batches(*self.val_data.lengths(), self.config.train.batch_tokens):
            batch = make_batch(self.val_data, indices).to(self.device)
            with mixed_precision(self.device, self.config.train.precision):
                features = self.model.features(batch.src, batch.tgt_in)
                total_loss += output_cross_entropy(features, self.model.output_proj.weight,
                                                   batch.tgt_out).item()
            total_tokens += batch.num_tgt_tokens
        loss = total_loss / max(total_tokens, 1)
        hypotheses = self.translate(self.val_text.src)
        return {"val_loss": loss, "val_ppl": math.exp(min(loss, 50.0)),
                "val_bleu": bleu(hypotheses, self.val_text.tgt)}

    def translate(self, lines: list[str]) -> list[str]:
        decode = DecodeConfig(beam=1, batch_size=128)
        with mixed_precision(self.device, self.config.train.precision):
            ids = translate_ids(self.model, self.tokenizer.encode_src(lines), decode, self.device)
        return self.tokenizer.decode_tgt(ids)

    def as_run(self) -> checkpoint.Run:
        """The model being trained, as a loaded run (for translating without a reload)."""
        return checkpoint.Run(self.run_dir, self.config, self.tokenizer, self.model.eval())

    def save(self, best: bool) -> None:
        """Write the training state, then the weights; a failed write is reported and the
        previous files stay as they were. Only rank 0 writes."""
        if not self.world.is_main:
            return
        try:
            checkpoint.save_train_state(self.run_dir / checkpoint.TRAIN_STATE, {
                "progress": asdict(self.progress), "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "rng": checkpoint.capture_rng(),
                **({"scaler": self.scaler.state_dict()} if self.scaler else {})})
            checkpoint.save_weights(self.model, self.run_dir / checkpoint.LAST_WEIGHTS)
            if best:
                checkpoint.save_weights(self.model, self.run_dir / checkpoint.BEST_WEIGHTS)
        except OSError as e:
            self.emit({"kind": "warning", "message": f"step {self.progress.step}: could not save "
                       f"a checkpoint ({e.strerror or e}); the previous one is kept"})

    def restore(self, state: dict[str, Any]) -> None:
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            self.progress = Progress(**state["progress"])
            if self.scaler and "scaler" in state:
                self.scaler.load_state_dict(state["scaler"])
            checkpoint.restore_rng(state["rng"])
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise UserError(f"{self.run_dir / checkpoint.TRAIN_STATE}: does not match this run "
                            f"({type(e).__name__})") from None
        if self.world.is_main:
            checkpoint.truncate_metrics(self.run_dir, self.progress.step)

    def write_metrics(self, record: dict[str, Any]) -> None:
        if self.world.is_main:
            checkpoint.append_metrics(self.run_dir, record)

    def validate_and_save(self) -> bool:
        """Validate, keep the best checkpoint; returns True when patience has run out.
        Rank 0 validates; the other ranks wait for its scores."""
        metrics = self.world.from_main(self.validate() if self.world.is_main else None)
        p = self.progress
        p.validated_at = p.step
        improved = metrics["val_bleu"] > p.best_bleu
        if improved:
            p.best_bleu, p.bad_validations = metrics["val_bleu"], 0
        else:
            p.bad_validations += 1
        if isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            self.scheduler.step(metrics["val_bleu"])
        record = {"kind": "validate", "step": p.step, **metrics, "best": improved}
        self.write_metrics(record)  # before the save: see truncate_metrics
        self.save(best=improved)
        self.emit(record)
        patience = self.config.train.patience
        return patience > 0 and p.bad_validations >= patience

    def fraction_done(self, epoch_fraction: float) -> float:
        """How far along the nearest limit (steps, time or epochs) training is, in [0, 1]."""
        t, p = self.config.train, self.progress
        fractions = [p.step / t.max_steps if t.max_steps else 0.0,
                     p.train_time / t.max_time if t.max_time else 0.0,
                     (p.epoch + epoch_fraction) / t.epochs if t.epochs else 0.0]
        return min(max(fractions), 1.0)

    def limit_reached(self) -> bool:
        t, p = self.config.train, self.progress
        return bool((t.max_steps and p.step >= t.max_steps)
                    or (t.max_time and p.train_time >= t.max_time)
                    or (t.epochs and p.epoch >= t.epochs))

    def check_step(self, loss: float) -> None:
        """Count NaN/inf steps; too many in a row end training (the last good state is kept)."""
        p = self.progress
        if math.isfinite(loss):
            p.bad_steps = 0
            return
        p.bad_steps += 1
        p.skipped_steps += 1
        self.write_metrics({"kind": "skipped", "step": p.step, "skipped_steps": p.skipped_steps})
        if p.bad_steps >= self.config.train.max_bad_steps:
            raise UserError(f"training diverged: {p.bad_steps} steps in a row with a NaN/inf "
                            f"loss or gradient (at step {p.step}); the last good checkpoint is "
                            f"in {self.run_dir}; try a lower train.lr")

    def run(self) -> Path:
        with stop_signals() as received:
            self.loop(received)
        if received:
            raise TrainingInterrupted(received[0], self.run_dir, self.progress.step)
        self.emit({"kind": "done", "step": self.progress.step, "best_bleu": self.progress.best_bleu,
                   "run_dir": str(self.run_dir)})
        return self.run_dir

    def loop(self, received: list[int]) -> None:
        p, t = self.progress, self.config.train
        window: deque[tuple[float, int]] = deque(maxlen=20)
        if p.step == 0 and p.batch_in_epoch == 0 and p.epoch == 0:
            self.save(best=False)  # from here on, a stopped run can always be resumed
        started = time.monotonic() - p.train_time
        while not self.limit_reached():
            batches = self.epoch_batches(p.epoch)
            per_update = t.accum * self.world.size
            while p.batch_in_epoch < len(batches):
                update = batches[p.batch_in_epoch : p.batch_in_epoch + per_update]
                loss, tokens = self.train_step(update)
                p.batch_in_epoch += len(update)
                p.train_time = time.monotonic() - started
                if self.world.size > 1:  # stop together; agree on the time for max_time
                    stop, p.train_time = self.world.maximum(float(bool(received)), p.train_time)
                    if stop and not received:
                        received.append(signal.SIGTERM)
                self.check_step(loss)
                if math.isfinite(loss):
                    p.step += 1
                    window.append((p.train_time, tokens))
                    self.log_step(loss, tokens, window, p.batch_in_epoch / len(batches))
                if received:
                    self.save(best=False)
                    return
                if math.isfinite(loss) and p.step % t.validate_every == 0:
                    if self.validate_and_save():
                        self.emit({"kind": "info", "message": "early stopping: no better BLEU "
                                   f"in {t.patience} validations"})
                        return
                if self.limit_reached():
                    break
            else:
                p.epoch, p.batch_in_epoch = p.epoch + 1, 0
        if p.validated_at != p.step:
            self.validate_and_save()

    def log_step(self, loss: float, tokens: int, window, epoch_fraction: float) -> None:
        p = self.progress
        span = window[-1][0] - window[0][0]
        speed = sum(n for _, n in list(window)[1:]) / span if span > 0 else 0.0
        record = {"kind": "step", "step": p.step, "epoch": p.epoch + 1, "loss": loss,
                  "lr": self.optimizer.param_groups[0]["lr"], "tokens": tokens,
                  "tokens_per_s": speed, "elapsed": p.train_time}
        self.write_metrics(record)
        self.emit({**record, "fraction": self.fraction_done(epoch_fraction)})


def train(config: Config, run_dir: Path | None = None,
          on_event: Callable[[Event], None] | None = None) -> Path:
    """Train a model as `config` says; returns the run directory."""
    world = distributed.init(resolve_device(config.train.device).type)
    run_dir = Path(world.from_main(str(run_dir or new_run_dir(config))))
    created = not run_dir.exists()
    if world.is_main:
        prepare_run_dir(run_dir)
    world.barrier()
    try:
        trainer = Trainer(config, run_dir, on_event or (lambda event: None))
    except BaseException:  # bad data or device: leave no half-made run behind
        if created and world.is_main:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return trainer.run()


def resume(run_dir: Path, overrides: dict[str, Any] | None = None,
           on_event: Callable[[Event], None] | None = None) -> Path:
    """Continue a run from its training state; `overrides` may change e.g. its limits."""
    run_dir = Path(run_dir)
    if not (run_dir / checkpoint.TRAIN_STATE).is_file():
        raise UserError(f"--resume {run_dir}: no {checkpoint.TRAIN_STATE} to resume from")
    config, _ = checkpoint.read_config(run_dir)
    config = apply_overrides(config, overrides or {})
    state = checkpoint.load_train_state(run_dir / checkpoint.TRAIN_STATE)
    if int(os.environ.get("RANK", "0")) == 0:
        for leftover in run_dir.glob(".*.tmp"):  # a write cut short by a crash
            leftover.unlink()
    return Trainer(config, run_dir, on_event or (lambda event: None), state).run()
