"""The request loop: bounded concurrency, cache, retries; each finished sample is scored and appended at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.models.base import Model, ModelError, Request, Response
from assay.record import SampleRecord
from assay.runner.cache import ResponseCache
from assay.runner.progress import RunProgress
from assay.runner.retry import RetryPolicy, call_with_retries
from assay.runner.rundir import SampleWriter
from assay.runner.scoring import score_sample

if TYPE_CHECKING:
    from assay.tasks import Sample, Task


class ErrorRateExceeded(AssayError):
    """The run stopped because too many samples failed (``max_error_rate``)."""


@dataclass
class SchedulerConfig:
    """How the request loop behaves."""

    concurrency: int = 32
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_error_rate: float | None = None  # stop the run past this share of failed samples
    feedback_model: Model | None = None  # rewrites failing verdicts' feedback
    min_samples_for_error_rate: int = 20
    fsync_every: int = 200


@dataclass
class RequestOutcome:
    response: Response | None
    error: str | None
    cached: bool


@dataclass
class Fetched:
    """A sample's requests and their outcomes, waiting to be scored."""

    requests: list[Request]
    outcomes: list[RequestOutcome]
    started_at: float
    model_seconds: float


@dataclass
class RunStats:
    """What one execution of the loop did."""

    written: int = 0
    errors: int = 0
    cache_hits: int = 0
    requests: int = 0
    retries: int = 0
    seconds: float = 0.0
    first_error: str | None = None  # the first failed sample's model error, to show the user why samples fail


class Scheduler:
    """Runs the pending samples of some tasks against one model and appends each finished sample."""

    def __init__(
        self,
        model: Model,
        writer: SampleWriter,
        config: SchedulerConfig,
        *,
        cache: ResponseCache | None,
        progress: RunProgress,
    ) -> None:
        self.model = model
        self.writer = writer
        self.config = config
        self.cache = cache if model.cacheable else None
        self.progress = progress
        self.stats = RunStats()
        self.cache_failures: list[str] = []
        self._slots = asyncio.Semaphore(config.concurrency)

    async def run(self, work: list[tuple[Task, Sample]]) -> RunStats:
        """Process every (task, sample) pair; a failure of one sample is recorded, never fatal.

        Workers only fetch: once a sample's responses are in, its scoring and writing go to a separate task
        and the worker sends its next request at once, so evaluation never delays the request pipeline.
        At most ``concurrency`` fetched samples wait to be scored.

        When the run must stop (the error rate is exceeded, or writing failed), requests in flight are abandoned at
        once (those samples are not finished; a resume redoes them). After an error-rate stop, every sample whose
        answers are already in is still scored and written, so no paid-for answer is lost.
        Cancellation (Ctrl-C) cancels everything; every sample written so far is complete.
        """
        started = time.perf_counter()
        pending: Iterator[tuple[Task, Sample]] = iter(work)
        self._finishing: set[asyncio.Task[None]] = set()
        self._finish_slots = asyncio.Semaphore(self.config.concurrency)
        self._failure: BaseException | None = None
        self._fetching: set[asyncio.Task[Any]] = set()  # workers waiting for a model's answer
        n_workers = min(self.config.concurrency, len(work))
        self._workers: list[asyncio.Task[None]] = [asyncio.create_task(self._worker(pending)) for _ in range(n_workers)]
        try:
            await asyncio.gather(*self._workers, return_exceptions=True)  # each worker reports its own failure
            if self._failure is None or isinstance(self._failure, ErrorRateExceeded):
                while self._finishing:  # fetched samples: score and write them
                    await asyncio.wait(set(self._finishing))
            if self._failure is not None:
                raise self._failure
            self._check_error_rate(final=True)
        finally:
            leftover = [t for t in [*self._workers, *self._finishing] if not t.done()]
            for t in leftover:
                t.cancel()
            await asyncio.gather(*leftover, return_exceptions=True)
            self.stats.seconds = time.perf_counter() - started
        return self.stats

    def _fail(self, error: BaseException) -> None:
        """Remember the first failure and stop fetching: requests in flight are abandoned, fetched samples kept."""
        if self._failure is None:
            self._failure = error
        for worker in self._fetching:
            worker.cancel()

    async def _worker(self, pending: Iterator[tuple[Task, Sample]]) -> None:
        me = asyncio.current_task()
        assert me is not None
        try:
            for task, sample in pending:  # safe: no await between the iterator's steps
                if self._failure is not None:
                    return
                self._fetching.add(me)
                try:
                    fetched = await self._fetch(task, sample)
                finally:
                    self._fetching.discard(me)
                await self._finish_slots.acquire()
                finishing = asyncio.create_task(self._finish(task, sample, fetched))
                self._finishing.add(finishing)
                finishing.add_done_callback(self._finished)
        except Exception as err:  # a bug outside the per-request guard: stop the run, do not hang it
            self._fail(err)

    def _finished(self, finishing: asyncio.Task[None]) -> None:
        self._finishing.discard(finishing)
        self._finish_slots.release()
        error = None if finishing.cancelled() else finishing.exception()
        if error is not None:
            self._fail(error)

    async def _finish(self, task: Task, sample: Sample, fetched: Fetched) -> None:
        record = await self._record(task, sample, fetched)
        self.writer.write(record)
        self.stats.written += 1
        failed = record.error is not None
        self.stats.errors += int(failed)
        if failed and self.stats.first_error is None:
            self.stats.first_error = f"{task.name}/{sample.id}: {record.error}"
        self.stats.cache_hits += record.cache_hits
        self.progress.advance(error=failed, cache_hits=record.cache_hits)
        self._check_error_rate()

    def _check_error_rate(self, *, final: bool = False) -> None:
        """Past ``max_error_rate`` the run fails: while running once enough samples are in (a few early failures
        must not stop it), and at the end whatever the count, so a small run never passes the limit silently."""
        limit = self.config.max_error_rate
        done = self.stats.written
        if limit is None or not done or (not final and done < self.config.min_samples_for_error_rate):
            return
        if self.stats.errors / done > limit:
            raise ErrorRateExceeded(
                f"{'failed' if final else 'stopped'}: {self.stats.errors} of {done} samples failed, above the "
                f"allowed error rate {limit:.0%} (first error: {self.stats.first_error})"
            )

    async def _fetch(self, task: Task, sample: Sample) -> Fetched:
        started_at = time.time()
        t0 = time.perf_counter()
        requests = [task.build_request(sample, r) for r in range(task.repeats)]
        if len(requests) == 1:
            outcomes = [await self._request(requests[0])]
        else:
            outcomes = list(await asyncio.gather(*(self._request(req) for req in requests)))
        return Fetched(requests, outcomes, started_at, time.perf_counter() - t0)

    async def _record(self, task: Task, sample: Sample, fetched: Fetched) -> SampleRecord:
        responses = [o.response for o in fetched.outcomes]
        errors = [o.error for o in fetched.outcomes]
        first = fetched.requests[0]
        prompt = task.prompt_text(first)
        filters, eval_seconds = await score_sample(
            task, sample, responses, errors, prompt, feedback_model=self.config.feedback_model
        )
        return SampleRecord(
            task=task.name,
            task_hash=task.hash,
            doc_id=sample.doc_id,
            sample_id=sample.id,
            doc=sample.doc,
            prompt=prompt,
            messages=first.messages,
            gen_kwargs=first.params,
            target=sample.target,
            metadata=sample.metadata,
            responses=responses,
            response_errors=errors,
            cache_hits=sum(o.cached for o in fetched.outcomes),
            filters=filters,
            started_at=fetched.started_at,
            model_seconds=fetched.model_seconds,
            eval_seconds=eval_seconds,
        )

    def _retried(self, attempt: int, error: ModelError) -> None:
        self.stats.retries += 1  # counted as they happen: a request that finally fails has retried too

    async def _request(self, request: Request) -> RequestOutcome:
        key = None
        if self.cache is not None:
            key = self.cache.key(self.model, request)
            hit = self.cache.get(key)
            if hit is not None:
                return RequestOutcome(hit, None, True)
        async with self._slots:
            self.stats.requests += 1
            try:
                response, _ = await call_with_retries(
                    lambda: self.model.generate(request), self.config.retry, on_retry=self._retried
                )
            except ModelError as err:
                return RequestOutcome(None, str(err), False)
            except Exception as err:  # a bug in an agent or provider fails this sample, not the run
                return RequestOutcome(None, f"{type(err).__name__}: {err}", False)
        if key is not None and self.cache is not None:
            try:
                self.cache.put(key, response, model=self.model)
            except Exception as err:  # a full disk or a locked cache loses a cache entry, never the sample
                self.cache_failures.append(f"{type(err).__name__}: {err}")
        return RequestOutcome(response, None, False)
