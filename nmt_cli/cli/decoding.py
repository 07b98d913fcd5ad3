"""`nmt translate` and `nmt eval`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..checkpoint import latest_run
from ..config import DecodeConfig
from ..data import read_lines
from ..errors import UserError
from ..evaluate import Evaluation, evaluate_file, evaluate_run
from ..translate import Translator
from .common import RunOption, app, user_errors, with_decode_options


@app.command()
@user_errors
@with_decode_options
def translate(
    decode: DecodeConfig,
    quantize: str,
    text: Annotated[str | None, typer.Argument(
        help="Text to translate; without it (and without -i) lines are read from stdin.")] = None,
    input_file: Annotated[Path | None, typer.Option(
        "--input", "-i", help="File to translate, one sentence per line.")] = None,
    output_file: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write translations here instead of stdout.")] = None,
    run: RunOption = None,
):
    """Translate text, a file, or stdin (one line out for each line in)."""
    translator = Translator.from_run(run or latest_run(), decode.device, quantize=quantize)
    if text is not None:
        lines = iter(text.splitlines() or [""])
    elif input_file is not None:
        lines = iter(read_lines(input_file))
    else:
        lines = sys.stdin
    chunk = 1 if lines is sys.stdin and sys.stdin.isatty() else 1000  # answer a typist at once
    out = open(output_file, "w", encoding="utf-8") if output_file else sys.stdout
    try:
        for translation in translator.translate_stream(lines, decode, chunk):
            out.write(translation + "\n")
            out.flush()
    except UnicodeDecodeError as e:
        raise UserError(f"stdin: invalid UTF-8 at byte {e.start}") from None
    finally:
        if output_file:
            out.close()


@app.command("eval")
@user_errors
@with_decode_options
def eval_command(
    decode: DecodeConfig,
    quantize: str,
    run: RunOption = None,
    src: Annotated[Path | None, typer.Option(help="Source file to translate and score.")] = None,
    ref: Annotated[Path | None, typer.Option(help="Reference translations.")] = None,
    hyp: Annotated[Path | None, typer.Option(
        help="Score these translations against --ref (no model needed).")] = None,
    bleu: Annotated[bool, typer.Option(help="Report BLEU.")] = True,
    chrf: Annotated[bool, typer.Option(help="Report chrF.")] = False,
    ter: Annotated[bool, typer.Option(help="Report TER.")] = False,
    lowercase: Annotated[bool, typer.Option(help="Case-insensitive scores.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """Score translations with sacreBLEU (BLEU, chrF, TER), each with its signature.

    Without --src/--ref/--hyp, translates the test split of the run's corpus."""
    metrics = tuple(m for m, on in (("bleu", bleu), ("chrf", chrf), ("ter", ter)) if on)
    if not metrics:
        raise UserError("nothing to report: pass --bleu, --chrf or --ter")
    if (src or hyp) and not ref:
        raise UserError("--src and --hyp need --ref")
    if ref and not (src or hyp):
        raise UserError("--ref needs --src (to translate) or --hyp (to score)")
    if src and hyp:
        raise UserError("use --src or --hyp, not both")
    if hyp:
        result = evaluate_file(hyp, ref, metrics, lowercase)
    else:
        result = evaluate_run(run or latest_run(), src, ref, decode, metrics, lowercase, quantize)
    show_scores(result, as_json)


def show_scores(result: Evaluation, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"source": result.hypotheses, "reference": result.references,
                          "sentences": result.sentences,
                          "scores": [vars(s) for s in result.scores]}))
        return
    table = Table(title=f"{result.hypotheses} vs {result.references} "
                        f"({result.sentences} sentences)")
    table.add_column("metric")
    table.add_column("score", justify="right")
    table.add_column("signature", overflow="fold")
    for s in result.scores:
        table.add_row(s.metric, f"{s.score:.2f}", s.signature)
    Console().print(table)


app.command("evaluate", help="Alias of eval.")(eval_command)


