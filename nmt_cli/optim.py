"""The optimizer, the learning-rate schedule, and the gradient scaler of fp16 training."""

from __future__ import annotations

import math

import torch

from .config import Config, autocast_dtype


def lr_factor(step: int, schedule: str, warmup_steps: int) -> float:
    """Multiplier of the peak learning rate at `step` (0-based)."""
    if schedule != "inverse_sqrt":
        return 1.0
    step, warmup = step + 1, max(warmup_steps, 1)
    return min(step / warmup, math.sqrt(warmup / step))  # linear warmup, then 1/sqrt(step)


def make_optimizer(model: torch.nn.Module, config: Config,
                   device: torch.device) -> torch.optim.Optimizer:
    """AdamW; on CUDA its fused kernel updates all parameters in one launch."""
    t = config.train
    return torch.optim.AdamW(model.parameters(), lr=t.lr, betas=(t.adam_beta1, t.adam_beta2),
                             eps=t.adam_eps, weight_decay=t.weight_decay,
                             fused=device.type == "cuda" or None)


def make_scheduler(optimizer: torch.optim.Optimizer, config: Config):
    if config.train.schedule == "plateau":  # lower the rate when validation BLEU stalls
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer, mode="max", factor=config.train.plateau_factor,
            patience=config.train.plateau_patience)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_factor(step, config.train.schedule, config.train.warmup_steps))


def make_scaler(config: Config, device: torch.device) -> torch.amp.GradScaler | None:
    """fp16 gradients underflow without loss scaling; bf16 and float32 need none."""
    if autocast_dtype(device, config.train.precision) == torch.float16:
        return torch.amp.GradScaler(device.type)
    return None


def fast_matmuls(device: torch.device) -> None:
    """TF32 matrix products for float32 work on NVIDIA GPUs (Ampere and later)."""
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
