# Set-up and everyday commands. `make test` and `make train` create .venv on first use.
# TORCH selects the PyTorch build: the default takes the one for your hardware;
# CI pins the CPU wheel with TORCH=torch==2.13.0.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch
BIN := $(VENV)/bin
TEST_WORKERS ?= auto

.PHONY: install test lint train bench bench-quick clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[dev,serve,ct2,tensorboard]"  # the extras too: their tests run
	touch $@

# The tests run in TEST_WORKERS processes (pytest-xdist; auto: one a core), each test file in
# one of them, so that a file's shared fixtures are built once; TEST_WORKERS=0 runs them in this
# process alone.
test: install
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: install
	$(BIN)/ruff check .

train: install
	$(BIN)/nmt train

# Benchmarks on Multi30k in data/multi30k, fetched on first use (the peers are installed into
# bench/out), run by `python -m bench.all`: each part's table, then one table of figures
# against targets, and bench/out/bench.json (bench-quick.json).
# bench-quick: training speed against JoeyNMT, eole and MarianMT, decoding speed against
# JoeyNMT (about 47 minutes on 2 cores).
# bench: those in full, the 60-minute quality run of each Multi30k preset, the 20-minute race
# against the peers (bench.race), and the memory benchmarks (about 6 hours on 2 cores). bench/gpu.sh is the GPU benchmark.
# MIRROR: a local copy of Multi30k to fetch from instead of the network (default: the
# NMT_MULTI30K_MIRROR variable; neither set: the network), e.g. make bench MIRROR=/data/multi30k.
# BENCH_ARGS: more options of bench.all, e.g. "--parts quality" or "--resume bench/out/all-<time>".
MIRROR ?= $(NMT_MULTI30K_MIRROR)
BENCH_ARGS ?=

bench-quick: install
	NMT_MULTI30K_MIRROR=$(MIRROR) $(BIN)/python -m bench.all --quick $(BENCH_ARGS)

bench: install
	NMT_MULTI30K_MIRROR=$(MIRROR) $(BIN)/python -m bench.all $(BENCH_ARGS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .ruff_cache
