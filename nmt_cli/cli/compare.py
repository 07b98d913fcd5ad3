"""`nmt compare`: BLEU and chrF of several systems on one test set, with 95% confidence
intervals and the significance of each system's difference from the first."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..config import COMPARE_METHODS, COMPARE_SEED, DecodeConfig
from ..errors import UserError
from ..events import json_text
from .common import AUTO, TokenizeOption, app, choices, user_errors, with_decode_options

if TYPE_CHECKING:
    from ..compare import Comparison

Method = choices("Method", COMPARE_METHODS)
BOTH = Method("both")


@app.command("compare")
@user_errors
@with_decode_options
def compare_command(
    decode: DecodeConfig,
    quantize: str,
    systems: Annotated[list[Path] | None, typer.Argument(
        help="Files of translations or run directories; the first is the baseline.",
        show_default=False)] = None,
    ref: Annotated[Path | None, typer.Option(help="Reference translations.")] = None,
    src: Annotated[Path | None, typer.Option(
        help="Source file, translated by the run directories among the systems.")] = None,
    method: Annotated[Method, typer.Option(
        help="Paired bootstrap resampling, approximate randomization, or both.")] = BOTH,
    samples: Annotated[int, typer.Option(
        help="Bootstrap resamples and randomization trials (0: sacreBLEU's 1000 and "
             "10000).")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = COMPARE_SEED,
    tokenize: TokenizeOption = AUTO,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """Compare systems on one test set: BLEU and chrF with 95% confidence intervals.

    Each system after the first gets the p-value of its difference from the first
    (sacreBLEU's paired tests)."""
    from ..checkpoint import read_config
    from ..compare import compare, load_systems
    from ..evaluation import bleu, bleu_tokenizer, unspaced_warning

    if ref is None:
        raise UserError("--ref is required: the reference translations")
    if len(systems or []) < 2:
        raise UserError("compare needs at least two systems (files or run directories)")
    runs = [path for path in systems if path.is_dir()] if src else []  # else refused below
    tokenizer = bleu_tokenizer(decode.tgt_lang or next(
        (read_config(path)[0].data.tgt_lang for path in runs), ""), tokenize.value)
    bleu(tokenize=tokenizer)  # MeCab missing: said before anything is translated
    references, named = load_systems(systems, ref, src, decode, quantize)
    if warning := unspaced_warning(references, tokenizer):
        print(f"warning: {warning}", file=sys.stderr)
    show_comparison(compare(named, references, str(ref), method.value, samples, seed,
                            tokenizer), as_json)


def show_comparison(result: Comparison, as_json: bool) -> None:
    if as_json:
        print(json_text(asdict(result)))
        return
    tests = [t for t in ("bootstrap", "ar") if t in result.signatures]
    table = Table(title=f"{len(result.systems)} systems vs {result.reference} "
                        f"({result.sentences} sentences)",
                  caption="p: each system against the first")
    for name, justify in (("system", "left"), ("metric", "left"), ("score", "right"),
                          ("mean ± 95% CI", "right")):
        table.add_column(name, justify=justify, overflow="fold")
    for test in tests:
        table.add_column(f"p ({test})", justify="right")
    for system in result.systems:
        for m in system.metrics:
            p_values = {"bootstrap": m.p_bootstrap, "ar": m.p_ar}
            table.add_row(system.name, m.metric, f"{m.score:.2f}", f"{m.mean:.2f} ± {m.ci95:.2f}",
                          *("" if p_values[t] is None else f"{p_values[t]:.4f}" for t in tests))
    console = Console()
    console.print(table)
    for test in tests:
        for metric, signature in result.signatures[test].items():
            console.print(f"{metric} {test}: {signature}", highlight=False, soft_wrap=True)
