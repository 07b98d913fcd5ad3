#!/usr/bin/env bash
# The GPU benchmark (bench/gpu.py) with the project's environment; installs nothing.
# Run from anywhere on a machine with an NVIDIA GPU and ../shared/data/multi30k beside the project.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-.venv/bin/python}" bench/gpu.py "$@"
