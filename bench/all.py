"""Every benchmark in one go (`make bench`), or the speed parts alone (`make bench-quick`).

The parts run one after another, each alone on the machine, each printing its own table as it
ends and writing its JSON under bench/out/all-<time>/:

    speed.py             training throughput and peak memory, nmt and JoeyNMT 2.3.0
    decode.py            decoding at equal work, nmt and JoeyNMT 2.3.0
    quality.py           each Multi30k preset trained for its 60-minute budget, then scored
    translate_memory.py  resident memory of a 100,000-line streaming translation
    shards_memory.py     training memory from prepared id files, 2,000,000 pairs vs 20,000

At the end one table puts each headline figure beside its target, and bench/out/bench.json
(bench-quick.json with --quick) holds the table and every part's figures. A part that fails
is reported in the table, the others still run, and the exit status is 1.

    python bench/all.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
OUT = BENCH / "out"

PARTS = {  # name: (script, arguments of the full run, of the quick run or None to skip)
    "speed": ("speed.py", [], ["--quick"]),
    "decode": ("decode.py", [], ["--quick"]),
    "quality": ("quality.py", [], None),
    "translate_memory": ("translate_memory.py", [], None),
    "shards_memory": ("shards_memory.py", [], None),
}


def run_part(name: str, arguments: list[str], folder: Path) -> dict | None:
    script = PARTS[name][0]
    json_file = folder / f"{name}.json"
    extra = ["--out", str(folder / "quality")] if name == "quality" else []
    print(f"\n== {script} {' '.join(arguments)}", flush=True)
    started = time.perf_counter()
    status = subprocess.run([sys.executable, str(BENCH / script), *arguments, *extra,
                             "--json", str(json_file)]).returncode
    minutes = (time.perf_counter() - started) / 60
    print(f"== {script}: exit {status} after {minutes:.1f} min", flush=True)
    if status != 0 or not json_file.exists():
        return None
    return json.loads(json_file.read_text())


def headline(parts: dict[str, dict | None],
             quick: bool = False) -> list[tuple[str, str, str, bool | None]]:
    """(figure, measured, target, met) rows; met is None for figures without a target. The
    decoding targets are for all of test_2016_flickr: --quick decodes 300 sentences, where
    start-up weighs three times as much, so there they are shown but not judged."""
    rows: list[tuple[str, str, str, bool | None]] = []

    def missing(name: str, what: str) -> None:
        rows.append((what, f"{name} failed", "-", False))

    speed = parts.get("speed")
    if speed is not None:
        joey = {"transformer": speed.get("joeynmt transformer"),
                "gru": speed.get("joeynmt gru-bahdanau")}
        for run, target in (("transformer-bf16", 4.0), ("transformer", None),
                            ("gru-bahdanau", 1.5), ("gru-luong", 3.0)):
            mine = speed[f"nmt {run} (nmt batches)"]
            base = joey["gru" if "gru" in run else "transformer"]
            if base is None:
                continue
            x = mine["tokens_per_s"] / base["tokens_per_s"]
            rows.append((f"training tok/s, {run}, vs JoeyNMT", f"{x:.2f}x",
                         f">= {target}x" if target else "-",
                         x >= target if target else None))
        for run in ("transformer-bf16", "transformer", "gru-bahdanau", "gru-luong"):
            base = joey["gru" if "gru" in run else "transformer"]
            if base is None:
                continue
            worst = max(speed[f"nmt {run} ({b} batches)"]["peak_rss_mb"]
                        for b in ("nmt", "joeynmt"))
            x = worst / base["peak_rss_mb"]
            rows.append((f"training peak RSS, {run}, vs JoeyNMT", f"{x:.2f}x ({worst:,.0f} MB)",
                         "<= 0.5x", x <= 0.5))
    elif "speed" in parts:
        missing("speed.py", "training speed and memory")

    decode = parts.get("decode")
    if decode is not None:
        for family, targets in (("transformer", {"greedy": 3.0, "beam5": 5.0}),
                                ("gru-bahdanau", {})):
            base = decode.get(f"joeynmt {family}")
            if base is None:
                continue
            for search in ("greedy", "beam5"):
                x = decode[f"nmt {family}"][search]["end_to_end"] / base[search]["end_to_end"]
                target = targets.get(search)
                shown = f">= {target}x" + (" (1,000 sentences)" if quick else "")
                rows.append((f"decoding sent/s, {family} {search}, vs JoeyNMT", f"{x:.2f}x",
                             shown if target else "-",
                             x >= target if target and not quick else None))
    elif "decode" in parts:
        missing("decode.py", "decoding speed")

    quality = parts.get("quality")
    if quality is not None:
        for preset, target in (("multi30k-transformer", 36.0), ("multi30k-gru", 30.0)):
            if preset not in quality:
                continue
            r = quality[preset]
            rows.append((f"test_2016_flickr BLEU, {preset}, beam 5",
                         f"{r['beam5']['bleu']:.2f} (chrF2 {r['beam5']['chrf']:.2f}, "
                         f"{r['steps']:,} steps)", f">= {target}", r["beam5"]["bleu"] >= target))
            drop = r["beam5"]["bleu"] - r["beam5_int8"]["bleu"]
            rows.append((f"BLEU lost to --quantize int8, {preset}", f"{drop:+.2f}", "<= 0.5",
                         drop <= 0.5))
    elif "quality" in parts:
        missing("quality.py", "quality runs")

    memory = parts.get("translate_memory")
    if memory is not None:
        rows.append((f"translate: RSS growth over {memory['lines']:,} streamed lines",
                     f"{memory['growth_mb']:+.1f} MB", "< 100 MB", memory["growth_mb"] < 100))
    elif "translate_memory" in parts:
        missing("translate_memory.py", "streaming translation memory")

    shards = parts.get("shards_memory")
    if shards is not None:
        small, big = sorted(int(k) for k in shards if k.isdigit())
        rows.append((f"training RSS, {big:,} prepared pairs vs {small:,}",
                     f"{100 * shards['growth']:+.1f}%", "<= +20%", shards["growth"] <= 0.2))
    elif "shards_memory" in parts:
        missing("shards_memory.py", "training memory from prepared files")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the speed parts, shortened")
    args = parser.parse_args()
    started = time.strftime("%Y%m%d-%H%M%S")
    folder = OUT / f"all-{started}"
    folder.mkdir(parents=True)
    parts: dict[str, dict | None] = {}
    for name, (_, full, quick) in PARTS.items():
        arguments = quick if args.quick else full
        if arguments is not None:
            parts[name] = run_part(name, arguments, folder)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=BENCH).stdout.strip()
    rows = headline(parts, args.quick)
    print(f"\n{'bench-quick' if args.quick else 'bench'} at {commit or '?'}, started {started}, "
          f"{platform.machine()}\n")
    print("| figure | measured | target | met |")
    print("| --- | --- | --- | --- |")
    for figure, measured, target, met in rows:
        print(f"| {figure} | {measured} | {target} | "
              f"{'-' if met is None else 'yes' if met else 'NO'} |")
    summary = OUT / ("bench-quick.json" if args.quick else "bench.json")
    summary.write_text(json.dumps(
        {"commit": commit, "started": started, "quick": args.quick,
         "table": [dict(zip(("figure", "measured", "target", "met"), row)) for row in rows],
         "parts": parts}, indent=2) + "\n")
    print(f"\nwritten: {summary} (every part's output: {folder})")
    sys.exit(1 if any(p is None for p in parts.values()) else 0)


if __name__ == "__main__":
    main()
