"""A server that is down entirely ends `assay run` at the default retry settings with a clear error and exit 1, in
bounded time and without multiplying the load (issue 25); the retry flags reach the run and its record."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import click

from assay.commands.run import run_command
from assay.models.retry import DEFAULT_DEADLINE_S, DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_BUDGET, RetryPolicy
from assay.runner.settings import RunSettings
from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import only_run_dir, run_cli, sample_lines, write_task

GUARD_S = 120  # a hang guard for the whole process, not a speed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_closed_port_ends_the_run_with_exit_1_and_the_cause(tmp_path: Path) -> None:
    task = write_task(tmp_path, 300)
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", url, "-o", "runs", "-q", cwd=tmp_path,
                   timeout=GUARD_S)  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "above the allowed error rate" in proc.stderr and "Cannot connect" in proc.stderr, proc.stderr
    assert "gave up after" in proc.stderr and "Traceback" not in proc.stderr
    lines = sample_lines(only_run_dir(tmp_path / "runs"))
    assert 20 <= len(lines) < 300  # it stopped early, the rest stays pending
    assert time.monotonic() - started < GUARD_S


def test_a_server_that_always_answers_500_is_not_sent_every_retry(tmp_path: Path) -> None:
    """With `--max-error-rate 1` the run goes to the end: every sample fails, and the retry budget keeps the
    requests at about 1.5 per sample (plus the reserve of 100), not the 8 per sample `--max-attempts` allows."""
    with OpenAITestServer(lambda request: {"status": 500, "error": "down for maintenance"}) as srv:
        task = write_task(tmp_path, 300)
        proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", srv.base_url, "-o", "runs", "-q",
                       "-c", "8", "--max-error-rate", "1", cwd=tmp_path, timeout=GUARD_S)  # fmt: skip
        received = srv.requests_total
    lines = sample_lines(only_run_dir(tmp_path / "runs"))
    assert len(lines) == 300 and all(line["response_errors"][0] for line in lines), proc.stderr
    assert 300 <= received <= 1.5 * 300 + 100  # not 2,400
    budget_spent = [line for line in lines if "retry budget is spent" in line["response_errors"][0]]
    assert len(budget_spent) > 150 and "down for maintenance" in budget_spent[0]["response_errors"][0]


def test_a_server_that_always_answers_500_stops_the_run_at_the_defaults(tmp_path: Path) -> None:
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 300)
        proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", srv.base_url, "-o", "runs", "-q",
                       cwd=tmp_path, timeout=GUARD_S)  # fmt: skip
        received = srv.requests_total
    assert proc.returncode == 1, proc.stderr
    assert "above the allowed error rate" in proc.stderr and "HTTP 500" in proc.stderr and "down" in proc.stderr
    assert received < 300  # stopped early, and the retries did not multiply what was sent


def test_the_retry_flags_reach_the_run_record_and_the_defaults_agree(tmp_path: Path) -> None:
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 1)
        proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", srv.base_url, "-o", "runs", "-q",
                       "--max-attempts", "1000", "--retry-deadline", "3", "--retry-budget", "100",
                       "--max-error-rate", "1", cwd=tmp_path, timeout=GUARD_S)  # fmt: skip
        received = srv.requests_total
    run_dir = only_run_dir(tmp_path / "runs")
    (line,) = sample_lines(run_dir)
    assert "the 3s retry deadline" in line["response_errors"][0], proc.stderr
    assert 2 <= received < 1000
    settings = json.loads((run_dir / "run.json").read_text())["config"]
    assert settings["retry_deadline_s"] == 3 and settings["retry_budget"] == 100
    # the CLI's literal default is the library's
    options = {p.name: p for p in run_command.params if isinstance(p, click.Option)}
    assert options["max_attempts"].default == DEFAULT_MAX_ATTEMPTS == RunSettings().max_attempts
    policy = RunSettings().retry_policy(60.0)
    assert policy == RetryPolicy(timeout_s=60.0)
    assert (policy.deadline, policy.retry_budget) == (DEFAULT_DEADLINE_S, DEFAULT_RETRY_BUDGET)
