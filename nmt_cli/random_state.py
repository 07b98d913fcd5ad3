"""Every random generator a training run draws from: seeding, and saving and restoring their
states so that a resumed run draws exactly what an uninterrupted one would have.

Saved are Python's, NumPy's and torch's CPU generator, and the generator of the device that
trains (CUDA or MPS) alone: not every visible GPU's, so that a run saved on cuda:3 of an 8-GPU
machine resumes on the cuda:0 of a 1-GPU machine with the same stream. A run saved on one kind
of device and resumed on another keeps its CPU streams; the new device's generator starts from
the seed. States are tensors and plain data, loadable with torch.load(weights_only=True).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # seeds every device's generator too


def capture_rng(device: torch.device) -> dict[str, Any]:
    """The random states of this process, with the generator of `device`."""
    version, internal, gauss = random.getstate()
    _, keys, pos, has_gauss, cached = np.random.get_state()
    state = {"python": (version, list(internal), gauss), "torch": torch.get_rng_state(),
             "numpy": (torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached)}
    if device.type == "cuda":
        state["device"] = ("cuda", torch.cuda.get_rng_state(device))
    elif device.type == "mps":
        state["device"] = ("mps", torch.mps.get_rng_state())
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    """Restore states saved by `capture_rng`; the device generator only on the same kind of
    device, whatever its index."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state(("MT19937", keys.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    kind, device_state = state.get("device", (None, None))
    if kind != device.type:
        return
    if kind == "cuda":
        torch.cuda.set_rng_state(device_state, device)
    elif kind == "mps":
        torch.mps.set_rng_state(device_state)


def rng_of_rank(saved: list[dict[str, Any]] | dict[str, Any], rank: int) -> dict[str, Any]:
    """A rank's saved states; with more ranks now than then, the extra ranks take rank 0's
    (only the same number of ranks resumes exactly). An older single state serves all."""
    if isinstance(saved, dict):
        return saved
    return saved[rank] if rank < len(saved) else saved[0]
