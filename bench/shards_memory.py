"""Peak memory of training from prepared id files: 2,000,000 sentence pairs against 20,000.

Writes a synthetic parallel corpus (made-up words; the target side is a fixed word-by-word
mapping of the source, in reverse order), prepares the first 20,000 pairs and all 2,000,000
with `nmt data prepare`, then trains the default Transformer for 200 steps from each and
reports the peak resident memory (VmHWM) of each training process. Target: within 20%.

    python -m bench.shards_memory [--pairs 2000000] [--small 20000] [--steps 200]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from .common import OUT, ROOT, new_parser, two_threads_env, watch_peak_rss

WORK = OUT / "shards"


def write_corpus(directory: Path, pairs: int, seed: int = 1) -> None:
    """train.en/train.de with `pairs` lines, val.en/val.de with 500."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(6000)})
    mapping = {w: w[::-1] + "en" for w in words}
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", pairs), ("val", 500)):
        with open(directory / f"{split}.en", "w") as en, open(directory / f"{split}.de", "w") as de:
            for _ in range(count):
                sentence = rng.choices(words, k=rng.randint(4, 24))
                en.write(" ".join(sentence) + "\n")
                de.write(" ".join(mapping[w] for w in reversed(sentence)) + "\n")


def head(source: Path, target: Path, pairs: int) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in ("train.en", "train.de"):
        with open(source / name) as f, open(target / name, "w") as out:
            for _, line in zip(range(pairs), f):
                out.write(line)
    for name in ("val.en", "val.de"):
        (target / name).write_bytes((source / name).read_bytes())


def nmt(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "nmt_cli", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def train_peak(prepared: Path, run_dir: Path, steps: int) -> tuple[float, float]:
    """Peak RSS (MB) of `nmt train` on a prepared corpus, and its wall time."""
    command = [sys.executable, "-m", "nmt_cli", "train", "--data", str(prepared), "--run",
               str(run_dir), "--max-steps", str(steps), "--set", "train.validate_every=100000"]
    start = time.perf_counter()
    log = run_dir.with_suffix(".log")
    with open(log, "w") as sink:
        process = subprocess.Popen(command, cwd=ROOT, env=two_threads_env(),
                                   stdout=subprocess.DEVNULL, stderr=sink)
        peak = watch_peak_rss(process, 0.2)
    if process.returncode != 0:
        raise SystemExit(f"training failed; see {log}")
    return peak, time.perf_counter() - start


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--pairs", type=int, default=2_000_000)
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    big_text, small_text = WORK / f"text-{args.pairs}", WORK / f"text-{args.small}"
    if not (big_text / "train.de").exists():
        write_corpus(big_text, args.pairs)
    head(big_text, small_text, args.small)
    results = {}
    for pairs, text in ((args.small, small_text), (args.pairs, big_text)):
        prepared = WORK / f"prepared-{pairs}"
        start = time.perf_counter()
        nmt("data", "prepare", "--data", str(text), "--out", str(prepared), "--sample", "100000")
        prepare_seconds = time.perf_counter() - start
        run_dir = WORK / f"run-{pairs}-{int(time.time())}"
        peak, seconds = train_peak(prepared, run_dir, args.steps)
        results[pairs] = (peak, seconds, prepare_seconds)
        print(f"{pairs:,} pairs: prepared in {prepare_seconds:.0f} s; peak RSS {peak:,.0f} MB "
              f"training {args.steps} steps ({seconds:.0f} s)", file=sys.stderr, flush=True)
    small, big = results[args.small][0], results[args.pairs][0]
    print("\n| pairs | prepare | peak RSS, training | vs the small corpus |")
    print("| --- | --- | --- | --- |")
    for pairs, (peak, _, prepare_seconds) in results.items():
        print(f"| {pairs:,} | {prepare_seconds:.0f} s | {peak:,.0f} MB | {peak / small:.2f}x |")
    print(f"\npeak RSS grows by {100 * (big / small - 1):+.1f}% (target: within 20%)")
    if args.json:
        args.json.write_text(json.dumps(
            {str(pairs): {"peak_rss_mb": peak, "train_seconds": seconds,
                          "prepare_seconds": prepare_seconds}
             for pairs, (peak, seconds, prepare_seconds) in results.items()}
            | {"growth": big / small - 1}, indent=2) + "\n")


if __name__ == "__main__":
    main()
