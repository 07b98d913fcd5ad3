"""The bottleneck that attention removes, measured: the same GRU encoder-decoder with no
attention (the decoder reads one summary vector of the source), with Bahdanau's additive score
and with Luong's dot and general scores, and the Transformer, each trained on Multi30k en-de
for the same wall-clock budget (multi30k-gru / multi30k-transformer-20m presets, selecting
on val), then scored on test_2016_flickr with beam 5: BLEU overall and by source length.

    python -m bench.bottleneck [--max-time 6m] [--models none additive ...] [--score-only]
                               [--data DIR] [--out DIR] [-o bleu-by-length.png]

Runs go to DIR/<model> (bench/out/bottleneck by default). Prints one table (BLEU per source
length bucket, one column per model) and draws it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .common import OUT, ROOT, THREADS, add_data_option, multi30k_dir, new_parser

MODELS = {  # name: nmt train arguments
    "none": ["--preset", "multi30k-gru", "--set", "model.attention=none"],
    "additive": ["--preset", "multi30k-gru", "--set", "model.attention=additive"],
    "dot": ["--preset", "multi30k-gru", "--set", "model.attention=dot"],
    "general": ["--preset", "multi30k-gru", "--set", "model.attention=general"],
    "transformer": ["--preset", "multi30k-transformer-20m", "--set", "train.precision=bf16"],
}


def train(name: str, run_dir: Path, max_time: str, corpus: Path) -> None:
    command = [sys.executable, "-m", "nmt_cli", "train", *MODELS[name], "--data", str(corpus),
               "--run", str(run_dir), "--max-time", max_time]
    with open(run_dir.with_suffix(".log"), "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def score(run_dir: Path, corpus: Path) -> dict:
    """Beam-5 BLEU on test_2016_flickr, overall and per source-length bucket."""
    from dataclasses import asdict

    from nmt_cli.config import DecodeConfig
    from nmt_cli.evaluation import bleu_by_length, evaluate_run

    evaluation = evaluate_run(run_dir, corpus / "test_2016_flickr.en.gz",
                              corpus / "test_2016_flickr.de.gz",
                              DecodeConfig(beam=5, device="cpu"))
    steps = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    last = [s for s in steps if s["kind"] == "step"][-1]
    return {"bleu": round(evaluation.scores[0].score, 2), "steps": last["step"],
            "minutes": round(last["elapsed"] / 60, 1),
            "signature": evaluation.scores[0].signature,
            "by_length": [asdict(b) for b in bleu_by_length(evaluation)]}


def print_table(results: dict) -> None:
    buckets = [b["bucket"] for b in next(iter(results.values()))["by_length"]]
    sizes = {b["bucket"]: b["sentences"] for b in next(iter(results.values()))["by_length"]}
    print("\n| model | steps | BLEU | " + " | ".join(
        f"{b} words ({sizes[b]:,})" for b in buckets) + " |")
    print("| --- " * (3 + len(buckets)) + "|")
    for name, r in results.items():
        by = {b["bucket"]: b["bleu"] for b in r["by_length"]}
        print(f"| {name} | {r['steps']:,} | {r['bleu']:.2f} | "
              + " | ".join(f"{by.get(b, float('nan')):.2f}" for b in buckets) + " |")


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--max-time", default="6m", help="each model's budget (default 6m)")
    parser.add_argument("--score-only", action="store_true")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "bottleneck", help="where runs go")
    parser.add_argument("-o", "--picture", type=Path, help="draw BLEU by length here")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data)
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.models:
        run_dir = args.out / name
        if not args.score_only:
            if run_dir.exists():
                sys.exit(f"error: {run_dir} exists; remove it or pass --score-only")
            print(f"{name}: training into {run_dir} for {args.max_time}", file=sys.stderr,
                  flush=True)
            train(name, run_dir, args.max_time, corpus)
        results[name] = score(run_dir, corpus)
        print(json.dumps({name: results[name]}), file=sys.stderr, flush=True)
    (args.out / "bottleneck.json").write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    if args.picture:
        from nmt_cli.pictures import draw_bleu_by_length_of_systems

        draw_bleu_by_length_of_systems(
            {name: r["by_length"] for name, r in results.items()}, args.picture,
            f"test_2016_flickr BLEU by source length, {args.max_time} of training each")


if __name__ == "__main__":
    main()
