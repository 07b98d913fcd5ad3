"""`nmt data fetch`, `nmt data prepare` and `nmt data symmetrize`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..config import TOKENIZER_SAMPLE, resolve_config
from ..datasets import fetch_multi30k
from ..errors import UserError
from ..files import atomic_write
from .common import Corpus, app, err, user_errors

data_app = typer.Typer(no_args_is_help=True,
                       help="Download and prepare corpora; join word alignments.")
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
    check_folder(dest, "--dest")
    fetch_multi30k(pair, dest, mirror, report=lambda message: err.print(message, highlight=False))
    print(dest)


def check_folder(path: Path, option: str) -> None:
    """A one-line error when a folder to write into is a file."""
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} {path}: a file, not a folder")


PREPARE_SETTINGS = ("data.max_len", "data.max_len_ratio", "train.seed")  # with tokenizer.*
PREPARE_OPTIONS = {"data.data_dir": "--data", "data.src_lang": "--src-lang",
                   "data.tgt_lang": "--tgt-lang", "data.alignments": "--alignments"}


@data_app.command("prepare")
@user_errors
def prepare_command(
    data: Annotated[Path, typer.Option(help="Corpus directory with train and val files.")],
    out: Annotated[Path, typer.Option(help="Folder to write the prepared corpus into.")],
    src_lang: Annotated[str, typer.Option(help="Source language suffix.")] = "en",
    tgt_lang: Annotated[str, typer.Option(
        help="Target language suffix; several, as de,fr,cs: one model into each.")] = "de",
    preset_name: Annotated[str | None, typer.Option(
        "--preset", help="Take tokenizer and length settings from this preset.")] = None,
    settings: Annotated[list[str] | None, typer.Option(
        "--set", help="tokenizer.KEY=value, data.max_len=N, data.max_len_ratio=R or "
        "train.seed=N, the seed of the tokenizer's sample (repeatable).")] = None,
    sample: Annotated[int, typer.Option(
        help="Train the tokenizer on at most this many pairs (a uniform sample).")
    ] = TOKENIZER_SAMPLE,
    tokenizer: Annotated[Path | None, typer.Option(
        help="Take this run's tokenizer instead of training one (to fine-tune the run).")
    ] = None,
    alignments: Annotated[Path | None, typer.Option(
        help="Word alignments of the training pairs (as for nmt train --alignments), kept "
        "beside their ids; training on the prepared corpus teaches them.")] = None,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace a corpus prepared in --out before.")] = False,
):
    """Tokenize a corpus once into id files; `nmt train --data OUT` then reads them."""
    from ..checkpoint import read_config
    from ..data import kept_report
    from ..guided_alignment import alignment_files
    from ..prepared import prepare as prepare_corpus

    if sample < 1:
        raise UserError(f"--sample must be at least 1 (got {sample})")
    check_folder(out, "--out")
    for setting in settings or []:  # one that would go unused is refused
        key = setting.split("=", 1)[0].strip()
        if tokenizer and key.startswith("tokenizer."):
            raise UserError(f"--set {setting}: --tokenizer {tokenizer} brings its own tokenizer, "
                            "made with its own settings; leave out the tokenizer.* settings")
        if not key.startswith("tokenizer.") and key not in PREPARE_SETTINGS:
            option = PREPARE_OPTIONS.get(key)
            raise UserError(f"--set {setting}: nmt data prepare takes tokenizer.*, "
                            f"{', '.join(PREPARE_SETTINGS)}" + (f"; give {option}" if option
                                                                else ""))
    config = resolve_config(preset_name, settings=settings, options={
        "data.tgt_lang": tgt_lang, "data.alignments": alignments and str(alignments)})
    tokenizer_config = read_config(tokenizer)[0].tokenizer if tokenizer else config.tokenizer
    info = prepare_corpus(data, out, src_lang, tgt_lang, tokenizer_config, config.data.max_len,
                          config.train.seed, sample, tokenizer, config.data.max_len_ratio,
                          alignment_files(config.data.alignments) if config.data.alignments
                          else None, force)
    report = kept_report(info["pairs"], info["empty"], info["too_long"], info["max_len"],
                         info["uneven"], info["max_len_ratio"])
    if "links" in info:
        report += (f"; {info['links']:,} word links, none for {info['unlinked']:,} pairs whose "
                   "words SentencePiece counts otherwise than whitespace does")
    err.print(report, highlight=False)
    print(out)


@data_app.command("symmetrize")
@user_errors
def symmetrize_command(
    forward: Annotated[Path, typer.Argument(help="Word alignments, source to target.")],
    reverse: Annotated[Path, typer.Argument(
        help="Word alignments of the same pairs, target to source (still source-target "
        "positions, as eflomal and fast_align -r write them).")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="File to write (default: standard output).")] = None,
):
    """Join two directions of word alignments (grow-diag-final-and), for train --alignments."""
    from ..guided_alignment import symmetrize

    if out is None:
        for line in symmetrize(forward, reverse):
            print(line)
        return

    def write(path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{line}\n" for line in symmetrize(forward, reverse))

    atomic_write(out, write)
