"""Offline scoring on Ray (a predictions run, a re-score): the driver reads the answers, sends shards of answered
samples to worker actors running the offline scorer, and appends each shard's encoded records as it comes back.

The driver stays the one writer: a shard's records are written only when the whole shard is back, so a shard
whose worker died is simply sent again (split, if it keeps killing workers) and never written twice. Shards are
read lazily and at most two per worker are in flight, so the driver never holds the whole run.

Actors fed shards, not Ray Data's ``map_batches``: every record comes back to the one writer anyway, the shards
are the offline scorer's own unit of work, and the benchmark measured actors 3-4x faster than ``map_batches``
over the same columnar scorer (``python -m benchmarks.bench_ray engines``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

import ray
import ray.exceptions

from assay.errors import AssayError, ConfigError
from assay.runner.executors import RayOptions
from assay.runner.executors.dispatch import ShardQueue, feed_all, next_shard
from assay.runner.executors.ray import MAX_SHARD_ATTEMPTS, SHARDS_PER_WORKER, _for_workers, connect, with_resources
from assay.runner.executors.ray_pool import LOST as _LOST
from assay.runner.executors.ray_pool import (
    WorkerLostError,
    WorkerPool,
    check_resources,
    close_and_kill,
    demand,
    start_timeout,
    worker_count,
)
from assay.runner.executors.ray_worker import OfflineWorker
from assay.runner.executors.shards import OfflineShard, Scored
from assay.runner.offline import OfflineScheduler
from assay.runner.pending import runs, tasks_of

if TYPE_CHECKING:
    from assay.runner.scheduler import RunStats
    from assay.tasks import Sample, Task

OFFLINE_SHARD = 1024  # answered samples per shard: tens of ms of scoring, against ~1 ms of Ray overhead


def for_offline_workers(task: Task) -> Task:
    """``task`` as offline workers need it: without its dataset (each shard carries its samples) but with its
    prompt and few-shot examples, since a predictions run's records are rendered where they are scored."""
    light = _for_workers(task)
    light.prompt = task.prompt
    sampler = task._fewshot()  # built from the dataset here, so that workers need neither it nor its files
    light._sampler, light._pool_dataset = sampler, None
    return light


class OfflinePool:
    """Ray worker actors scoring shards of answered samples; ``score`` hands each scored shard to its caller (the
    run folder's writer), one shard at a time."""

    def __init__(
        self, options: RayOptions, tasks: Sequence[Task], *, max_response_chars: int | None, renders: bool = True
    ) -> None:
        self.options = with_resources(options, list(tasks))
        self.tasks = list(tasks)
        self.max_response_chars = max_response_chars
        self.renders = renders  # False: workers score logged records only (a re-score) and need no prompt
        self.workers_started = 0
        self.shards_redone = 0
        self._actors: list[Any] = []
        self._pool: WorkerPool | None = None
        self._connected = False
        self._refs: list[Any] = []

    async def __aenter__(self) -> OfflinePool:
        self._connected = connect(self.options)
        try:
            check_resources(self.options)
            self._actors = self._start()
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        try:
            if self._pool is not None:
                await self._pool.stop()
            else:
                await close_and_kill([], self._actors)  # never scored: none was waited for
        finally:
            self._actors, self._pool = [], None
            if self._connected:
                ray.shutdown()
                self._connected = False

    def _start(self) -> list[Any]:
        try:
            ship = for_offline_workers if self.renders else _for_workers
            tasks_ref = ray.put([ship(task) for task in self.tasks])
            self._refs = [tasks_ref]
        except Exception as err:  # e.g. a custom evaluator object that cannot be pickled
            raise ConfigError(f"the tasks cannot be sent to Ray workers: {type(err).__name__}: {err}") from None
        remote = ray.remote(OfflineWorker).options(
            num_cpus=self.options.num_cpus,
            num_gpus=self.options.num_gpus,
            max_restarts=-1,  # a worker that died (or lost its node) comes back, here or on another node
            max_task_retries=0,  # the driver redoes a lost shard (it alone knows it was not written)
            max_concurrency=SHARDS_PER_WORKER,
            scheduling_strategy="SPREAD",
        )
        return [remote.remote(tasks_ref, self.max_response_chars) for _ in range(worker_count(self.options))]

    async def score(self, shards: Iterator[OfflineShard], on_scored: Callable[[OfflineShard, Scored], None]) -> None:
        """Score every shard of ``shards`` (read as workers free up, each once it has started) and call
        ``on_scored`` with each, here."""
        if self._pool is None:
            timeout_s = start_timeout(self.options)
            self._pool = WorkerPool(self._actors, timeout_s=timeout_s, wants=demand(self.options))
        pool = self._pool
        queue: ShardQueue[OfflineShard] = ShardQueue(shards)
        feeders = [self._feed(i, queue, on_scored) for i in range(len(pool.actors)) for _ in range(SHARDS_PER_WORKER)]
        try:
            await feed_all(queue, [pool.watch(), *feeders], pool.none_left)
        finally:
            self.workers_started = len(pool.started)

    async def _feed(
        self, i: int, queue: ShardQueue[OfflineShard], on_scored: Callable[[OfflineShard, Scored], None]
    ) -> None:
        """Once worker ``i`` has started, keep one of its slots busy; a shard lost with its worker goes back for
        any worker to take, and a worker that did not start, or come back, in time is given up."""
        assert self._pool is not None
        pool, actor = self._pool, self._pool.actors[i]
        if not await pool.up(i):
            return
        while (shard := await next_shard(queue)) is not None:
            try:
                scored = await self._score(actor, shard)
                if scored is not None:
                    on_scored(shard, scored)
                else:
                    self._redo(queue, shard)
            finally:
                queue.busy -= 1
                queue.poke()
            if scored is None and not await pool.back(i):
                return

    async def _score(self, actor: Any, shard: OfflineShard) -> Scored | None:
        try:
            if shard.source is not None:
                ref = actor.rescore.remote(shard.task.name, shard.items, shard.source)
            else:
                ref = actor.score.remote(shard.task.name, shard.items, shard.started_at, shard.model_seconds)
            return cast(Scored, await ref)
        except _LOST:
            return None
        except ray.exceptions.RayTaskError as err:
            cause = err.cause
            raise cause if isinstance(cause, AssayError) else err from None

    def _redo(self, queue: ShardQueue[OfflineShard], shard: OfflineShard) -> None:
        """Send a lost shard again; one that keeps killing workers is split, to isolate the sample that does it,
        and fails the run when it is down to that sample."""
        attempts = shard.attempts + 1
        if attempts >= MAX_SHARD_ATTEMPTS and len(shard.items) == 1:
            raise WorkerLostError(
                f"sample {shard.sample_name(0)} of task {shard.task.name!r}: the Ray workers scoring it died "
                f"{attempts} times; the run stops (its finished samples are kept)"
            )
        self.shards_redone += 1
        print(
            f"assay: a Ray worker was lost; {len(shard.items)} sample(s) of task {shard.task.name!r} sent again",
            file=sys.stderr,
            flush=True,
        )
        items, half = shard.items, len(shard.items) // 2
        parts = [items] if attempts < 2 or len(items) == 1 else [items[:half], items[half:]]
        for part in parts:
            queue.redo.append(shard.part(part, attempts))


class RayOfflineExecutor(OfflineScheduler):
    """A predictions run on Ray: the driver looks the answers up in the predictions file, workers score them, the
    driver appends the records and counts them as the local chunked path does."""

    def __init__(self, *args: Any, options: RayOptions, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.options = options
        self.pool: OfflinePool | None = None

    async def run(self, work: Sequence[tuple[Task, Sample]]) -> RunStats:
        """Score every (task, sample) pair on the cluster; records are written here as their shards come back."""
        started = time.perf_counter()
        if not work:
            return self.stats
        tasks = tasks_of(work)
        size = self.options.shard_size or OFFLINE_SHARD
        try:
            self.pool = OfflinePool(self.options, tasks, max_response_chars=self.config.max_response_chars)
            async with self.pool as pool:
                shards = (self._answered(task, samples) for task, samples in runs(work, size))
                await pool.score(shards, self._write)
            self._check_error_rate(final=True)
        finally:
            self.stats.seconds = time.perf_counter() - started
        return self.stats

    def _answered(self, task: Task, samples: list[Sample]) -> OfflineShard:
        """A shard of samples with their answers from the predictions file (ModelError: none for that repeat)."""
        started_at, t0 = time.time(), time.perf_counter()
        items = [(a.sample, a.responses, a.errors) for a in self._answer_predictions(task, samples)]
        return OfflineShard(task, items, started_at, (time.perf_counter() - t0) / len(samples))

    def _write(self, shard: OfflineShard, scored: Scored) -> None:
        """Append a scored shard and count it (model errors first, else the first error verdict)."""
        errors = [next((e for e in errors if e), None) for _, _, errors in shard.items]
        self.write_scored(shard.task.name, [sample.id for sample, _, _ in shard.items], errors, scored)
