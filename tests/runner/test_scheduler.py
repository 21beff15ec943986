"""The request loop on its own: stops, failures and cancellation never lose or duplicate a finished sample."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from assay.evaluators.base import Evaluator
from assay.models.python import PythonModel
from assay.models.retry import RetryPolicy
from assay.record import SampleRecord
from assay.runner.outcomes import ErrorRateExceeded
from assay.runner.progress import RunProgress
from assay.runner.scheduler import Scheduler, SchedulerConfig
from assay.store.rundir import SampleWriter
from assay.store.sampleindex import SAMPLES, read_records
from assay.tasks import Task
from assay.verdict import Verdict

GUARD_S = 30  # only a guard against a hang; nothing here measures speed


def make_task(n: int, **extra: Any) -> Task:
    rows = [{"id": f"s{i}", "input": f"question {i}", "target": "ok"} for i in range(n)]
    return Task("loop", rows, evaluators=extra.pop("evaluators", ["exact_match"]), **extra)


def run_scheduler(
    tmp_path: Path, task: Task, agent: Any, *, concurrency: int = 4, **config: Any
) -> tuple[Scheduler, BaseException | None]:
    async def go() -> tuple[Scheduler, BaseException | None]:
        model = PythonModel(agent, threaded=False)
        with SampleWriter(tmp_path / SAMPLES) as writer:
            scheduler = Scheduler(
                model,
                writer,
                SchedulerConfig(concurrency=concurrency, retry=RetryPolicy(max_attempts=1), **config),
                cache=None,
                progress=RunProgress(0, enabled=False),
            )
            try:
                await asyncio.wait_for(scheduler.run([(task, s) for s in task.samples()]), GUARD_S)
            except Exception as err:
                return scheduler, err
            return scheduler, None

    return asyncio.run(go())


def written_ids(tmp_path: Path) -> list[str]:
    lines = (tmp_path / SAMPLES).read_text().splitlines()
    return [json.loads(line)["sample_id"] for line in lines]


def test_every_sample_is_written_once(tmp_path: Path) -> None:
    async def agent(sample_id: str) -> str:
        await asyncio.sleep(0)
        return "ok"

    scheduler, error = run_scheduler(tmp_path, make_task(50), agent)
    assert error is None
    assert sorted(written_ids(tmp_path)) == sorted(f"s{i}" for i in range(50))
    assert scheduler.stats.written == 50 and scheduler.stats.errors == 0


def test_error_rate_stop_does_not_wait_for_requests_in_flight(tmp_path: Path) -> None:
    """Failing samples trip the stop while other requests hang: the run stops without them, and every sample
    already written stays written exactly once."""
    never = asyncio.Event()

    async def agent(sample_id: str) -> str:
        if int(sample_id[1:]) % 4 == 3:
            await never.wait()  # a request that would take forever
        raise RuntimeError("down")

    scheduler, error = run_scheduler(
        tmp_path, make_task(200), agent, concurrency=8, max_error_rate=0.5, min_samples_for_error_rate=5
    )
    assert isinstance(error, ErrorRateExceeded)
    ids = written_ids(tmp_path)
    assert len(ids) == len(set(ids)) == scheduler.stats.written >= 5
    assert all(int(i[1:]) % 4 != 3 for i in ids)  # the hanging ones were abandoned, not written


def test_samples_fetched_before_an_error_rate_stop_are_still_written(tmp_path: Path) -> None:
    """A slow evaluator keeps fetched samples waiting; the stop must score and write them, not drop them."""

    class Slow(Evaluator):
        name = "slow_eval"

        def check(self, actual: Any, expected: Any) -> Verdict:
            return Verdict.pass_()

        async def aevaluate(self, actual: Any, expected: Any = None, *, context: Any = None) -> Verdict:
            await asyncio.sleep(0.01)
            return Verdict.pass_()

    fetched: list[str] = []

    async def agent(sample_id: str) -> str:
        fetched.append(sample_id)
        if sample_id != "s0":
            raise RuntimeError("down")
        return "ok"

    task = make_task(40, evaluators=[Slow()])
    _, error = run_scheduler(tmp_path, task, agent, concurrency=4, max_error_rate=0.2, min_samples_for_error_rate=2)
    assert isinstance(error, ErrorRateExceeded)
    # every sample whose answer came back was written: fetched ones are never lost
    assert sorted(written_ids(tmp_path)) == sorted(fetched)


def test_a_run_too_small_to_stop_early_still_fails_past_the_error_rate(tmp_path: Path) -> None:
    """Six samples, all failing, max 10%: below the early-stop minimum, but the finished run must not pass."""

    async def agent(sample_id: str) -> str:
        raise RuntimeError("down")

    scheduler, error = run_scheduler(tmp_path, make_task(6), agent, max_error_rate=0.1)
    assert isinstance(error, ErrorRateExceeded)
    assert str(error).startswith(
        "failed: 6 of 6 samples failed (6 model errors, 0 evaluator errors), above the allowed error rate 10%"
    )
    assert "(first error: loop/s" in str(error) and "RuntimeError: down" in str(error)
    assert scheduler.stats.written == 6  # every sample was run and written
    (tmp_path / "ok").mkdir()
    _, ok = run_scheduler(tmp_path / "ok", make_task(6), agent, max_error_rate=1.0)
    assert ok is None


def test_a_writer_failure_stops_the_run_and_is_raised(tmp_path: Path) -> None:
    class Broken(SampleWriter):
        def write(self, record: SampleRecord) -> None:
            if record.sample_id == "s3":
                raise OSError("disk full")
            super().write(record)

    async def go() -> BaseException | None:
        model = PythonModel(lambda sample_id: "ok", threaded=False)
        task = make_task(30)
        with Broken(tmp_path / SAMPLES) as writer:
            scheduler = Scheduler(
                model, writer, SchedulerConfig(concurrency=2), cache=None, progress=RunProgress(0, enabled=False)
            )
            try:
                await asyncio.wait_for(scheduler.run([(task, s) for s in task.samples()]), GUARD_S)
            except OSError as err:
                return err
        return None

    error = asyncio.run(go())
    assert isinstance(error, OSError) and "disk full" in str(error)
    assert "s3" not in written_ids(tmp_path)


def test_an_evaluator_that_raises_is_an_error_verdict_not_a_crash(tmp_path: Path) -> None:
    class Raising(Evaluator):
        name = "raising"

        def check(self, actual: Any, expected: Any) -> Verdict:
            return Verdict.pass_()

        async def aevaluate(self, actual: Any, expected: Any = None, *, context: Any = None) -> Verdict:
            raise ValueError("judge exploded")

    _, error = run_scheduler(tmp_path, make_task(5, evaluators=[Raising()]), lambda sample_id: "ok")
    assert error is None
    for record in read_records(tmp_path):
        verdict = record.filters["none"].verdicts["raising"][0]
        assert verdict["error"] and "judge exploded" in verdict["error"]


def test_a_row_without_the_compared_field_is_not_applicable_not_an_error(tmp_path: Path) -> None:
    """A row lacking the field ``expected: doc.gold`` reads gives the metric nothing to check: no verdict, no error
    (tasks/applicable.py), so it is neither a failure nor in the metric's denominator."""
    rows = [{"id": "a", "input": "x", "gold": "ok"}, {"id": "b", "input": "y"}]
    task = Task("t", rows, evaluators=[{"name": "exact_match", "expected": "doc.gold"}])
    _, error = run_scheduler(tmp_path, task, lambda sample_id: "ok")
    assert error is None
    by_id = {r.sample_id: r for r in read_records(tmp_path)}
    assert by_id["a"].filters["none"].passed["exact_match"] is True
    skipped = by_id["b"].filters["none"]
    assert skipped.verdicts["exact_match"] == [] and skipped.scores["exact_match"] is None
    assert "exact_match" not in skipped.passed or skipped.passed["exact_match"] is None


def test_cancellation_leaves_only_whole_lines(tmp_path: Path) -> None:
    async def go() -> int:
        async def agent(sample_id: str) -> str:
            await asyncio.sleep(0.001)
            return "ok"

        model = PythonModel(agent)
        task = make_task(400)
        with SampleWriter(tmp_path / SAMPLES) as writer:
            scheduler = Scheduler(
                model, writer, SchedulerConfig(concurrency=8), cache=None, progress=RunProgress(0, enabled=False)
            )
            running = asyncio.create_task(scheduler.run([(task, s) for s in task.samples()]))
            while scheduler.stats.written < 20:
                await asyncio.sleep(0.001)
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
            return scheduler.stats.written

    written = asyncio.run(go())
    ids = written_ids(tmp_path)  # every line parses: nothing torn
    assert len(ids) == len(set(ids)) == written < 400


def test_a_filter_step_that_raises_errors_that_pipeline_only(tmp_path: Path) -> None:
    from assay.tasks.filters import TextStep, register_step

    @register_step("test_explode_on_b")
    class Explode(TextStep):
        def transform(self, text: str) -> Any:
            if "b" in text:
                raise ValueError("cannot parse")
            return text

    rows = [{"id": "a", "input": "a", "target": "a"}, {"id": "b", "input": "b", "target": "b"}]
    task = Task(
        "t",
        rows,
        filters=[
            {"name": "plain", "steps": [{"type": "strip"}]},
            {"name": "odd", "steps": [{"type": "test_explode_on_b"}]},
        ],
        evaluators=["exact_match"],
    )
    _, error = run_scheduler(tmp_path, task, lambda messages: messages[-1]["content"])
    assert error is None
    by_id = {r.sample_id: r for r in read_records(tmp_path)}
    assert by_id["b"].filters["plain"].passed["exact_match"] is True
    verdict = by_id["b"].filters["odd"].verdicts["exact_match"][0]
    assert verdict["error"] and "cannot parse" in verdict["error"]
    assert by_id["a"].filters["odd"].passed["exact_match"] is True
