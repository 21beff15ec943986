"""The Ray executor: worker actors hold the model client and the evaluators and are fed shards of samples; each
streams its finished records back to the driver, which stays the one writer of the run folder.

Why Ray Core actors (and not Ray Data) for runs: a run is bound by model calls and per-sample scoring, and every
record must come back to one writer anyway; long-lived actors keep their HTTP connections and loaded evaluators
across shards, start in about a second, and stream records back as they finish (see the README's Ray section for
the measurements). Exactly-once is the driver's: it alone writes, it writes a sample only while that sample is
outstanding in its shard, and a shard whose worker died is sent again with only its unfinished samples, on the
worker Ray restarted or another one. Ray's own method retries are off on purpose: a streamed shard redone by Ray
would send some records twice and, with a different completion order, lose others. Through Ray Client
(``ray://``), which cannot stream, a shard's records come back together when it ends.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray
import ray.exceptions
import ray.util.client

from assay.errors import AssayError, ConfigError
from assay.models.base import Model, Request, Response
from assay.models.cache import ResponseCache
from assay.runner.executors import RayOptions
from assay.runner.executors.dispatch import ShardQueue, feed_all, next_shard
from assay.runner.executors.ray_pool import LOST as _LOST
from assay.runner.executors.ray_pool import (
    WorkerLostError,
    WorkerPool,
    check_resources,
    demand,
    start_timeout,
    worker_count,
)
from assay.runner.executors.ray_worker import Finished, ShardWorker, local_key
from assay.runner.pending import runs, tasks_of
from assay.runner.progress import RunProgress
from assay.runner.scheduler import RunStats, Scheduler, SchedulerConfig
from assay.store.rundir import SampleWriter

if TYPE_CHECKING:
    from assay.tasks import Sample, Task

SHARDS_PER_WORKER = 2  # shards in flight per worker: the next one is there when the current one ends
MAX_SHARD_ATTEMPTS = 4  # a shard whose workers died this often fails the run (resume redoes its samples)
MAX_SHARD_SIZE = 64
# what the driver counts itself from each record it writes; every other counter comes from the workers' shards
_DRIVER_COUNTED = frozenset(
    {"written", "errors", "evaluator_errors", "cache_hits", "seconds", "first_error", "first_evaluator_error"}
)


@dataclass
class _Shard:
    task: Task
    samples: list[Sample]
    attempts: int = 0


def _shards(work: Sequence[tuple[Task, Sample]], size: int) -> Iterator[_Shard]:
    """Consecutive samples of one task, ``size`` at a time."""
    return (_Shard(task, samples) for task, samples in runs(work, size))


def _for_workers(task: Task) -> Task:
    """A copy of ``task`` without its dataset, few-shot pool and templates (the driver renders the requests)."""
    _ = task.hash  # computed here, where the dataset is
    light = copy.copy(task)
    for name in ("_dataset", "_samples", "_sampler", "_pool_dataset", "_last_render", "prompt"):
        if name in light.__dict__:
            setattr(light, name, None)
    return light


def _shares(concurrency: int, workers: int) -> list[int]:
    """The run's concurrency split among ``workers`` (each at least 1; their sum is the run's)."""
    n = max(1, min(workers, concurrency))
    base, extra = divmod(concurrency, n)
    return [base + (i < extra) for i in range(n)]


def connect(options: RayOptions) -> bool:
    """Join the Ray cluster at ``options.address`` (or ``$RAY_ADDRESS``), or start a local instance; True when this
    call connected (so the run disconnects at its end), False when the process was already connected."""
    if ray.is_initialized():
        return False
    quiet: dict[str, Any] = {"logging_level": logging.WARNING, "configure_logging": True}
    if options.address is not None and options.address.startswith("ray://"):
        _client_init(options.address, quiet)
    elif options.address is not None:
        ray.init(address=options.address, **quiet)
    elif os.environ.get("RAY_ADDRESS"):
        ray.init(**quiet)  # inside `ray job submit`: the job's cluster
    else:
        _init_loopback(quiet)
    return True


LOOPBACK = "127.0.0.1"


def _init_loopback(quiet: dict[str, Any]) -> None:
    """Start a local Ray instance that listens on 127.0.0.1 only: its GCS, raylets, workers and agents take no
    credentials, so nothing of it may be reachable from the machine's network address (and no dashboard at all).

    Why the switch: Ray turns a loopback ``_node_ip_address`` into the machine's network address unless its
    single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read by ``ray_constants`` at import and by the
    processes the instance starts) is on; it is on only while the instance starts, so a later ``ray.init`` of this
    process that joins a real cluster still finds its own network address."""
    from ray._private import ray_constants

    name = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    saved_env, saved_flag = os.environ.get(name), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[name] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        ray.init(include_dashboard=False, dashboard_host=LOOPBACK, _node_ip_address=LOOPBACK, **quiet)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved_env


CLIENT_ATTEMPTS = 3  # a Ray Client server that fails to start for one connection often starts for the next
# what the cluster's proxy says when its server for this connection did not start: worth connecting again
_CLIENT_START_FAILURES = (
    "client server failed",  # "Starting Ray client server failed"
    "initialization failure from server",  # the proxy's check of the new server raised (e.g. psutil.ZombieProcess)
)


def _client_init(address: str, quiet: dict[str, Any]) -> None:
    """Connect through Ray Client (``ray://``). The cluster's proxy starts a server process per connection, and
    that start fails now and then (seen on a loaded machine, and in CI: the proxy's own check of the process it
    started found a zombie): try again."""
    for attempt in range(1, CLIENT_ATTEMPTS + 1):
        try:
            ray.init(address=address, **quiet)
            return
        except (ConnectionError, RuntimeError) as err:
            message = str(err).lower()
            if attempt == CLIENT_ATTEMPTS or not any(failure in message for failure in _CLIENT_START_FAILURES):
                raise
            print(f"assay: Ray Client at {address}: {err}; connecting again", file=sys.stderr, flush=True)
            ray.shutdown()  # whatever the failed connection set up
            time.sleep(attempt)


def with_resources(options: RayOptions, tasks: list[Task]) -> RayOptions:
    """``options`` with what each worker reserves settled: as given, else the most any task's ``resources:`` asks
    for (the workers run every task's evaluators), else 1 CPU and no GPU."""
    asked = [task.config.resources for task in tasks if task.config.resources is not None]

    def pick(given: float | None, key: str, default: float) -> float:
        if given is not None:
            return given
        values = [value for value in (getattr(r, key) for r in asked) if value is not None]
        return max(values) if values else default

    return options.model_copy(
        update={
            "num_cpus": pick(options.num_cpus, "num_cpus", 1.0),
            "num_gpus": pick(options.num_gpus, "num_gpus", 0.0),
        }
    )


class RayExecutor(Scheduler):
    """Runs a run's samples on Ray worker actors and writes every record here, in the driver."""

    def __init__(
        self,
        model: Model,
        writer: SampleWriter,
        config: SchedulerConfig,
        *,
        cache: ResponseCache | None,
        progress: RunProgress,
        options: RayOptions,
    ) -> None:
        super().__init__(model, writer, config, cache=cache, progress=progress)
        self.options = options
        self.workers_started = 0
        self.shards_redone = 0
        self._share_of: list[int] = []
        self._refs: list[Any] = []  # the workers' constructor arguments, kept alive so a restart can read them
        self.pool: WorkerPool | None = None

    async def run(self, work: Sequence[tuple[Task, Sample]]) -> RunStats:
        """Process every (task, sample) pair on the cluster; records are written here as they come back."""
        started = time.perf_counter()
        if not work:
            return self.stats
        self.options = with_resources(self.options, tasks_of(work))
        connected = connect(self.options)
        try:
            check_resources(self.options)
            self.pool = self._start_workers(work)
            await self._dispatch(work, self.pool)
            self._check_error_rate(final=True)
        finally:
            self.stats.seconds = time.perf_counter() - started
            if self.pool is not None:
                await self.pool.stop()
            if connected:
                ray.shutdown()
        return self.stats

    def _start_workers(self, work: Sequence[tuple[Task, Sample]]) -> WorkerPool:
        """Create the worker actors (as many as fit on the live nodes, unless --ray-workers says); each is fed once
        it has started (see :class:`WorkerPool`)."""
        tasks = {task.name: task for task in tasks_of(work)}
        try:
            tasks_ref = ray.put([_for_workers(t) for t in tasks.values()])
            model_ref = ray.put(self.model)
            self._refs = [tasks_ref, model_ref]
        except Exception as err:  # e.g. an agent object that cannot be pickled
            raise ConfigError(
                f"the tasks or the model cannot be sent to Ray workers: {type(err).__name__}: {err}"
            ) from None
        remote = ray.remote(ShardWorker).options(
            num_cpus=self.options.num_cpus,
            num_gpus=self.options.num_gpus,
            max_restarts=-1,  # a worker that died (or lost its node) comes back, here or on another node
            max_task_retries=0,  # shards are redone by the driver, which knows which samples are still missing
            max_concurrency=1000,
            scheduling_strategy="SPREAD",  # across nodes: a lost node takes as few workers with it as it can
        )
        actors = []
        for share in _shares(self.config.concurrency, worker_count(self.options)):
            config = dataclasses.replace(self.config, concurrency=share, max_error_rate=None)
            actors.append(remote.remote(tasks_ref, model_ref, config))
        self._share_of = _shares(self.config.concurrency, len(actors))
        timeout_s = start_timeout(self.options)
        wants = demand(self.options)
        return WorkerPool(actors, timeout_s=timeout_s, wants=wants, concurrency=self.config.concurrency, shares=_shares)

    async def _dispatch(self, work: Sequence[tuple[Task, Sample]], pool: WorkerPool) -> None:
        """Shards cut from the work as workers free up (the driver never holds the whole run), lost ones first;
        each worker is fed from the moment it has started."""
        size = self.options.shard_size or min(MAX_SHARD_SIZE, max(1, min(self._share_of)))
        queue: ShardQueue[_Shard] = ShardQueue(_shards(work, size))
        feeders = [self._feed(i, queue) for i in range(len(pool.actors)) for _ in range(SHARDS_PER_WORKER)]
        try:
            await feed_all(queue, [pool.watch(), *feeders], pool.none_left)
        finally:
            self.workers_started = len(pool.started)

    async def _feed(self, i: int, queue: ShardQueue[_Shard]) -> None:
        """Once worker ``i`` has started, keep one of its shard slots busy; after losing the worker, hand the
        shard's unfinished samples back to the queue (other workers take them) and wait (bounded) until Ray has
        restarted it; a worker that did not start, or come back, in time is given up."""
        assert self.pool is not None
        pool, actor = self.pool, self.pool.actors[i]
        if not await pool.up(i):
            return
        while (shard := await next_shard(queue)) is not None:
            missing: list[Sample] | None = None
            try:
                missing = await self._run_shard(actor, shard)
                if missing is not None:
                    self._redo(queue, shard, missing)
            finally:
                queue.busy -= 1
                queue.poke()
            if missing is not None and not await pool.back(i):
                return

    def _redo(self, queue: ShardQueue[_Shard], shard: _Shard, missing: list[Sample]) -> None:
        """Send a shard's unfinished samples again; a shard that keeps killing workers is split, to isolate the
        sample that does it, and fails the run when it is down to that sample."""
        attempts = shard.attempts + 1
        if not missing:
            return
        if attempts >= MAX_SHARD_ATTEMPTS and len(missing) == 1:
            sample = missing[0]
            raise WorkerLostError(
                f"sample {sample.id!r} of task {shard.task.name!r}: the Ray workers running it died "
                f"{attempts} times; the run stops (its finished samples are kept; resume to try again)"
            )
        self.shards_redone += 1
        print(
            f"assay: a Ray worker was lost; {len(missing)} unfinished sample(s) of task {shard.task.name!r} sent again",
            file=sys.stderr,
            flush=True,
        )
        half = len(missing) // 2
        parts = [missing] if attempts < 2 or len(missing) == 1 else [missing[:half], missing[half:]]
        queue.redo.extend(_Shard(shard.task, part, attempts) for part in parts)

    def _requests(self, shard: _Shard) -> tuple[list[tuple[Sample, list[Request]]], dict[str, Response] | None]:
        task = shard.task
        items = [(sample, [task.build_request(sample, r) for r in range(task.repeats)]) for sample in shard.samples]
        if self.cache is None:
            return items, None
        hits: dict[str, Response] = {}
        for _, requests in items:
            for request in requests:
                hit = self.cache.get(self.cache.key(self.model, request))
                if hit is not None:
                    hits[local_key(request)] = hit
        return items, hits

    async def _run_shard(self, actor: Any, shard: _Shard) -> list[Sample] | None:
        """Run one shard on ``actor``; returns the samples still missing when the worker was lost, else None."""
        items, hits = self._requests(shard)
        outstanding = {sample.id: sample for sample, _ in items}
        requests = {local_key(r): r for _, reqs in items for r in reqs}
        try:
            async for kind, payload, puts in self._messages(actor, shard.task.name, items, hits):
                self._store(puts, requests)
                if kind == "done":
                    self._merge(payload)
                    continue
                # never write a sample twice
                self._account([done for done in payload if outstanding.pop(done.sample_id, None) is not None])
        except _LOST:
            return list(outstanding.values())
        except ray.exceptions.RayTaskError as err:
            cause = err.cause
            raise cause if isinstance(cause, AssayError) else err from None
        return list(outstanding.values()) or None  # a worker never skips samples; if it did, they are redone

    async def _messages(self, actor: Any, *args: Any) -> AsyncIterator[tuple[str, Any, dict[str, Response]]]:
        """A shard's messages as the worker sends them: streamed, or (Ray Client) all at the shard's end."""
        if ray.util.client.ray.is_connected():
            for message in await actor.run_shard_whole.remote(*args):
                yield message
            return
        async for ref in actor.run_shard.remote(*args):
            yield await ref

    def _account(self, finished: list[Finished]) -> None:
        """Write finished samples (one write for a message's records) and count them, as the local loop does."""
        if not finished:
            return
        self.writer.write_lines([done.line.encode() for done in finished])
        stats, failed, hits = self.stats, 0, 0
        for done in finished:
            failed += stats.count_errors(f"{done.task}/{done.sample_id}", done.error, done.evaluator_error)
            hits += done.cache_hits
        stats.written += len(finished)
        stats.cache_hits += hits
        self.progress.advance_many(len(finished), errors=failed, cache_hits=hits)
        self._check_error_rate()

    def _merge(self, shard_stats: RunStats) -> None:
        """Add a shard's counters (requests, retries, …) that the driver does not count from records."""
        for f in dataclasses.fields(RunStats):
            if f.name in _DRIVER_COUNTED:
                continue
            mine, theirs = getattr(self.stats, f.name), getattr(shard_stats, f.name)
            if isinstance(theirs, int) and isinstance(mine, int):
                setattr(self.stats, f.name, mine + theirs)
            elif isinstance(theirs, float) and f.name.endswith(("_oldest", "_newest")):  # when cached answers were made
                pick = min if f.name.endswith("_oldest") else max
                setattr(self.stats, f.name, theirs if mine is None else pick(mine, theirs))

    def _store(self, puts: dict[str, Response], requests: dict[str, Request]) -> None:
        if self.cache is None or not puts:
            return
        for local, response in puts.items():
            try:
                self.cache.put(self.cache.key(self.model, requests[local]), response, model=self.model)
            except Exception as err:  # a full disk or a locked cache loses a cache entry, never the sample
                self.cache_failures.append(f"{type(err).__name__}: {err}")
