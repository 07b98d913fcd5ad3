"""The device-dependent parts, checked on the CPU: CUDA calls are recorded by fakes."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist

from nmt_cli import before_torch, devices, distributed
from nmt_cli.config import Config, apply_overrides
from nmt_cli.loss import SLICE_ELEMENTS, rows_per_slice
from nmt_cli.optim import Step, Updater
from nmt_cli.progress import TrainingProgress
from nmt_cli.random_state import capture_rng, restore_rng, rng_of_rank

from conftest import NEEDS_ONEDNN


def test_importing_nmt_sizes_the_onednn_caches_and_keeps_the_users_settings():
    shown = ("import json, os, nmt_cli.before_torch as b; print(json.dumps([b.SET_HERE, "
             "{name: os.environ.get(name) for name in b.SETTINGS}]))")
    env = {name: value for name, value in os.environ.items() if name not in before_torch.SETTINGS}
    env["LRU_CACHE_CAPACITY"] = "5"
    result = subprocess.run([sys.executable, "-c", shown], env=env, capture_output=True,
                            text=True, check=True)
    made, values = json.loads(result.stdout)
    assert made == ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"]
    assert values == {"LRU_CACHE_CAPACITY": "5", "ONEDNN_PRIMITIVE_CACHE_CAPACITY": "32"}


def test_each_rank_takes_its_gpu_before_the_process_group_forms(monkeypatch):
    calls = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "set_device", lambda index: calls.append(("set_device", index)))
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend, **kw: calls.append(
        ("init_process_group", backend, kw["device_id"])))
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(dist, "broadcast_object_list",
                        lambda *args, **kwargs: calls.append(("collective",)))
    world = distributed.init(torch.device("cuda"))
    world.from_main("run")
    assert calls == [("set_device", 1), ("init_process_group", "nccl", torch.device("cuda", 1)),
                     ("collective",)]
    assert (world.rank, world.size, world.device) == (1, 2, torch.device("cuda", 1))


def test_only_the_training_devices_generator_is_saved_and_restored(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device: calls.append(
        ("get", device)) or torch.tensor([7], dtype=torch.uint8))
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device: calls.append(
        ("set", int(state[0]), device)))
    saved = capture_rng(torch.device("cuda", 3))  # rank 3 of an eight-GPU machine ...
    restore_rng(saved, torch.device("cuda", 0))  # ... resumed on a one-GPU machine
    assert calls == [("get", torch.device("cuda", 3)), ("set", 7, torch.device("cuda", 0))]
    calls.clear()
    restore_rng(saved, torch.device("cpu"))  # and on a CPU: the CUDA stream is left alone
    assert calls == []


def test_cpu_streams_resume_exactly_on_another_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda *a: pytest.fail("no CUDA state"))
    torch.manual_seed(3)
    random.seed(3)
    np.random.seed(3)
    saved = capture_rng(torch.device("cpu"))
    expected = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(99)
    restore_rng(saved, torch.device("cuda", 0))
    got = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(got[0], expected[0]) and got[1:] == expected[1:]


def test_each_rank_resumes_from_its_own_random_states():
    states = [{"rank": 0}, {"rank": 1}]
    assert [rng_of_rank(states, r)["rank"] for r in range(3)] == [0, 1, 0]
    assert rng_of_rank({"old": "format"}, 1) == {"old": "format"}


def fp32(**changes) -> Config:
    return apply_overrides(Config(), {"train.precision": "fp32", **changes})


def test_the_fused_optimizer_flag_follows_the_current_device():
    model = torch.nn.Linear(4, 4)
    on_cpu, on_cuda, on_mps = (Updater(model, fp32(), torch.device(kind))
                               for kind in ("cpu", "cuda", "mps"))
    assert on_cpu.optimizer.param_groups[0]["fused"] and on_cuda.optimizer.param_groups[0][
        "fused"] and not on_mps.optimizer.param_groups[0]["fused"]
    on_cuda.load_state_dict(on_mps.state_dict())  # saved where AdamW was not fused
    assert on_cuda.optimizer.param_groups[0]["fused"]
    on_mps.load_state_dict(on_cpu.state_dict())  # and the other way
    assert not on_mps.optimizer.param_groups[0]["fused"]


def test_output_loss_slices_follow_the_device():
    assert rows_per_slice(32_000, torch.device("cpu")) == SLICE_ELEMENTS // 32_000
    assert rows_per_slice(32_000, torch.device("cuda")) >= 2_000  # a handful of slices a batch
    assert rows_per_slice(10**9, torch.device("cpu")) == 1


def test_fp16_overflow_skips_do_not_count_as_divergence():
    model = torch.nn.Linear(4, 4)
    updater = Updater(model, fp32(**{"train.precision": "fp16"}), torch.device("cpu"))
    assert updater.scaler is not None
    before = model.weight.detach().clone()
    loss = model(torch.ones(1, 4)).sum()
    updater.backward(loss)
    model.weight.grad[0, 0] = math.inf  # what an fp16 overflow leaves in the gradient
    outcome, value = updater.step(loss.detach())
    assert outcome is Step.OVERFLOW and math.isfinite(value)
    assert torch.equal(model.weight, before)  # no update
    progress = TrainingProgress()
    assert not progress.count_step(math.nan, overflow=True)
    assert (progress.bad_steps, progress.overflow_steps, progress.skipped_steps) == (0, 1, 1)
    assert not progress.count_step(math.nan)
    assert progress.bad_steps == 1
    assert dataclasses.asdict(progress)["overflow_steps"] == 1  # saved with the run


def test_cuda_work_gets_tf32_and_no_cudnn_attention(monkeypatch):
    from nmt_cli.devices import fast_kernels

    calls = []
    monkeypatch.setattr(torch, "set_float32_matmul_precision", lambda p: calls.append(p))
    monkeypatch.setattr(torch.backends.cuda, "enable_cudnn_sdp", lambda on: calls.append(on))
    fast_kernels(torch.device("cpu"))
    assert calls == []
    fast_kernels(torch.device("cuda", 0))
    assert calls == ["high", False]


# 20 tensors of 8 MB, then all freed, five times over: the page faults of the last round (with
# the memory kept, one block of the second or third round sometimes still faults).
FREED_AND_TAKEN_AGAIN = """
import resource, sys, torch
from nmt_cli.devices import keep_freed_memory
if not keep_freed_memory():
    sys.exit("not glibc")
for _ in range(5):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [torch.ones(2**21) for _ in range(20)]
    del blocks
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_training_memory_freed_on_the_cpu_is_kept_for_the_next_step():
    """By default glibc returns the 160 MB to the kernel and takes them back page by page (about
    41,000 faults of 4 KB in most runs here, 2,048 in one of ten); kept, the last round reuses
    them (no fault)."""
    run = subprocess.run([sys.executable, "-c", FREED_AND_TAKEN_AGAIN], capture_output=True,
                         text=True)
    if run.returncode and "not glibc" in run.stderr:
        pytest.skip("the C library is not glibc")
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) < 500


def test_cpu_training_keeps_freed_memory(monkeypatch, tmp_path, small_corpus):
    from nmt_cli import training

    calls = []
    monkeypatch.setattr(training, "keep_freed_memory", lambda: calls.append(True))
    config = fp32(**{"data.data_dir": str(small_corpus), "tokenizer.vocab_size": 250,
                     "model.d_model": 32, "model.d_ff": 64})
    training.Trainer(config, training.prepare_run_dir(tmp_path / "run"), lambda event: None)
    assert calls == [True]


def test_a_cpu_optimizer_leaves_triton_out(monkeypatch):
    """Building an optimizer imports torch._dynamo, which imports Triton when it is installed
    (torch's CUDA build): on the CPU nmt marks it absent first; on CUDA it stays importable."""
    import sys

    from nmt_cli.optim import make_optimizer

    monkeypatch.setitem(sys.modules, "triton", None)  # so that the test's end restores it
    monkeypatch.delitem(sys.modules, "triton")
    config = Config()
    make_optimizer(torch.nn.Linear(2, 2), config, torch.device("cuda"))
    assert "triton" not in sys.modules or sys.modules["triton"] is not None
    monkeypatch.delitem(sys.modules, "triton", raising=False)
    make_optimizer(torch.nn.Linear(2, 2), config, torch.device("cpu"))
    assert "triton" in sys.modules
    with pytest.raises(ImportError):
        import triton  # noqa: F401


def test_bf16_rows_come_in_blocks_on_a_cpu_with_amx(monkeypatch):
    """Where oneDNN compiles a kernel per product shape (bf16 on AMX), position-wise layers
    see rows padded to a multiple of ROW_BLOCK; the output and the gradients are unchanged."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 4)
    x = torch.randn(3, 700, 8, requires_grad=True)  # 2,100 rows
    seen = []

    def recorded(rows):
        seen.append(rows.shape)
        return layer(rows)

    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = layer(x)
        (expected_grad,) = torch.autograd.grad(expected.float().sum(), x)
        for amx in (False, True):
            monkeypatch.setattr(devices, "has_amx", lambda amx=amx: amx)
            seen.clear()
            out = devices.in_row_blocks(recorded, x)
            (grad,) = torch.autograd.grad(out.float().sum(), x)
            assert seen == ([torch.Size([3072, 8])] if amx else [x.shape])
            assert out.shape == expected.shape and torch.equal(out, expected)
            assert torch.allclose(grad, expected_grad)
        seen.clear()
        devices.in_row_blocks(recorded, x[:1, :300])  # 300 rows: one block already
    devices.in_row_blocks(recorded, x)  # float32: no padding
    assert seen == [torch.Size([1, 300, 8]), x.shape]


@NEEDS_ONEDNN
@pytest.mark.parametrize("bias", [True, False])
def test_linear_through_onednn_equals_torch_in_value_and_gradients(monkeypatch, bias):
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 24, bias=bias)
    x = torch.randn(3, 5, 16, requires_grad=True)
    expected = layer(x)
    weights = [p for p in (x, layer.weight, layer.bias) if p is not None]
    expected_grads = torch.autograd.grad((expected * expected).sum(), weights)
    monkeypatch.setattr(devices, "onednn_float32", lambda: True)
    out = devices.linear(layer, x)
    assert type(out.grad_fn).__name__ == "_LinearBackward"  # the oneDNN path was taken
    assert out.shape == expected.shape and torch.allclose(out, expected, atol=1e-5)
    for got, want in zip(torch.autograd.grad((out * out).sum(), weights), expected_grads):
        assert torch.allclose(got, want, atol=1e-4)
    with torch.no_grad():  # decoding keeps torch's own path
        assert torch.allclose(devices.linear(layer, x), expected, atol=1e-5)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # bf16 products are oneDNN's anyway
        assert type(devices.linear(layer, x).grad_fn).__name__ != "_LinearBackward"
    monkeypatch.setattr(devices, "onednn_float32", lambda: False)
    assert type(devices.linear(layer, x).grad_fn).__name__ != "_LinearBackward"


@NEEDS_ONEDNN
@pytest.mark.parametrize(("vendor", "expected"), [("AuthenticAMD", True),
                                                  ("GenuineIntel", False)])
def test_float32_products_go_through_onednn_on_amd_cpus_only(monkeypatch, vendor, expected):
    import builtins
    import io

    real_open = builtins.open
    cpuinfo = f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: some CPU\n"
    monkeypatch.setattr(builtins, "open", lambda path, *args, **kwargs: io.StringIO(cpuinfo)
                        if path == "/proc/cpuinfo" else real_open(path, *args, **kwargs))
    assert devices.onednn_float32.__wrapped__() is expected
