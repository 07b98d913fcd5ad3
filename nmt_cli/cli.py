"""The `nmt` command: parse options, call the library, show the results.

Results go to stdout; progress, logs and warnings to stderr. A user error ends with one line
on stderr and exit status 1.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from contextlib import contextmanager
from dataclasses import fields
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ._version import __version__
from .checkpoint import TRAIN_STATE, latest_run
from .config import (
    ARCHS,
    DEFAULT_PRESET,
    DEVICES,
    PRECISIONS,
    PRESETS,
    QUANTIZATIONS,
    DecodeConfig,
    command_line_overrides,
    resolve_config,
)
from .data import read_lines
from .datasets import CORPORA, fetch_multi30k
from .errors import UserError
from .evaluate import Evaluation, evaluate_file, evaluate_run
from .prepared import TOKENIZER_SAMPLE
from .prepared import prepare as prepare_corpus
from .stopping import TrainingInterrupted, ignore_stop_signals
from .training import resume as resume_training
from .training import train as train_model
from .translate import Translator

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Train, run and score neural machine translation models.")
err = Console(stderr=True)


def choices(name: str, values: tuple[str, ...]) -> type[Enum]:
    """An Enum of a choice list from the config layer, for Typer."""
    return Enum(name, {value: value for value in values}, type=str)


Arch, Device, Precision = choices("Arch", ARCHS), choices("Device", DEVICES), choices(
    "Precision", PRECISIONS)
Quantize, Corpus = choices("Quantize", QUANTIZATIONS), choices("Corpus", CORPORA)


def value(choice: Enum | None) -> str | None:
    return choice.value if choice is not None else None


def user_errors(command):
    """Turn a UserError (or an OS error on a user's file) into one line and exit status 1."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except UserError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            err.print(f"[red]error:[/red] {where}{e.strerror or e}", highlight=False,
                      soft_wrap=True)
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None
        raise typer.Exit(1)
    return wrapper


DECODE_HELP = {  # the options every decoding command takes, one per DecodeConfig field
    "beam": "Beam size; 1 is greedy search.",
    "alpha": "Length penalty exponent.",
    "max_len_a": "Output limit: a * source length + b.",
    "max_len_b": "Output limit: a * source length + b.",
    "min_len": "Shortest output, in tokens.",
    "batch_size": "Sentences per decoding batch.",
    "device": "Where to run: auto picks cuda, mps, cpu.",
    "precision": "auto: bf16 autocast on CUDA, float32 elsewhere.",
}
DECODE_TYPES = {"device": Device, "precision": Precision}


def with_decode_options(command):
    """Give `command` one option per DecodeConfig field, with its default, and --quantize.
    The command receives them gathered as `decode: DecodeConfig` and `quantize: str`."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values()
           if p.name not in ("decode", "quantize")]
    added = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY,
                               default=DECODE_TYPES[f.name](f.default) if f.name in DECODE_TYPES
                               else f.default,
                               annotation=Annotated[DECODE_TYPES.get(f.name, type(f.default)),
                                                    typer.Option(help=DECODE_HELP[f.name])])
             for f in fields(DecodeConfig)]
    added.append(inspect.Parameter("quantize", inspect.Parameter.KEYWORD_ONLY,
                                   default=Quantize("none"), annotation=Annotated[Quantize, (
                                       typer.Option(help="int8: linear layers in int8 (dynamic "
                                                    "quantization; CPU only)."))]))

    @functools.wraps(command)
    def wrapper(**kwargs):
        settings = {f.name: kwargs.pop(f.name) for f in fields(DecodeConfig)}
        settings = {k: v.value if isinstance(v, Enum) else v for k, v in settings.items()}
        return command(decode=DecodeConfig(**settings), quantize=kwargs.pop("quantize").value,
                       **kwargs)

    wrapper.__signature__ = inspect.Signature([*own, *added])
    return wrapper


def version_callback(show: bool) -> None:
    if show:
        print(f"nmt {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool | None, typer.Option(
        "--version", callback=version_callback, is_eager=True, help="Print the version.")] = None):
    """Train, run and score neural machine translation models."""


RunOption = Annotated[Path | None, typer.Option(
    "--run", help="Run directory (default: the most recent run under runs/).")]


@app.command()
@user_errors
def train(
    arch: Annotated[Arch | None, typer.Option(help="Model family.")] = None,
    data: Annotated[Path | None, typer.Option(
        help="Corpus directory with SPLIT.LANG[.gz] files (train, val|valid|dev, test); "
        "default: the sample corpus that comes with nmt.")] = None,
    src_lang: Annotated[str | None, typer.Option(help="Source language suffix.")] = None,
    tgt_lang: Annotated[str | None, typer.Option(help="Target language suffix.")] = None,
    run: Annotated[Path | None, typer.Option(
        "--run", "--run-dir", help="Run directory to create (default: runs/DATE-TIME-ARCH); "
        "under torchrun write --run-dir, as torchrun takes --run for itself.")] = None,
    preset_name: Annotated[str | None, typer.Option(
        "--preset", help=f"Named settings: {', '.join(PRESETS)} (default: the --arch one).")
    ] = None,
    config_file: Annotated[Path | None, typer.Option(
        "--config", help="TOML file of settings, e.g. [model] d_model = 512.")] = None,
    settings: Annotated[list[str] | None, typer.Option(
        "--set", help="Override one setting: section.key=value (repeatable).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many updates.")] = None,
    max_time: Annotated[str | None, typer.Option(
        help="Stop after this much training time, e.g. 90s, 20m, 1h30m.")] = None,
    epochs: Annotated[int | None, typer.Option(help="Stop after this many epochs.")] = None,
    batch_tokens: Annotated[int | None, typer.Option(
        help="Padded tokens per batch (sentences x longest side).")] = None,
    device: Annotated[Device | None, typer.Option(
        help="Where to train: auto picks cuda, mps, cpu.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    precision: Annotated[Precision | None, typer.Option(
        help="auto: bf16 autocast on CUDA, float32 elsewhere.")] = None,
    accum: Annotated[int | None, typer.Option(
        help="Batches per update (gradient accumulation).")] = None,
    compile_model: Annotated[bool, typer.Option(
        "--compile", help="Compile the model with torch.compile (pays off on GPUs).")] = False,
    resume: Annotated[Path | None, typer.Option(
        help="Continue this run exactly where it stopped (--run on such a run does too).")
    ] = None,
):
    """Train a model; writes a run directory (config, tokenizer, weights, metrics)."""
    options = {"model.arch": value(arch), "data.data_dir": data and str(data),
               "data.src_lang": src_lang, "data.tgt_lang": tgt_lang,
               "train.max_steps": max_steps, "train.max_time": max_time, "train.epochs": epochs,
               "train.batch_tokens": batch_tokens, "train.device": value(device),
               "train.seed": seed, "train.precision": value(precision), "train.accum": accum,
               "train.compile": True if compile_model else None}
    if resume is None and run is not None and (run / TRAIN_STATE).is_file():
        resume = run
    with interruptible(), TrainingDisplay() as display:
        if resume is not None:
            if preset_name or config_file:
                raise UserError("--resume continues a run with its own settings; --preset and "
                                "--config apply to new runs only")
            run_dir = resume_training(resume, command_line_overrides(settings, options),
                                      on_event=display.show)
        else:
            config = resolve_config(preset_name, config_file, settings, options)
            run_dir = train_model(config, run, on_event=display.show)
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun, rank 0 reports
        print(run_dir)


@contextmanager
def interruptible():
    """A run stopped by a signal has saved its state: say how to resume, exit 128 + signal.
    Once stopping, further signals are ignored so that none interrupts the exit itself."""
    try:
        yield
    except TrainingInterrupted as e:
        ignore_stop_signals()
        err.print(str(e), highlight=False, soft_wrap=True)
        raise typer.Exit(128 + e.signum) from None
    except KeyboardInterrupt:  # a second Ctrl-C: what is on disk is whole (atomic writes)
        ignore_stop_signals()
        err.print("interrupted")
        raise typer.Exit(130) from None


class TrainingDisplay:
    """Rich progress on stderr: step, loss, learning rate, tokens/s, elapsed and ETA."""

    def __init__(self):
        self.bar = Progress(
            TextColumn("step {task.fields[step]:>6}"), BarColumn(),
            TextColumn("loss {task.fields[loss]:.3f}  lr {task.fields[lr]:.2e}  "
                       "{task.fields[speed]:,.0f} tok/s"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=err, transient=False)
        self.task = None  # the bar appears with the first step, after the data checks

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.bar.stop()

    def show(self, event: dict[str, Any]) -> None:
        kind, say = event["kind"], self.bar.console.print
        if kind == "step":
            if self.task is None:
                self.task = self.bar.add_task("train", total=1.0, step=0, loss=0.0, lr=0.0,
                                              speed=0.0)
                self.bar.start()
            self.bar.update(self.task, completed=event["fraction"], step=event["step"],
                            loss=event["loss"], lr=event["lr"], speed=event["tokens_per_s"])
        elif kind == "validate":
            mark = " (best)" if event["best"] else ""
            say(f"step {event['step']}: val loss {event['val_loss']:.3f}  "
                f"ppl {event['val_ppl']:.2f}  BLEU {event['val_bleu']:.2f}{mark}")
        elif kind == "warning":
            say(f"warning: {event['message']}", highlight=False)
        elif kind == "info":
            say(event["message"], highlight=False)
        elif kind == "done":
            say(f"done after {event['step']} steps; best val BLEU {event['best_bleu']:.2f}; "
                f"run: {event['run_dir']}")


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


data_app = typer.Typer(no_args_is_help=True, help="Download and prepare corpora.")
app.add_typer(data_app, name="data")


@data_app.command("fetch")
@user_errors
def fetch(
    corpus: Annotated[Corpus, typer.Argument(help="Corpus to fetch.")],
    pair: Annotated[str, typer.Option(help="Language pair, e.g. en-de, en-fr, en-cs.")] = "en-de",
    dest: Annotated[Path | None, typer.Option(
        help="Folder to write into (default: data/CORPUS).")] = None,
    mirror: Annotated[Path | None, typer.Option(
        help="Copy from this local folder instead of downloading.")] = None,
):
    """Download a corpus's train, val and test files, verified by SHA-256; prints the folder."""
    dest = dest or Path("data") / corpus.value
    fetch_multi30k(pair, dest, mirror, report=lambda message: err.print(message, highlight=False))
    print(dest)


@data_app.command("prepare")
@user_errors
def prepare_command(
    data: Annotated[Path, typer.Option(help="Corpus directory with train and val files.")],
    out: Annotated[Path, typer.Option(help="Folder to write the prepared corpus into.")],
    src_lang: Annotated[str, typer.Option(help="Source language suffix.")] = "en",
    tgt_lang: Annotated[str, typer.Option(help="Target language suffix.")] = "de",
    preset_name: Annotated[str | None, typer.Option(
        "--preset", help="Take tokenizer and length settings from this preset.")] = None,
    settings: Annotated[list[str] | None, typer.Option(
        "--set", help="tokenizer.KEY=value or data.max_len=N (repeatable).")] = None,
    sample: Annotated[int, typer.Option(
        help="Train the tokenizer on at most this many pairs (a uniform sample).")
    ] = TOKENIZER_SAMPLE,
):
    """Tokenize a corpus once into id files; `nmt train --data OUT` then reads them."""
    config = resolve_config(preset_name or DEFAULT_PRESET, settings=settings)
    info = prepare_corpus(data, out, src_lang, tgt_lang, config.tokenizer, config.data.max_len,
                          config.train.seed, sample)
    err.print(f"{info['pairs']:,} pairs kept, {info['empty']:,} with an empty side skipped, "
              f"{info['too_long']:,} longer than {info['max_len']} tokens dropped", highlight=False)
    print(out)
