"""CTranslate2 against nmt's own PyTorch search, on one trained Transformer run, in one run:
the same translations? the same BLEU? how much faster? what does int8 cost?

The run (default bench/out/bottleneck/transformer, the 5-minute Multi30k Transformer of
bench.bottleneck) is exported in float32 and in int8 (`nmt export`, into --out).
test_2016_flickr is translated by each engine, greedy and beam 5, with the same decoding
options (64 sentences a batch, output limit 1.5 x source + 10, alpha 1) and 2 threads, all in
this one process. Speed is sentences/s of the decoding alone (models loaded and warmed up on
one batch), the best of --repeats rounds in which the engines take turns. Line agreement and
BLEU (sacreBLEU, as `nmt eval`) come from the first round.

    python -m bench.ct2 [--run DIR] [--quick] [--repeats N] [--data DIR] [--out DIR]
                        [--json FILE]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .common import OUT, THREADS, add_data_option, multi30k_dir, new_parser

SEARCHES = {"greedy": 1, "beam5": 5}
REFERENCE = "nmt torch"


def load_engines(run: Path, out: Path) -> dict:
    """nmt's Translator and the run's CTranslate2 exports, float32 and int8, on 2 threads."""
    from nmt_cli.ct2 import CTranslate2Translator
    from nmt_cli.ct2_export import export_ctranslate2
    from nmt_cli.translate import Translator

    engines = {REFERENCE: Translator.from_run(run, "cpu")}
    for weights in ("float32", "int8"):
        export = export_ctranslate2(run, out / weights, weights, force=True)
        engines[f"ctranslate2 {weights}"] = CTranslate2Translator.from_dir(export, "cpu",
                                                                           threads=THREADS)
    return engines


def decode_all(engines: dict, lines: list[str], repeats: int) -> dict:
    """{search: {engine: (best seconds, n-best lists of the first round)}}."""
    from nmt_cli.config import DecodeConfig

    found: dict[str, dict] = {}
    for search, beam in SEARCHES.items():
        config = DecodeConfig(beam=beam, batch_size=64, device="cpu")
        for engine in engines.values():
            engine.translate_nbest(lines[:64], config)  # warm-up
        found[search] = {}
        for _ in range(repeats):
            for name, engine in engines.items():
                start = time.perf_counter()
                translations = engine.translate_nbest(lines, config)
                seconds = time.perf_counter() - start
                best, first = found[search].get(name, (seconds, translations))
                found[search][name] = (min(best, seconds), first)
            print(search, {n: round(s, 2) for n, (s, _) in found[search].items()},
                  file=sys.stderr, flush=True)
    return found


def figures(found: dict, references: list[str]) -> dict:
    """Sentences/s, BLEU, and agreement with nmt's own search, per search and engine."""
    from nmt_cli.evaluate import evaluate

    results: dict[str, dict] = {}
    for search, by_engine in found.items():
        ours = by_engine[REFERENCE][1]
        for name, (seconds, translations) in by_engine.items():
            texts = [hyps[0].text for hyps in translations]
            same = [a[0].tokens == b[0].tokens for a, b in zip(translations, ours)]
            gaps = [abs(a[0].score - b[0].score)
                    for a, b, s in zip(translations, ours, same) if s and a[0].tokens]
            results.setdefault(name, {})[search] = {
                "seconds": round(seconds, 2), "sentences_per_s": len(texts) / seconds,
                "bleu": evaluate(texts, references)[0].score,
                "same_as_nmt": sum(same), "sentences": len(texts),
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
    parser.add_argument("--run", type=Path, default=OUT / "bottleneck" / "transformer",
                        help="a trained Transformer run (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="the first 300 sentences only")
    parser.add_argument("--repeats", type=int, default=2, help="timed rounds (default 2)")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "ct2", help="where exports go")
    parser.add_argument("--json", type=Path, default=OUT / "ct2.json")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data)
    import torch

    from nmt_cli.data import read_parallel

    torch.set_num_threads(THREADS)
    text = read_parallel(corpus / "test_2016_flickr.en.gz", corpus / "test_2016_flickr.de.gz")
    count = 300 if args.quick else len(text.src)
    engines = load_engines(args.run, args.out)
    results = figures(decode_all(engines, text.src[:count], args.repeats), text.tgt[:count])
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"run": str(args.run), "threads": THREADS,
                                     "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
