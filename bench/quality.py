"""Quality at a time budget: train each Multi30k preset, then score test_2016_flickr.

Each preset trains for its own budget (train.max_time, 60 minutes) on Multi30k en-de (or the
pair --pair names: en-fr, en-cs), selecting on val; then the best weights translate
test_2016_flickr with beam 5 (nmt's default length penalty, recorded as "alpha") and with greedy
search, and sacreBLEU scores the detokenized output against the raw references: BLEU (cased,
13a), chrF2, and lowercased BLEU for comparison with published results. Decoding time is end
to end (loading the run included). Beam 5 is also scored with the linear layers quantized to int8.
A run that kept an EMA of its weights (train.ema_decay) is scored with the EMA when its best
validation BLEU is higher than that of the trained weights: validation chooses, never the test.

    python -m bench.quality [--presets multi30k-transformer multi30k-gru] [--max-time 20m]
                            [--pair en-de|en-fr|en-cs] [--seed N] [--score-only] [--data DIR]
                            [--out DIR] [--json FILE]

Runs go to DIR/<preset> (bench/out/quality by default); --score-only scores runs already there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from nmt_cli.datasets import MULTI30K_LANGS

from .common import OUT, ROOT, THREADS, add_data_option, multi30k_dir, new_parser

PRESETS = ("multi30k-transformer", "multi30k-gru")
# Multi30k task 1 pairs out of English, each with a test_2016_flickr: en-de, en-fr, en-cs
PAIRS = tuple(f"en-{lang}" for lang in MULTI30K_LANGS if lang != "en")
# bf16 autocast pays off on CPUs with bf16 matrix units (AMX, as here); the GRU recurrence
# runs in fp32 anyway.
EXTRA = {name: ["--set", "train.precision=bf16"]
         for name in ("multi30k-transformer", "multi30k-transformer-20m")}


def train(preset: str, run_dir: Path, max_time: str | None, corpus: Path,
          pair: str = "en-de", seed: int | None = None, settings: tuple[str, ...] = ()
          ) -> float:
    """Train `preset` on the pair (en-de; en-de,fr,cs for one model into several languages)
    with `settings` (key=value) on top; returns the wall-clock seconds."""
    src, tgt = pair.split("-")
    command = [sys.executable, "-m", "nmt_cli", "train", "--preset", preset,
               "--data", str(corpus), "--run", str(run_dir), *EXTRA.get(preset, []),
               "--set", f"data.src_lang={src}", "--set", f"data.tgt_lang={tgt}"]
    for setting in settings:
        command += ["--set", setting]
    if max_time:
        command += ["--max-time", max_time]
    if seed is not None:
        command += ["--set", f"train.seed={seed}"]
    start = time.perf_counter()
    with open(run_dir.with_suffix(".log"), "w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    return time.perf_counter() - start


def chosen_weights(records: list[dict]) -> tuple[str, float | None, float | None]:
    """The weights that validation ranks first: the best trained weights, or the best EMA when
    the run kept one (train.ema_decay) and it scored a higher validation BLEU. Returns the file
    name and both best validation BLEUs."""
    from nmt_cli.checkpoint import BEST_WEIGHTS

    validations = [r for r in records if r["kind"] == "validate"]
    best = max((r["val_bleu"] for r in validations), default=None)
    ema = max((r["ema_val_bleu"] for r in validations if "ema_val_bleu" in r), default=None)
    if ema is not None and (best is None or ema > best):
        return "ema.safetensors", best, ema
    return BEST_WEIGHTS, best, ema


DECODES = {"beam5": (5, "none"), "greedy": (1, "none"), "beam5_int8": (5, "int8")}


def score(run_dir: Path, corpus: Path, pair: str = "en-de",
          decodes: tuple[str, ...] = tuple(DECODES)) -> dict:
    from nmt_cli.checkpoint import read_config
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import read_lines
    from nmt_cli.evaluation import evaluate
    from nmt_cli.learning_curves import read_metrics
    from nmt_cli.translate import Translator

    src, tgt = pair.split("-")
    sources = read_lines(corpus / f"test_2016_flickr.{src}.gz")
    references = read_lines(corpus / f"test_2016_flickr.{tgt}.gz")
    steps = read_metrics(run_dir)
    last = [s for s in steps if s["kind"] == "step"][-1]
    weights, best_val, best_ema = chosen_weights(steps)
    result = {"pair": pair, "seed": read_config(run_dir)[0].train.seed,
              "alpha": DecodeConfig().alpha, "steps": last["step"], "epochs": last["epoch"],
              "train_minutes": round(last["elapsed"] / 60, 1), "best_val_bleu": best_val,
              "best_ema_val_bleu": best_ema, "weights": weights}
    for name in decodes:
        beam, quantize = DECODES[name]
        start = time.perf_counter()
        translator = Translator.from_run(run_dir, device="cpu", weights=weights,
                                         quantize=quantize)
        hypotheses = translator.translate(sources, DecodeConfig(beam=beam, device="cpu",
                                                                tgt_lang=tgt))
        seconds = time.perf_counter() - start
        (run_dir / f"test_2016_flickr.{name}.{tgt}").write_text("\n".join(hypotheses) + "\n")
        bleu, chrf = evaluate(hypotheses, references, ("bleu", "chrf"))
        result[name] = {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
                        "bleu_lc": round(evaluate(hypotheses, references, ("bleu",),
                                                  lowercase=True)[0].score, 2),
                        "seconds": round(seconds, 1),
                        "sentences_per_s": round(len(sources) / seconds, 1),
                        "signature": bleu.signature}
    return result


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), choices=PRESETS)
    parser.add_argument("--max-time", help="override the presets' budget, e.g. 20m")
    parser.add_argument("--pair", choices=PAIRS, default="en-de", help="the language pair")
    parser.add_argument("--seed", type=int, help="train.seed (default: the preset's)")
    parser.add_argument("--score-only", action="store_true")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "quality", help="where the runs go")
    parser.add_argument("--json", type=Path, help="default: OUT/quality.json")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data, args.pair)
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for preset in args.presets:
        run_dir = args.out / preset
        result = {"preset": preset}
        if not args.score_only:
            if run_dir.exists():
                sys.exit(f"error: {run_dir} exists; remove it or pass --score-only")
            print(f"{preset}: training into {run_dir}", file=sys.stderr, flush=True)
            minutes = train(preset, run_dir, args.max_time, corpus, args.pair, args.seed) / 60
            result["wall_minutes"] = round(minutes, 1)
        result.update(score(run_dir, corpus, args.pair))
        results[preset] = result
        print(json.dumps(result), flush=True)
    (args.json or args.out / "quality.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\n| preset | pair | steps | epochs | minutes | BLEU beam 5 | chrF2 | BLEU lc "
          "| BLEU greedy | BLEU beam 5 int8 | beam 5 sent/s (int8) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results.values():
        print(f"| {r['preset']} | {r['pair']} | {r['steps']:,} | {r['epochs']} "
              f"| {r['train_minutes']} | {r['beam5']['bleu']:.2f} | {r['beam5']['chrf']:.2f} "
              f"| {r['beam5']['bleu_lc']:.2f} "
              f"| {r['greedy']['bleu']:.2f} | {r['beam5_int8']['bleu']:.2f} "
              f"| {r['beam5']['sentences_per_s']} ({r['beam5_int8']['sentences_per_s']}) |")


if __name__ == "__main__":
    main()
