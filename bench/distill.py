"""Sequence-level knowledge distillation (Kim and Rush, 2016): a small, fast student trained on
a teacher's translations of the training sources instead of on the references.

The teacher, a trained en-de run, translates Multi30k's train.en with beam 5 (with the weights
its validation chose); two students with the same settings then train for the same number of
steps, one on the references, one on the teacher's translations, and both validate against
val's real references. By default a student is the `multi30k-transformer-20m` preset with one
decoder layer instead of three: a deep encoder and a shallow decoder decode faster, since
search runs the decoder once per token and the encoder once per sentence (Kasai et al., 2021).
The table gives each model's parameters, its test_2016_flickr BLEU and chrF with beam 5 and
greedy search (the weights validation chose, as bench.quality scores them), and sentences per
second for each, all measured in the same run.

    python -m bench.distill TEACHER [--data DIR] [--steps 2000] [--set key=value ...]
                            [--out DIR] [--json FILE]

The students go to DIR/references and DIR/distilled (bench/out/distill by default), the
teacher's translations to DIR/data/train.de.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .common import (
    OUT,
    add_data_option,
    markdown_table,
    multi30k_dir,
    new_parser,
    report_table,
)
from .quality import chosen_weights, score, train

STUDENT = ("model.num_decoder_layers=1", "train.precision=bf16", "train.max_time=0")
PRESET = "multi30k-transformer-20m"


def distilled_corpus(teacher: Path, corpus: Path, folder: Path) -> float:
    """`folder` as a Multi30k en-de folder whose train.de is the teacher's beam-5 translation
    of train.en; returns the seconds the translation took. Made once for a teacher: a folder
    that holds the translation of the same weights (teacher.json says whose) is kept."""
    from nmt_cli.config import DecodeConfig
    from nmt_cli.data import read_lines
    from nmt_cli.files import sha256_of
    from nmt_cli.learning_curves import read_metrics
    from nmt_cli.translate import Translator

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train.en", "val.en", "val.de", "test_2016_flickr.en", "test_2016_flickr.de"):
        shutil.copyfile(corpus / f"{name}.gz", folder / f"{name}.gz")
    target, stamp = folder / "train.de", folder / "teacher.json"
    weights = chosen_weights(read_metrics(teacher))[0]
    made_by = {"teacher": str(teacher.resolve()), "weights": weights,
               "sha256": sha256_of(teacher / weights)}
    if target.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == made_by:
        return 0.0
    translator = Translator.from_run(teacher, device="cpu", weights=weights)
    start = time.perf_counter()
    outputs = translator.translate(read_lines(corpus / "train.en.gz"),
                                   DecodeConfig(beam=5, device="cpu"))
    seconds = time.perf_counter() - start
    partial = folder / "train.de.partial"
    partial.write_text("".join(f"{line}\n" for line in outputs), encoding="utf-8")
    partial.rename(target)  # whole or not at all
    stamp.write_text(json.dumps(made_by) + "\n")  # after: a stamp never names another's
    return seconds


def train_student(corpus: Path, run_dir: Path, steps: int, settings: list[str]) -> float:
    """Train a student on `corpus` for `steps` steps; returns the wall-clock seconds."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    return train(PRESET, run_dir, None, corpus,
                 settings=(*STUDENT, f"train.max_steps={steps}", *settings))


def parameters(run_dir: Path) -> int:
    from nmt_cli.checkpoint import load_run

    return sum(p.numel() for p in load_run(run_dir, "cpu").model.parameters())


def measure(teacher: Path, data: Path | None, steps: int, settings: list[str],
            out: Path) -> list[dict]:
    corpus = multi30k_dir(data)
    translate_seconds = distilled_corpus(teacher, corpus, out / "data")
    rows = [{"model": f"teacher ({teacher})", "train_seconds": None,
             "translate_train_seconds": round(translate_seconds, 1)}]
    runs = [teacher]
    for name, folder in (("references", corpus), ("distilled", out / "data")):
        run_dir = out / name
        rows.append({"model": f"student on {name}",
                     "train_seconds": round(train_student(folder, run_dir, steps, settings))})
        runs.append(run_dir)
    for row, run_dir in zip(rows, runs):
        row.update(parameters=parameters(run_dir),
                   **score(run_dir, corpus, decodes=("beam5", "greedy")))
        print(row, flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    return markdown_table(
        ["model", "parameters", "steps", "val BLEU", "BLEU beam 5", "chrF beam 5",
         "BLEU greedy", "sent/s beam 5", "sent/s greedy"],
        [[r["model"], f"{r['parameters']:,}", r["steps"],
          round(max(v for v in (r["best_val_bleu"], r["best_ema_val_bleu"]) if v is not None), 2),
          r["beam5"]["bleu"], r["beam5"]["chrf"], r["greedy"]["bleu"],
          r["beam5"]["sentences_per_s"], r["greedy"]["sentences_per_s"]] for r in rows])


def main() -> None:
    parser = new_parser(__spec__.name, __doc__)
    parser.add_argument("teacher", type=Path, help="a trained English-German run")
    add_data_option(parser)
    parser.add_argument("--steps", type=int, default=2000, help="each student's steps (2000)")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a setting of both students (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT / "distill")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    report_table(lambda: measure(args.teacher, args.data, args.steps, args.settings, args.out),
                 args.json, markdown)


if __name__ == "__main__":
    main()
