"""Retries give their place back while they back off; 429s slow the whole client down (issue 12 §3)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from assay.models.openai_compat import OpenAIModel
from assay.models.retry import RetryPolicy
from assay.runner.limiter import AttemptLimiter
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.store.rundir import SampleWriter
from assay.store.sampleindex import SAMPLES, read_records
from assay.tasks import Task
from assay.testing.server import FaultPlan, OpenAITestServer


def make_task(n: int) -> Task:
    rows = [{"id": f"s{i}", "input": f"question {i}", "target": f"question {i}"} for i in range(n)]
    return Task("loop", rows, evaluators=["exact_match"])


async def run_against(server: OpenAITestServer, task: Task, out: Path, **config: Any) -> Scheduler:
    model = OpenAIModel("assay-test", base_url=server.base_url)
    with SampleWriter(out / SAMPLES) as writer:
        progress = RunProgress(0, enabled=False)
        scheduler = Scheduler(model, writer, SchedulerConfig(**config), cache=None, progress=progress)
        await asyncio.wait_for(scheduler.run([(task, s) for s in task.samples()]), 60)
    await model.aclose()
    return scheduler


def test_a_request_backing_off_does_not_hold_the_only_slot(tmp_path: Path) -> None:
    """Concurrency 1; the first attempt of s0 fails and backs off 0.5 s: meanwhile the other samples are sent.
    Before, s0 held the slot through its backoff, so its retry came right after its first attempt."""
    order: list[str] = []
    lock = threading.Lock()

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        text = request["messages"][-1]["content"]
        with lock:
            order.append(text)
            first_try = text == "question 0" and order.count(text) == 1
        return {"status": 500, "error": "once"} if first_try else text

    policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.5, jitter=False)
    with OpenAITestServer(reply) as server:
        scheduler = asyncio.run(run_against(server, make_task(5), tmp_path, concurrency=1, retry=policy))
    assert order[0] == "question 0" and order[-1] == "question 0"  # the retry went last
    assert sorted(order[1:-1]) == [f"question {i}" for i in range(1, 5)]
    assert scheduler.stats.retries == 1 and scheduler.stats.errors == 0
    assert sorted(r.sample_id for r in read_records(tmp_path)) == [f"s{i}" for i in range(5)]


def test_faults_of_every_kind_still_give_every_sample_once(tmp_path: Path) -> None:
    faults = FaultPlan(rate_429=0.1, retry_after_s=0.01, rate_500=0.1, rate_drop=0.1)
    policy = RetryPolicy(max_attempts=12, initial_backoff_s=0.01, max_backoff_s=0.05)
    with OpenAITestServer(None, faults=faults, seed=3) as server:
        scheduler = asyncio.run(run_against(server, make_task(150), tmp_path, concurrency=8, retry=policy))
        counts = server.status_counts
    assert counts.get(429, 0) > 3 and counts.get(500, 0) > 3 and counts.get("drop", 0) > 3
    records = read_records(tmp_path)
    assert sorted(r.sample_id for r in records) == sorted(f"s{i}" for i in range(150))
    assert all(r.error is None for r in records) and scheduler.stats.retries > 10
    assert scheduler.limiter.in_flight == 0  # every place given back


def test_the_attempts_in_flight_never_exceed_the_concurrency(tmp_path: Path) -> None:
    in_flight = [0, 0]  # now, most seen
    lock = threading.Lock()

    async def reply(request: dict[str, Any]) -> Any:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
        await asyncio.sleep(0.01)
        with lock:
            in_flight[0] -= 1
        return "x"

    faults = FaultPlan(rate_500=0.3)
    policy = RetryPolicy(max_attempts=20, initial_backoff_s=0.0, max_backoff_s=0.0)
    with OpenAITestServer(reply, faults=faults, seed=1) as server:
        asyncio.run(run_against(server, make_task(80), tmp_path, concurrency=3, retry=policy))
    assert in_flight[1] == 3


async def test_429s_shrink_the_cap_and_successes_grow_it_back() -> None:
    limiter = AttemptLimiter(8)
    for _ in range(30):
        limiter.rate_limited(None)
    assert limiter.cap == 1 and limiter.throttled == 30
    for _ in range(3):
        limiter.succeeded()
    assert limiter.cap == 4
    for _ in range(20):
        limiter.succeeded()
    assert limiter.cap == 8  # never above the concurrency


async def test_at_the_floor_a_retry_after_pauses_every_new_attempt() -> None:
    limiter = AttemptLimiter(4)
    for _ in range(30):
        limiter.rate_limited(None)
    loop = asyncio.get_running_loop()
    limiter.rate_limited(0.2)  # at the floor: the server's Retry-After holds the whole client
    assert limiter.pauses == 1
    started = loop.time()
    await limiter.acquire()
    waited = loop.time() - started
    limiter.release()
    assert waited >= 0.15  # a behaviour (it waited for the pause), not a speed


async def test_a_cancelled_waiter_gives_its_place_on() -> None:
    limiter = AttemptLimiter(1)
    await limiter.acquire()
    waiter = asyncio.ensure_future(limiter.acquire())
    second = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    limiter.release()
    await asyncio.wait_for(second, 5)
    assert limiter.in_flight == 1
    limiter.release()
    assert limiter.in_flight == 0
