#!/usr/bin/env bash
# The GPU benchmark (python -m bench.gpu) with this machine's own Python and installed packages
# (torch with CUDA and nmt's dependencies), not the project's .venv; installs nothing. Set
# PYTHON to use another interpreter. Multi30k: --data DIR, or data/multi30k, fetched on first
# use (from NMT_MULTI30K_MIRROR=DIR when the network is out of reach).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m bench.gpu "$@"
