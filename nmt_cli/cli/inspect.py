"""`nmt attention` and `nmt plot`: seeing inside a model and a training run.

Each draws a picture (pictures.py, the one module that imports matplotlib) or, with --json,
prints the numbers behind it instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import ATTENTION_KINDS, DecodeConfig
from ..errors import UserError
from ..events import json_text
from ..pictures import METRIC_NAMES, check_picture_path, draw_attention, draw_curves
from .common import RunOption, app, choices, user_errors, with_decode_options

AttentionKind = choices("AttentionKind", ATTENTION_KINDS)
CROSS = AttentionKind("cross")
PlotMetric = choices("PlotMetric", tuple(METRIC_NAMES))

JsonOption = Annotated[bool, typer.Option(
    "--json", help="Print the numbers as one JSON object instead of drawing.")]


def picture_path(output: Path | None, as_json: bool, default: str) -> Path:
    """The picture to draw (`default` when -o names none), checked; a one-line error for
    one named beside --json, which draws none."""
    if as_json and output is not None:
        raise UserError("-o names a picture, and --json draws none: give one or the other")
    output = output or Path(default)
    if not as_json:
        check_picture_path(output)
    return output


@app.command()
@user_errors
@with_decode_options
def attention(
    decode: DecodeConfig,
    quantize: str,
    text: Annotated[str, typer.Argument(help="The sentence to translate and look into.")],
    run: RunOption = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Picture to write: .png or .svg (default: attention.png).")
    ] = None,
    kind: Annotated[AttentionKind, typer.Option(
        help="cross: output over source; encoder, decoder: self-attention (Transformer).")
    ] = CROSS,
    layer: Annotated[str | None, typer.Option(
        help="Layer N (from 1) or all; default: the last.")] = None,
    head: Annotated[str, typer.Option(
        help="Head N (from 1), all (every head and their mean), or mean.")] = "all",
    as_json: JsonOption = False,
    prefix: Annotated[str, typer.Option(
        help="Text the translation opens with (forced decoding), as in translate.")] = "",
):
    """Draw the attention weights of one translation as heatmaps."""
    from ..attention_maps import attention_maps
    from ..checkpoint import latest_run
    from ..data import check_utf8
    from ..translate import Translator

    output = picture_path(output, as_json, "attention.png")
    translator = Translator.from_run(run or latest_run(), decode.device, quantize=quantize)
    maps = attention_maps(translator, check_utf8(text, "TEXT"), kind.value, layer, head, decode,
                          check_utf8(prefix, "--prefix"))
    if as_json:
        print(json_text(maps.to_json()))
    else:
        print(draw_attention(maps.to_json(), output))


@app.command()
@user_errors
def plot(
    runs: Annotated[list[Path], typer.Argument(help="Run directories to overlay.")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Picture to write: .png or .svg (default: curves.png).")
    ] = None,
    as_json: JsonOption = False,
    metric: Annotated[PlotMetric | None, typer.Option(
        help="The validation score drawn: bleu or chrf (default: chrf when every run ranks "
             "its validations by chrF, train.best_metric, else bleu).")] = None,
):
    """Draw learning curves: loss, BLEU or chrF, learning rate and tokens/s of one or more runs."""
    from ..learning_curves import learning_curves, ranking_metric

    output = picture_path(output, as_json, "curves.png")
    curves = [curve.to_json() for curve in learning_curves(runs)]
    if as_json:
        print(json_text({"runs": curves}))
    else:
        print(draw_curves(curves, output, metric.value if metric else ranking_metric(runs)))
