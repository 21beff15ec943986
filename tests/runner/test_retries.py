"""Retries in a run, against a real local server with scripted faults (issue 25): Retry-After honoured exactly per
request, 5xx retried quickly, a retry budget under an outage, a deadline per request, and samples backing off that
hold no place among those in progress. Nothing here asserts a speed: times are bounds with wide margins, the rest
is counts and order."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.models.base import ModelError
from assay.models.openai_compat import OpenAIModel, parse_retry_after
from assay.models.retry import RetryPolicy
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.store.rundir import SampleWriter
from assay.store.sampleindex import SAMPLES, read_records
from assay.tasks import Task
from assay.testing.server import OpenAITestServer

GUARD_S = 60  # only a guard against a hang


def make_task(n: int) -> Task:
    rows = [{"id": f"s{i}", "input": f"question {i}", "target": f"question {i}"} for i in range(n)]
    return Task("loop", rows, evaluators=["exact_match"])


class Script:
    """A reply function that fails the first attempts of chosen questions and logs every arrival (text, time)."""

    def __init__(self, fail: Callable[[str, int], dict[str, Any] | None]) -> None:
        self.fail = fail  # (question, attempt number from 1) -> an error reply, or None to answer
        self.arrivals: list[tuple[str, float]] = []
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | str:
        text = request["messages"][-1]["content"]
        with self._lock:
            self._seen[text] += 1
            self.arrivals.append((text, time.monotonic()))
            attempt = self._seen[text]
        return self.fail(text, attempt) or text

    def times(self, text: str) -> list[float]:
        return [t for seen, t in self.arrivals if seen == text]


def run(server: OpenAITestServer, task: Task, out: Path, **config: Any) -> Scheduler:
    async def go() -> Scheduler:
        model = OpenAIModel("assay-test", base_url=server.base_url)
        with SampleWriter(out / SAMPLES) as writer:
            progress = RunProgress(0, enabled=False)
            scheduler = Scheduler(model, writer, SchedulerConfig(**config), cache=None, progress=progress)
            await asyncio.wait_for(scheduler.run([(task, s) for s in task.samples()]), GUARD_S)
        await model.aclose()
        return scheduler

    return asyncio.run(go())


def rate_limited(seconds: float) -> dict[str, Any]:
    return {"status": 429, "error": "slow down", "headers": {"Retry-After": f"{seconds:g}"}}


def test_retry_after_is_honoured_exactly_not_as_a_floor_under_a_growing_backoff(tmp_path: Path) -> None:
    """Three 429s with Retry-After 0.3 s, under a policy whose own backoff starts at 5 s: each retry comes 0.3 s
    later. Before, the wait was max(backoff, Retry-After), so the first retry came 5 s later."""
    script = Script(lambda text, attempt: rate_limited(0.3) if attempt <= 3 else None)
    policy = RetryPolicy(initial_backoff_s=5.0, max_backoff_s=30.0, jitter=False)
    with OpenAITestServer(script) as server:
        scheduler = run(server, make_task(1), tmp_path, concurrency=4, retry=policy)
    times = script.times("question 0")
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(gaps) == 3 and all(gap >= 0.29 for gap in gaps)  # never before the server said
    assert all(gap < 3.0 for gap in gaps)  # and not after the 5 s backoff (a wide margin for a loaded machine)
    assert scheduler.stats.errors == 0 and scheduler.stats.retries == 3


def test_retry_after_is_honoured_at_the_defaults(tmp_path: Path) -> None:
    script = Script(lambda text, attempt: rate_limited(0.3) if attempt == 1 else None)
    with OpenAITestServer(script) as server:
        scheduler = run(server, make_task(3), tmp_path, concurrency=4, retry=RetryPolicy())
    for i in range(3):
        first, second = script.times(f"question {i}")
        assert 0.29 <= second - first < 3.0
    assert scheduler.stats.errors == 0


def test_5xx_and_dropped_connections_are_retried_quickly(tmp_path: Path) -> None:
    """Three 500s then an answer, at the default policy: the three waits are at most 25 + 50 + 100 ms. Before, they
    were up to 0.5 + 1 + 2 s (1.75 s on average), so 20 samples all done within 1.5 s was next to impossible."""
    script = Script(lambda text, attempt: {"status": 500, "error": "boom"} if attempt <= 3 else None)
    with OpenAITestServer(script) as server:
        scheduler = run(server, make_task(20), tmp_path, concurrency=20, retry=RetryPolicy())
    spans = [script.times(f"question {i}")[-1] - script.times(f"question {i}")[0] for i in range(20)]
    assert max(spans) < 1.5
    assert scheduler.stats.errors == 0 and scheduler.stats.retries == 60


def test_the_retry_budget_stops_amplification_under_a_total_outage(tmp_path: Path) -> None:
    """A server that answers 500 to everything: without a budget 200 samples × 10 attempts = 2,000 requests; with
    one, retries add at most half the first attempts plus the bucket's capacity."""
    n, concurrency = 200, 8
    policy = RetryPolicy(max_attempts=10)  # and the default budget: half the first attempts, a reserve of 100
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as server:
        scheduler = run(server, make_task(n), tmp_path, concurrency=concurrency, retry=policy)
        received = server.requests_total
    assert n <= received <= 1.5 * n + 100  # 400 at most (the reserve is spent once), not 2,000
    records = read_records(tmp_path)
    assert len(records) == n and all(r.error is not None for r in records)
    spent = [r for r in records if "the run's retry budget is spent" in str(r.error)]
    assert len(spent) > n / 2  # most failed fast, saying why
    assert scheduler.budget is not None and scheduler.budget.refused == len(spent)


def test_the_default_budget_leaves_a_run_with_many_faults_alone(tmp_path: Path) -> None:
    """30 % of first attempts fail with a 500 once: those retries are well within the budget's share."""
    script = Script(lambda text, attempt: {"status": 500} if attempt == 1 and int(text.split()[1]) % 10 < 3 else None)
    with OpenAITestServer(script) as server:
        scheduler = run(server, make_task(300), tmp_path, concurrency=8, retry=RetryPolicy())
    assert scheduler.stats.errors == 0 and scheduler.stats.retries == 90
    assert scheduler.budget is not None and scheduler.budget.refused == 0


def test_a_deadline_bounds_a_request(tmp_path: Path) -> None:
    """A sample that always gets 500, with 1,000 attempts allowed: the 1 s deadline ends it after a few."""
    script = Script(lambda text, attempt: {"status": 500, "error": "down"})
    policy = RetryPolicy(max_attempts=1000, initial_backoff_s=0.1, max_backoff_s=0.2, deadline_s=1.0, jitter=False)
    started = time.monotonic()
    with OpenAITestServer(script) as server:
        run(server, make_task(1), tmp_path, concurrency=2, retry=policy)
    elapsed = time.monotonic() - started
    (record,) = read_records(tmp_path)
    assert "another retry would pass the 1s retry deadline" in str(record.error)
    assert 3 <= len(script.arrivals) <= 12  # 0.1 + 0.2 + 0.2 + 0.2 + 0.2 s of waits fit, then it stopped
    assert elapsed < GUARD_S / 2


def test_samples_backing_off_hold_no_place_among_those_in_progress(tmp_path: Path) -> None:
    """Concurrency 2 (4 samples in progress): the first 4 samples get a 429 with Retry-After 2 s. The other 20 are
    answered while those 4 wait. Before, the 4 waiting samples filled every place, so nothing else was sent until
    their retries were."""
    waiting = {f"question {i}" for i in range(4)}
    script = Script(lambda text, attempt: rate_limited(2.0) if text in waiting and attempt == 1 else None)
    with OpenAITestServer(script) as server:
        scheduler = run(server, make_task(24), tmp_path, concurrency=2, retry=RetryPolicy())
    order = [text for text, _ in script.arrivals]
    first_retry = min(i for i, text in enumerate(order) if text in waiting and order[:i].count(text) == 1)
    others = {f"question {i}" for i in range(4, 24)}
    assert set(order[:first_retry]) == waiting | others  # every other sample was sent before any retry
    assert scheduler.stats.errors == 0 and scheduler.room.most_parked == 4
    assert scheduler.room.busy == 0 and scheduler.room.parked == 0  # every place given back


def test_how_errors_are_classified_for_their_backoff() -> None:
    """A 429 in a 200's error object backs off as a 429 (before: as a 5xx, from 50 ms); a Retry-After that is not a
    finite number is no hint (before: "inf" made the request wait for ever, "nan" retried at once)."""
    model = OpenAIModel("m", base_url="http://127.0.0.1:1/v1")
    try:
        model._parse(b'{"error": {"message": "rate limited", "code": 429}}', 0.0)
    except ModelError as err:
        assert err.retryable and err.status == 429
        assert RetryPolicy(jitter=False).backoff(1, err) == 1.0
    else:
        raise AssertionError("a 200 carrying an error object is an error")
    assert parse_retry_after({"Retry-After": "inf"}) is None and parse_retry_after({"Retry-After": "nan"}) is None
    assert parse_retry_after({"retry-after-ms": "inf", "Retry-After": "2"}) == 2.0
    assert parse_retry_after({"Retry-After": "-3"}) == 0.0 and parse_retry_after({"retry-after-ms": "250"}) == 0.25
