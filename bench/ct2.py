"""CTranslate2 against nmt's own PyTorch search, on one trained Transformer run, in one run:
the same translations? the same BLEU? how much faster? what does int8 cost?

The run (default bench/out/bottleneck/transformer, the 5-minute Multi30k Transformer of
bench.bottleneck) is exported in float32 and in int8 (`nmt export`, into --out).
test_2016_flickr is translated by each engine, greedy and beam 5, with the same decoding
options (64 sentences a batch, output limit 1.5 x source + 10, alpha 1) and 2 threads. Each
engine runs in a process of its own, as `nmt translate` would (each brings its own OpenMP
runtime). Speed is sentences/s of the decoding alone (model loaded, warmed up on one batch),
the best of --repeats rounds in which the engines take turns. Line agreement and BLEU
(sacreBLEU, as `nmt eval`) come from the first round.

    python -m bench.ct2 [--run DIR] [--quick] [--repeats N] [--data DIR] [--out DIR]
                        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from .common import OUT, ROOT, THREADS, add_data_option, multi30k_dir, new_parser

SEARCHES = {"greedy": 1, "beam5": 5}
REFERENCE = "nmt torch"
ENGINES = {REFERENCE: None, "ctranslate2 float32": "float32", "ctranslate2 int8": "int8"}


def export(run: Path, out: Path) -> None:
    """The run's CTranslate2 exports, out/float32 and out/int8, as `nmt export` writes them."""
    for weights in ("float32", "int8"):
        subprocess.run([sys.executable, "-m", "nmt_cli", "export", str(run), "--format",
                        "ctranslate2", "--quantization", weights, "-o", str(out / weights),
                        "--force"], check=True, capture_output=True, cwd=ROOT)


def worker(engine: str, path: Path, lines_file: Path, result_file: Path) -> None:
    """In a process of its own: load one engine, time each search on the lines, and write
    the seconds and each line's best hypothesis (text, pieces, score)."""
    import torch

    from nmt_cli.config import DecodeConfig
    from nmt_cli.translate import load_engine

    torch.set_num_threads(THREADS)
    lines = json.loads(lines_file.read_text())
    translator = load_engine(engine, path, "cpu")
    results = {}
    for search, beam in SEARCHES.items():
        config = DecodeConfig(beam=beam, batch_size=64, device="cpu")
        translator.translate_nbest(lines[:64], config)  # warm-up
        start = time.perf_counter()
        found = translator.translate_nbest(lines, config)
        results[search] = {"seconds": time.perf_counter() - start,
                           "best": [(h[0].text, h[0].tokens, h[0].score) for h in found]}
    result_file.write_text(json.dumps(results))


def decode_all(run: Path, out: Path, lines: list[str], repeats: int) -> dict:
    """{search: {engine: (best seconds, the first round's best hypotheses)}}."""
    lines_file = out / "lines.json"
    lines_file.write_text(json.dumps(lines))
    found: dict[str, dict] = {search: {} for search in SEARCHES}
    for _ in range(repeats):
        for name, weights in ENGINES.items():
            engine, path = ("torch", run) if weights is None else ("ctranslate2", out / weights)
            result_file = out / "result.json"
            subprocess.run([sys.executable, "-m", "bench.ct2", "--worker", engine, str(path),
                            str(lines_file), str(result_file)], check=True, cwd=ROOT)
            for search, r in json.loads(result_file.read_text()).items():
                best, first = found[search].get(name, (r["seconds"], r["best"]))
                found[search][name] = (min(best, r["seconds"]), first)
        print({s: {n: round(t, 2) for n, (t, _) in e.items()} for s, e in found.items()},
              file=sys.stderr, flush=True)
    return found


def figures(found: dict, references: list[str]) -> dict:
    """Sentences/s, BLEU, and agreement with nmt's own search, per search and engine."""
    from nmt_cli.evaluation import evaluate

    results: dict[str, dict] = {}
    for search, by_engine in found.items():
        ours = by_engine[REFERENCE][1]
        for name, (seconds, best) in by_engine.items():
            same = [tokens == theirs[1] for (_, tokens, _), theirs in zip(best, ours)]
            gaps = [abs(score - theirs[2])
                    for (_, tokens, score), theirs, s in zip(best, ours, same) if s and tokens]
            results.setdefault(name, {})[search] = {
                "seconds": round(seconds, 2), "sentences_per_s": len(best) / seconds,
                "bleu": evaluate([text for text, _, _ in best], references)[0].score,
                "same_as_nmt": sum(same), "sentences": len(best),
                "max_score_difference": max(gaps, default=0.0)}
    return results


def print_table(results: dict) -> None:
    base = results[REFERENCE]
    print("\n| engine | greedy sent/s | vs nmt | beam 5 sent/s | vs nmt | BLEU greedy | "
          "BLEU beam 5 | lines = nmt (greedy, beam 5) |")
    print("| --- " * 8 + "|")
    for name, r in results.items():
        cells = []
        for search in SEARCHES:
            speed = r[search]["sentences_per_s"]
            cells += [f"{speed:.1f}", f"{speed / base[search]['sentences_per_s']:.2f}x"]
        cells += [f"{r[s]['bleu']:.2f}" for s in SEARCHES]
        cells.append(", ".join(f"{r[s]['same_as_nmt']}/{r[s]['sentences']}" for s in SEARCHES))
        print(f"| {name} | " + " | ".join(cells) + " |")
    float32 = results["ctranslate2 float32"]
    print("\nmax |score difference| where CTranslate2 float32 found nmt's translation: "
          + ", ".join(f"{s} {float32[s]['max_score_difference']:.2g}" for s in SEARCHES))
    print("int8 - float32 BLEU (CTranslate2): " + ", ".join(
        f"{s} {results['ctranslate2 int8'][s]['bleu'] - float32[s]['bleu']:+.2f}"
        for s in SEARCHES))


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS,  # one engine's process
                        metavar=("ENGINE", "PATH", "LINES", "RESULT"))
    parser.add_argument("--run", type=Path, default=OUT / "bottleneck" / "transformer",
                        help="a trained Transformer run (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="the first 300 sentences only")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds (default 2)")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "ct2", help="where exports go")
    parser.add_argument("--json", type=Path, default=OUT / "ct2.json")
    args = parser.parse_args()
    if args.worker:
        engine, path, lines_file, result_file = args.worker
        return worker(engine, Path(path), Path(lines_file), Path(result_file))
    corpus = multi30k_dir(args.data)
    from nmt_cli.data import read_parallel

    text = read_parallel(corpus / "test_2016_flickr.en.gz", corpus / "test_2016_flickr.de.gz")
    count = 300 if args.quick else len(text.src)
    args.out.mkdir(parents=True, exist_ok=True)
    export(args.run.resolve(), args.out.resolve())
    found = decode_all(args.run.resolve(), args.out.resolve(), text.src[:count], args.repeats)
    results = figures(found, text.tgt[:count])
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"run": str(args.run), "threads": THREADS,
                                     "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
