"""The length penalty on validation: which alpha, at which beam, suits these runs.

Each run's chosen weights (bench.quality's rule: the EMA when it validated higher) translate the
validation split of the run's own corpus and pair with beam search at every alpha of the GNMT
penalty; sacreBLEU (cased, 13a) scores them. The table has one column per run and the mean over
runs, so a default is picked by its mean, not by one model. Validation only: the test sets
report, they never choose.

    python -m bench.length_penalty RUN [RUN ...] [--alphas 0.6 1.0 1.4 2.0] [--beams 5]
                                   [--json FILE]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from statistics import mean

from .common import new_parser, report_table


def val_bleu(runs: list[Path], settings: list[tuple[int, float]]) -> dict[str, dict[str, float]]:
    """{run: {"beam B alpha A": val BLEU}} for each run and (beam, alpha) setting."""
    from nmt_cli.checkpoint import read_config
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import corpus_dir, load_split
    from nmt_cli.evaluation import evaluate
    from nmt_cli.learning_curves import read_metrics
    from nmt_cli.translate import Translator
    from nmt_cli.validation import validation_tokenizer

    from .quality import chosen_weights

    table = {}
    for run in runs:
        data = read_config(run)[0].data
        if "," in data.tgt_lang:  # its sources would need a language tag each
            sys.exit(f"error: {run} translates into {data.tgt_lang}; score runs into one "
                     "language")
        val = load_split(corpus_dir(data.data_dir), "val", data.src_lang, data.tgt_lang)
        weights = chosen_weights(read_metrics(run))[0]
        translator = Translator.from_run(run, device="cpu", weights=weights)
        table[str(run)] = {}
        for beam, alpha in settings:
            start = time.perf_counter()
            hypotheses = translator.translate(val.src, DecodeConfig(beam=beam, alpha=alpha,
                                                                    device="cpu"))
            bleu, = evaluate(hypotheses, val.tgt, ("bleu",),  # split as val_bleu is
                             tokenize=validation_tokenizer(data.tgt_lang))
            table[str(run)][setting_name(beam, alpha)] = round(bleu.score, 2)
            print(f"{run} ({weights}), {setting_name(beam, alpha)}: {bleu.details} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    return table


def setting_name(beam: int, alpha: float) -> str:
    return f"beam {beam} alpha {alpha:g}"


def markdown(table: dict[str, dict[str, float]]) -> str:
    """One row per setting, one column per run, and the mean; the best mean is in bold."""
    runs = list(table)
    settings = list(table[runs[0]])
    means = {s: mean(table[run][s] for run in runs) for s in settings}
    best = max(means.values())
    lines = ["| setting | " + " | ".join(runs) + " | mean |",
             "| --- |" + " --- |" * (len(runs) + 1)]
    for s in settings:
        shown = f"**{means[s]:.2f}**" if means[s] == best else f"{means[s]:.2f}"
        lines.append(f"| {s} | " + " | ".join(f"{table[run][s]:.2f}" for run in runs)
                     + f" | {shown} |")
    return "\n".join(lines)


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("runs", nargs="+", type=Path, help="run directories")
    parser.add_argument("--alphas", nargs="+", type=float, default=[0.6, 1.0, 1.4, 2.0])
    parser.add_argument("--beams", nargs="+", type=int, default=[5])
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: val_bleu(args.runs, [(b, a) for b in args.beams for a in args.alphas]),
                 args.json, markdown)


if __name__ == "__main__":
    main()
