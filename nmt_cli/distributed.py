"""Data-parallel training over several processes with torch.distributed, started by torchrun.

    torchrun --nproc_per_node=N -m nmt_cli train ...      (one machine, N processes)
    torchrun --nnodes=M --nproc_per_node=N --rdzv-backend=c10d --rdzv-endpoint=HOST:PORT \\
        -m nmt_cli train ...                              (M machines)

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE for each process. Every process (rank) holds a
copy of the model. The epoch's list of token-count batches is the same for any number of ranks
N; an update takes N x train.accum consecutive batches, and rank r trains on batches r, r + N,
... of them. DistributedDataParallel averages the gradients during the backward pass, so all
copies take the same update, the one a single process would take with train.accum multiplied
by N. Rank 0 alone writes the run directory and validates; the others wait for its result.
NCCL connects GPUs, gloo CPUs.
"""

from __future__ import annotations

import inspect
import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

TIMEOUT = timedelta(minutes=30)  # longest wait for another rank (validation included)


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, batches: list[Any]) -> tuple[list[Any], bool]:
        """This rank's batches of an update, and whether they count. When an epoch's last
        update has fewer batches than ranks, a rank left without one runs the first with no
        weight (False), so that every rank still joins the gradient averaging."""
        mine = batches[self.rank :: self.size]
        return (mine, True) if mine else (batches[:1], False)

    def no_sync(self, module: torch.nn.Module, last: bool):
        """While accumulating (not the `last` batch of an update), DDP keeps its gradients
        local; the last batch's backward pass averages them over the ranks."""
        return module.no_sync() if self.size > 1 and not last else nullcontext()

    def barrier(self) -> None:
        if self.size > 1:
            dist.barrier()

    def from_main(self, value: Any) -> Any:
        """Rank 0's `value`, on every rank."""
        if self.size == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's `value`, in rank order, on rank 0 (None on the others)."""
        if self.size == 1:
            return [value]
        values = [None] * self.size if self.is_main else None
        dist.gather_object(value, values, dst=0)
        return values

    def everyones(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank."""
        if self.size == 1:
            return [value]
        values: list[Any] = [None] * self.size
        dist.all_gather_object(values, value)
        return values

    def maximum(self, *values: float) -> list[float]:
        """Element-wise maximum over ranks (e.g. of a stop flag and the elapsed time)."""
        if self.size == 1:
            return list(values)
        tensor = torch.tensor(values, dtype=torch.float64, device=self.collective_device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return tensor.tolist()

    def total(self, value: torch.Tensor) -> torch.Tensor:
        """Sum of a scalar tensor over ranks."""
        if self.size > 1:
            value = value.detach().clone()
            dist.all_reduce(value)
        return value

    @property
    def collective_device(self) -> torch.device:
        """NCCL reduces tensors on GPUs; gloo on the CPU."""
        return self.device if self.device.type == "cuda" else torch.device("cpu")


def launched_rank() -> int:
    """This process's rank as torchrun launched it (0 without torchrun), known before the
    process group is joined."""
    return int(os.environ.get("RANK", "0"))


def init(device: torch.device) -> World:
    """Join the process group that torchrun describes; a lone process gets World(device=...).
    On CUDA each rank first takes the GPU of its local rank, before any collective runs, so
    that no two ranks share cuda:0."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World(device=device)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device.type == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", timeout=TIMEOUT,
                                device_id=device if device.type == "cuda" else None)
    return World(dist.get_rank(), dist.get_world_size(), local_rank, device)


def wrap(module: torch.nn.Module, world: World) -> torch.nn.Module:
    """DistributedDataParallel around `module` when there are several ranks."""
    if world.size == 1:
        return module
    from torch.nn.parallel import DistributedDataParallel

    ids = [world.device.index] if world.device.type == "cuda" else None
    # The only buffers (positional encodings) never change: no need to send them each step.
    # (newer releases of torch renamed the option, and warn at the old name)
    renamed = "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters
    return DistributedDataParallel(module, device_ids=ids, **{
        "forward_sync_buffers" if renamed else "broadcast_buffers": False})


def leave(world: World) -> None:
    """Leave the process group together: wait for every rank, then tear it down. A rank that
    exits while another still talks to it can make that one abort."""
    if world.size > 1 and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
