"""What every command shares: the error console, choice Enums, one-line user errors, and the
decoding options."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import select
import signal
import sys
from dataclasses import fields
from enum import Enum
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from ..config import (
    ARCHS,
    BLEU_TOKENIZERS,
    DEVICES,
    ENGINES,
    PRECISIONS,
    QUANTIZATIONS,
    DecodeConfig,
)
from ..datasets import CORPORA
from ..errors import UserError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Train, run and score neural machine translation models.")
err = Console(stderr=True)


def choices(name: str, values: tuple[str, ...]) -> type[Enum]:
    """An Enum of a choice list from the config layer, for Typer."""
    return Enum(name, {value: value for value in values}, type=str)


Arch, Device, Precision = choices("Arch", ARCHS), choices("Device", DEVICES), choices(
    "Precision", PRECISIONS)
Quantize, Corpus = choices("Quantize", QUANTIZATIONS), choices("Corpus", CORPORA)
EngineName = choices("EngineName", ENGINES)


def value(choice: Enum | None) -> str | None:
    return choice.value if choice is not None else None


def user_errors(command):
    """Turn a UserError (or an OS error on a user's file) into one line and exit status 1."""
    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except UserError as e:  # escaped: brackets, as in "nmt-cli[ct2]", are not markup
            err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        except BrokenPipeError as e:
            if not stdout_is_broken():  # a socket's, say: reported as any other
                err.print(f"[red]error:[/red] {escape(str(e.strerror or e))}", highlight=False)
                raise typer.Exit(1) from None
            quiet_stdout()  # stdout's reader has gone (`nmt translate ... | head`)
            raise typer.Exit(128 + signal.SIGPIPE) from None
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            err.print(f"[red]error:[/red] {escape(where + str(e.strerror or e))}",
                      highlight=False, soft_wrap=True)
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None
        raise typer.Exit(1)
    return wrapper


def check_output(output: Path | None, *inputs: Path | None, stdin: bool = False,
                 option: str = "-o") -> None:
    """Refuse an output file (given as `option`) that is also an input (a file named, or
    stdin when `stdin`): opening it for writing would empty it before it is read, and
    writing it after would replace what was read. Only regular files: /dev/null or a
    terminal may well be both."""
    if output is None or not output.is_file():
        return
    written = output.stat()
    sources = [(str(path), path.stat()) for path in inputs if path is not None and path.exists()]
    if stdin:
        with contextlib.suppress(AttributeError, OSError, ValueError, io.UnsupportedOperation):
            sources.append(("stdin", os.fstat(sys.stdin.fileno())))  # None when closed
    for name, read in sources:
        if os.path.samestat(read, written):
            raise UserError(f"{option} {output}: it is also the input {name}; write elsewhere")


def standard_output() -> TextIO:
    """stdout, to write results to; closed (`>&-`), a one-line error."""
    if sys.stdout is None:
        raise UserError("stdout is closed: give -o FILE")
    return sys.stdout


def stdout_is_broken() -> bool:
    """Whether stdout is a pipe that nobody reads any more (poll reports an error on it)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):  # no poll, no fd
        return False


def quiet_stdout() -> None:
    """Point stdout at /dev/null: what Python flushes at exit then goes nowhere, and no second
    broken pipe is reported. The process ends as Unix tools do when their reader stops
    reading: at once, silently, with the status of a SIGPIPE."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


DECODE_HELP = {  # the options every decoding command takes, one per DecodeConfig field
    "beam": "Beam size, 1 to 1000; 1 is greedy search.",
    "alpha": "Length penalty exponent, -10 to 10.",
    "max_len_a": "Output limit: a * source length + b (a from 0 to 1000).",
    "max_len_b": "Output limit: a * source length + b.",
    "min_len": "Shortest output, in tokens.",
    "batch_size": "Sentences per decoding batch.",
    "device": "Where to run: auto picks cuda, mps, cpu.",
    "precision": "auto: bf16 autocast on CUDA, float32 elsewhere.",
    "sampling": "Draw each token at random from the model's distribution instead of searching "
                "(--beam unused).",
    "sampling_topk": "With --sampling: draw among the K most probable tokens (0: all).",
    "sampling_topp": "With --sampling: draw among the fewest tokens whose probability reaches "
                     "P (1: all).",
    "temperature": "With --sampling: divide the logits by T (above 1: more varied).",
    "sampling_seed": "With --sampling: the seed of the draws.",
    "no_repeat_ngram": "Never repeat an n-gram of this many tokens in an output (0: off).",
    "tgt_lang": "The language to translate into, for a model trained into several.",
    "glossary": "A file of terms, 'source term<TAB>target term' a line: a line's translation "
                "uses the target term of each source term it holds.",
    "glossary_ignore_case": "Find the glossary's source terms in any case; the target term "
                            "follows the case found (BIKE: FAHRRAD).",
    "glossary_inflect": "Let a term's last word take an ending of 1-3 lower-case letters, as "
                        "the model chooses (Fahrrad: Fahrrads); for --glossary's terms (and "
                        "translate's --terms-file).",
    "split_sentences": "Translate each sentence of a line on its own and join the "
                       "translations (for paragraphs).",
}
DECODE_TYPES = {"device": Device, "precision": Precision}


def with_decode_options(command=None, *, requests_bring_terms: bool = False):
    """Give `command` one option per DecodeConfig field, with its default, and --quantize.
    The command receives them gathered as `decode: DecodeConfig` and `quantize: str`, once
    checked to be read (unread_decode_options; glossary options without --glossary are read
    where `requests_bring_terms`, as a server's requests may)."""
    if command is None:
        return functools.partial(with_decode_options, requests_bring_terms=requests_bring_terms)
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
        decode = DecodeConfig(**settings)
        unread_decode_options(decode, requests_bring_terms, kwargs.get("terms_file") is not None)
        return command(decode=decode, quantize=kwargs.pop("quantize").value, **kwargs)

    wrapper.__signature__ = inspect.Signature([*own, *added])
    return wrapper


SAMPLING_OPTIONS = ("sampling_topk", "sampling_topp", "temperature", "sampling_seed")


def unread_decode_options(decode: DecodeConfig, glossaries: bool, terms: bool) -> None:
    """Refuse the options that would change nothing, silently: the settings of sampling
    without --sampling, and how a glossary's terms are found and placed without a glossary
    (nor `glossaries` coming otherwise, as in a server's requests) or, to place, `terms`
    (translate's --terms-file)."""
    default = DecodeConfig()
    for name in SAMPLING_OPTIONS:
        if not decode.sampling and getattr(decode, name) != getattr(default, name):
            raise UserError(f"--{name.replace('_', '-')}: a setting of --sampling, which is "
                            "off (search decodes)")
    glossaries = glossaries or bool(decode.glossary)
    if decode.glossary_ignore_case and not glossaries:
        raise UserError("--glossary-ignore-case: no glossary to find terms of; give --glossary")
    if decode.glossary_inflect and not (glossaries or terms):
        raise UserError("--glossary-inflect: no terms to inflect; give --glossary (or, to "
                        "translate, --terms-file)")


RunOption = Annotated[Path | None, typer.Option(
    "--run", help="Run directory (default: the most recent run under runs/).")]
EnsembleOption = Annotated[list[Path] | None, typer.Option(
    "--ensemble", help="Another run beside --run (repeatable): their next-token "
    "probabilities are averaged, to decode or to score. The runs must share a tokenizer.")]
EngineOption = Annotated[EngineName, typer.Option(
    help="torch: nmt's own search; ctranslate2: the run's CTranslate2 export (`nmt export`), "
         "--run naming the run or the export directory.")]
TORCH = EngineName("torch")
Tokenize = choices("Tokenize", BLEU_TOKENIZERS)
TokenizeOption = Annotated[Tokenize, typer.Option(
    help="BLEU's tokenizer (sacreBLEU's -tok). auto: sacreBLEU's for the target language "
         "when it is known (zh, ja-mecab, ko-mecab; 13a for the others).")]
AUTO = Tokenize("auto")


