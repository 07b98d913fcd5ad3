"""nmt's benchmarks, run from the repository root as modules: `python -m bench.all`,
`python -m bench.speed`, ... (see bench/all.py; results are logged in bench/RESULTS.md)."""
