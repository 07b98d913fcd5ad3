"""`nmt embeddings`: the nearest neighbours of a word in a run's embeddings or a vector file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..checkpoint import latest_run, load_run
from ..devices import resolve_device
from ..errors import UserError
from ..word_vectors import file_neighbours, run_neighbours
from .common import app, choices, user_errors

Side = choices("Side", ("src", "tgt"))
SOURCE = Side("src")


@app.command()
@user_errors
def embeddings(
    run: Annotated[Path | None, typer.Argument(
        help="Run directory (default: the most recent run under runs/).")] = None,
    neighbors: Annotated[str, typer.Option(
        "--neighbors", "--neighbours", help="The word to find neighbours of.")] = "",
    k: Annotated[int, typer.Option("-k", help="How many neighbours.")] = 10,
    vectors: Annotated[Path | None, typer.Option(
        help="A word2vec/GloVe text file to search instead of a run.")] = None,
    side: Annotated[Side, typer.Option(help="The run's source or target embeddings.")
                    ] = SOURCE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """List the pieces nearest to a word by cosine similarity of their embeddings."""
    if not neighbors:
        raise UserError("--neighbors WORD: which word?")
    if k < 1:
        raise UserError(f"-k must be at least 1 (got {k})")
    if vectors is not None:
        query, found = neighbors, file_neighbours(vectors, neighbors, k)
    else:
        loaded = load_run(run or latest_run(), resolve_device("cpu"))
        query, found = run_neighbours(loaded.model, loaded.tokenizer, neighbors, k, side.value)
    if as_json:
        print(json.dumps({"word": neighbors, "query": query,
                          "neighbours": [vars(n) for n in found]}))
        return
    table = Table(title=f"nearest to {query!r}")
    table.add_column("piece")
    table.add_column("cosine", justify="right")
    for neighbour in found:
        table.add_row(neighbour.label, f"{neighbour.similarity:.3f}")
    Console().print(table)
