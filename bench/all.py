"""Every benchmark in one go (`make bench`), or the speed parts alone (`make bench-quick`).

The parts run one after another, each alone on the machine, each printing its own table as it
ends and writing its JSON under bench/out/all-<time>/:

    bench.speed             training throughput and peak memory: nmt, JoeyNMT 2.3.0, eole 0.6.4
                            and Hugging Face MarianMT
    bench.decode            decoding at equal work, nmt and JoeyNMT 2.3.0
    bench.quality           each Multi30k preset trained for its 60-minute budget, then scored
    bench.race              BLEU after 20 minutes of training: nmt, eole, MarianMT and JoeyNMT
    bench.translate_memory  resident memory of a 100,000-line streaming translation
    bench.shards_memory     training memory from prepared id files, 2,000,000 pairs vs 20,000

At the end one table puts each headline figure beside its target (TARGETS in bench/common.py),
and bench/out/bench.json (bench-quick.json with --quick) holds the table and every part's
figures. A part that fails is reported in the table, the others still run, and the exit
status is 1. Multi30k is fetched once, before the first part, into --data (see bench.common).

The full run takes longer than many sessions at a machine, so it can be made in pieces:
--parts runs only the parts named, and --resume FOLDER goes on in an earlier run's folder,
keeping every part that finished there and running the others. A part cut short is run again:
bench.speed from its last whole round (see its --json), the others from the start, with what
they left moved aside to <part>.interrupted-<n>. The folder's
parts.json records, for each part, the commit it ran at (with "-dirty" when the tree had
changes), when it started, how long it took and its exit status; the table's heading names
every commit the parts ran at.

    python -m bench.all [--quick] [--parts NAME ...] [--resume FOLDER] [--data DIR]
"""

from __future__ import annotations

import json
import operator
import platform
import subprocess
import sys
import time
from pathlib import Path

from .common import (
    OUT,
    ROOT,
    TARGETS,
    add_data_option,
    commit_id,
    multi30k_dir,
    new_parser,
    write_json,
)
from .speed import (
    COMPILED_BY_PRECISION,
    NMT_BY_PRECISION,
    ceiling_versus_fastest,
    product_speed,
    shown_versus,
    versus_fastest,
)

PARTS = {  # module: (arguments of the full run, of the quick run or None to skip, reads Multi30k)
    "speed": ([], ["--quick"], True),
    "decode": ([], ["--quick"], True),
    "quality": (["--out", "{folder}/quality"], None, True),
    "race": (["--out", "{folder}/race"], None, True),
    "translate_memory": ([], None, False),
    "shards_memory": ([], None, False),
}
COMPARISONS = {">=": operator.ge, "<=": operator.le, "<": operator.lt, ">": operator.gt}
Row = tuple[str, str, str, "bool | None"]  # figure, measured, target, met


def read_record(folder: Path) -> dict:
    """parts.json of a run's folder: whether the run is quick, and each part's record."""
    path = folder / "parts.json"
    if not path.exists():
        return {}
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        sys.exit(f"error: {path}: not valid JSON ({error.msg}, line {error.lineno})")
    if not isinstance(record, dict) or not isinstance(record.get("parts", {}), dict):
        sys.exit(f"error: {path}: expected an object with a 'parts' object")
    return record


def finished(folder: Path, name: str, record: dict) -> dict | None:
    """A part's figures when it ran to the end in `folder` (exit 0 and its JSON written)."""
    json_file = folder / f"{name}.json"
    if record.get("parts", {}).get(name, {}).get("exit") != 0 or not json_file.exists():
        return None
    return json.loads(json_file.read_text())


def move_aside(folder: Path, name: str) -> None:
    """What a part cut short left in `folder`, renamed so that its next run starts clean."""
    for left in (folder / name, folder / f"{name}.json"):
        if left.exists():
            n = 1
            while (aside := folder / f"{left.name}.interrupted-{n}").exists():
                n += 1
            left.rename(aside)
            print(f"moved aside: {left} -> {aside.name}", flush=True)


def run_part(name: str, arguments: list[str], folder: Path, corpus: Path | None,
             record: dict) -> dict | None:
    """Run one part in `folder`, writing its line of parts.json before and after."""
    json_file = folder / f"{name}.json"
    arguments = [a.format(folder=folder) for a in arguments]
    if corpus is not None:
        arguments += ["--data", str(corpus)]
    print(f"\n== bench.{name} {' '.join(arguments)}", flush=True)
    entry = record["parts"][name] = {"commit": commit_id(),
                                     "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                                     "exit": None}
    write_json(folder / "parts.json", record)
    started = time.perf_counter()
    status = subprocess.run([sys.executable, "-m", f"bench.{name}", *arguments,
                             "--json", str(json_file)], cwd=ROOT).returncode
    minutes = (time.perf_counter() - started) / 60
    entry.update(exit=status, minutes=round(minutes, 1))
    write_json(folder / "parts.json", record)
    print(f"== bench.{name}: exit {status} after {minutes:.1f} min", flush=True)
    if status != 0 or not json_file.exists():
        return None
    return json.loads(json_file.read_text())


def judge(figure: str, measured: str, value: float, quick: bool) -> Row:
    """A row of the summary: the figure beside its target in TARGETS, and whether it is met."""
    target = next((t for t in TARGETS if t["figure"] == figure), None)
    if target is None:
        return figure, measured, "-", None
    shown = f"{target['comparison']} {target['value']:g}{target['unit']}"
    if quick and "full_run" in target:
        return figure, measured, f"{shown} ({target['full_run']})", None
    return figure, measured, shown, COMPARISONS[target["comparison"]](value, target["value"])


def speed_rows(speed: dict, add) -> None:
    """bench.speed's headline figures: against JoeyNMT, and against the fastest peer."""
    joey = {"transformer": speed.get("joeynmt transformer"),
            "gru": speed.get("joeynmt gru-bahdanau")}
    for figure in ("training tok/s", "training peak RSS"):
        for run in ("transformer-bf16", "transformer", "gru-bahdanau", "gru-luong"):
            base = joey["gru" if "gru" in run else "transformer"]
            if base is None:
                continue
            if figure == "training tok/s":
                mine = speed[f"nmt {run} (nmt batches)"]["tokens_per_s"]
                x = mine / base["tokens_per_s"]
                measured = f"{x:.2f}x"
            else:  # the worse of the two batch compositions
                mine = max(speed[f"nmt {run} ({b} batches)"]["peak_rss_mb"]
                           for b in ("nmt", "joeynmt"))
                x = mine / base["peak_rss_mb"]
                measured = f"{x:.2f}x ({mine:,.0f} MB)"
            add(f"{figure}, {run}, vs JoeyNMT", measured, x)
    for precision, run in NMT_BY_PRECISION.items():
        for mine, option in ((run, ""), (COMPILED_BY_PRECISION[precision], " --compile")):
            compared = versus_fastest(speed, mine, precision)
            if compared:
                add(f"training tok/s, transformer {precision}{option}, vs fastest peer",
                    shown_versus(compared), compared[0])
        ceiling = ceiling_versus_fastest(speed, precision)
        if ceiling:  # no target: where the target above stands against the machine
            add(f"training tok/s, transformer {precision}, matrix products alone, "
                f"vs fastest peer", f"{ceiling[0]:.2f}x ({ceiling[1]})", ceiling[0])
        row = speed.get(run, {})
        relative = product_speed(row)
        if relative is not None:  # no target: how much faster the products could run
            add(f"training GFLOP/s of the matrix products, transformer {precision}, vs the "
                f"same products alone", f"{relative:.2f}x ({row['product_gflops_per_s']:,.0f} "
                f"of {row['products_alone_gflops_per_s']:,.0f})", relative)


def headline(parts: dict[str, dict | None], quick: bool = False) -> list[Row]:
    """The summary rows, each judged by `judge`. The decoding targets are for all of
    test_2016_flickr: --quick decodes 300 sentences, where start-up weighs three times as
    much, so there they are shown but not judged."""
    rows: list[Row] = []

    def add(figure: str, measured: str, value: float) -> None:
        rows.append(judge(figure, measured, value, quick))

    def missing(name: str, what: str) -> None:
        rows.append((what, f"bench.{name} failed", "-", False))

    speed = parts.get("speed")
    if speed is not None:
        speed_rows(speed, add)
    elif "speed" in parts:
        missing("speed", "training speed and memory")

    decode = parts.get("decode")
    if decode is not None:
        for family in ("transformer", "gru-bahdanau"):
            base = decode.get(f"joeynmt {family}")
            if base is None:
                continue
            for search in ("greedy", "beam5"):
                x = decode[f"nmt {family}"][search]["end_to_end"] / base[search]["end_to_end"]
                add(f"decoding sent/s, {family} {search}, vs JoeyNMT", f"{x:.2f}x", x)
    elif "decode" in parts:
        missing("decode", "decoding speed")

    quality = parts.get("quality")
    if quality is not None:
        for preset in ("multi30k-transformer", "multi30k-gru"):
            if preset not in quality:
                continue
            r = quality[preset]
            add(f"test_2016_flickr BLEU, {preset}, beam 5",
                f"{r['beam5']['bleu']:.2f} (chrF2 {r['beam5']['chrf']:.2f}, {r['steps']:,} steps)",
                r["beam5"]["bleu"])
            drop = r["beam5"]["bleu"] - r["beam5_int8"]["bleu"]
            add(f"BLEU lost to --quantize int8, {preset}", f"{drop:+.2f}", drop)
    elif "quality" in parts:
        missing("quality", "quality runs")

    race = parts.get("race")
    if race is not None and "nmt" in race:
        add("test_2016_flickr BLEU after 20 minutes, multi30k-transformer, beam 5",
            f"{race['nmt']['bleu']:.2f}", race["nmt"]["bleu"])
        peers = {name: r["bleu"] for name, r in race.items() if name != "nmt"}
        if peers:
            best = max(peers, key=peers.get)
            lead = race["nmt"]["bleu"] - peers[best]
            add("BLEU after 20 minutes, nmt ahead of the best peer", f"{lead:+.2f} ({best} "
                f"{peers[best]:.2f})", lead)
    elif "race" in parts:
        missing("race", "BLEU after 20 minutes")

    memory = parts.get("translate_memory")
    if memory is not None:
        add(f"translate: RSS growth over a {memory['lines']:,}-line stream",
            f"{memory['growth_mb']:+.1f} MB", memory["growth_mb"])
    elif "translate_memory" in parts:
        missing("translate_memory", "streaming translation memory")

    shards = parts.get("shards_memory")
    if shards is not None:
        small, big = sorted(int(k) for k in shards if k.isdigit())
        add(f"training peak RSS from prepared files, {big // small}x the pairs",
            f"{100 * shards['growth']:+.1f}% ({big:,} pairs vs {small:,})",
            100 * shards["growth"])
    elif "shards_memory" in parts:
        missing("shards_memory", "training memory from prepared files")
    return rows


def machine() -> dict[str, str | int]:
    """What the figures were measured on: memory and speed depend on the PyTorch build (the
    default wheel is a CUDA build even on machines without a GPU) as much as on the CPU."""
    import os

    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    cuda = torch.version.cuda
    build = f"{torch.__version__} ({f'CUDA {cuda}' if cuda else 'CPU'} build)"
    return {"cpu": cpu, "cores": os.cpu_count() or 0, "torch": build}


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--quick", action="store_true", help="the speed parts, shortened")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), metavar="NAME",
                        help=f"run only these parts ({', '.join(PARTS)}); with --resume, "
                             "again if they finished there")
    parser.add_argument("--resume", type=Path, metavar="FOLDER",
                        help="go on in an earlier run's folder (bench/out/all-<time>): keep "
                             "the parts that finished there and run the others")
    add_data_option(parser)
    args = parser.parse_args()
    run_name = "bench-quick" if args.quick else "bench"
    plan = {name: (quick if args.quick else full, reads)
            for name, (full, quick, reads) in PARTS.items()
            if (quick if args.quick else full) is not None}
    outside = [name for name in args.parts or [] if name not in plan]
    if outside:
        sys.exit(f"error: --parts: {', '.join(outside)} not in {run_name} "
                 f"(its parts: {', '.join(plan)})")
    if args.resume is not None:
        folder = args.resume.resolve()
        record = read_record(folder) if folder.is_dir() else {}
        if not record:
            sys.exit(f"error: --resume {args.resume}: no parts.json there; not a folder that "
                     "python -m bench.all made")
        if bool(record.get("quick")) != args.quick:
            kind, option = ("quick", "pass") if record.get("quick") else ("full", "leave out")
            sys.exit(f"error: --resume {args.resume}: a {kind} run; {option} --quick to go on")
    else:
        started = time.strftime("%Y%m%d-%H%M%S")
        folder = OUT / f"all-{started}"
        folder.mkdir(parents=True)
        record = {"quick": args.quick, "started": started, "parts": {}}
        write_json(folder / "parts.json", record)
    record.setdefault("parts", {})
    parts: dict[str, dict | None] = {}
    to_run = []
    for name in plan:
        figures = finished(folder, name, record)
        if args.parts and name in args.parts or not args.parts and figures is None:
            to_run.append(name)
        elif figures is not None:
            parts[name] = figures
            print(f"kept: bench.{name}, finished at {record['parts'][name]['commit']}",
                  flush=True)
    corpus = multi30k_dir(args.data) if any(plan[name][1] for name in to_run) else None
    failed = []
    for name in to_run:
        move_aside(folder, name)
        arguments, reads_multi30k = plan[name]
        parts[name] = run_part(name, arguments, folder, corpus if reads_multi30k else None,
                               record)
        if parts[name] is None:
            failed.append(name)
    parts = {name: parts[name] for name in plan if name in parts}
    commits = {name: record["parts"][name]["commit"] for name in parts}
    rows = headline(parts, args.quick)
    where = machine()
    print(f"\n{run_name} at {at_commits(commits)}, started {record.get('started', '?')}, "
          f"{where['cpu']} ({where['cores']} cores), torch {where['torch']}\n")
    print("| figure | measured | target | met |")
    print("| --- | --- | --- | --- |")
    for figure, measured, target, met in rows:
        print(f"| {figure} | {measured} | {target} | "
              f"{'-' if met is None else 'yes' if met else 'NO'} |")
    left = [name for name in plan if parts.get(name) is None]
    summary = OUT / f"{run_name}.json"
    summary.write_text(json.dumps(
        {"commits": commits, "started": record.get("started"), "quick": args.quick,
         "complete": not left, "machine": where,
         "table": [dict(zip(("figure", "measured", "target", "met"), row)) for row in rows],
         "parts": parts}, indent=2) + "\n")
    print(f"\nwritten: {summary} (every part's output: {folder})")
    if left:
        print(f"not finished yet: {', '.join(left)}; go on with python -m bench.all "
              f"{'--quick ' if args.quick else ''}--resume {folder}")
    sys.exit(1 if failed else 0)


def at_commits(commits: dict[str, str]) -> str:
    """'abc1234' when every part ran at one commit, else each commit with its parts."""
    by_commit: dict[str, list[str]] = {}
    for name, at in commits.items():
        by_commit.setdefault(at, []).append(name)
    if len(by_commit) <= 1:
        return next(iter(by_commit), "?")
    return ", ".join(f"{at} ({', '.join(names)})" for at, names in by_commit.items())


if __name__ == "__main__":
    main()
