#!/usr/bin/env bash
# The GPU checks in one go, on a machine with NVIDIA GPUs, as it comes: this machine's own
# python3 (or $PYTHON) with the packages it already has (torch with CUDA and nmt's
# dependencies), nmt_cli from this tree; it installs nothing.
#
#   bash bench/gpu_check.sh [--data DIR]      # DIR: Multi30k for bench.gpu (or data/multi30k)
#
# 1. tests/test_gpu.py and tests/test_devices.py (CUDA training, decoding, resume, NaN skips);
# 2. with two GPUs or more, a 2-process NCCL run under torchrun on the sample corpus;
# 3. bench.gpu with short budgets (STEPS, default 20; SENTENCES, default 300).
# Then one table of what passed, and bench.gpu's table. Logs go to $GPU_CHECK_LOGS, by default
# bench/out/gpu-check/. PHASE_LIMIT_S, when set, stops each phase after that many seconds
# (exit 124), so that one hang cannot take a short lease's time from the others.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
LOGS="${GPU_CHECK_LOGS:-bench/out/gpu-check}"
mkdir -p "$LOGS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

missing=$("$PY" -c '
import importlib.util as u
names = "torch typer sentencepiece sacrebleu rich safetensors numpy pytest".split()
print(" ".join(n for n in names if u.find_spec(n) is None))')
if [ -n "$missing" ]; then
    echo "gpu_check: this Python lacks $missing; nothing was run" >&2
    exit 2
fi

limit() { timeout "${PHASE_LIMIT_S:-0}" "$@"; }  # a limit of 0 is none
result() { if [ "$1" -eq 0 ]; then echo passed; else echo "FAILED ($1)"; fi; }

limit "$PY" -m pytest -q -p no:cacheprovider --durations=6 tests/test_gpu.py tests/test_devices.py \
    > "$LOGS/tests.log" 2>&1
tests=$(result $?)

gpus=$("$PY" -c "import torch; print(torch.cuda.device_count())")
if [ "$gpus" -ge 2 ]; then
    rm -rf "$LOGS/ddp"
    limit "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 -m nmt_cli train \
        --run-dir "$LOGS/ddp" --device cuda --max-steps 40 --set train.validate_every=20 \
        > "$LOGS/ddp.log" 2>&1
    ddp=$(result $?)
else
    ddp="not run ($gpus GPU)"
fi

limit "$PY" -m bench.gpu --steps "${STEPS:-20}" --sentences "${SENTENCES:-300}" \
    --json "$LOGS/gpu.json" "$@" > "$LOGS/gpu.md" 2> "$LOGS/gpu.log"
bench=$(result $?)

echo "| check | result | log |"
echo "| --- | --- | --- |"
echo "| tests/test_gpu.py, tests/test_devices.py | $tests: $(tail -1 "$LOGS/tests.log") | $LOGS/tests.log |"
echo "| torchrun, 2 processes, NCCL | $ddp | $LOGS/ddp.log |"
echo "| bench.gpu (${STEPS:-20} steps, ${SENTENCES:-300} sentences) | $bench | $LOGS/gpu.log |"
cat "$LOGS/gpu.md"
[ "$tests" = passed ] && [ "$bench" = passed ] && [[ "$ddp" != FAILED* ]]
