"""Offline scoring on every core of this machine: forked worker processes score chunks of a predictions run or a
re-score, while this process, the one writer, appends their encoded records in order.

Forked, not spawned: a worker starts with the tasks, evaluators and predictions index this process has loaded
(shared copy-on-write, frozen out of the GC's way), so only the chunks' samples cross a pipe one way and encoded
lines the other, and it starts in milliseconds. Only where forking is safe: on Linux, and when every evaluator
says so (:meth:`Evaluator.fork_safe`: no judges, embeddings or sandboxes); otherwise this process scores alone.
The records are those of the in-process path, in the same order (a test proves it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from assay.forking import fork_available, worker_start
from assay.gcpause import gc_paused
from assay.runner.executors.shards import OfflineShard, Scored, encode, scored
from assay.runner.offline import OfflineScheduler, answer_all, first_errors, score_records
from assay.runner.outcomes import WorkerLost
from assay.runner.pending import PendingWork, runs, tasks_of
from assay.store.rundir import CHUNKS_PREFIX

__all__ = ["ProcessOfflineExecutor", "ProcessPool", "ScoringProcessDied", "can_fork"]

if TYPE_CHECKING:
    from assay.models.predictions import PredictionsModel
    from assay.results.scanahead import ChunkScan, ScanAhead
    from assay.runner.scheduler import RunStats
    from assay.tasks import Sample, Task

CHUNKS_PER_PROCESS = 2  # chunks in flight per process: the next is there when one ends


class ScoringProcessDied(WorkerLost):
    """A worker process ended without finishing its chunk (killed, out of memory)."""


def can_fork(tasks: Sequence[Task]) -> bool:
    """True when worker processes may be forked for these tasks: on Linux, with fork-safe evaluators only."""
    if not fork_available():
        return False
    return all(metric.evaluator.fork_safe() for task in tasks for metric in task.metrics)


@dataclass
class _Inherited:
    """What forked workers find in their copy of this module: set just before the fork, never sent."""

    tasks: dict[str, Task]
    model: PredictionsModel | None
    max_response_chars: int | None
    work: PendingWork | None = None  # a predictions run's samples, which a worker reads itself from positions
    spool: str | None = None  # a folder where workers leave a chunk's encoded lines, for the writer to copy
    ahead: ScanAhead | None = None  # the results scan of each chunk is made by the worker that scored it


_INHERITED: _Inherited | None = None


class Done(NamedTuple):
    """A chunk scored by a worker: its encoded records, each sample's first model error, its requests, and the
    ids of its samples (read by the worker, from positions in the inherited pending work)."""

    scored: Scored
    model_errors: list[str | None]
    requests: int
    sample_ids: list[str] | None = None
    spool: str | None = None  # the file holding the encoded lines (then not in ``scored``), for the writer to copy
    ahead: ChunkScan | None = None  # the chunk's results scan (a predictions run scanned ahead)


def _score_in_worker(task_name: str, items: Any, started_at: float, source: str | None, before: int = 0) -> Done:
    """Score one chunk in a worker: a predictions run's samples (answered here, from the inherited predictions
    index), given as themselves or as (part, positions) in the inherited pending work; or a re-score's logged
    lines of the samples file ``source``.

    The cyclic GC is off while the chunk is scored, and the chunk's objects are freed (by :func:`_score_chunk`
    returning) before it is on again: the allocations counted meanwhile set off a collection at once, which
    would otherwise walk every record of the chunk still alive (a tenth of a worker's time at 1M samples)."""
    with gc_paused():
        return _score_chunk(task_name, items, started_at, source, before)


def _score_chunk(task_name: str, items: Any, started_at: float, source: str | None, before: int) -> Done:
    """:func:`_score_in_worker`'s work, with the GC off."""
    from assay.runner.logged import answered_from_line

    state = cast(_Inherited, _INHERITED)
    task = state.tasks[task_name]
    sample_ids = None
    if isinstance(items, Positions):
        assert state.work is not None
        items = state.work.samples_at(items.part, items.positions)  # rows read and samples made here
        sample_ids = [sample.id for sample in items]
    t0, requests = time.perf_counter(), 0
    if source is None:
        answered, requests = answer_all(cast("PredictionsModel", state.model), task, items)
    else:
        answered = [answered_from_line(item, source) for item in items]
    model_seconds = (time.perf_counter() - t0) / len(items) if source is None else 0.0
    records = asyncio.run(
        score_records(
            task,
            answered,
            started_at=started_at,
            model_seconds=model_seconds,
            max_response_chars=state.max_response_chars,
        )
    )
    lines, ahead = None, None
    if state.ahead is not None and not source:
        lines, ahead = state.ahead.encode_and_scan(records, encode, before)
    done = scored(records, lines)
    spool = _spooled(state.spool, done.lines) if state.spool is not None and done.lines else None
    if spool is not None:
        done = done._replace(lines=[])
    return Done(done, first_errors(answered), requests, sample_ids, spool, ahead)


def _spooled(folder: str, lines: list[bytes]) -> str | None:
    """The encoded lines written to a new file in ``folder`` (which the writer copies in the kernel, instead of
    their bytes crossing a pipe and being unpickled); None when it cannot be written (they go through the pipe)."""
    try:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".jsonl")
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\n".join(lines))
            fh.write(b"\n")
    except OSError:  # a full temporary file system, say: the pipe it is
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return path


class Positions(NamedTuple):
    """A chunk of a predictions run as it is sent to a worker: positions in part ``part`` of the pending work."""

    part: int
    positions: Sequence[int]


class ProcessPool:
    """Forked worker processes scoring offline chunks; :meth:`score` hands each scored chunk to its caller (the
    run folder's writer) in the order the chunks were read, holding a few chunks at a time."""

    def __init__(
        self,
        processes: int,
        tasks: Sequence[Task],
        *,
        model: PredictionsModel | None = None,
        max_response_chars: int | None = None,
        work: PendingWork | None = None,
        spool: str | None = None,
        ahead: ScanAhead | None = None,
    ) -> None:
        self.processes = processes
        tasks_by_name = {task.name: task for task in tasks}
        self.inherited = _Inherited(tasks_by_name, model, max_response_chars, work, spool, ahead)
        self._pool: ProcessPoolExecutor | None = None
        self._froze = False

    def __enter__(self) -> ProcessPool:
        global _INHERITED
        _INHERITED = self.inherited
        for task in self.inherited.tasks.values():
            _ = task.hash  # computed once, here, not in every worker
        sys.stdout.flush()  # a worker must not inherit (and write again) buffered output
        sys.stderr.flush()
        self._froze = gc.get_freeze_count() == 0
        if self._froze:  # what the workers inherit stays shared: no collection in them touches its pages
            gc.freeze()
        self._pool = ProcessPoolExecutor(
            self.processes,
            mp_context=multiprocessing.get_context("fork"),
            initializer=worker_start,
            initargs=(os.getpid(),),
        )
        return self

    def __exit__(self, *_: object) -> None:
        global _INHERITED
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        finally:
            self._pool = None
            _INHERITED = None
            if self._froze:
                gc.unfreeze()

    async def score(self, chunks: Iterator[OfflineShard], on_done: Callable[[OfflineShard, Done], None]) -> None:
        """Score every chunk of ``chunks`` (read as the workers free up) and call ``on_done`` with each, in order."""
        pool = cast(ProcessPoolExecutor, self._pool)
        loop = asyncio.get_running_loop()
        pending: deque[tuple[OfflineShard, asyncio.Future[Done]]] = deque()
        try:
            for chunk in chunks:
                try:
                    job: Future[Done] = pool.submit(
                        _score_in_worker, chunk.task.name, chunk.items, chunk.started_at, chunk.source, chunk.before
                    )
                except BrokenProcessPool:  # a worker died since the last chunk was taken: the chunks sent are
                    while pending:  # taken in order, up to the one it was scoring, which says so
                        await _take(pending, on_done)
                    raise ScoringProcessDied(_died(chunk)) from None
                pending.append((chunk, asyncio.wrap_future(job, loop=loop)))
                if len(pending) >= self.processes * CHUNKS_PER_PROCESS:
                    await _take(pending, on_done)
            while pending:
                await _take(pending, on_done)
        finally:
            for _, waiting in pending:
                waiting.cancel()
                if waiting.done() and not waiting.cancelled() and waiting.exception() is None:
                    part = waiting.result().ahead  # scored, never written: its sample-log spools go
                    if part is not None:
                        part.delete()


async def _take(
    pending: deque[tuple[OfflineShard, asyncio.Future[Done]]], on_done: Callable[[OfflineShard, Done], None]
) -> None:
    chunk, job = pending[0]
    try:
        done = await job
    except BrokenProcessPool:
        raise ScoringProcessDied(_died(chunk)) from None
    pending.popleft()
    on_done(chunk, done)


def _died(chunk: OfflineShard) -> str:
    return (
        f"a scoring process died while scoring task {chunk.task.name!r} (killed, or out of memory?); the "
        "samples written so far are kept: resume the run (--processes 1 scores in the assay process alone)"
    )


class ProcessOfflineExecutor(OfflineScheduler):
    """A predictions run scored by forked worker processes: they look the answers up and score chunks, this
    process appends the records and counts them as the in-process path does."""

    def __init__(self, *args: Any, processes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.processes = processes

    async def run(self, work: Sequence[tuple[Task, Sample]]) -> RunStats:
        """Score every (task, sample) pair in the worker processes; more than one chunk of work is needed to
        share it out, and fork-safe evaluators (else this process scores alone)."""
        if self.processes < 2 or len(work) <= self.chunk_size or not can_fork(tasks_of(work)):
            return await super().run(work)
        started = time.perf_counter()
        model = cast("PredictionsModel", self.model)
        pending = work if isinstance(work, PendingWork) else None
        spool = _spool_folder(Path(self.writer.path).parent)
        try:
            with ProcessPool(
                self.processes,
                tasks_of(work),
                model=model,
                max_response_chars=self.config.max_response_chars,
                work=pending,
                spool=spool,
                ahead=self.scan_ahead,
            ) as pool:
                chunks: Iterator[OfflineShard]
                if pending is not None:  # the workers read the samples: this process never makes them
                    chunks = (
                        OfflineShard(task, cast(list[Any], Positions(part, positions)), time.time())
                        for part, task, positions in pending.position_runs(self.chunk_size)
                    )
                else:
                    chunks = (OfflineShard(task, samples, time.time()) for task, samples in runs(work, self.chunk_size))
                await pool.score(self._counted(chunks), self._write)
            self._check_error_rate(final=True)
        finally:
            if spool is not None:
                shutil.rmtree(spool, ignore_errors=True)
            self.stats.seconds = time.perf_counter() - started
        return self.stats

    def _counted(self, chunks: Iterator[OfflineShard]) -> Iterator[OfflineShard]:
        """The chunks, each told how many records of its task were handed out before it (for the scan ahead)."""
        ahead = self.scan_ahead
        for chunk in chunks:
            if ahead is not None:
                items: Any = chunk.items
                size = len(items.positions) if isinstance(items, Positions) else len(items)
                chunk.before = ahead.reserve(chunk.task.name, size)
            yield chunk

    def _write(self, chunk: OfflineShard, done: Done) -> None:
        self.stats.requests += done.requests
        ids = done.sample_ids if done.sample_ids is not None else [sample.id for sample in chunk.items]
        self.write_scored(chunk.task.name, ids, done.model_errors, done.scored, spool=done.spool, ahead=done.ahead)


def _spool_folder(run_dir: Path) -> str | None:
    """A new folder in the run folder for the workers' encoded chunks: on the file system of ``samples.jsonl``, so
    the kernel copies them, and where a killed run's leftovers are found (and removed by the next writer of the
    folder, :func:`remove_leftovers`). None when none can be made: the pipe carries the chunks."""
    try:
        return tempfile.mkdtemp(prefix=CHUNKS_PREFIX, dir=run_dir)
    except OSError:
        return None
