"""The one exception type for problems with what the user gave us."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class UserError(Exception):
    """A problem with the user's input (files, options, run directories): shown as one line."""


@contextmanager
def in_file(path: Path | str) -> Iterator[None]:
    """A UserError raised inside, such as a bad setting, named by the file it came from."""
    try:
        yield
    except UserError as e:
        message = str(e)
        raise UserError(message if message.startswith(f"{path}: ")
                        else f"{path}: {message}") from None
