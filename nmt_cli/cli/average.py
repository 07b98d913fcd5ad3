"""`nmt average`: a run directory whose weights are the mean of a run's kept checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import app, err, user_errors


@app.command()
@user_errors
def average(
    run: Annotated[Path, typer.Argument(
        help="Run trained with train.keep_last (or train.ema_decay, for --ema).")],
    last: Annotated[int | None, typer.Option(
        help="Average the last K kept checkpoints (default: all that are kept).")] = None,
    best: Annotated[int | None, typer.Option(
        help="Average the K kept checkpoints with the best validation score (BLEU, or the "
        "run's train.best_metric).")] = None,
    ema: Annotated[bool, typer.Option(
        "--ema", help="Take the run's best EMA weights (ema.safetensors) instead.")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Run directory to write (default: RUN-lastK, RUN-bestK or "
        "RUN-ema).")] = None,
):
    """Average checkpoints into a new run directory that every command takes."""
    from ..averaging import average_run

    written, sources = average_run(run, output, last, best, ema)
    err.print(f"averaged {', '.join(p.name for p in sources)}", highlight=False, soft_wrap=True)
    print(written)
