"""Resident memory of `nmt translate` streaming many lines from stdin.

Feeds N lines (the test set of the sample corpus in nmt_cli/sample/, repeated) to
`nmt translate` through a pipe, reads the translations as they come, and samples the
translator's resident memory (VmRSS) at the 10,000th line and at the last. Memory must stay
flat: growth under 100 MB.

    python -m bench.translate_memory [--run RUN] [--lines 100000]

Without --run, a tiny model is trained first (its quality does not matter here).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from itertools import cycle, islice
from pathlib import Path

from nmt_cli.data import sample_corpus

from .common import new_parser, rss_mb

NMT = [sys.executable, "-m", "nmt_cli"]


def tiny_run(directory: Path) -> Path:
    run = directory / "run"
    subprocess.run([*NMT, "train", "--data", str(sample_corpus()), "--run", str(run),
                    "--max-steps", "30", "--set", "model.d_model=64", "--set", "model.d_ff=128",
                    "--set", "train.validate_every=30"], check=True, stdout=subprocess.DEVNULL)
    return run


def measure(run: Path, total: int, checkpoint: int) -> dict[str, float]:
    sentences = (sample_corpus() / "test.en").read_text(encoding="utf-8").splitlines()
    process = subprocess.Popen([*NMT, "translate", "--run", str(run), "--beam", "1"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               encoding="utf-8", bufsize=1)

    def feed():
        for line in islice(cycle(sentences), total):
            process.stdin.write(line + "\n")
        process.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    started, samples, count = time.monotonic(), {}, 0
    for _ in process.stdout:
        count += 1
        if count in (checkpoint, total):
            samples[count] = rss_mb(process.pid)
    process.wait()
    if count != total:
        raise SystemExit(f"expected {total} output lines, got {count}")
    return {"rss_at_checkpoint": samples[checkpoint], "rss_at_end": samples[total],
            "lines_per_s": total / (time.monotonic() - started)}


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--run", type=Path)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--checkpoint", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or tiny_run(Path(tmp))
        result = measure(run, args.lines, args.checkpoint)
    growth = result["rss_at_end"] - result["rss_at_checkpoint"]
    if args.json:
        args.json.write_text(json.dumps({**result, "lines": args.lines, "growth_mb": growth},
                                        indent=2) + "\n")
    print(f"| lines | RSS at {args.checkpoint:,} | RSS at {args.lines:,} | growth | lines/s |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| {args.lines:,} | {result['rss_at_checkpoint']:.0f} MB | "
          f"{result['rss_at_end']:.0f} MB | {growth:+.1f} MB | {result['lines_per_s']:.0f} |")
    print("flat (growth < 100 MB)" if growth < 100 else "NOT FLAT: growth >= 100 MB")
    sys.exit(0 if growth < 100 else 1)


if __name__ == "__main__":
    main()
