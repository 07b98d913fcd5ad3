"""The `nmt` command: parse options, call the library, show the results.

Results go to stdout; progress, logs and warnings to stderr. A user error ends with one line
on stderr and exit status 1. Each module here holds a group of commands on the one `app`.

A command imports the modules that load PyTorch (training, translate, checkpoint, ...) in its
body, not at the top of its module: `nmt --help`, `nmt --version` and a mistyped option then
answer in 0.2-0.3 s instead of 1.7-2 s (test_cli.py checks that they load no PyTorch).
"""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from .._version import __version__
from .common import app

# Each module registers its commands on `app` as it is imported, in the order of `nmt --help`.
for _module in ("training", "average", "decoding", "inspect", "compare", "vectors", "data",
                "export", "serving"):
    importlib.import_module(f".{_module}", __name__)

__all__ = ["app"]


def version_callback(show: bool) -> None:
    if show:
        print(f"nmt {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: Annotated[bool | None, typer.Option(
        "--version", callback=version_callback, is_eager=True, help="Print the version.")] = None):
    """Train, run and score neural machine translation models."""
