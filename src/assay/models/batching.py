"""Requests from the event loop gathered into batches for a local model, computed in one worker thread.

The scheduler sends each sample as its own request, concurrently; a local model (``hf``, ``vllm``) is fastest on a
batch. :class:`MicroBatcher` queues the jobs that arrive, and whenever its worker is free takes the longest pending
ones first (lm-eval's order within what is in flight) up to a batch's rows, computes them off the event loop, and
answers each job's awaiting request. Everything else the runner does per sample (retries, cache, resume, scoring,
the append-only log) is unchanged, and memory holds only the requests in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

J = TypeVar("J")


@dataclass
class _Pending(Generic[J]):
    job: J
    size: int
    rows: int
    future: asyncio.Future[Any] = field(repr=False)


class MicroBatcher(Generic[J]):
    """Jobs computed in batches by ``compute`` (called in the worker thread with a list of jobs, returning one result
    or exception per job). ``size`` orders jobs (longest first); ``rows`` counts what a job adds to a batch, and a
    batch takes jobs until ``max_rows()`` rows (at least one job). ``pool`` is the one-thread executor the model's
    batchers share, so that one accelerator computes one batch at a time."""

    def __init__(
        self,
        compute: Callable[[list[J]], list[Any]],
        *,
        size: Callable[[J], int],
        rows: Callable[[J], int],
        max_rows: Callable[[], int],
        pool: ThreadPoolExecutor,
    ) -> None:
        self._compute = compute
        self._size = size
        self._rows = rows
        self._max_rows = max_rows
        self._pool = pool
        self._pending: list[_Pending[J]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drainer: asyncio.Task[None] | None = None
        self.batches = 0  # batches computed (for tests and describe())

    async def submit(self, job: J) -> Any:
        """Queue ``job`` and wait for its result (its exception is raised here)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop (the sync API runs one per call): start afresh
            self._pending = [p for p in self._pending if p.future.get_loop() is loop]
            self._loop, self._drainer = loop, None
        future: asyncio.Future[Any] = loop.create_future()
        self._pending.append(_Pending(job, self._size(job), max(1, self._rows(job)), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        return await future

    def _take(self) -> list[_Pending[J]]:
        """The longest pending jobs, up to a batch's rows; cancelled ones (a timed-out request) are dropped."""
        live = [p for p in self._pending if not p.future.done()]
        live.sort(key=lambda p: -p.size)
        limit = max(1, self._max_rows())
        taken: list[_Pending[J]] = []
        rows = 0
        for pending in live:
            if taken and rows + pending.rows > limit:
                break
            taken.append(pending)
            rows += pending.rows
        chosen = {id(p) for p in taken}
        self._pending = [p for p in live if id(p) not in chosen]
        return taken

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(0)  # let the other samples that are ready queue their jobs first
            batch = self._take()
            if not batch:
                return
            try:
                results = await loop.run_in_executor(self._pool, self._compute, [p.job for p in batch])
            except BaseException as err:  # the whole batch failed (e.g. out of memory even one job at a time)
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(err if isinstance(err, Exception) else RuntimeError(str(err)))
                if not isinstance(err, Exception):
                    raise
                continue
            self.batches += 1
            for pending, result in zip(batch, results, strict=True):
                if pending.future.done():
                    continue
                if isinstance(result, BaseException):
                    pending.future.set_exception(result)
                else:
                    pending.future.set_result(result)
