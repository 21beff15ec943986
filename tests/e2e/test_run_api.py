"""Whole runs through the Python API: assay.run inside a running loop, arun, feedback written by a model."""

from __future__ import annotations

import json
from pathlib import Path

import assay
from assay.api import arun_outcome
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import sample_lines, write_task


def test_run_works_inside_a_running_event_loop(tmp_path: Path, server: OpenAITestServer) -> None:
    """As in Jupyter: the synchronous API is called while an event loop is running in this thread."""
    import asyncio

    task = write_task(tmp_path, 8)
    model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}

    async def notebook_cell() -> assay.Run:
        return assay.run(task, model, output_dir=tmp_path / "runs", cache=False, progress=False)

    run = asyncio.run(notebook_cell())
    assert len(run.records) == 8
    assert run.results["results"]["add"]["exact_match,none"] == 6 / 8  # q0 and q7 are answered wrongly


async def test_arun_returns_loaded_run(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 5)
    run = await assay.arun(
        task,
        {"provider": "openai", "model": "assay-test", "base_url": server.base_url},
        output_dir=tmp_path / "runs",
        cache=False,
        progress=False,
    )
    assert {r.sample_id for r in run.records} == {f"q{i}" for i in range(5)}


async def test_feedback_model_rewrites_failing_feedback_only(tmp_path: Path, server: OpenAITestServer) -> None:
    with OpenAITestServer("Add the two numbers exactly; you were off by one.") as feedback_server:
        task = write_task(tmp_path, 8)
        outcome = await arun_outcome(
            task,
            {"provider": "openai", "model": "assay-test", "base_url": server.base_url},
            output_dir=tmp_path / "runs",
            cache=False,
            progress=False,
            feedback_model={"provider": "openai", "model": "critic", "base_url": feedback_server.base_url},
        )
        # q0 and q7 fail (multiples of 7 are answered wrongly): one feedback call each, none for passing samples
        assert feedback_server.requests_total == 2
        sent = json.dumps(feedback_server.requests)
    lines = {line["sample_id"]: line for line in sample_lines(outcome.run_dir)}
    failed = lines["q7"]["filters"]["none"]["verdicts"]["exact_match"][0]
    assert failed["feedback"] == "Add the two numbers exactly; you were off by one."
    assert failed["details"]["evaluator_feedback"]  # the evaluator's own feedback is kept
    passed = lines["q1"]["filters"]["none"]["verdicts"]["exact_match"][0]
    assert passed["feedback"] is None
    assert "What is 7 + 8?" in sent  # the feedback model saw the input


def test_unknown_keywords_are_a_clear_error_listing_the_valid_ones(tmp_path: Path, server: OpenAITestServer) -> None:
    import pytest

    task = write_task(tmp_path, 2)
    model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
    with pytest.raises(assay.ConfigError) as info:
        assay.run(task, model, output=tmp_path / "runs")  # the README used to say output=
    message = str(info.value)
    assert "unknown keyword argument 'output' (did you mean 'output_dir'?)" in message
    assert "valid settings:" in message and "max_error_rate" in message and "concurrency" in message
    assert server.requests_total == 0


def test_a_run_whose_samples_all_fail_raises_run_failed(tmp_path: Path) -> None:
    import pytest

    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 3)
        model = {"provider": "openai", "model": "assay-test", "base_url": srv.base_url}
        with pytest.raises(assay.RunFailed) as info:
            assay.run(task, model, output_dir=tmp_path / "runs", progress=False, max_attempts=1)
    assert "3 of 3 samples failed" in str(info.value)
    assert info.value.outcome.stopped_by == "error_rate" and info.value.outcome.errors == 3
