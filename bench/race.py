"""BLEU after the same wall-clock training budget (20 minutes): nmt and its peers, in one run.

Each system trains the reference-size Transformer on Multi30k en-de, on 2 threads, for the
budget, one after another (each alone on the machine), and as its users would run it:

- nmt: the multi30k-transformer-20m preset in bf16 (bench.quality's setting), its best weights by
  validation BLEU (the EMA's when they validate higher, as in bench.quality);
- eole 0.6.4 (bench/peer_eole.py): the reference config, bf16, validation every 80 steps, its
  last checkpoint (eole keeps no best one);
- Hugging Face MarianMT (bench/peer_marian.py): token batches, bf16, its best weights by
  validation loss;
- JoeyNMT 2.3.0: the reference config, validation every 80 steps, its best checkpoint.

Then each translates test_2016_flickr with beam 5 (its own search, length penalty 1.0, at most
100 pieces) and sacreBLEU scores the detokenized output against the raw references (cased,
13a), with chrF2 beside it. Only the budget is shared: each peer keeps its own recommended
settings (bench/peers/README.md says which).

    python -m bench.race [--minutes 20] [--systems nmt eole marian joeynmt] [--seed N]
                         [--set KEY=VALUE ...] [--data DIR] [--out DIR] [--json FILE]

--set changes a setting of nmt's run (a variant to race against the peers); the peers keep theirs.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

from . import peer_eole, peer_marian, quality
from .common import (
    OUT,
    add_data_option,
    joeynmt_command,
    joeynmt_config,
    multi30k_dir,
    new_parser,
    setup_joeynmt,
    two_threads_env,
    watch_peak_rss,
)

SYSTEMS = ("nmt", "eole", "marian", "joeynmt")
PRESET = "multi30k-transformer-20m"


def plain_test_source(corpus: Path, out: Path) -> Path:
    """test_2016_flickr.en as a plain file, for the peers' own translation commands."""
    path = out / "test_2016_flickr.en"
    if not path.exists():
        path.write_bytes(gzip.decompress((corpus / "test_2016_flickr.en.gz").read_bytes()))
    return path


def race_nmt(seconds: float, corpus: Path, out: Path, seed: int | None = None,
             settings: tuple[str, ...] = ()) -> list[str]:
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import read_lines
    from nmt_cli.learning_curves import read_metrics
    from nmt_cli.translate import Translator

    run_dir = out / "nmt"
    quality.train(PRESET, run_dir, f"{seconds / 60:g}m", corpus, seed=seed, settings=settings)
    sources = read_lines(corpus / "test_2016_flickr.en.gz")
    weights = quality.chosen_weights(read_metrics(run_dir))[0]
    translator = Translator.from_run(run_dir, device="cpu", weights=weights)
    # the peers' length penalty (GNMT, alpha 1.0), not nmt's default
    return translator.translate(sources, DecodeConfig(beam=5, alpha=1.0, device="cpu"))


def race_eole(seconds: float, corpus: Path, out: Path) -> list[str]:
    model = peer_eole.train_for(seconds, out / "eole", corpus, precision="bf16")
    sources = plain_test_source(corpus, out)
    return peer_eole.translate(peer_eole.ensure_eole(), model, sources, beam=5)


def race_marian(seconds: float, corpus: Path, out: Path) -> list[str]:
    model = peer_marian.train_for(seconds, out / "marian", "bf16", corpus)
    return peer_marian.translate(model, plain_test_source(corpus, out), beam=5)


def race_joeynmt(seconds: float, corpus: Path, out: Path) -> list[str]:
    """Train for `seconds`, stop with SIGINT (JoeyNMT saves on the way out), then translate
    the test source from stdin with its best checkpoint."""
    python, files = setup_joeynmt(corpus)
    model_dir = out / "joeynmt"
    config = out / "joeynmt.yaml"
    config.write_text(joeynmt_config("transformer", files, model_dir, {"testing.beam_size": 5}))
    print(f"joeynmt transformer: training for {seconds:g} s", file=sys.stderr, flush=True)
    with open(out / "joeynmt.log", "w") as sink:
        process = subprocess.Popen(joeynmt_command(python, "train", str(config)), stdout=sink,
                                   stderr=subprocess.STDOUT, env=two_threads_env())
        watch_peak_rss(process, 1.0, stop_after=seconds)
    with open(plain_test_source(corpus, out), "rb") as source:
        result = subprocess.run(joeynmt_command(python, "translate", str(config)), stdin=source,
                                capture_output=True, env=two_threads_env())
    if result.returncode != 0:
        raise SystemExit(f"joeynmt translate failed:\n{result.stderr.decode()[-2000:]}")
    return result.stdout.decode("utf-8").splitlines()


RACERS = {"nmt": race_nmt, "eole": race_eole, "marian": race_marian, "joeynmt": race_joeynmt}


def score(hypotheses: list[str], references: list[str]) -> dict:
    from nmt_cli.evaluation import evaluate

    bleu, chrf = evaluate(hypotheses, references, ("bleu", "chrf"))
    return {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
            "signature": bleu.signature}


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("--minutes", type=float, default=20.0, help="the training budget")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--seed", type=int, help="nmt's train.seed (default: the preset's)")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a setting of nmt's run (repeatable)")
    add_data_option(parser)
    parser.add_argument("--out", type=Path, default=OUT / "race", help="where the runs go")
    parser.add_argument("--json", type=Path, help="default: OUT/race.json")
    args = parser.parse_args()
    corpus = multi30k_dir(args.data)
    if args.out.exists() and any(args.out.iterdir()):
        sys.exit(f"error: {args.out} holds files; remove it or pass another --out")
    args.out.mkdir(parents=True, exist_ok=True)
    from nmt_cli.checkpoint import read_config
    from nmt_cli.data import read_lines

    references = read_lines(corpus / "test_2016_flickr.de.gz")
    results = {}
    for system in args.systems:
        started = time.perf_counter()
        racer = (partial(race_nmt, seed=args.seed, settings=tuple(args.settings))
                 if system == "nmt" else RACERS[system])
        hypotheses = racer(args.minutes * 60, corpus, args.out)
        (args.out / f"{system}.test_2016_flickr.de").write_text("\n".join(hypotheses) + "\n")
        results[system] = {**score(hypotheses, references),
                           "minutes": round((time.perf_counter() - started) / 60, 1)}
        if system == "nmt":
            results[system]["seed"] = read_config(args.out / "nmt")[0].train.seed
            results[system]["settings"] = args.settings  # what --set changed in the preset
        print(json.dumps({system: results[system]}), flush=True)
    (args.json or args.out / "race.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n| system ({args.minutes:g} minutes of training) | BLEU beam 5 | chrF2 "
          "| minutes in all |")
    print("| --- | --- | --- | --- |")
    for system, r in results.items():
        name = f"{system} ({', '.join(r['settings'])})" if r.get("settings") else system
        print(f"| {name} | {r['bleu']:.2f} | {r['chrf']:.2f} | {r['minutes']} |")


if __name__ == "__main__":
    main()
