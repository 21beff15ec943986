"""Whole runs through the `assay` CLI against a real local OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from assay.testing.server import FaultPlan, OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, only_run_dir, run_cli, sample_lines, write_task


def model_args(server: OpenAITestServer) -> list[str]:
    return ["--model", "openai:assay-test", "--base-url", server.base_url]


def test_happy_path_writes_results_and_every_sample_once(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 30)
    proc = run_cli("run", str(task), *model_args(server), "-o", "runs", "-c", "8", "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    lines = sample_lines(run_dir)
    assert sorted(line["sample_id"] for line in lines) == sorted(f"q{i}" for i in range(30))
    # multiples of 7 (0, 7, 14, 21, 28) are answered wrongly by the scripted server
    wrong = {line["sample_id"] for line in lines if not line["filters"]["none"]["passed"]["exact_match"]}
    assert wrong == {"q0", "q7", "q14", "q21", "q28"}
    results = json.loads((run_dir / "results.json").read_text())
    assert results["results"]["add"]["exact_match,none"] == 25 / 30
    assert "exact_match" in proc.stdout and "Run folder" in proc.stderr
    assert server.requests_total == 30
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "finished" and manifest["model"]["base_url"] == server.base_url


def test_retries_honour_retry_after_and_every_sample_succeeds(tmp_path: Path) -> None:
    faults = FaultPlan(fail_first=2, fail_first_with=429, retry_after_s=0.05)
    with OpenAITestServer(arithmetic_reply, faults=faults) as srv:
        task = write_task(tmp_path, 10)
        proc = run_cli("run", str(task), *model_args(srv), "-o", "runs", "-q", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert srv.requests_total == 30 and srv.status_counts[429] == 20
    lines = sample_lines(only_run_dir(tmp_path / "runs"))
    assert len(lines) == 10 and all(line["response_errors"] == [None] for line in lines)
    assert "20 retries" in proc.stderr


def test_thirty_percent_faults_every_sample_exactly_once(tmp_path: Path) -> None:
    faults = FaultPlan(rate_429=0.1, retry_after_s=0.01, rate_500=0.1, rate_drop=0.1)
    with OpenAITestServer(arithmetic_reply, faults=faults, seed=7) as srv:
        task = write_task(tmp_path, 120)
        proc = run_cli(
            "run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "16", "--max-attempts", "10", cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr
        faulted = srv.status_counts.get(429, 0) + srv.status_counts.get(500, 0) + srv.status_counts.get("drop", 0)
    lines = sample_lines(only_run_dir(tmp_path / "runs"))
    counts = Counter(line["sample_id"] for line in lines)
    assert set(counts) == {f"q{i}" for i in range(120)} and set(counts.values()) == {1}
    assert faulted > 20  # the faults really happened
    assert all(line["response_errors"] == [None] for line in lines)


def test_sample_that_keeps_failing_is_an_error_sample_and_the_run_goes_on(tmp_path: Path) -> None:
    def reply(request: dict) -> dict | str:
        if "3 + 4" in request["messages"][-1]["content"]:
            return {"status": 500, "error": "boom"}
        return arithmetic_reply(request)

    with OpenAITestServer(reply) as srv:
        task = write_task(tmp_path, 6)
        proc = run_cli(
            "run", str(task), *model_args(srv), "-o", "runs", "-q", "--max-attempts", "2", "--max-error-rate", "0.2",
            cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = {line["sample_id"]: line for line in sample_lines(only_run_dir(tmp_path / "runs"))}
    assert len(lines) == 6
    bad = lines["q3"]
    assert bad["responses"] == [None] and "500" in bad["response_errors"][0]
    verdict = bad["filters"]["none"]["verdicts"]["exact_match"][0]
    assert verdict["error"] and verdict["score"] is None  # an error, never a zero
    assert "1 model error," in proc.stderr
    # the user is told why: the first failed sample and its error, in the run's output and in the results
    first = next(line for line in proc.stderr.splitlines() if line.startswith("first error:"))
    assert first.startswith("first error: add/q3: ") and "500" in first
    results = json.loads((only_run_dir(tmp_path / "runs") / "results.json").read_text())
    assert results["assay"]["tasks"]["add"]["model_error_example"].startswith("q3: ")


def test_cache_second_run_makes_no_requests(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 12)
    first = run_cli("run", str(task), *model_args(server), "-o", "runs1", "-q", "--cache", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert server.requests_total == 12
    second = run_cli("run", str(task), *model_args(server), "-o", "runs2", "-q", "--cache", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert server.requests_total == 12
    lines = sample_lines(only_run_dir(tmp_path / "runs2"))
    assert all(line["cache_hits"] == 1 and line["responses"][0]["cached"] for line in lines)
    assert all(line["responses"][0]["cached_at"] <= time.time() for line in lines)  # when each answer was written
    assert "12 answers from the cache (written 20" in second.stderr
    third = run_cli("run", str(task), *model_args(server), "-o", "runs3", "-q", "--no-cache", cwd=tmp_path)
    assert third.returncode == 0 and server.requests_total == 24


def _interruptible() -> None:
    """In the child before exec: Ctrl-C as a terminal sends it, even when these tests run where SIGINT is ignored
    (a background job of a non-interactive shell), which the child would inherit and never be interrupted."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_slow_run(tmp_path: Path, srv: OpenAITestServer, n: int) -> tuple[subprocess.Popen[str], Path]:
    task = write_task(tmp_path, n)
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "4", "--no-cache"),
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        runs = tmp_path / "runs"
        dirs = list(runs.iterdir()) if runs.exists() else []
        samples = dirs[0] / "samples.jsonl" if dirs else None
        if samples is not None and samples.exists() and len(samples.read_text().splitlines()) >= 20:
            return proc, dirs[0]
        time.sleep(0.02)
    proc.kill()
    raise AssertionError("the run did not get going")


def test_resume_after_sigkill_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    with OpenAITestServer(arithmetic_reply, latency_s=0.02) as srv:
        proc, run_dir = _start_slow_run(tmp_path, srv, 200)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        done_before = len(sample_lines(run_dir))
        assert 20 <= done_before < 200
        requests_before = srv.requests_total
        resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        # only the samples not yet written were asked again (plus at most the 4 in flight at the kill)
        assert srv.requests_total - requests_before <= 200 - done_before + 4
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(200)} and set(counts.values()) == {1}
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    assert (run_dir / "results.json").exists()


def test_ctrl_c_saves_finished_samples_and_resume_completes(tmp_path: Path) -> None:
    with OpenAITestServer(arithmetic_reply, latency_s=0.02) as srv:
        proc, run_dir = _start_slow_run(tmp_path, srv, 200)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert "resume" in err
        assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
        assert not (run_dir / "results.json").exists()
        resumed = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert len(counts) == 200 and set(counts.values()) == {1}


def test_malformed_task_file_names_file_key_and_line_and_writes_nothing(tmp_path: Path) -> None:
    task = write_task(
        tmp_path, 3, extra={"evaluators": [{"name": "exact_match"}, {"name": "fuzzy_match", "threshold": 3}]}
    )
    proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "add.yaml" in proc.stderr and "evaluators[1]" in proc.stderr and "threshold" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_malformed_dataset_line_names_file_and_line(tmp_path: Path) -> None:
    task = write_task(tmp_path, 3)
    with open(tmp_path / "add.jsonl", "a") as fh:
        fh.write('{"id": "broken", "question": \n')
    proc = run_cli("run", str(task), "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", cwd=tmp_path)
    assert proc.returncode == 2
    assert "add.jsonl:4" in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_score_rescoring_calls_no_model(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 10)
    assert run_cli("run", str(task), *model_args(server), "-o", "runs", "-q", cwd=tmp_path).returncode == 0
    run_dir = only_run_dir(tmp_path / "runs")
    changed = write_task(tmp_path, 10, extra={"evaluators": [{"name": "numeric", "abs_tol": 1}]})
    requests = server.requests_total
    proc = run_cli("score", str(run_dir), "--task", str(changed), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert server.requests_total == requests
    rescored = next(p for p in (tmp_path / "runs").iterdir() if p != run_dir)  # a new run folder, next to the run
    results = json.loads((rescored / "results.json").read_text())
    assert results["results"]["add"]["numeric,none"] == 1.0  # off-by-one answers are within abs_tol
    assert "numeric,none" not in json.loads((run_dir / "results.json").read_text())["results"]["add"]


def test_prices_and_cluster_key_reach_the_results(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(
        tmp_path, 20, extra={"fields": {"id": "id", "input": "question", "target": "answer", "metadata": ["passage"]}}
    )
    rows = [json.loads(line) for line in (tmp_path / "add.jsonl").read_text().splitlines()]
    with open(tmp_path / "add.jsonl", "w") as fh:
        for i, row in enumerate(rows):
            fh.write(json.dumps({**row, "passage": f"p{i // 4}"}) + "\n")
    (tmp_path / "prices.json").write_text(json.dumps({"assay-test": {"input": 1.0, "output": 2.0}}))
    proc = run_cli(
        "run", str(task), *model_args(server), "-o", "runs", "-q",
        "--cluster-key", "passage", "--prices", "prices.json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assay_key = json.loads((only_run_dir(tmp_path / "runs") / "results.json").read_text())["assay"]
    metric = assay_key["tasks"]["add"]["filters"]["none"]["exact_match"]
    assert metric["clustered"]["key"] == "passage" and metric["clustered"]["n_clusters"] == 5
    model_figures = assay_key["operational"]["roles"]["model"]["assay-test"]
    expected_cost = (model_figures["input_tokens"] * 1.0 + model_figures["output_tokens"] * 2.0) / 1e6
    assert model_figures["cost_usd"] == pytest.approx(expected_cost) and expected_cost > 0


def test_run_stops_past_the_allowed_error_rate(tmp_path: Path) -> None:
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 200)
        proc = run_cli(
            "run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "4",
            "--max-attempts", "1", "--max-error-rate", "0.5", cwd=tmp_path,
        )  # fmt: skip
        requests = srv.requests_total
    assert proc.returncode == 1
    assert "above the allowed error rate 50%" in proc.stderr and "--resume" in proc.stderr
    assert "(first error: add/q" in proc.stderr and "down" in proc.stderr
    assert "--resume" in proc.stderr and "--retry-errors" in proc.stderr  # resuming alone would not ask again
    run_dir = only_run_dir(tmp_path / "runs")
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert 20 <= len(sample_lines(run_dir)) < 200 and requests < 200  # it stopped early


def test_api_key_is_sent_but_never_written_or_printed(tmp_path: Path) -> None:
    secret = "sk-test-DO-NOT-LEAK-1234567890"
    with OpenAITestServer(arithmetic_reply, api_key=secret) as srv:
        task = write_task(tmp_path, 5)
        proc = subprocess.run(
            assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "--api-key-env", "MY_KEY", "--format", "json"),
            cwd=tmp_path,
            env={**os.environ, "MY_KEY": secret, "ASSAY_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert srv.last_authorization == f"Bearer {secret}"
    assert secret not in proc.stdout + proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    for path in [*run_dir.rglob("*"), *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    assert json.loads((run_dir / "run.json").read_text())["model"]["api_key_env"] == "MY_KEY"


@pytest.mark.parametrize("key_args", [[], ["--api-key-env", "MY_KEY"]])
def test_missing_api_key_for_a_remote_server_fails_before_writing(tmp_path: Path, key_args: list[str]) -> None:
    """No key for a hosted API: one clear line naming the variable, exit 2, no run folder, no request retried."""
    task = write_task(tmp_path, 3)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MY_KEY")}
    proc = subprocess.run(
        assay_cmd("run", str(task), "-m", "openai:gpt-4o-mini", "--base-url", "https://llm.example.invalid/v1",
                  *key_args, "-o", "runs"),
        cwd=tmp_path, env={**env, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "40"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    variable = "MY_KEY" if key_args else "OPENAI_API_KEY"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines  # not hard-wrapped at the terminal width: greppable in CI logs
    assert lines[0].startswith("error: openai: no API key for https://llm.example.invalid/v1")
    assert f"{variable} is not set" in lines[0] and "--api-key-env" in lines[0]
    assert not (tmp_path / "runs").exists()
