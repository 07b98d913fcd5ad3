"""Training throughput of nmt and its peers on Multi30k, side by side, in one run: JoeyNMT
2.3.0, eole 0.6.4 and Hugging Face MarianMT (bench/peer_eole.py, bench/peer_marian.py).

Both sides use the reference settings of bench/peers/README.md (model sizes, joint
SentencePiece unigram 8,000, batches of 4,096 padded slots, 2 threads, CPU). nmt is measured
twice: with its own length-sorted batches, and with JoeyNMT-style batches (random order,
filled until sentences x (longest side + 1) reaches the budget), so that the gain from less
padding and the gain from faster compute can be told apart. Throughput is target tokens
(non-pad, <eos> included) over time: over a number of steps for nmt's rows that run once, and
for the same wall-clock time (150 s; 360 s without --quick) for every system in the runs
behind "vs fastest peer" (for eole and JoeyNMT, from the windows that they log:
`common.logged_rate`). Memory is the peak resident set (VmHWM).

Each peer trains the reference Transformer with its own recommended batching (JoeyNMT's and
eole's token batches, 64 shuffled sentences a batch for MarianMT), in fp32 and, where it has
one, in bf16 autocast; MarianMT also with nmt's composition (length-sorted token batches).
"vs fastest peer" compares nmt's own batches with the fastest peer at its own batching, in
the same precision. nmt's Transformer is also measured with `--compile` (torch.compile of its
layers; its first steps compile, so it warms up longer: the JSON records the warm-up time).
After its timed steps, each nmt worker profiles three more and reports what share of the wall
time the matrix products took, and the tok/s it would reach if nothing else took any: the
ceiling that speeding up everything but the products could reach, beside the fastest peer.
It also reports the products' GFLOP/s (the profiler's count of their operations over their
time) beside the GFLOP/s of the same products run again alone, one shape after another, in the
same precision: how much faster the products themselves could run.

A machine's speed drifts by a third or more within minutes, so the runs behind "vs fastest
peer" are made in rounds (3; 2 with --quick), each round in the reverse order of the one
before: nmt fp32, the peers fp32, nmt bf16, the peers bf16. Each round gives a ratio of its
own (nmt over the fastest peer of that round), and the table shows their median beside them.
The other rows run once.

    python -m bench.speed [--quick] [--rounds N] [--peers joeynmt eole marian] [--data DIR]
                          [--json FILE]

The full measurement takes hours, so it keeps its progress in FILE's .progress.json (each
whole round, each row run once); run again with the same options and the same code (a commit
that only records figures keeps it), it goes on from there. A round cut short is run again
whole.

Each peer is installed on first use into a virtual environment of its own under bench/out
(torch 2.13.0 CPU beside it), as bench/peers/README.md describes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import peer_eole, peer_marian
from .common import (
    NMT_REFERENCE,
    OUT,
    ROOT,
    add_data_option,
    joeynmt_train_speed,
    measured_code,
    multi30k_dir,
    new_parser,
    peak_rss_mb,
    two_threads_env,
    write_json,
)


def joeynmt_style_batches(src_lens, tgt_lens, budget, seed):
    """JoeyNMT's composition: sentences in random order, each batch filled to the budget."""
    import random

    from nmt_cli.data import group_by_budget

    order = list(range(len(src_lens)))
    random.Random(seed).shuffle(order)
    return group_by_budget(order, src_lens, tgt_lens, budget)


# nmt's Transformer with --compile, measured with nmt's batches.
COMPILED = {"transformer --compile": {"train.compile": True},
            "transformer-bf16 --compile": {"train.precision": "bf16", "train.compile": True}}


def nmt_worker(name: str, steps: int, batching: str, corpus: Path, seconds: float = 0) -> dict:
    """Train `steps` steps, or for `seconds` of wall-clock time where given, after some warm-up
    steps (3; 8 when compiled: the first ones compile) and report throughput, memory and the
    warm-up time."""
    import torch

    from nmt_cli.config import Config, apply_overrides
    from nmt_cli.training import Trainer, prepare_run_dir

    torch.set_num_threads(2)
    overrides = {**NMT_REFERENCE, **COMPILED}[name]
    config = apply_overrides(Config(), {"data.data_dir": str(corpus), **overrides})
    run_dir = prepare_run_dir(Path(tempfile.mkdtemp()) / "run")
    trainer = Trainer(config, run_dir, lambda event: None)
    if batching == "joeynmt":
        batches = joeynmt_style_batches([len(s) for s in trainer.corpus.train.src],
                                        [len(t) for t in trainer.corpus.train.tgt],
                                        config.train.batch_tokens, seed=1)
    else:
        batches = trainer.epoch_batches(0)
    stream = itertools.chain(batches, itertools.chain.from_iterable(  # epoch after epoch
        batches if batching == "joeynmt" else trainer.epoch_batches(epoch)
        for epoch in itertools.count(1)))
    warmup, started = (8 if config.train.compile else 3), time.perf_counter()
    for indices in itertools.islice(stream, warmup):
        trainer.train_step([indices])
    tokens, done, warmup_seconds, started = 0, 0, time.perf_counter() - started, time.perf_counter()
    while not done or (time.perf_counter() - started < seconds if seconds else done < steps):
        tokens, done = tokens + trainer.train_step([next(stream)])[1], done + 1
    elapsed, peak = time.perf_counter() - started, peak_rss_mb()
    data = trainer.corpus.train
    padded = sum(len(b) * (max(max(len(data.src[i]), len(data.tgt[i])) for i in b) + 1)
                 for b in batches)
    real = sum(len(data.tgt[i]) + 1 for b in batches for i in b)
    after = list(itertools.islice(stream, PROFILED_STEPS))
    return {"tokens_per_s": tokens / elapsed, "seconds_per_step": elapsed / done, "steps": done,
            "warmup_seconds": warmup_seconds, "epoch_batches": len(batches),
            "tgt_tokens_per_batch": real / len(batches),
            "padding_efficiency": real / padded, "peak_rss_mb": peak,
            **matrix_product_time(trainer, after)}


# The matrix products of a training step (the linear layers, attention's Q Kᵀ and weights x V,
# the output layer), forward and backward, as torch's profiler names them on the CPU; float32
# linear layers on AMD CPUs are oneDNN's (nmt_cli.devices.onednn_float32); the output layer's
# float32 weight gradient is summed in place (nmt_cli.loss: addmm_).
ONEDNN_LINEAR = "mkldnn::_linear_pointwise"
IN_PLACE = "aten::addmm_"
PRODUCTS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", IN_PLACE, ONEDNN_LINEAR}
PROFILED_STEPS = 3


def matrix_product_time(trainer, batches: list) -> dict:
    """How much of a step the matrix products take, from a profile of `batches` (after the
    timed ones): their share of the wall time; the tok/s that nmt would reach if nothing
    but its matrix products took time (a ceiling that only fewer or faster products raise);
    and their GFLOP/s, in the step and with the same products run alone."""
    from torch.profiler import ProfilerActivity, profile

    if not batches:
        return {}
    tokens, started = 0, time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as profiled:
        for indices in batches:
            tokens += trainer.train_step([indices])[1]
    wall = time.perf_counter() - started
    products = [event for event in profiled.key_averages(group_by_input_shape=True)
                if event.key in PRODUCTS]
    seconds = sum(event.self_cpu_time_total for event in products) / 1e6  # from microseconds
    flops = sum(product_flops(event) for event in products)
    alone = sum(run_alone(event, trainer.config.train.precision) for event in products)
    return {"product_share": seconds / wall, "products_only_tokens_per_s": tokens / seconds,
            "product_gflops_per_s": flops / seconds / 1e9,
            "products_alone_gflops_per_s": flops / alone / 1e9}


def product_flops(event) -> int:
    """The operations of a profiled product event; the profiler counts none for oneDNN's
    linear layer, x (m, k) by W (n, k): 2 m k n a call, nor for an in-place sum of a product,
    C += A (m, k) B (k, n): 2 m k n a call."""
    if event.key == ONEDNN_LINEAR:
        (rows, inner), (outputs, _) = event.input_shapes[:2]
    elif event.key == IN_PLACE:
        (rows, inner), (_, outputs) = event.input_shapes[1:3]
    else:
        return event.flops
    return 2 * rows * inner * outputs * event.count


def run_alone(event, precision: str) -> float:
    """Seconds that the products of a profiled `event` (one operation and one set of input
    shapes, `event.count` calls) take on their own, on random contiguous matrices in the
    precision the step's products run in (where a step's input was a transposed view, the
    layout differs)."""
    import torch

    from nmt_cli.devices import autocast_dtype

    dtype = autocast_dtype(torch.device("cpu"), precision) or torch.float32
    operation, operands = {"aten::mm": (torch.mm, 2), "aten::addmm": (torch.addmm, 3),
                           "aten::bmm": (torch.bmm, 2),
                           "aten::baddbmm": (torch.baddbmm, 3),
                           IN_PLACE: (torch.Tensor.addmm_, 3),
                           ONEDNN_LINEAR: (lambda x, w, b: torch.ops.mkldnn._linear_pointwise(
                               x, w, b, "none", [], ""), 3)}[event.key]
    # the operands come first; a compiled step may also pass an output tensor (out=)
    inputs = [torch.randn(shape, dtype=dtype) if shape else None  # no bias: no shape
              for shape in event.input_shapes[:operands]]
    operation(*inputs)  # the first call may pick or build the kernel
    started = time.perf_counter()
    for _ in range(event.count):
        operation(*inputs)
    return time.perf_counter() - started


def run_nmt(name: str, steps: int, batching: str, corpus: Path, seconds: float = 0) -> dict:
    """nmt_worker in a process of its own, so that each configuration's peak memory is its own."""
    length = f"for {seconds:g} s" if seconds else f"{steps} steps"
    print(f"nmt {name} ({batching} batches): training {length}", file=sys.stderr, flush=True)
    result = subprocess.run([sys.executable, "-m", "bench.speed", "--worker", name,
                             "--steps", str(steps), "--seconds", str(seconds),
                             "--batching", batching, "--data", str(corpus)],
                            capture_output=True, text=True, env=two_threads_env(), cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"nmt worker {name} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


PEER_NAMES = ("joeynmt", "eole", "marian")
# Each peer at its own recommended batching, by precision: what "vs fastest peer" compares with.
OWN_BATCHING = {"fp32": ("joeynmt transformer", "eole transformer (fp32)",
                         "marian transformer (hf batches, fp32)"),
                "bf16": ("eole transformer (bf16)", "marian transformer (hf batches, bf16)")}
NMT_BY_PRECISION = {"fp32": "nmt transformer (nmt batches)",
                    "bf16": "nmt transformer-bf16 (nmt batches)"}
COMPILED_BY_PRECISION = {overrides.get("train.precision", "fp32"): f"nmt {name} (nmt batches)"
                         for name, overrides in COMPILED.items()}


def fastest_peer(results: dict[str, dict], precision: str) -> str | None:
    """The peer with the highest median tok/s at its own batching in `precision`, if any ran."""
    peers = [name for name in OWN_BATCHING[precision] if name in results]
    return max(peers, key=lambda name: results[name]["tokens_per_s"], default=None)


def versus_fastest(results: dict[str, dict], mine: str,
                   precision: str) -> tuple[float, str, list[float]] | None:
    """`mine` against the fastest peer at its own batching in `precision`: the median ratio,
    the peer with the highest median tok/s, and the ratios. Where `mine` and every peer were
    measured in the same rounds, each round gives a ratio (mine over the fastest peer of that
    round); a row run once is compared with the peers' medians."""
    fastest = fastest_peer(results, precision)
    if mine not in results or fastest is None:
        return None
    peers = [name for name in OWN_BATCHING[precision] if name in results]
    rounds = results[mine].get("rounds", [])
    if len(rounds) > 1 and all(len(results[p].get("rounds", [])) == len(rounds) for p in peers):
        ratios = [speed / max(results[p]["rounds"][i] for p in peers)
                  for i, speed in enumerate(rounds)]
    else:
        ratios = [results[mine]["tokens_per_s"] / results[fastest]["tokens_per_s"]]
    return statistics.median(ratios), fastest, ratios


def ceiling_versus_fastest(results: dict[str, dict], precision: str) -> tuple[float, str] | None:
    """nmt's tok/s with nothing but its matrix products timed (the median over rounds) against
    the fastest peer's tok/s: the highest "vs fastest peer" that faster non-product work alone
    could give on this machine."""
    mine = results.get(NMT_BY_PRECISION[precision], {}).get("products_only_tokens_per_s")
    fastest = fastest_peer(results, precision)
    if mine is None or fastest is None:
        return None
    return mine / results[fastest]["tokens_per_s"], fastest


def product_speed(row: dict) -> float | None:
    """A step's matrix products' GFLOP/s over that of the same products run alone: near 1,
    the products could run hardly faster, however the step is arranged."""
    if "product_gflops_per_s" not in row:
        return None
    return row["product_gflops_per_s"] / row["products_alone_gflops_per_s"]


def shown_versus(versus: tuple[float, str, list[float]]) -> str:
    """'1.62x (eole transformer (fp32))', with each round's ratio when there were rounds."""
    ratio, fastest, ratios = versus
    rounds = f"; rounds {' / '.join(f'{r:.2f}x' for r in ratios)}" if len(ratios) > 1 else ""
    return f"{ratio:.2f}x ({fastest}{rounds})"


def paired_runs(peers: list[str], steps: int, seconds: int,
                corpus: Path) -> list[tuple[str, Callable[[], dict]]]:
    """The runs that "vs fastest peer" compares, in the order of one round: nmt's Transformer
    with its own batches, then each peer at its own recommended batching, fp32 then bf16;
    each trains for `seconds` after its warm-up."""
    runs: list[tuple[str, Callable[[], dict]]] = []
    for precision, mine in NMT_BY_PRECISION.items():
        name = "transformer" if precision == "fp32" else "transformer-bf16"
        runs.append((mine, partial(run_nmt, name, steps, "nmt", corpus, seconds)))
        if precision == "fp32" and "joeynmt" in peers:
            runs.append(("joeynmt transformer",
                         partial(joeynmt_train_speed, "transformer", seconds, corpus)))
        if "eole" in peers:
            runs.append((f"eole transformer ({precision})",
                         partial(peer_eole.train_speed, seconds, precision, corpus)))
        if "marian" in peers:
            runs.append((f"marian transformer (hf batches, {precision})",
                         partial(peer_marian.train_speed, seconds, precision, "hf", corpus)))
    return runs


# matrix_product_time's figures: like tok/s, each is shown as its median over the rounds.
PROFILED = ("product_share", "products_only_tokens_per_s", "product_gflops_per_s",
            "products_alone_gflops_per_s")


def add_round(results: dict[str, dict], name: str, figures: dict) -> None:
    """One more measurement of a run: its row keeps each round's tok/s ("rounds") and shows
    their median (the profiled figures likewise, in "<figure>_rounds"), the highest peak
    memory, and the other figures of the last round."""
    row = results.setdefault(name, {"rounds": [], "peak_rss_mb": 0.0})
    row.update({key: value for key, value in figures.items()
                if key not in ("tokens_per_s", "peak_rss_mb")})
    row["rounds"].append(figures["tokens_per_s"])
    row["tokens_per_s"] = statistics.median(row["rounds"])
    for key in PROFILED:
        if key in figures:
            row.setdefault(f"{key}_rounds", []).append(figures[key])
            row[key] = statistics.median(row[f"{key}_rounds"])
    row["peak_rss_mb"] = max(row["peak_rss_mb"], figures["peak_rss_mb"])


def read_progress(progress: Path | None, settings: dict) -> dict:
    """What an earlier measurement cut short wrote to `progress`, if it was made with the same
    `settings`; else nothing (it starts afresh, and overwrites the file as it goes)."""
    if progress is None or not progress.exists():
        return {}
    try:
        saved = json.loads(progress.read_text())
    except json.JSONDecodeError:
        return {}
    if not isinstance(saved, dict) or saved.get("settings") != settings:
        print(f"{progress}: made with other settings or other code; starting afresh",
              file=sys.stderr, flush=True)
        return {}
    return saved


def measure(peers: list[str], steps: int, seconds: int, rounds: int, corpus: Path,
            progress: Path | None = None) -> dict[str, dict]:
    """Every run: the paired ones in `rounds` rounds, each in the reverse order of the one
    before, so that a steady drift of the machine's speed weighs on both sides alike; then
    the rows that run once. nmt's rows first, then the peers', each by name.

    With `progress`, each whole round and each row run once is written there as it ends,
    and a measurement cut short goes on from what that file holds when it was made with the
    same settings and the same code (common.measured_code). A round is kept whole or not at
    all: its ratio compares runs made one after another on one machine."""
    settings = {"peers": sorted(peers), "steps": steps, "seconds": seconds, "rounds": rounds,
                "corpus": str(corpus), "code": measured_code()}
    saved = read_progress(progress, settings)
    results: dict[str, dict] = saved.get("results", {})
    rounds_done = saved.get("rounds_done", 0)
    if saved:
        print(f"going on from {progress}: {rounds_done} of {rounds} rounds done",
              file=sys.stderr, flush=True)

    def save() -> None:
        if progress is not None:
            write_json(progress, {"settings": settings, "rounds_done": rounds_done,
                                  "results": results})

    paired = paired_runs(peers, steps, seconds, corpus)
    for index in range(rounds_done, rounds):
        for name, run in (paired if index % 2 == 0 else paired[::-1]):
            add_round(results, name, run())
            print(f"{name}: {results[name]['rounds'][-1]:,.0f} tok/s", file=sys.stderr)
        rounds_done = index + 1
        save()
    once = [(f"nmt {name} ({batching} batches)", partial(run_nmt, name, steps, batching, corpus))
            for name in NMT_REFERENCE for batching in ("nmt", "joeynmt")]
    once += [(f"nmt {name} (nmt batches)", partial(run_nmt, name, steps, "nmt", corpus))
             for name in COMPILED]
    if "joeynmt" in peers:
        once.append(("joeynmt gru-bahdanau",
                      partial(joeynmt_train_speed, "gru-bahdanau", seconds, corpus)))
    if "marian" in peers:
        once.append(("marian transformer (tokens batches, fp32)",
                     partial(peer_marian.train_speed, seconds, "fp32", "tokens", corpus)))
    for name, run in once:
        if name in results:  # measured in the rounds, or before a cut short run ended
            continue
        results[name] = run()
        print(f"{name}: {results[name]['tokens_per_s']:,.0f} tok/s", file=sys.stderr)
        save()
    return dict(sorted(results.items(), key=lambda item: (not item[0].startswith("nmt"),
                                                          item[0])))


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--quick", action="store_true", help="fewer steps, shorter peer runs")
    parser.add_argument("--rounds", type=int,
                        help="rounds of the runs behind 'vs fastest peer' (default 3; 2 quick)")
    parser.add_argument("--peers", nargs="*", choices=PEER_NAMES, default=list(PEER_NAMES),
                        help="the peers to measure (default: all; none: nmt alone)")
    add_data_option(parser)
    parser.add_argument("--json", type=Path, default=OUT / "speed.json")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--batching", default="nmt", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(nmt_worker(args.worker, args.steps, args.batching, args.data,
                                    args.seconds)))
        return
    if args.rounds is not None and args.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1 (got {args.rounds})")
    corpus = multi30k_dir(args.data)
    steps, seconds = (15, 150) if args.quick else (40, 360)
    rounds = args.rounds or (2 if args.quick else 3)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    progress = args.json.with_suffix(".progress.json")
    results = measure(args.peers, steps, seconds, rounds, corpus, progress)
    print_table(results)
    write_json(args.json, results)
    progress.unlink(missing_ok=True)


def print_table(results: dict[str, dict]) -> None:
    baselines = {"transformer": results.get("joeynmt transformer"),
                 "gru": results.get("joeynmt gru-bahdanau")}
    print("| run | target tok/s | vs JoeyNMT | vs fastest peer | peak RSS | vs JoeyNMT |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in results.items():
        base = baselines["gru" if "gru" in name else "transformer"]
        speed = f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}x" if base else "-"
        memory = f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f}x" if base else "-"
        precision = next((p for p in NMT_BY_PRECISION
                          if name in (NMT_BY_PRECISION[p], COMPILED_BY_PRECISION[p])), None)
        compared = versus_fastest(results, name, precision) if precision else None
        versus = shown_versus(compared) if compared else "-"
        print(f"| {name} | {r['tokens_per_s']:,.0f} | {speed} | {versus} "
              f"| {r['peak_rss_mb']:,.0f} MB | {memory} |")
    for precision, name in NMT_BY_PRECISION.items():
        if "product_share" not in results.get(name, {}):
            continue
        r, ceiling = results[name], ceiling_versus_fastest(results, precision)
        versus = f", {ceiling[0]:.2f}x {ceiling[1]}" if ceiling else ""
        print(f"{name}: matrix products {r['product_share']:.0%} of a step; with nothing "
              f"else timed {r['products_only_tokens_per_s']:,.0f} tok/s{versus}")
        if product_speed(r) is not None:
            print(f"{name}: matrix products at {r['product_gflops_per_s']:,.0f} GFLOP/s, "
                  f"{product_speed(r):.0%} of the same products run alone "
                  f"({r['products_alone_gflops_per_s']:,.0f} GFLOP/s)")


if __name__ == "__main__":
    main()
