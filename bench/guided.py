"""Guided alignment: does teaching attention eflomal's word alignments make nmt's alignments,
and the tags `--markup` puts back, more accurate, and at what cost in BLEU?

eflomal (Östling and Tiedemann, 2016; in its own environment, bench/out/eflomal-venv) aligns the
words of Multi30k's train and val pairs, English-German, both ways; the two directions are
joined by grow-diag-final-and (Koehn et al., 2005). Three runs of the same preset then train for
the same time: without `data.alignments` (the train lines' links), with them taught to the
aligning layer's heads averaged (the default), and taught to its first head alone
(`model.alignment_heads` 1, as fairseq and Garg et al., 2019 teach them); with a GRU preset
(`--preset multi30k-gru`), the first two, its one attention taught in the second. With
`--tgt-lang de,fr` (German first), the first two are models into each of the languages, the
second taught eflomal's links of each pair (English and that language, aligned alike).
Measured on the 30 hand-aligned val pairs (bench/alignment.en-de.tsv, whose lines eflomal
aligns as part of val, without their links): the alignment error rate of eflomal's own links
and of each run's attention, every decoder layer and reading (bench.alignment), and tags put
back by each run's alignment (bench.markup); then each run's test_2016_flickr BLEU and chrF
with beam 5 (into each language), with the weights validation chose (bench.quality).

    python -m bench.guided [--data DIR] [--preset multi30k-transformer-20m] [--minutes 15]
                           [--tgt-lang de] [--out DIR] [--set key=value ...] [--json FILE]

The runs go to DIR/unguided, DIR/guided and DIR/guided-1-head (bench/out/guided by default),
eflomal's links to DIR/eflomal (German's) and DIR/eflomal-LANG; a folder that holds a run with
trained weights is kept, so a second call measures again without training. eflomal samples,
unseeded: its links, and so its error rate, vary a little from one alignment to the next (9.8%
and 10.6% seen).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import alignment, markup
from .common import (
    OUT,
    ROOT,
    add_data_option,
    ensure_venv,
    markdown_table,
    multi30k_dir,
    new_parser,
    report_table,
)
from .quality import score, train

EFLOMAL_VENV = OUT / "eflomal-venv"
EFLOMAL_INSTALL = (["eflomal==2.0.0"],)
PRESET = "multi30k-transformer-20m"
# each run's folder, and its settings beside --set's ({links}: the train lines' links)
RUNS = {"unguided": [],
        "guided": ["data.alignments={links}"],
        "guided-1-head": ["data.alignments={links}", "model.alignment_heads=1"]}
ONE_HEAD = ("guided-1-head",)  # not for a GRU (its attention has one head), nor several languages


def read_links(path: Path) -> list[set[tuple[int, int]]]:
    return [{tuple(map(int, link.split("-"))) for link in line.split()}
            for line in path.read_text(encoding="utf-8").splitlines()]


def eflomal_links(corpus: Path, folder: Path, language: str = "de"
                  ) -> tuple[Path, list[set[tuple[int, int]]]]:
    """Align train and val, English and `language`, with eflomal (once: kept in `folder`);
    returns the file of the train lines' links, and the val lines' links."""
    from nmt_cli.data import read_lines
    from nmt_cli.guided_alignment import symmetrize

    train_file, val_file = folder / "train.align", folder / "val.align"
    if not (train_file.is_file() and val_file.is_file()):
        folder.mkdir(parents=True, exist_ok=True)
        sides = {}
        for lang in ("en", language):
            lines = read_lines(corpus / f"train.{lang}.gz")
            sides[lang] = len(lines)
            lines += read_lines(corpus / f"val.{lang}.gz")
            (folder / f"both.{lang}").write_text("".join(f"{line}\n" for line in lines),
                                                encoding="utf-8")
        python = ensure_venv(EFLOMAL_VENV, EFLOMAL_INSTALL)
        subprocess.run([str(python), str(ROOT / "bench" / "peers" / "run_eflomal.py"),
                        str(folder / "both.en"), str(folder / f"both.{language}"),
                        str(folder / "forward.align"), str(folder / "reverse.align")], check=True)
        lines = [f"{line}\n" for line in symmetrize(folder / "forward.align",
                                                    folder / "reverse.align")]
        train_file.write_text("".join(lines[: sides["en"]]), encoding="utf-8")
        val_file.write_text("".join(lines[sides["en"]:]), encoding="utf-8")
    return train_file, read_links(val_file)


def train_once(preset: str, corpus: Path, run_dir: Path, minutes: float,
               settings: list[str], pair: str = "en-de") -> None:
    """Train `run_dir` for `minutes` (bench.quality's way), unless it holds trained weights
    already."""
    if (run_dir / "model.safetensors").is_file():
        print(f"{run_dir}: trained already, kept", flush=True)
        return
    train(preset, run_dir, f"{minutes}m", corpus, pair, settings=tuple(settings))


def measure(data: Path | None, minutes: float, out: Path, settings: list[str],
            preset: str = PRESET, tgt_lang: str = "de") -> dict:
    from nmt_cli.config import PRESETS

    corpus = multi30k_dir(data)
    languages = tgt_lang.split(",")
    if languages[0] != "de":
        raise SystemExit(f"--tgt-lang {tgt_lang}: German first, the language of the "
                         "hand-aligned pairs")
    aligned = {language: eflomal_links(corpus, out / ("eflomal" if language == "de" else
                                                     f"eflomal-{language}"), language)
               for language in languages}
    train_links = ",".join(str(aligned[language][0]) for language in languages)
    val_links = aligned["de"][1]
    sources, targets, gold = alignment.hand_aligned(data)
    numbers = sorted(alignment.read_gold())
    eflomal = [val_links[n - 1] for n in numbers]
    gru, several = PRESETS[preset].get("model.arch") == "gru", len(languages) > 1
    runs = {name: out / name for name in RUNS if not ((gru or several) and name in ONE_HEAD)}
    for name, run_dir in runs.items():
        extra = [setting.format(links=train_links) for setting in RUNS[name]]
        train_once(preset, corpus, run_dir, minutes, [*settings, *extra], f"en-{tgt_lang}")
    rates = [{"run": "eflomal, grow-diag-final-and", "layer": "-", "reading": "-",
              **alignment.scores(eflomal, gold)}]
    rates += alignment.alignment_error_rates(list(runs.values()), data)
    tags = [markup.row("eflomal, grow-diag-final-and", sources, targets, gold,
                       [sorted(links) for links in eflomal])]
    tags += markup.placements(list(runs.values()), data)
    quality = []
    for name, run_dir in runs.items():
        for language in languages:
            quality.append({"run": name + (f", into {language}" if several else ""),
                            **score(run_dir, corpus, f"en-{language}", decodes=("beam5",))})
            print(quality[-1], flush=True)
    return {"alignment": rates, "markup": tags, "quality": quality}


def markdown(result: dict) -> str:
    quality = markdown_table(
        ["run", "steps", "val BLEU (weights chosen)", "test BLEU beam 5", "chrF beam 5"],
        [[r["run"], r["steps"],
          f"{max(v for v in (r['best_val_bleu'], r['best_ema_val_bleu']) if v is not None):.2f}"
          f" ({r['weights']})", r["beam5"]["bleu"], r["beam5"]["chrf"]]
         for r in result["quality"]])
    return "\n\n".join((alignment.markdown(result["alignment"]), markup.markdown(result["markup"]),
                        quality))


def main() -> None:
    from nmt_cli.config import PRESETS

    parser = new_parser(__spec__.name, __doc__)
    add_data_option(parser)
    parser.add_argument("--preset", default=PRESET, choices=list(PRESETS),
                        help=f"what every run trains ({PRESET})")
    parser.add_argument("--minutes", type=float, default=15.0, help="each run's time (15)")
    parser.add_argument("--tgt-lang", default="de",
                        help="the target languages of every run, German first (de)")
    parser.add_argument("--out", type=Path, default=OUT / "guided")
    parser.add_argument("--set", dest="settings", action="append", default=[],
                        metavar="KEY=VALUE", help="a setting of every run (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the tables here")
    args = parser.parse_args()
    report_table(lambda: measure(args.data, args.minutes, args.out, args.settings, args.preset,
                                 args.tgt_lang), args.json, markdown)


if __name__ == "__main__":
    main()
