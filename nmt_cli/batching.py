"""Dynamic batching: requests that arrive together are decoded together.

Decoding a batch of sentences costs little more than decoding one, since every step runs
over the whole batch; a server that decoded each request on its own would waste that. So each
request joins a queue, and one worker takes the oldest, waits a few milliseconds for others
with the same decoding settings (until they hold `max_lines` lines), and decodes them in one
call on a thread of its own, while the event loop goes on reading requests. Requests that
differ only in how many hypotheses they want share a batch: the search is the same, and each
gets the head of its lines' n-best lists; requests with target prefixes share one with
those without (a line without one has the prefix ""), requests with glossary terms with those
without (a line without any has none), and requests for word alignments with those without
(whose alignments go unread).

The queue is bounded: a request that would make more than `max_queued` lines wait is refused
(Busy: the server answers 503 with Retry-After) rather than left waiting behind them, so that
an overloaded server says so at once and a client or load balancer can go elsewhere.

That thread is the only one in the server that runs PyTorch: the model is loaded on it too
(`decoding_thread`). PyTorch's CPU kernels share work with threads of an OpenMP pool that
belongs to the thread calling them. Once a second thread had run such work, each had a pool,
the pools together outnumbered the cores, and the OpenMP runtime then lets a waiting pool
thread sleep almost at once instead of spinning: every small operation of a decoding step
paid for waking it. With the model loaded on the main thread and decoded on this one, a
layer norm of 5 rows took 80 us instead of 5, and a one-sentence request 75 ms instead of 27
(2 cores).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .config import DecodeConfig
from .errors import UserError
from .translate import Translation

Decode = Callable[..., list[list[Translation]]]  # Engine.translate_nbest


class Busy(Exception):
    """The queue holds too many lines to take a request now: try again later."""


@dataclass(eq=False)  # compared by identity: two equal requests are still two jobs
class Job:
    lines: list[str]
    config: DecodeConfig  # jobs share a batch only when these are equal
    nbest: int
    done: asyncio.Future
    prefixes: list[str] | None = None  # a target prefix per line, or none
    alignment: bool = False  # word alignments wanted
    terms: list[list[str]] | None = None  # the glossary's target terms of each line, or none


class Batcher:
    """Gathers requests into batches for one decoding thread. `run` is the worker: start it
    as a task on the event loop that calls `translate`."""

    def __init__(self, decode: Decode, max_lines: int, max_wait: float,
                 thread: ThreadPoolExecutor | None = None, max_queued: int | None = None):
        self.decode, self.max_lines, self.max_wait = decode, max_lines, max_wait
        self.max_queued = max_queued  # lines waiting, at most (None: no bound)
        self.waiting: list[Job] = []
        self.arrived = asyncio.Event()
        self.received = self.answered = self.batches = 0  # requests, and decoding calls
        self.thread = thread or decoding_thread()

    async def translate(self, lines: list[str], config: DecodeConfig, nbest: int = 1,
                        prefixes: list[str] | None = None, alignment: bool = False,
                        terms: list[list[str]] | None = None) -> list[list[Translation]]:
        """The n-best lists of `lines` (each opening with its prefix, if any; with
        `alignment`, with word alignments; each holding its `terms`, if any), once a batch
        holding them is decoded. Busy when the lines waiting, with these, would exceed
        max_queued (unless none waits)."""
        queued = self.lines_queued()
        if self.max_queued is not None and queued and queued + len(lines) > self.max_queued:
            waits = "line waits" if queued == 1 else "lines wait"
            raise Busy(f"busy: {queued:,} {waits} for the decoder, and {len(lines):,} more "
                       f"would pass the server's {self.max_queued:,}; try again shortly")
        job = Job(lines, config, nbest, asyncio.get_running_loop().create_future(), prefixes,
                  alignment, terms)
        self.waiting.append(job)
        self.received += 1
        self.arrived.set()
        try:
            return await job.done
        finally:
            self.answered += 1

    def counts(self) -> dict[str, int]:
        return {"received": self.received, "answered": self.answered, "batches": self.batches,
                "queued_lines": self.lines_queued()}

    def lines_queued(self) -> int:
        """The lines of the requests that wait for the decoder (not those it decodes)."""
        return sum(len(job.lines) for job in self.waiting if not job.done.done())

    async def run(self) -> None:
        """Decode batch after batch, until cancelled."""
        while True:
            while not self.waiting:
                self.arrived.clear()
                await self.arrived.wait()
            jobs = self.take(await self.gather())
            if jobs:
                await self.decode_jobs(jobs)

    async def gather(self) -> DecodeConfig:
        """Wait up to max_wait for requests with the settings of the oldest one, until they
        fill a batch; return those settings."""
        config = self.waiting[0].config
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        while self.lines_waiting(config) < self.max_lines:
            left = deadline - loop.time()
            if left <= 0:
                break
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except asyncio.TimeoutError:
                break
        return config

    def lines_waiting(self, config: DecodeConfig) -> int:
        return sum(len(job.lines) for job in self.waiting if job.config == config)

    def take(self, config: DecodeConfig) -> list[Job]:
        """The waiting jobs with `config`, oldest first, up to max_lines lines (the first
        one whatever its size); jobs whose caller has gone are dropped. Sampled n-best lists
        are ranked draws, so when sampling, only jobs asking for as many draws go together
        (one draw must not be the best of five)."""
        self.waiting = [job for job in self.waiting if not job.done.done()]
        jobs, lines = [], 0
        for job in self.waiting:
            if job.config != config or (config.sampling and jobs and job.nbest != jobs[0].nbest):
                continue
            if jobs and lines + len(job.lines) > self.max_lines:
                break
            jobs.append(job)
            lines += len(job.lines)
        taken = set(map(id, jobs))
        self.waiting = [job for job in self.waiting if id(job) not in taken]
        return jobs

    async def decode_jobs(self, jobs: list[Job]) -> None:
        """Decode the jobs' lines in one call and hand each job its share. If that fails,
        each job is decoded alone, so that one bad request fails only itself."""
        prefixes, terms = None, None
        if any(job.prefixes for job in jobs):
            prefixes = [prefix for job in jobs for prefix in job.prefixes or [""] * len(job.lines)]
        if any(job.terms for job in jobs):
            terms = [own for job in jobs for own in job.terms or [[]] * len(job.lines)]
        try:
            found = await self.decode_lines([line for job in jobs for line in job.lines],
                                            jobs[0].config, max(job.nbest for job in jobs),
                                            prefixes, any(job.alignment for job in jobs), terms)
        except Exception as e:
            if len(jobs) == 1:
                if not isinstance(e, UserError):  # not the request's own fault (a 422)
                    print(f"error: decoding a request failed: {e!r}", file=sys.stderr)
                settle(jobs[0].done, exception=e)
                return
            for job in jobs:
                await self.decode_jobs([job])
            return
        start = 0
        for job in jobs:
            share = found[start : start + len(job.lines)]
            settle(job.done, [hypotheses[: job.nbest] for hypotheses in share])
            start += len(job.lines)

    async def decode_lines(self, lines: list[str], config: DecodeConfig, nbest: int,
                           prefixes: list[str] | None, alignment: bool = False,
                           terms: list[list[str]] | None = None) -> list[list[Translation]]:
        self.batches += 1
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.thread, functools.partial(
            self.decode, lines, config, nbest, prefixes=prefixes, alignment=alignment,
            terms=terms))

    def close(self) -> None:
        """Let the decoding thread finish its batch, then stop it."""
        self.thread.shutdown(wait=True)


def decoding_thread() -> ThreadPoolExecutor:
    """The thread that loads the model and decodes every batch."""
    return ThreadPoolExecutor(1, thread_name_prefix="nmt-decode")


def settle(future: asyncio.Future, result: object = None,
           exception: BaseException | None = None) -> None:
    """Resolve a job's future, unless its caller has already gone."""
    if future.done():
        return
    if exception is not None:
        future.set_exception(exception)
    else:
        future.set_result(result)
