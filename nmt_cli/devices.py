"""Where tensors live and in which precision the matrix products run."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .config import DEVICES, PRECISIONS, check_choice
from .errors import UserError


def resolve_device(name: str) -> torch.device:
    """'auto' picks cuda, then mps, then cpu; an explicit device must be available."""
    check_choice("device", name, DEVICES)
    if name == "auto":
        if torch.cuda.is_available():
            name = "cuda"
        elif torch.backends.mps.is_available():
            name = "mps"
        else:
            name = "cpu"
    elif name == "cuda" and not torch.cuda.is_available():
        raise UserError("--device cuda: no CUDA device is available")
    elif name == "mps" and not torch.backends.mps.is_available():
        raise UserError("--device mps: MPS is not available")
    return torch.device(name)


def autocast_dtype(device: torch.device, precision: str) -> torch.dtype | None:
    """The autocast type `precision` asks for on `device`, or None for float32. 'auto' is bf16
    on CUDA (fp16 on GPUs without bf16) and float32 elsewhere."""
    check_choice("precision", precision, PRECISIONS)
    if precision == "auto" and device.type == "cuda":
        precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


def mixed_precision(device: torch.device, precision: str):
    """An autocast context where `precision` asks for one, else a no-op. Matrix products then
    run in bf16/fp16 (fast on GPUs, and bf16 on CPUs with AMX/AVX-512 bf16); weights, softmax,
    norms and the loss stay in float32."""
    dtype = autocast_dtype(device, precision)
    return torch.autocast(device.type, dtype=dtype) if dtype else contextlib.nullcontext()


def matmul_dtype(x: torch.Tensor) -> torch.dtype:
    """The type of a matrix product of x: autocast's where it is on, else x's own."""
    device = x.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype


def matmul_input(x: torch.Tensor) -> torch.Tensor:
    """x in the type of its matrix products, cast once for all of them. Under autocast each
    product casts its float32 input anew (and casts its gradient back), so an input that
    several products read, such as a LayerNorm's output that feeds the query, key and value
    projections, is cast here instead."""
    return x.to(matmul_dtype(x))


ROW_BLOCK = 1024  # rows of a bf16 matrix product on a CPU with AMX come in multiples of this


@functools.cache
def has_amx() -> bool:
    """Whether this CPU has AMX tiles (Intel Xeon since Sapphire Rapids), by torch's own probe."""
    probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    return bool(probe and probe())


def pads_rows(x: torch.Tensor) -> bool:
    """Whether products of x run in bf16 on a CPU with AMX, outside torch.compile: there
    oneDNN compiles a kernel for each new product shape (10-13 ms for 3,000 x 256 by
    256 x 1,024 on a Xeon, against 2-3 ms to run it) and keeps 32 (before_torch.py), while
    batches of varying length bring new shapes every step: 42 compilations, 160-250 ms of a
    1.2 s Transformer step. Rows padded to a multiple of ROW_BLOCK give each product two or
    three shapes, compiled once: compiling fell to about 50 ms a step, and the step ran 4-12%
    faster in three paired measurements (bench/RESULTS.md). Without AMX compiling is cheap,
    float32 products included (`onednn_float32`): padding would only add work there."""
    return (x.device.type == "cpu" and matmul_dtype(x) == torch.bfloat16 and has_amx()
            and not torch.compiler.is_compiling())


def in_row_blocks(position_wise, x: torch.Tensor) -> torch.Tensor:
    """position_wise(x) for a function of each row (position) of x on its own, or a linear
    layer (run by `linear`); in training, where `pads_rows`, x's rows are zero-padded to a
    multiple of ROW_BLOCK first and the padding is cut from the output. Only training was
    measured, so decoding (no gradients) is left as it was."""
    if isinstance(position_wise, nn.Linear):
        position_wise = functools.partial(linear, position_wise)
    if not torch.is_grad_enabled() or not pads_rows(x):  # before any test of x's shape,
        return position_wise(x)  # which torch.compile would turn into guards
    rows = x.numel() // x.size(-1)
    if rows <= ROW_BLOCK or rows % ROW_BLOCK == 0:
        return position_wise(x)
    padded = F.pad(x.reshape(rows, x.size(-1)), (0, 0, 0, -rows % ROW_BLOCK))
    out = position_wise(padded)[:rows]
    return out.reshape(*x.shape[:-1], out.size(-1))


@functools.cache
def onednn_float32() -> bool:
    """Whether float32 products on this CPU go through oneDNN instead of MKL: on AMD CPUs. torch
    calls MKL for float32 products on x86; on a 2-core AMD EPYC, whose MKL log names no AVX-512
    code path, oneDNN (which torch ships for its bf16 products) ran the forward and input-
    gradient products of a Transformer step 1.2-1.8x faster, and the step 6% faster; MKL stays
    faster for weight gradients (bench/RESULTS.md). Other CPUs keep MKL: only this was measured."""
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn,
                                                                "_linear_pointwise"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return any("AuthenticAMD" in line for line in cpuinfo if line.startswith("vendor"))
    except OSError:
        return False


def onednn_products(x: torch.Tensor) -> bool:
    """Whether the float32 products of x run through oneDNN (`onednn_float32`)."""
    return (x.device.type == "cpu" and matmul_dtype(x) == torch.float32
            and not torch.compiler.is_compiling() and onednn_float32())


def times_transposed(a: torch.Tensor, w: torch.Tensor,
                     bias: torch.Tensor | None = None) -> torch.Tensor:
    """a W^T (+ bias) for a (rows, k) and W (n, k): a linear layer's product. oneDNN reads a
    transposed W (W = Vᵀ for a product a V) where it lies, as fast as a contiguous one; a
    contiguous copy of each weight's transpose took 15 ms of a 1.3 s float32 step."""
    if onednn_products(a):
        return torch.ops.mkldnn._linear_pointwise(a, w, bias, "none", [], "")
    return F.linear(a, w, bias)


class _Linear(torch.autograd.Function):
    """y = x W^T + b with its products through oneDNN; the weight gradient through MKL."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        rows = x.reshape(-1, x.size(-1)).contiguous()
        ctx.save_for_backward(rows, weight)
        ctx.has_bias, ctx.input_shape = bias is not None, x.shape
        return times_transposed(rows, weight, bias).view(*x.shape[:-1], weight.size(0))

    @staticmethod
    def backward(ctx, grad):
        rows, weight = ctx.saved_tensors
        grad = grad.reshape(-1, grad.size(-1)).contiguous()
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:  # dL/dx = g W
            grad_x = times_transposed(grad, weight.t()).view(ctx.input_shape)
        if ctx.needs_input_grad[1]:  # dL/dW = gᵀ x
            grad_w = grad.t() @ rows
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = grad.sum(0)
        return grad_x, grad_w, grad_b


def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """layer(x), with its products through oneDNN in float32 training where
    `onednn_float32`. Decoding keeps torch's own path: only training was measured."""
    if torch.is_grad_enabled() and onednn_products(x):
        return _Linear.apply(x, layer.weight, layer.bias)
    return layer(x)


def stacked_linear(layers: Sequence[nn.Linear], x: torch.Tensor) -> torch.Tensor:
    """The outputs of several linear layers of x side by side, as one product of x with their
    weights stacked; in training, through oneDNN where `linear` would be."""
    weight = torch.cat([layer.weight for layer in layers])
    bias = torch.cat([layer.bias for layer in layers])
    if onednn_products(x):
        return _Linear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


def fast_kernels(device: torch.device) -> None:
    """For training and decoding on NVIDIA GPUs: TF32 matrix products for float32 work
    (Ampere and later; cuDNN's RNNs use TF32 by default), and no cuDNN attention. cuDNN
    builds an attention plan for every new sequence length, about 10 ms of CPU time per call
    on an H200, and batches of varying length meet new lengths all the time; PyTorch's flash
    and memory-efficient kernels need no plan."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
        torch.backends.cuda.enable_cudnn_sdp(False)


# glibc's malloc settings (mallopt): allocations of at least M_MMAP_THRESHOLD bytes get pages
# of their own from the kernel; free memory at the top of the heap past M_TRIM_THRESHOLD bytes
# goes back to it.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 2**20  # the most that glibc accepts on 64-bit systems
TRIM_THRESHOLD = 2**30


def keep_freed_memory() -> bool:
    """Have the C allocator keep the memory that a CPU training step frees, for the next step.
    By default glibc hands large blocks (a float32 Transformer step frees tens of MB of
    activations and logits) back to the kernel, and the next step takes them again page by
    page: 4,000-30,000 page faults a step, each page zeroed by the kernel. With allocations of up
    to 32 MB taken from the heap and up to 1 GB of it kept, a step faults a few hundred times
    and float32 training ran 0.6-10% faster on a 2-core Intel Xeon in nine pairs of runs (3.4%
    in the median; bench/RESULTS.md) at the same peak memory: what is kept was in use at the
    peak. The setting holds for the whole process. Returns whether it was made (glibc only)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):  # no dynamic C library, or not glibc's (macOS)
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


def without_triton(device: torch.device) -> None:
    """Keep Triton, the GPU kernel compiler that PyTorch's CUDA build installs, out of a CPU
    process. Building any torch optimizer imports torch._dynamo (its methods are guarded
    against torch.compile), and that imports Triton whenever it is installed: 80 MB of a
    2-core Transformer training process's 1.6 GB peak with torch 2.13.0+cu130, for nothing,
    since torch.compile on the CPU generates C++ (bench/RESULTS.md). Marked absent, as in the
    CPU build. Once imported, it stays."""
    if device.type == "cpu" and "triton" not in sys.modules:
        sys.modules["triton"] = None  # `import triton` now raises ImportError
