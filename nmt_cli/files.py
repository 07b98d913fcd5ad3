"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Each write goes to a temporary file in the same directory, is flushed and fsync'ed, then
renamed over the target (rename is atomic within one filesystem). A second Ctrl-C that lands
during a write stops training once the write is done (stopping.whole_files), so no temporary
file is left behind.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .stopping import whole_files


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    """Call `write(tmp_path)` to fill a temporary file, then move it onto `path`. A link is
    followed (the file it names is replaced; the link stays), and a path that is no regular
    file (`-o /dev/null`, a pipe) is written as it is: a file renamed onto it would take the
    device's place."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        write(str(path))
        return
    with whole_files():
        _write_and_replace(path, write)


def _write_and_replace(path: Path, write: Callable[[str], None]) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:  # named by the file asked for, not the temporary one
        raise OSError(e.errno, e.strerror, str(path)) from None
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes 0600 files, and some writers (safetensors) replace the file with one
        # of their own: give the result the mode any new file gets, so others can read it.
        os.chmod(tmp, 0o666 & ~_umask())
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno is not None and e.filename in (None, tmp):
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    _fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file's bytes, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
