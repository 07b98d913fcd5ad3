"""`nmt train`, with its progress display."""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ..config import (
    ARCHS,
    PRESETS,
    Config,
    command_line_overrides,
    load_toml,
    resolve_config,
    resume_config,
    to_toml,
    unread_settings,
)
from ..errors import UserError
from ..languages import target_languages
from ..stopping import TrainingInterrupted, ignore_stop_signals
from .common import Arch, Device, Precision, app, err, user_errors, value


@app.command()
@user_errors
def train(
    arch: Annotated[Arch | None, typer.Option(help="Model family.")] = None,
    data: Annotated[Path | None, typer.Option(
        help="Corpus directory with SPLIT.LANG[.gz] files (train, val|valid|dev, test); "
        "default: the sample corpus that comes with nmt.")] = None,
    src_lang: Annotated[str | None, typer.Option(
        help="Source language suffix (default: en).")] = None,
    tgt_lang: Annotated[str | None, typer.Option(
        help="Target language suffix; several, as de,fr,cs: one model into each (default: "
        "de).")] = None,
    alignments: Annotated[Path | None, typer.Option(
        help="Word alignments of the training pairs, as fast_align or eflomal write them "
        "(0-0 1-2 ...): teach attention to follow them (guided alignment); with several "
        "target languages, a file for each, in --tgt-lang's order, as a.align,b.align.")
    ] = None,
    run: Annotated[Path | None, typer.Option(
        "--run", "--run-dir", help="Run directory to create (default: runs/DATE-TIME-ARCH); "
        "under torchrun write --run-dir, as torchrun takes --run for itself.")] = None,
    preset_name: Annotated[str | None, typer.Option(
        "--preset", help=f"Named settings: {', '.join(PRESETS)} (default: the one of the "
        "model.arch given, else transformer).")
    ] = None,
    config_file: Annotated[Path | None, typer.Option(
        "--config", help="TOML file of settings, e.g. \\[model] d_model = 512.")] = None,
    settings: Annotated[list[str] | None, typer.Option(
        "--set", help="Override one setting: section.key=value (repeatable).")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Stop after this many updates.")] = None,
    max_time: Annotated[str | None, typer.Option(
        help="Stop after this much training time, e.g. 90s, 20m, 1h30m.")] = None,
    epochs: Annotated[int | None, typer.Option(help="Stop after this many epochs.")] = None,
    batch_tokens: Annotated[int | None, typer.Option(
        help="Padded tokens per batch: sentences x (longest side + 1).")] = None,
    device: Annotated[Device | None, typer.Option(
        help="Where to train: auto picks cuda, mps, cpu.")] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    precision: Annotated[Precision | None, typer.Option(
        help="auto: bf16 autocast on CUDA (fp16 with loss scaling on GPUs without bf16), "
        "float32 elsewhere.")] = None,
    accum: Annotated[int | None, typer.Option(
        help="Batches per update (gradient accumulation).")] = None,
    compile_model: Annotated[bool, typer.Option(
        "--compile", help="torch.compile the model (for GPUs; slower on CPUs).")] = False,
    resume: Annotated[Path | None, typer.Option(
        help="Continue this run exactly where it stopped (--run on such a run does too).")
    ] = None,
    tensorboard: Annotated[bool, typer.Option(
        "--tensorboard", help="Also log to RUN/tensorboard, for `tensorboard --logdir` "
        "(needs the tensorboard extra).")] = False,
    finetune: Annotated[Path | None, typer.Option(
        help="Fine-tune this trained run: start from its best weights, tokenizer and model "
        "settings, with a new optimizer and schedule.")] = None,
    dump_config: Annotated[bool, typer.Option(
        "--dump-config", help="Print every setting this command would train with, as a TOML "
        "file for --config, and exit without training.")] = False,
):
    """Train a model; writes a run directory (config, tokenizer, weights, metrics)."""
    from ..checkpoint import TRAIN_STATE
    from ..finetune import parent_arch
    from ..training import resume as resume_training
    from ..training import train as train_model

    options = {"model.arch": value(arch), "data.data_dir": data and str(data),
               "data.src_lang": src_lang, "data.tgt_lang": tgt_lang,
               "data.alignments": alignments and str(alignments),
               "train.max_steps": max_steps, "train.max_time": max_time, "train.epochs": epochs,
               "train.batch_tokens": batch_tokens, "train.device": value(device),
               "train.seed": seed, "train.precision": value(precision), "train.accum": accum,
               "train.compile": True if compile_model else None,
               "train.tensorboard": True if tensorboard else None,
               "train.finetune_from": finetune and str(finetune)}
    if resume is None and run is not None and (run / TRAIN_STATE).is_file():
        resume = run
    if resume is not None and run is not None and run.resolve() != resume.resolve():
        raise UserError(f"--resume {resume} continues that run in its own directory, not in "
                        f"--run {run}; to start a new run from its weights, use --finetune")
    if resume is not None and (preset_name is not None or config_file or finetune):
        raise UserError("--resume continues a run with its own settings; --preset, --config "
                        "and --finetune apply to new runs only")
    # a parent named by --finetune, --set or --config: its family's preset, unless told
    named = {**(load_toml(config_file) if config_file and resume is None else {}),
             **command_line_overrides(settings, options)}
    parent, chosen = named.get("train.finetune_from"), named.get("model.arch")
    if resume is None and parent and isinstance(parent, str) and chosen in (None, *ARCHS):
        family = parent_arch(Path(parent))  # (a value of another type: resolve_config says)
        if chosen is None and preset_name is None:
            options["model.arch"] = family
        elif family not in (None, chosen) and chosen is not None:  # its model, others' settings
            raise UserError(f"{'--arch' if arch else 'model.arch'} {chosen}: --finetune "
                            f"{parent} is a {family} run, and a fine-tuned run keeps its "
                            "parent's model")
    if dump_config:
        print(to_toml(settings_to_train(resume, preset_name, config_file, settings, options)),
              end="")
        return
    if resume is None:
        config = resolve_config(preset_name, config_file, settings, options)
        for key, why in unread_settings(config, command_line_overrides(settings)):
            err.print(f"note: --set {key}: {why}", highlight=False, soft_wrap=True,
                      markup=False)
        if target_languages(config.data.tgt_lang) == [config.data.src_lang]:
            err.print(f"note: data.src_lang and data.tgt_lang are both {config.data.src_lang}: "
                      "the model learns to copy its sources", highlight=False, soft_wrap=True)
    with interruptible(), TrainingDisplay() as display:
        if resume is not None:
            run_dir = resume_training(resume, command_line_overrides(settings, options),
                                      on_event=display.show)
        else:
            run_dir = train_model(config, run, on_event=display.show)
    if reports():
        print(run_dir)


def reports() -> bool:
    """Whether this process reports the run's outcome: under torchrun, rank 0 alone."""
    return int(os.environ.get("RANK", "0")) == 0


def settings_to_train(resume: Path | None, preset_name: str | None, config_file: Path | None,
                      settings: list[str] | None, options: dict[str, Any]) -> Config:
    """The settings `nmt train` would train with: a resumed run's own, with the changes
    given; or a new run's, with those that a fine-tuned parent and a prepared corpus impose."""
    from ..checkpoint import read_config
    from ..data import corpus_dir
    from ..finetune import adopt_parent, check_parent_languages, parent_of
    from ..prepared import check_pair, is_prepared, with_its_settings

    if resume is not None:
        return resume_config(read_config(resume)[0], command_line_overrides(settings, options))
    config = resolve_config(preset_name, config_file, settings, options)
    if (parent := parent_of(config)) is not None:  # checked as training checks them
        config = adopt_parent(config, parent)[0]
        check_parent_languages(parent, config.data.tgt_lang)
    if is_prepared(folder := corpus_dir(config.data.data_dir)):
        check_pair(folder, config.data.src_lang, config.data.tgt_lang)
        config = with_its_settings(folder, config)[0]
    return config


@contextmanager
def interruptible():
    """A run stopped by a signal has saved its state: say how to resume, exit 128 + signal.
    Once stopping, further signals are ignored so that none interrupts the exit itself."""
    try:
        yield
    except TrainingInterrupted as e:
        ignore_stop_signals()
        if reports():
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
        if self.task is not None:  # stopping a bar never started prints an empty line
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
            say(f"step {event['step']}: {validation_line(event)}{mark}")
            if "ema_val_bleu" in event:
                mark = " (best)" if event["ema_best"] else ""
                say(f"step {event['step']} EMA: {validation_line(event, 'ema_')}{mark}")
            for sample in event.get("samples", []):
                say(f"  source     {sample['source']}\n  reference  {sample['reference']}\n"
                    f"  output     {sample['output']}", highlight=False, markup=False)
        elif kind == "warning":  # messages are text: "[ja]" is not Rich markup
            say(f"warning: {event['message']}", highlight=False, markup=False)
        elif kind == "info":
            say(event["message"], highlight=False, markup=False)
        elif kind == "done":
            from ..validation import shown_score

            metric = event["best_metric"]
            name = METRIC_NAMES[metric]
            say(f"done after {event['step']} steps; best val {name} "
                f"{shown_score(event['best_score'], metric):.2f}; run: {event['run_dir']}")
            if event.get("ema_best_score", -math.inf) > event["best_score"]:
                say(f"the EMA validated better ({name} "
                    f"{shown_score(event['ema_best_score'], metric):.2f}); to translate with "
                    f"it: nmt average {event['run_dir']} --ema", highlight=False)


METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF", "loss": "loss"}  # train.best_metric


def validation_line(event: dict[str, Any], prefix: str = "") -> str:
    """A validation's scores, its own or (prefix "ema_") its EMA's; with several target
    languages, the BLEU of each too."""
    each = prefix + "val_bleu_"
    languages = [f"{key.removeprefix(each)} {value:.2f}" for key, value in event.items()
                 if key.startswith(each)]
    return (f"val loss {event[prefix + 'val_loss']:.3f}  ppl {event[prefix + 'val_ppl']:.2f}  "
            f"BLEU {event[prefix + 'val_bleu']:.2f}  chrF {event[prefix + 'val_chrf']:.2f}"
            + (f"  (BLEU {', '.join(languages)})" if languages else ""))


