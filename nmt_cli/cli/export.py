"""`nmt export`: a trained run in another toolkit's format (CTranslate2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import EXPORT_FORMATS, EXPORT_QUANTIZATIONS
from .common import app, choices, user_errors

ExportFormat = choices("ExportFormat", EXPORT_FORMATS)
ExportQuantization = choices("ExportQuantization", EXPORT_QUANTIZATIONS)
FLOAT32 = ExportQuantization("float32")


@app.command()
@user_errors
def export(
    run: Annotated[Path | None, typer.Argument(
        help="Run directory (default: the most recent run under runs/).")] = None,
    export_format: Annotated[ExportFormat, typer.Option(
        "--format", help="ctranslate2: a CTranslate2 model with the SentencePiece model(s) "
                         "beside it (needs the ct2 extra).")] = ...,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Directory to write (default: RUN/ctranslate2).")] = None,
    quantization: Annotated[ExportQuantization, typer.Option(
        help="Weights: float32, float16, or int8 matrices with the rest in float32 "
             "(int8 and int8_float32 write the same model).")
                            ] = FLOAT32,
    force: Annotated[bool, typer.Option(help="Replace an output directory that holds files.")
                     ] = False,
):
    """Export a Transformer run for another inference engine; prints the directory written.

    Translate with it by `nmt translate --engine ctranslate2 --run DIR`."""
    from ..checkpoint import latest_run
    from ..ct2 import EXPORT_DIR, import_ctranslate2

    import_ctranslate2()  # one line saying how to install it, before any work
    from ..ct2_export import export_ctranslate2

    run = run or latest_run(named="name RUN")
    print(export_ctranslate2(run, output or run / EXPORT_DIR, quantization.value, force))
