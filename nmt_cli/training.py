"""The training loop: teacher forcing, label-smoothed cross-entropy, validation, checkpoints.

Each step feeds the decoder the reference prefix (<sos> y1 .. yn, see data.Batch), computes
softmax cross-entropy against y1 .. yn <eos> (with label smoothing, padding ignored), clips the
gradient norm and takes an AdamW step under the learning-rate schedule. Every
`validate_every` steps the model is scored on the validation set (loss, perplexity and BLEU of
greedy translations); the best weights by BLEU are kept. Progress is reported through an
`on_event` callback so that this module knows nothing about how it is displayed.
"""

from __future__ import annotations

import math
import random
import shutil
import time
from collections import deque
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import checkpoint
from .config import RUNS_DIR, Config, DecodeConfig, UserError, resolve_device
from .data import EncodedText, ParallelText, encode_parallel, load_split, make_batch, token_batches
from .evaluate import bleu
from .models import build_model
from .search import translate_ids
from .tokenizer import PAD_ID, Tokenizer

Event = dict[str, Any]


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
        raise UserError(f"--run {run_dir}: directory already holds files; choose a new one")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--run {run_dir}: cannot create directory ({e.strerror})") from None
    return run_dir


def lr_factor(step: int, schedule: str, warmup_steps: int) -> float:
    """Multiplier of the peak learning rate at `step` (0-based)."""
    if schedule != "inverse_sqrt":
        return 1.0
    step, warmup = step + 1, max(warmup_steps, 1)
    return min(step / warmup, math.sqrt(warmup / step))  # linear warmup, then 1/sqrt(step)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config):
    if config.train.schedule == "plateau":  # halve the rate when validation BLEU stalls
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="max", factor=config.train.plateau_factor,
            patience=config.train.plateau_patience)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, config.train.schedule, config.train.warmup_steps))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, label_smoothing: float = 0.0):
    """Summed softmax cross-entropy over non-pad targets: logits (batch, len, vocab)."""
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1),
                           ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum")


@dataclass
class Progress:
    step: int = 0
    epoch: int = 0
    best_bleu: float = -1.0
    bad_validations: int = 0
    skipped_steps: int = 0
    train_time: float = 0.0  # seconds spent training so far


class Trainer:
    def __init__(self, config: Config, run_dir: Path, on_event: Callable[[Event], None]):
        self.config, self.run_dir, self.emit = config, run_dir, on_event
        self.device = resolve_device(config.train.device)
        seed_everything(config.train.seed)
        self.tokenizer, self.train_data, self.val_text, self.val_data = self.load_data()
        checkpoint.save_config(run_dir, config, self.tokenizer)
        self.model = build_model(config.model, self.tokenizer.src_vocab_size,
                                 self.tokenizer.tgt_vocab_size, self.tokenizer.joint)
        self.model.to(self.device)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=config.train.lr,
            betas=(config.train.adam_beta1, config.train.adam_beta2), eps=config.train.adam_eps,
            weight_decay=config.train.weight_decay)
        self.scheduler = make_scheduler(self.optimizer, config)
        self.progress = Progress()
        self.autocast = (torch.autocast("cuda", dtype=torch.bfloat16)
                         if self.device.type == "cuda" else nullcontext())
        params = sum(p.numel() for p in self.model.parameters())
        self.emit({"kind": "info", "message": f"{config.model.arch}: {params:,} parameters "
                   f"on {self.device.type}; run directory {run_dir}"})

    def load_data(self) -> tuple[Tokenizer, EncodedText, ParallelText, EncodedText]:
        data = self.config.data
        train_text = load_split(Path(data.data_dir), "train", data.src_lang, data.tgt_lang)
        val_text = load_split(Path(data.data_dir), "val", data.src_lang, data.tgt_lang)
        if not any(s.strip() and t.strip() for s, t in zip(train_text.src, train_text.tgt)):
            raise UserError(f"{data.data_dir}: no usable training pairs (every pair has an "
                            "empty side)")
        tokenizer = Tokenizer.train(train_text.src, train_text.tgt, self.config.tokenizer,
                                    self.run_dir)
        train = encode_parallel(train_text, tokenizer, data.max_len)
        if not train.src:
            raise UserError(f"{data.data_dir}: no usable training pairs (all empty or too long)")
        self.emit({"kind": "info", "message": f"train: {len(train.src):,} pairs kept, "
                   f"{train.empty:,} with an empty side skipped, {train.too_long:,} longer than "
                   f"{data.max_len} tokens dropped"})
        val = encode_parallel(val_text, tokenizer, self.config.model.max_positions)
        return tokenizer, train, val_text, val

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        generator = torch.Generator().manual_seed(self.config.train.seed * 100_003 + epoch)
        return token_batches([len(s) for s in self.train_data.src],
                             [len(t) for t in self.train_data.tgt],
                             self.config.train.batch_tokens, generator)

    def train_step(self, indices: list[int]) -> tuple[float, int]:
        """One update on one batch; returns the mean loss per target token and the count."""
        self.model.train()
        batch = make_batch(self.train_data, indices).to(self.device)
        tokens = batch.num_tgt_tokens
        with self.autocast:
            logits = self.model(batch.src, batch.tgt_in, self.config.train.teacher_forcing_ratio)
        loss = cross_entropy(logits, batch.tgt_out, self.config.train.label_smoothing) / tokens
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                                   self.config.train.clip_norm)
        if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
            self.progress.skipped_steps += 1  # a NaN/inf step must not touch the weights
            return float("nan"), tokens
        self.optimizer.step()
        if not isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            self.scheduler.step()
        return loss.item(), tokens

    @torch.inference_mode()
    def validate(self) -> dict[str, float]:
        """Loss and perplexity (no label smoothing), and BLEU of greedy translations."""
        self.model.eval()
        total_loss, total_tokens = 0.0, 0
        for indices in token_batches([len(s) for s in self.val_data.src],
                                     [len(t) for t in self.val_data.tgt],
                                     self.config.train.batch_tokens):
            batch = make_batch(self.val_data, indices).to(self.device)
            with self.autocast:
                logits = self.model(batch.src, batch.tgt_in)
            total_loss += cross_entropy(logits, batch.tgt_out).item()
            total_tokens += batch.num_tgt_tokens
        loss = total_loss / max(total_tokens, 1)
        hypotheses = self.translate(self.val_text.src)
        return {"val_loss": loss, "val_ppl": math.exp(min(loss, 50.0)),
                "val_bleu": bleu(hypotheses, self.val_text.tgt)}

    def translate(self, lines: list[str]) -> list[str]:
        decode = DecodeConfig(beam=1, batch_size=128)
        with self.autocast:
            ids = translate_ids(self.model, self.tokenizer.encode_src(lines), decode, self.device)
        return self.tokenizer.decode_tgt(ids)

    def as_run(self) -> checkpoint.Run:
        """The model being trained, as a loaded run (for translating without a reload)."""
        return checkpoint.Run(self.run_dir, self.config, self.tokenizer, self.model.eval())

    def save(self, best: bool) -> None:
        checkpoint.save_weights(self.model, self.run_dir / checkpoint.LAST_WEIGHTS)
        if best:
            checkpoint.save_weights(self.model, self.run_dir / checkpoint.BEST_WEIGHTS)
        checkpoint.save_train_state(self.run_dir / checkpoint.TRAIN_STATE, self.train_state())

    def train_state(self) -> dict[str, Any]:
        p = self.progress
        return {
            "step": p.step, "epoch": p.epoch, "best_bleu": p.best_bleu,
            "bad_validations": p.bad_validations, "skipped_steps": p.skipped_steps,
            "train_time": p.train_time,
            "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
            "rng": {"python": list(random.getstate()[1]), "torch": torch.get_rng_state(),
                    "numpy": torch.from_numpy(np.random.get_state()[1].astype(np.int64))},
        }

    def validate_and_save(self) -> bool:
        """Validate, keep the best checkpoint; returns True when patience has run out."""
        metrics = self.validate()
        p = self.progress
        improved = metrics["val_bleu"] > p.best_bleu
        if improved:
            p.best_bleu, p.bad_validations = metrics["val_bleu"], 0
        else:
            p.bad_validations += 1
        if isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            self.scheduler.step(metrics["val_bleu"])
        self.save(best=improved)
        record = {"kind": "validate", "step": p.step, **metrics, "best": improved}
        checkpoint.append_metrics(self.run_dir, record)
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

    def run(self) -> Path:
        p, t = self.progress, self.config.train
        window: deque[tuple[float, int]] = deque(maxlen=20)
        started = time.monotonic() - p.train_time
        validated_at = -1
        while not self.limit_reached():
            batches = self.epoch_batches(p.epoch)
            for i, indices in enumerate(batches):
                loss, tokens = self.train_step(indices)
                p.step += 1
                p.train_time = time.monotonic() - started
                window.append((p.train_time, tokens))
                span = window[-1][0] - window[0][0]
                speed = sum(n for _, n in list(window)[1:]) / span if span > 0 else 0.0
                lr = self.optimizer.param_groups[0]["lr"]
                record = {"kind": "step", "step": p.step, "epoch": p.epoch + 1, "loss": loss,
                          "lr": lr, "tokens": tokens, "tokens_per_s": speed,
                          "elapsed": p.train_time}
                checkpoint.append_metrics(self.run_dir, record)
                self.emit({**record, "fraction": self.fraction_done((i + 1) / len(batches))})
                stop = False
                if p.step % t.validate_every == 0:
                    stop, validated_at = self.validate_and_save(), p.step
                if stop or self.limit_reached():
                    break
            else:
                p.epoch += 1
                continue
            if stop:
                self.emit({"kind": "info", "message": f"early stopping: no better BLEU in "
                           f"{t.patience} validations"})
            break
        if validated_at != p.step:
            self.validate_and_save()
        self.emit({"kind": "done", "step": p.step, "best_bleu": p.best_bleu,
                   "run_dir": str(self.run_dir)})
        return self.run_dir


def train(config: Config, run_dir: Path | None = None,
          on_event: Callable[[Event], None] | None = None) -> Path:
    """Train a model as `config` says; returns the run directory."""
    run_dir = Path(run_dir or new_run_dir(config))
    created = not run_dir.exists()
    prepare_run_dir(run_dir)
    try:
        trainer = Trainer(config, run_dir, on_event or (lambda event: None))
    except BaseException:  # bad data or device: leave no half-made run behind
        if created:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return trainer.run()
