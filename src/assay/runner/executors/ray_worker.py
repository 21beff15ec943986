"""The Ray executor's worker side: an actor holding the model client and the tasks' evaluators, running shards
of samples through the local request loop and streaming each finished record back as an encoded line; and one
scoring shards of already answered samples (predictions runs, re-scores) with the offline scorer."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import ray

from assay.models.base import Model, Request, Response
from assay.models.cache import ResponseCache
from assay.models.retry import RetryBudget
from assay.record import SampleRecord
from assay.runner.executors.shards import Scored, scored
from assay.runner.limiter import AttemptLimiter
from assay.runner.offline import Answered, score_records
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.store.rundir import SampleWriter

if TYPE_CHECKING:
    from assay.runner.logged import LoggedLine
    from assay.tasks import Sample, Task


def local_key(request: Request) -> str:
    """A request's place in its shard (sample id and repeat), which the worker uses as its cache key."""
    return f"{request.sample_id}\x1f{request.repeat}"


class _ShippedTask:
    """A task on a worker: its filters and evaluators, with each sample's requests as the driver rendered them
    (so workers need neither the dataset nor the few-shot pool)."""

    def __init__(self, task: Task, requests: dict[str, list[Request]]) -> None:
        self._task = task
        self._requests = requests

    def build_request(self, sample: Sample, repeat: int = 0) -> Request:
        return self._requests[sample.id][repeat]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task, name)


class _ShardCache:
    """The run's response cache as a worker sees it: the driver looked the shard's requests up before sending it,
    and the answers the worker gets are sent back for the driver to store."""

    def __init__(self, hits: dict[str, Response]) -> None:
        self.hits = hits
        self.puts: dict[str, Response] = {}

    def key(self, model: Model, request: Request) -> str:
        return local_key(request)

    def get(self, key: str) -> Response | None:
        return self.hits.get(key)

    def put(self, key: str, response: Response, *, model: Model | None = None) -> None:
        self.puts[key] = response


class Finished(NamedTuple):
    """One finished sample as a worker sends it: its samples.jsonl line, already encoded (so the driver only
    appends it), and what the driver counts."""

    line: str
    task: str
    sample_id: str
    error: str | None  # the first model error
    evaluator_error: str | None  # the first error verdict ("metric: error")
    cache_hits: int


def finished(record: SampleRecord) -> Finished:
    """``record`` as a worker sends it to the driver."""
    evaluator_error = next(
        (
            f"{metric}: {verdict['error']}"
            for filtered in record.filters.values()
            for metric, verdicts in filtered.verdicts.items()
            for verdict in verdicts
            if verdict.get("error")
        ),
        None,
    )
    return Finished(
        record.model_dump_json(), record.task, record.sample_id, record.error, evaluator_error, record.cache_hits
    )


class _Outbox:
    """The worker's stand-in for the run folder's writer: finished records wait here to be streamed back."""

    def __init__(self) -> None:
        self.records: list[Finished] = []
        self.ready = asyncio.Event()

    def write(self, record: SampleRecord) -> None:
        self.records.append(finished(record))
        self.ready.set()

    def take(self) -> list[Finished]:
        out, self.records = self.records, []
        self.ready.clear()
        return out


class ShardWorker:
    """A Ray actor: one model client and the tasks' evaluators; runs shards through the local request loop.

    All shards running on one worker share one concurrency limit (its share of the run's), so the run's
    concurrency bounds requests across the whole cluster, not per worker."""

    def __init__(self, tasks: list[Task], model: Model, config: SchedulerConfig) -> None:
        self.tasks = {task.name: task for task in tasks}
        self.model = model
        self.config = config
        self._limit: Any = None
        self._budget: RetryBudget | None = None
        self._environments: Any = None  # one limit on environments alive for all of this worker's shards
        if any(getattr(task.agent, "environment", None) is not None for task in tasks):
            from assay.environments.cleanup import cleanup_leftovers

            cleanup_leftovers()  # this node's environments of a worker that died (a node lost mid-run)

    def ready(self) -> tuple[str, int]:
        """Where this worker runs (node id, pid): the driver waits for it before sending work."""
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def share(self, concurrency: int) -> None:
        """Take a new share of the run's concurrency: the run goes on with fewer workers than it started, and the
        run's total stays what was asked for."""
        self.config = dataclasses.replace(self.config, concurrency=concurrency)
        limit = self._limit
        if isinstance(limit, AttemptLimiter):  # the shards running now share it: grow (or shrink) its cap in place
            grown = max(0, concurrency - limit.concurrency)  # what 429s took stays taken
            limit.concurrency = concurrency
            limit.limit = max(1.0, min(float(concurrency), limit.limit + grown))

    def _share_limit(self, scheduler: Scheduler) -> None:
        attr = "limiter" if hasattr(scheduler, "limiter") else "_slots"
        if self._limit is None:
            self._limit = getattr(scheduler, attr)
            self._budget = scheduler.budget  # one retry budget for the worker too, not a fresh reserve per shard
        setattr(scheduler, attr, self._limit)
        scheduler.budget = self._budget
        if self._environments is None:
            from assay.runner.trajectories import slots_for

            self._environments = slots_for(scheduler)
        scheduler.__dict__["_environment_slots"] = self._environments

    async def run_shard(
        self, task_name: str, items: list[tuple[Sample, list[Request]]], hits: dict[str, Response] | None
    ) -> AsyncIterator[tuple[str, Any, dict[str, Response]]]:
        """Answer and score a shard; yield ``("records", [Finished], cache puts)`` as samples finish and, last,
        ``("done", RunStats, cache puts)``. A StopRun (the model refuses access) is raised after the records."""
        task = cast("Task", _ShippedTask(self.tasks[task_name], {sample.id: reqs for sample, reqs in items}))
        outbox = _Outbox()
        cache = _ShardCache(hits) if hits is not None else None
        quiet = RunProgress(len(items), enabled=False)
        scheduler = Scheduler(
            self.model, cast(SampleWriter, outbox), self.config, cache=cast(ResponseCache, cache), progress=quiet
        )
        self._share_limit(scheduler)
        work = [(task, sample) for sample, _ in items]
        job = asyncio.create_task(scheduler.run(work))
        try:
            while not job.done():
                waiter = asyncio.ensure_future(outbox.ready.wait())
                await asyncio.wait({job, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                if outbox.records:
                    yield "records", outbox.take(), _drain(cache)
            if outbox.records:
                yield "records", outbox.take(), _drain(cache)
            stats = job.result()
        finally:
            if not job.done():
                job.cancel()
        yield "done", stats, _drain(cache)

    async def run_shard_whole(
        self, task_name: str, items: list[tuple[Sample, list[Request]]], hits: dict[str, Response] | None
    ) -> list[tuple[str, Any, dict[str, Response]]]:
        """:meth:`run_shard`'s messages all at once, for Ray Client (``ray://``), which cannot stream them."""
        return [message async for message in self.run_shard(task_name, items, hits)]

    async def close(self) -> None:
        """Release the model's and evaluators' connections."""
        from assay.runner.evaluatorhooks import close_evaluators

        await self.model.aclose()
        await close_evaluators(list(self.tasks.values()))


def _drain(cache: _ShardCache | None) -> dict[str, Response]:
    if cache is None:
        return {}
    out, cache.puts = cache.puts, {}
    return out


class OfflineWorker:
    """A Ray actor scoring shards of answered samples (a predictions run, a re-score) with the offline scorer:
    the same records as the local chunked path, made where the worker runs."""

    def __init__(self, tasks: list[Task], max_response_chars: int | None) -> None:
        self.tasks = {task.name: task for task in tasks}
        self.max_response_chars = max_response_chars

    def ready(self) -> tuple[str, int]:
        """Where this worker runs (node id, pid): the driver waits for it before sending work."""
        return ray.get_runtime_context().get_node_id(), os.getpid()

    async def score(
        self,
        task_name: str,
        items: list[tuple[Sample, list[Response | None], list[str | None]]],
        started_at: float,
        model_seconds: float,
    ) -> Scored:
        """New records (a predictions run) of samples with their answers, in shard order."""
        answered = [Answered(sample, responses, errors) for sample, responses, errors in items]
        return await self._scored(task_name, answered, started_at, model_seconds)

    async def rescore(self, task_name: str, items: list[LoggedLine], source: str) -> Scored:
        """The logged lines of ``source`` (a run's samples file) scored again, in shard order."""
        from assay.runner.logged import answered_from_line

        return await self._scored(task_name, [answered_from_line(item, source) for item in items], 0.0, 0.0)

    async def _scored(self, task_name: str, items: list[Answered], started_at: float, model_seconds: float) -> Scored:
        records = await score_records(
            self.tasks[task_name],
            items,
            started_at=started_at,
            model_seconds=model_seconds,
            max_response_chars=self.max_response_chars,
        )
        return scored(records)

    async def close(self) -> None:
        """Release the evaluators' connections (judges)."""
        from assay.runner.evaluatorhooks import close_evaluators

        await close_evaluators(list(self.tasks.values()))
