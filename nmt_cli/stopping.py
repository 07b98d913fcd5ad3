"""Stopping on a signal: the first SIGINT/SIGTERM asks training to stop after its current step
(it then saves and exits); a second one stops at once, except that a file being written is
finished first (see `whole_files`); once a run is stopping, further signals are ignored so that
none interrupts the exit itself."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_writing = 0  # files being written on the main thread (whole_files blocks entered)
_held = False  # a stop-at-once that arrived while one was being written


class TrainingInterrupted(Exception):
    """Training stopped on a signal after saving its state; `signum` says which."""

    def __init__(self, signum: int, run_dir: Path, step: int):
        super().__init__(f"interrupted at step {step}; resume with: nmt train --resume {run_dir}")
        self.signum, self.run_dir, self.step = signum, run_dir, step


class ValidationStopped(Exception):
    """A validation cut short by a request to stop: the run saves without it, and validates
    there first when resumed."""


@contextmanager
def stop_signals() -> Iterator[list[int]]:
    """Turn the first SIGINT/SIGTERM into a request to stop after the current step; a second
    one stops at once (KeyboardInterrupt). Yields a list that receives the signal number."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    received: list[int] = []

    def handler(signum, frame):
        global _held
        if not received:
            received.append(signum)
        elif _writing:
            _held = True
        else:
            raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def stop_at_once() -> Iterator[None]:
    """SIGTERM stops at once, as SIGINT does (KeyboardInterrupt): while a run is set up, before
    it has a state to save, so that one stopped while it reads its corpus or trains its
    tokenizer is removed, not left without a state to resume from."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def whole_files() -> Iterator[None]:
    """Hold a stop-at-once (a second signal) until the block ends, then raise it: atomic_write
    runs in one, so that it finishes its file and leaves no temporary one. Only the main
    thread, where signal handlers run, holds."""
    global _writing, _held
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _writing += 1
    try:
        yield
    finally:
        _writing -= 1
        if _held and not _writing:
            _held = False
            raise KeyboardInterrupt


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
