"""The optimizer, the learning-rate schedule, the gradient scaler of fp16 training, and the
Updater that applies them."""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from typing import Any

import torch

from .config import Config
from .devices import autocast_dtype, without_triton


def lr_factor(step: int, schedule: str, warmup_steps: int, done: float = 0.0) -> float:
    """Multiplier of the peak learning rate at `step` (0-based), with the fraction `done` of
    the training budget (steps, time or epochs, whichever runs out first) spent."""
    step, warmup = step + 1, max(warmup_steps, 1)
    if schedule == "inverse_sqrt":
        return min(step / warmup, math.sqrt(warmup / step))  # linear warmup, then 1/sqrt(step)
    if schedule == "linear":  # linear warmup, then down in a straight line to 0 at the budget
        return max(min(step / warmup, 1.0 - done), 0.0)
    return 1.0


FUSED_ADAMW = ("cuda", "cpu")  # devices where AdamW runs its fused kernel


def make_optimizer(model: torch.nn.Module, config: Config,
                   device: torch.device) -> torch.optim.Optimizer:
    """AdamW with its fused kernel on CUDA (all parameters in one launch) and on the CPU (one
    pass over each parameter's memory: the update 3.5x faster than the loop over tensors on
    two cores, bench/RESULTS.md)."""
    t = config.train
    without_triton(device)  # AdamW's first call imports torch._dynamo
    return torch.optim.AdamW(model.parameters(), lr=t.lr, betas=(t.adam_beta1, t.adam_beta2),
                             eps=t.adam_eps, weight_decay=t.weight_decay,
                             fused=device.type in FUSED_ADAMW or None)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config,
                   done: Callable[[], float] = lambda: 0.0):
    """The schedule of the rate; `done` tells the linear one how much of the budget is spent."""
    t = config.train
    if t.schedule == "plateau":  # lower the rate when train.best_metric stalls on validation
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="min" if t.best_metric == "loss" else "max",
            factor=t.plateau_factor, patience=t.plateau_patience)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, t.schedule, t.warmup_steps, done()))


def make_scaler(config: Config, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 gradients underflow without loss scaling; bf16 and float32 need none."""
    if autocast_dtype(device, config.train.precision) == torch.float16:
        return torch.amp.GradScaler(device.type)
    return None



class Step(Enum):
    """What became of an update."""

    TAKEN = "taken"
    NOT_FINITE = "not finite"  # a NaN/inf loss or gradient: skipped, counts toward divergence
    OVERFLOW = "fp16 overflow"  # fp16 gradients overflowed: skipped, the loss scale shrinks


# Optimizer flags that describe the machine, not the run: kept as built for this device when a
# state saved elsewhere is loaded (a run saved where AdamW was not fused resumes fused here).
DEVICE_FLAGS = ("fused", "foreach", "capturable", "differentiable")


class Updater:
    """Turns a loss into a parameter update: backward (scaled for fp16), gradient clipping,
    the AdamW step, and the schedule. A NaN/inf loss or gradient skips the update."""

    def __init__(self, model: torch.nn.Module, config: Config, device: torch.device):
        self.parameters = list(model.parameters())
        self.clip_norm = config.train.clip_norm or math.inf  # 0: not clipped (norm still read)
        self.optimizer = make_optimizer(model, config, device)
        self.done = 0.0  # the fraction of the training budget spent, set by the Trainer
        self.scheduler = make_scheduler(self.optimizer, config, lambda: self.done)
        self.scaler = make_scaler(config, device)
        self.steps_on_validation = isinstance(
            self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        self.last_lr = self.lr

    @property
    def lr(self) -> float:
        """The rate of the next update."""
        return self.optimizer.param_groups[0]["lr"]

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def step(self, loss: torch.Tensor) -> tuple[Step, float]:
        """Clip and apply the accumulated gradients unless `loss` or the gradient norm is not
        finite. Returns what happened and the loss, read from the device once."""
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.parameters, self.clip_norm)
        loss_value, norm = torch.stack([loss.float(), grad_norm.float()]).tolist()  # one sync
        if not (math.isfinite(loss_value) and math.isfinite(norm)):
            if self.scaler:
                self.scaler.update()  # a smaller loss scale next time
            self.zero_grad()
            overflow = self.scaler is not None and math.isfinite(loss_value)
            return (Step.OVERFLOW if overflow else Step.NOT_FINITE), loss_value
        self.last_lr = self.lr  # the rate of this update, logged with it: the schedule moves on
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        if not self.steps_on_validation:
            self.scheduler.step()
        return Step.TAKEN, loss_value

    def validated(self, value: float) -> None:
        """The plateau schedule lowers the rate when the validation's value of
        train.best_metric stalls (a BLEU or chrF that stops rising, a loss that stops
        falling)."""
        if self.steps_on_validation:
            self.scheduler.step(value)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                **({"scaler": self.scaler.state_dict()} if self.scaler else {})}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        built = [{k: g[k] for k in DEVICE_FLAGS if k in g} for g in self.optimizer.param_groups]
        self.optimizer.load_state_dict(state["optimizer"])
        for group, flags in zip(self.optimizer.param_groups, built):
            group.update(flags)
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler and "scaler" in state:
            self.scaler.load_state_dict(state["scaler"])
