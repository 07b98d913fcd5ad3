"""`nmt embeddings`: the nearest neighbours of a word in a run's embeddings or a vector file,
and a map of them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..errors import UserError
from ..events import json_text
from ..pictures import check_picture_path, draw_word_map
from .common import app, choices, user_errors

if TYPE_CHECKING:
    from ..checkpoint import Run
    from ..word_vectors import Neighbour

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
    words: Annotated[str, typer.Option(
        help="Words to draw on the map (-o), commas between them.")] = "",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Draw the word and its neighbours (and --words) on their first "
        "two principal components into this PNG or SVG file.")] = None,
    vectors: Annotated[Path | None, typer.Option(
        help="A word2vec/GloVe text file to search instead of a run.")] = None,
    side: Annotated[Side, typer.Option(help="The run's source or target embeddings.")
                    ] = SOURCE,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """List the pieces nearest to a word by cosine similarity of their embeddings; -o maps them."""
    from ..checkpoint import latest_run, load_run
    from ..devices import resolve_device
    from ..word_vectors import file_neighbours, run_neighbours

    chosen = [word.strip() for word in words.split(",") if word.strip()]
    if not neighbors and not chosen:
        raise UserError("--neighbors WORD: which word?")
    if chosen and output is None:
        raise UserError("--words: they are drawn on a map; give -o FILE.png")
    if output is not None:
        check_picture_path(output)
    if k < 1:
        raise UserError(f"-k must be at least 1 (got {k})")
    if run is not None and vectors is not None:
        raise UserError(f"--vectors {vectors}: the words are looked up in that file, so RUN "
                        f"{run} has nothing to do; give one or the other")
    loaded = None if vectors is not None else load_run(run or latest_run(named="name RUN"),
                                                       resolve_device("cpu"))
    query, found = "", []
    if neighbors and vectors is not None:
        query, found = neighbors, file_neighbours(vectors, neighbors, k)
    elif neighbors:
        query, found = run_neighbours(loaded.model, loaded.tokenizer, neighbors, k, side.value)
        note_stand_in(neighbors, query)
    result = {"word": neighbors, "query": query, "neighbours": [vars(n) for n in found]}
    if output is not None:
        result.update(word_map(loaded, vectors, side.value, query, found, chosen, output))
    if as_json:
        print(json_text(result))
    elif output is not None:
        print(output)
    else:
        table = Table(title=f"nearest to {query!r}")
        table.add_column("piece")
        table.add_column("cosine", justify="right")
        for neighbour in found:
            table.add_row(neighbour.label, f"{neighbour.similarity:.3f}")
        Console().print(table)


def word_map(loaded: Run | None, vectors: Path | None, side: str, query: str,
             found: list[Neighbour], words: list[str], output: Path) -> dict:
    """Draw `query`, its neighbours and `words` on their first two principal components;
    what was drawn, as JSON."""
    from ..word_vectors import file_vectors, map_label, principal_components, run_vectors

    drawn = ([query] if query else []) + [n.label for n in found]
    if vectors is not None:
        labels, matrix = file_vectors(vectors, drawn + words)
    else:
        labels, matrix, stand_ins = run_vectors(loaded.model, loaded.tokenizer, words, side,
                                                drawn)
        for word, piece in zip(words, stand_ins):
            note_stand_in(word, piece)
    if len(labels) < 3:  # two words may stand as one piece, or a word be a neighbour
        raise UserError(f"-o {output}: a map needs three different words or pieces; these "
                        f"give {len(labels)}")
    coords, explained = principal_components(matrix)
    named = str if vectors is not None else map_label  # a file's words as they are
    points = [{"label": named(label), "x": x, "y": y}  # "dog" for the piece "▁dog"
              for label, (x, y) in zip(labels, coords.tolist())]
    source = vectors.name if vectors is not None else f"{loaded.path.name} ({side} side)"
    draw_word_map(points, output, f"{source}: the first two principal components hold "
                  f"{100 * explained[0]:.0f}% and {100 * explained[1]:.0f}% of the variance",
                  named(query) if query else None)
    return {"picture": str(output), "explained": explained, "points": points}


def note_stand_in(word: str, piece: str) -> None:
    """Say so on stderr when a word without a piece of its own stands as `piece`."""
    from ..tokenizer import WORD_START

    if piece != WORD_START + word:
        print(f"note: {word!r} has no piece of its own; its first piece {piece!r} stands for "
              "it", file=sys.stderr)
