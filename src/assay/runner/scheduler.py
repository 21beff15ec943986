"""The request loop: bounded attempts in flight, cache, retries that wait outside both caps (attempts in flight and
samples in progress); each finished sample is scored and appended at once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.models.base import Model, ModelError, Request, Response
from assay.models.retry import RetryBudget, RetryPolicy, attempt_once, next_wait
from assay.record import SampleRecord, judge_cache_hits
from assay.runner.exits import DEFAULT_MAX_RESPONSE_CHARS, error_rate_problem
from assay.runner.limiter import AttemptLimiter
from assay.runner.outcomes import ErrorRateExceeded, ModelAccessError, RequestOutcome, StopRun
from assay.runner.progress import RunProgress
from assay.runner.room import PARKED_PER_SLOT, Place, Room
from assay.runner.scoring import LIMIT_STOPS, score_sample
from assay.store.rundir import SampleWriter

if TYPE_CHECKING:
    from assay.models.cache import ResponseCache
    from assay.tasks import Sample, Task


@dataclass
class SchedulerConfig:
    """How the request loop behaves."""

    concurrency: int = 32
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_error_rate: float | None = None  # stop the run past this share of failed samples
    feedback_model: Model | None = None  # rewrites failing verdicts' feedback
    min_samples_for_error_rate: int = 20
    fsync_every: int = 200
    max_response_chars: int | None = DEFAULT_MAX_RESPONSE_CHARS  # what samples.jsonl keeps of each answer
    prior: tuple[int, int, int] = (0, 0, 0)  # a resumed run's samples already written: (done, model, evaluator errors)
    # told of each written sample; may stop the run by raising a StopRun (runner.decide, runner.budget)
    observe: Callable[[SampleRecord], None] | None = None
    max_environments: int = 32  # agent environments alive at once (assay.runner.environments); more wait


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
    errors: int = 0  # samples whose model request failed
    evaluator_errors: int = 0  # samples answered, but with an error verdict (e.g. the judge server is down)
    cache_hits: int = 0
    judge_cache_hits: int = 0  # judge calls of the verdicts answered from the response cache
    cache_oldest: float | None = None  # when the oldest / newest cached answer used was written
    cache_newest: float | None = None
    truncated: int = 0  # responses stored shortened (max_response_chars)
    limit_stops: int = 0  # agent trajectories ended by a limit (scored failures)
    requests: int = 0
    retries: int = 0
    seconds: float = 0.0
    first_error: str | None = None  # the first failed sample's model error, to show the user why samples fail
    first_evaluator_error: str | None = None

    def count_errors(self, where: str, model_error: str | None, evaluator_error: str | None) -> bool:
        """Count a written sample's model error, else its evaluator error (keeping the first of each, at ``where``,
        e.g. ``task/sample``); True when it failed either way. Every executor counts samples through this."""
        if model_error is not None:
            self.errors += 1
            if self.first_error is None:
                self.first_error = f"{where}: {model_error}"
            return True
        if evaluator_error is not None:
            self.evaluator_errors += 1
            if self.first_evaluator_error is None:
                self.first_evaluator_error = f"{where}: {evaluator_error}"
            return True
        return False


def _verdict_error(record: SampleRecord) -> str | None:
    """The first error verdict of a record (a metric's evaluator could not judge the answer)."""
    for filtered in record.filters.values():
        for metric, verdicts in filtered.verdicts.items():
            for verdict in verdicts:
                if verdict.get("error"):
                    return f"{metric}: {verdict['error']}"
    return None


def _cap(value: Any, limit: int | None) -> Any:
    return value[:limit] if limit is not None and isinstance(value, str) and len(value) > limit else value


def stored_response(response: Response | None, limit: int | None) -> Response | None:
    """The response as samples.jsonl keeps it: text beyond ``limit`` characters cut, with the full length kept in
    ``truncated_from`` (scoring has already seen the whole text)."""
    if response is None or limit is None or response.text is None or len(response.text) <= limit:
        return response
    return response.model_copy(update={"text": response.text[:limit], "truncated_from": len(response.text)})


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
        self.limiter = AttemptLimiter(config.concurrency)
        self.budget = RetryBudget.of(config.retry, config.concurrency)  # shared by every request of the run
        self.room = Room(max(2 * config.concurrency, 1), PARKED_PER_SLOT * max(config.concurrency, 1))

    async def run(self, work: Sequence[tuple[Task, Sample]]) -> RunStats:
        """Process every (task, sample) pair; a failure of one sample is recorded, never fatal.

        Each sample is its own asyncio task: it fetches its answers (each attempt holds a place of the
        :class:`AttemptLimiter`, given back while it backs off before a retry), then is scored and written, while
        other samples' requests go on, so neither evaluation nor backoff delays the request pipeline. At most
        ``2 × concurrency`` samples are busy at once (see :class:`Room`); samples waiting only to retry are parked
        outside that bound (at most ``PARKED_PER_SLOT × concurrency`` of them).

        When the run must stop (:class:`StopRun`: the error rate is exceeded or the model refuses access; or
        writing failed), requests in flight are abandoned at once (those samples are not finished; a resume redoes
        them). After a StopRun, every sample whose answers are already in is still scored and written, so no
        paid-for answer is lost. Cancellation (Ctrl-C) cancels everything; every sample written so far is complete.
        """
        started = time.perf_counter()
        self._failure: BaseException | None = None
        self._fetching: set[asyncio.Task[None]] = set()  # samples waiting for a model's answer
        self._live: set[asyncio.Task[None]] = set()
        room = self.room
        try:
            for task, sample in work:
                place = await room.enter()
                if self._failure is not None:
                    place.left()
                    break
                job = asyncio.create_task(self._sample(task, sample, place))
                self._live.add(job)
                job.add_done_callback(self._ended)
                job.add_done_callback(place.left)
            while self._live:
                await asyncio.wait(set(self._live))
            if self._failure is not None:
                raise self._failure
            self._check_error_rate(final=True)
        finally:
            leftover = [t for t in self._live if not t.done()]
            for t in leftover:
                t.cancel()
            await asyncio.gather(*leftover, return_exceptions=True)
            if "_agent_loops" in self.__dict__:
                from assay.runner.trajectories import close_loops

                await close_loops(self)
            self.stats.seconds = time.perf_counter() - started
        return self.stats

    def _ended(self, job: asyncio.Task[None]) -> None:
        self._live.discard(job)
        error = None if job.cancelled() else job.exception()
        if error is not None:
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        """Remember the first failure and stop: requests in flight are abandoned; after a StopRun, fetched samples
        are still scored and written, after anything else (a write failed) nothing more is written."""
        if self._failure is None:
            self._failure = error
        doomed = self._fetching if isinstance(self._failure, StopRun) else self._live
        for job in list(doomed):
            job.cancel()

    async def _sample(self, task: Task, sample: Sample, place: Place | None = None) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._fetching.add(me)
        try:
            fetched = await self._fetch(task, sample, place)
        finally:
            self._fetching.discard(me)
        await self._finish(task, sample, fetched)

    async def _finish(self, task: Task, sample: Sample, fetched: Fetched) -> None:
        record = await self._record(task, sample, fetched)
        self.writer.write(record)
        stats = self.stats
        stats.written += 1
        model_error = record.error
        evaluator_error = None if model_error is not None else _verdict_error(record)
        failed = stats.count_errors(f"{task.name}/{sample.id}", model_error, evaluator_error)
        stats.cache_hits += record.cache_hits
        stats.limit_stops += sum(r is not None and r.stop_reason in LIMIT_STOPS for r in record.responses)
        judged = judge_cache_hits(record.filters)
        stats.judge_cache_hits += judged
        if record.cache_hits:
            for response in record.responses:
                when = response.cached_at if response is not None else None
                if when is not None:
                    stats.cache_oldest = when if stats.cache_oldest is None else min(stats.cache_oldest, when)
                    stats.cache_newest = when if stats.cache_newest is None else max(stats.cache_newest, when)
        self.progress.advance(error=failed, cache_hits=record.cache_hits + judged)
        self._check_error_rate()
        if self.config.observe is not None:
            self.config.observe(record)

    def _check_error_rate(self, *, final: bool = False) -> None:
        """Past ``max_error_rate`` the run fails: while running once enough samples are in (a few early failures
        must not stop it), and at the end whatever the count, so a small run never passes the limit silently.
        Model errors and evaluator errors both count (a sample counts once)."""
        limit = self.config.max_error_rate
        stats = self.stats
        prior_done, prior_model, prior_evaluator = self.config.prior
        done = stats.written + prior_done
        if limit is None or not done or (not final and stats.written < self.config.min_samples_for_error_rate):
            return
        model_errors, evaluator_errors = stats.errors + prior_model, stats.evaluator_errors + prior_evaluator
        first = stats.first_error or stats.first_evaluator_error
        problem = error_rate_problem(done, model_errors, evaluator_errors, limit, first, final=final)
        if problem is not None:
            raise ErrorRateExceeded(problem)

    async def _fetch(self, task: Task, sample: Sample, place: Place | None = None) -> Fetched:
        started_at = time.time()
        t0 = time.perf_counter()
        requests = [task.build_request(sample, r) for r in range(task.repeats)]
        if place is not None:
            place.fetching(len(requests))
        if len(requests) == 1:
            outcomes = [await self._request(requests[0], place, task)]
        else:
            jobs = [asyncio.ensure_future(self._request(req, place, task)) for req in requests]
            try:
                outcomes = list(await asyncio.gather(*jobs))
            except BaseException:
                for job in jobs:
                    job.cancel()
                raise
        return Fetched(requests, outcomes, started_at, time.perf_counter() - t0)

    async def _record(self, task: Task, sample: Sample, fetched: Fetched) -> SampleRecord:
        responses = [o.response for o in fetched.outcomes]
        errors = [o.error for o in fetched.outcomes]
        first = fetched.requests[0]
        prompt = task.prompt_text(first)
        filters, eval_seconds = await score_sample(
            task, sample, responses, errors, prompt, feedback_model=self.config.feedback_model
        )
        limit = self.config.max_response_chars
        stored = [stored_response(r, limit) for r in responses]
        self.stats.truncated += sum(r is not s for r, s in zip(responses, stored, strict=True))
        reasoning = [_cap(r, limit) for r in task.reasoning_of(responses)]
        if limit is not None:
            for record in filters.values():
                record.filtered = [_cap(v, limit) for v in record.filtered]
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
            responses=stored,
            response_errors=errors,
            reasoning=reasoning,
            cache_hits=sum(o.cached for o in fetched.outcomes),
            filters=filters,
            started_at=fetched.started_at,
            model_seconds=fetched.model_seconds,
            eval_seconds=eval_seconds,
        )

    async def _request(self, request: Request, place: Place | None = None, task: Task | None = None) -> RequestOutcome:
        """One request with its retries (:func:`assay.models.retry.next_wait`): each attempt holds a place of the
        limiter; backoff waits hold none, and park the sample when its other requests wait too. A task with an
        agent answers with a trajectory, each of its model calls one such request (:mod:`assay.runner.trajectories`)."""
        try:
            if task is not None and getattr(task, "agent", None) is not None:
                from assay.runner.trajectories import run_trajectory

                return await run_trajectory(self, task, request, place)
            return await self._answer(request, place)
        finally:
            if place is not None:
                place.answered()

    async def _answer(self, request: Request, place: Place | None) -> RequestOutcome:
        key = None
        if self.cache is not None:
            key = self.cache.key(self.model, request)
            hit = self.cache.get(key)
            if hit is not None:
                return RequestOutcome(hit, None, True)
        self.stats.requests += 1
        policy = self.config.retry
        limiter = self.limiter
        if self.budget is not None:
            self.budget.sent()
        attempt = 0
        started: float | None = None  # when the first attempt was sent: the retry deadline counts from it
        while True:
            attempt += 1
            await limiter.acquire()
            sent_at = limiter.now()
            if started is None:
                started = sent_at
            try:
                response = await attempt_once(lambda: self.model.generate(request), policy)
            except ModelError as err:
                error = err
            except Exception as err:  # a bug in an agent or provider fails this sample, not the run
                return RequestOutcome(None, f"{type(err).__name__}: {err}", False)
            else:
                limiter.succeeded()
                break
            finally:
                limiter.release()
            if error.fatal:
                raise ModelAccessError(f"the model refused the request, so the run stopped: {error}") from None
            if error.status == 429:
                limiter.rate_limited(error.retry_after, sent_at)
            try:
                wait = next_wait(policy, error, attempt, limiter.now() - started, self.budget)
            except ModelError as final:
                return RequestOutcome(None, str(final), False)
            self.stats.retries += 1  # counted as they happen: a request that finally fails has retried too
            if place is not None:
                place.backoff(started=True)
            try:
                await asyncio.sleep(wait)
            finally:
                if place is not None:
                    place.backoff(started=False)
        if key is not None and self.cache is not None:
            try:
                self.cache.put(key, response, model=self.model)
            except Exception as err:  # a full disk or a locked cache loses a cache entry, never the sample
                self.cache_failures.append(f"{type(err).__name__}: {err}")
        return RequestOutcome(response, None, False)
