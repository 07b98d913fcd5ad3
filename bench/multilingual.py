"""One model into three languages against one model each (Johnson et al., 2017), on Multi30k.

Trains the multi30k-transformer-20m preset (bf16, as bench.quality) from English into German,
French and Czech: a run per language for --minutes, and one run into all three
(data.tgt_lang "de,fr,cs", every source opened by a language tag) for three times as long, so
both sides spend the same compute. That run validates every 750 steps rather than 250: its
validation set is three times as large, so validation takes the same share of its time. Each
run's weights are chosen on val as bench.quality chooses them (trained or EMA); then
test_2016_flickr is translated into each language with beam 5 and scored (BLEU, chrF2), and the
two systems of each language are compared by paired bootstrap resampling and approximate
randomization, as `nmt compare` compares them.

    python -m bench.multilingual [--minutes 20] [--set KEY=VALUE ...] [--score-only]
                                 [--data DIR] [--out DIR]

Runs go to DIR/en-de, DIR/en-fr, DIR/en-cs and DIR/en-all (bench/out/multilingual by default);
--score-only scores runs already there.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from . import quality
from .common import OUT, THREADS, add_data_option, multi30k_dir, new_parser

LANGUAGES = ("de", "fr", "cs")
PRESET = "multi30k-transformer-20m"
VALIDATE_EVERY = 750  # the preset's 250, times the three validation sets


def train_all(out: Path, corpus: Path, minutes: float, settings: tuple[str, ...] = ()
              ) -> dict[str, float]:
    """Train the three one-language runs and the run into all three, each with `settings`
    (key=value) on top of the preset; their wall minutes."""
    runs = {language: (out / f"en-{language}", f"en-{language}", minutes, settings)
            for language in LANGUAGES}
    runs["all"] = (out / "en-all", f"en-{','.join(LANGUAGES)}", minutes * len(LANGUAGES),
                   (*settings, f"train.validate_every={VALIDATE_EVERY}"))
    wall = {}
    for name, (run_dir, pair, budget, changes) in runs.items():
        if run_dir.exists():
            sys.exit(f"error: {run_dir} exists; remove it or pass --score-only")
        print(f"{pair}: training into {run_dir} for {budget:g} minutes", file=sys.stderr,
              flush=True)
        seconds = quality.train(PRESET, run_dir, f"{budget:g}m", corpus, pair,
                                settings=changes)
        wall[name] = round(seconds / 60, 1)
    return wall


def compare_language(out: Path, corpus: Path, language: str) -> dict:
    """Both systems' scores into `language` and the paired tests between them."""
    from nmt_cli.compare import compare
    from nmt_cli.data import read_lines

    pair = f"en-{language}"
    one, every = (quality.score(out / run, corpus, pair, ("beam5",)) for run in (pair, "en-all"))
    references = read_lines(corpus / f"test_2016_flickr.{language}.gz")
    hypotheses = [read_lines(out / run / f"test_2016_flickr.beam5.{language}")
                  for run in (pair, "en-all")]
    tested = compare([("one language", hypotheses[0]), ("all three", hypotheses[1])],
                     references)
    p_values = {metric.metric: {"bootstrap": metric.p_bootstrap, "ar": metric.p_ar}
                for metric in tested.systems[1].metrics}
    return {"language": language, "one": one, "all": every, "p": p_values}


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--minutes", type=float, default=20.0,
                        help="each one-language run's budget (the run into all three: 3x)")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a setting of every run (repeatable)")
    parser.add_argument("--score-only", action="store_true")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "multilingual",
                        help="where the runs go")
    args = parser.parse_args()
    for language in LANGUAGES:  # fetches each pair's files where they are missing
        corpus = multi30k_dir(args.data, f"en-{language}")
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    args.out.mkdir(parents=True, exist_ok=True)
    settings = tuple(args.settings)
    wall = {} if args.score_only else train_all(args.out, corpus, args.minutes, settings)
    results = [compare_language(args.out, corpus, language) for language in LANGUAGES]
    (args.out / "multilingual.json").write_text(json.dumps(
        {"wall_minutes": wall, "languages": results}, indent=2) + "\n")
    print("\n| language | one model: steps | BLEU | chrF2 | one model into all three: BLEU "
          "| chrF2 | BLEU difference | p (bootstrap / AR) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        one, every, p = r["one"]["beam5"], r["all"]["beam5"], r["p"]["BLEU"]
        print(f"| {r['language']} | {r['one']['steps']:,} | {one['bleu']:.2f} "
              f"| {one['chrf']:.2f} | {every['bleu']:.2f} | {every['chrf']:.2f} "
              f"| {every['bleu'] - one['bleu']:+.2f} | {p['bootstrap']:.4f} / {p['ar']:.4f} |")
    every = results[0]["all"]
    print(f"\nthe run into all three: {every['steps']:,} steps, {every['epochs']} epochs of "
          f"the three pairs; weights: {every['weights']}")


if __name__ == "__main__":
    main()
