"""A run that CI can trust (issue 9, runner side), through the `assay` CLI against a real local server: exit codes,
evaluator errors, access errors that stop the run, parameter checks, the opt-in cache, the run lock, no secrets in
run files, capped stored answers and a full disk."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, only_run_dir, run_cli, sample_lines, write_task


def model_args(server: OpenAITestServer) -> list[str]:
    return ["--model", "openai:assay-test", "--base-url", server.base_url]


def test_every_sample_failing_exits_1_with_the_default_error_share(tmp_path: Path) -> None:
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 6)
        proc = run_cli("run", str(task), *model_args(srv), "-o", "runs", "-q", "--max-attempts", "1", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # it exited 0 before: every sample failing is never a success
    assert "6 of 6 samples failed (6 model errors, 0 evaluator errors)" in proc.stderr
    assert "above the allowed error rate 10%" in proc.stderr and "--retry-errors" in proc.stderr
    assert "Traceback" not in proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    assert (run_dir / "results.json").exists()  # every sample is in: the figures are written, the run fails
    lenient = run_cli("run", "--resume", str(run_dir), "--max-error-rate", "1", "-q", cwd=tmp_path)
    assert lenient.returncode == 0, lenient.stderr  # the limit is a runtime setting; 1 accepts anything


def test_a_resumed_run_counts_the_errors_already_written(tmp_path: Path) -> None:
    with OpenAITestServer(lambda request: {"status": 500, "error": "down"}) as srv:
        task = write_task(tmp_path, 4)
        first = run_cli("run", str(task), *model_args(srv), "-o", "runs", "-q", "--max-attempts", "1", cwd=tmp_path)
        assert first.returncode == 1
        again = run_cli("run", "--resume", str(only_run_dir(tmp_path / "runs")), "-q", cwd=tmp_path)
    assert again.returncode == 1, again.stderr  # nothing left to ask, but the run still has 4 of 4 failed
    assert "4 of 4 samples failed" in again.stderr


def _judge_task(tmp_path: Path, judge_url: str, n: int = 4) -> Path:
    judge = {"name": "llm_judge", "criteria": "Is the sum right?", "model": {"provider": "openai", "model": "j"}}
    judge["model"]["base_url"] = judge_url
    return write_task(tmp_path, n, extra={"evaluators": [{"name": "exact_match", "strip": True}, judge]})


def test_evaluator_errors_are_counted_shown_and_fail_the_run(tmp_path: Path, server: OpenAITestServer) -> None:
    """The judge server is down: every llm_judge verdict is an error; that is not '0 errors' and not exit 0."""
    with OpenAITestServer("unused") as judge_server:
        dead_url = judge_server.base_url  # a port that no longer listens once the server stops
    task = _judge_task(tmp_path, dead_url)
    proc = run_cli("run", str(task), *model_args(server), "-o", "runs", "-q", "--max-attempts", "1", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "0 model errors, 4 evaluator errors" in proc.stderr
    assert "first evaluator error: add/q" in proc.stderr and "llm_judge" in proc.stderr
    assert "once the evaluator works, `assay score runs/" in proc.stderr  # how to fix evaluator errors
    ok = run_cli(
        "run", str(task), *model_args(server), "-o", "runs2", "-q", "--max-attempts", "1", "--max-error-rate", "1",
        cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0 and "4 evaluator errors" in ok.stderr


@pytest.mark.parametrize(
    ("server_kwargs", "reply", "expected"),
    [
        ({"api_key": "right-key"}, arithmetic_reply, ["HTTP 401", "$OPENAI_API_KEY", "--api-key-env"]),
        ({}, {"status": 403, "error": "forbidden"}, ["HTTP 403", "$OPENAI_API_KEY"]),
        ({}, {"status": 404, "error": "The model `nope` does not exist"}, ["HTTP 404", "--model", "--base-url"]),
    ],
)
def test_access_errors_stop_the_run_at_the_first_one(
    tmp_path: Path, server_kwargs: dict[str, Any], reply: Any, expected: list[str]
) -> None:
    with OpenAITestServer(reply, **server_kwargs) as srv:
        task = write_task(tmp_path, 300)
        env = {**os.environ, "OPENAI_API_KEY": "wrong-key", "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.run(
            assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "4"),
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        sent = srv.requests_total
    assert proc.returncode == 3, proc.stderr
    assert sent <= 8  # not 300 requests (nor their retries) to a server that rejects them all
    for text in expected:
        assert text in proc.stderr, proc.stderr
    assert "assay run --resume" in proc.stderr and "Traceback" not in proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    assert sample_lines(run_dir) == []  # nothing recorded as failed: the samples stay pending for --resume
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


def test_after_fixing_the_key_resume_finishes_every_sample_once(tmp_path: Path) -> None:
    with OpenAITestServer(arithmetic_reply, api_key="right-key") as srv:
        task = write_task(tmp_path, 30)
        base = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        bad = subprocess.run(
            assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "4"),
            cwd=tmp_path, env={**base, "OPENAI_API_KEY": "wrong"}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert bad.returncode == 3
        run_dir = only_run_dir(tmp_path / "runs")
        good = subprocess.run(
            assay_cmd("run", "--resume", str(run_dir), "-q"),
            cwd=tmp_path, env={**base, "OPENAI_API_KEY": "right-key"}, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert good.returncode == 0, good.stderr
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(30)} and set(counts.values()) == {1}


def test_standard_parameters_are_type_checked_unknown_ones_pass(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 3)
    bad = run_cli("run", str(task), *model_args(server), "-o", "runs", "--param", "temperature=hot", cwd=tmp_path)
    assert bad.returncode == 2 and "parameter 'temperature' must be a number, got 'hot'" in bad.stderr
    assert server.requests_total == 0 and not (tmp_path / "runs").exists()
    ok = run_cli(
        "run", str(task), *model_args(server), "-o", "runs", "-q", "--param", "temperature=0.5",
        "--param", "top_k=banana", cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert server.requests[0]["temperature"] == 0.5 and server.requests[0]["top_k"] == "banana"  # servers differ


def test_a_task_generation_parameter_of_the_wrong_type_fails_at_start(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 3, extra={"generation": {"n": "two"}})
    proc = run_cli("run", str(task), *model_args(server), "-o", "runs", cwd=tmp_path)
    assert proc.returncode == 2 and "task 'add': generation: parameter 'n' must be an integer" in proc.stderr
    assert server.requests_total == 0


def test_the_cache_is_opt_in_and_a_task_can_ask_for_it(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 5)
    for out in ("a", "b"):
        proc = run_cli("run", str(task), *model_args(server), "-o", out, "-q", cwd=tmp_path)
        assert proc.returncode == 0 and "no answers from the cache" in proc.stderr
    assert server.requests_total == 10  # a redeployed model is asked again: nothing stale by default
    assert not (tmp_path / "cache").exists()
    cached_task = write_task(tmp_path, 5, name="cached", extra={"cache": True})
    for out in ("c", "d"):
        proc = run_cli("run", str(cached_task), *model_args(server), "-o", out, "-q", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert server.requests_total == 15
    assert "5 answers from the cache (written " in proc.stderr
    assert json.loads((only_run_dir(tmp_path / "d") / "run.json").read_text())["config"]["cache"] is True


def test_two_resumes_of_one_run_at_once_the_second_is_refused(tmp_path: Path) -> None:
    """Real processes: the first resume holds the run folder's lock; the second names its PID and exits 2."""
    with OpenAITestServer(arithmetic_reply, latency_s=0.1) as srv:
        task = write_task(tmp_path, 30)
        env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
        first = subprocess.Popen(
            assay_cmd("run", str(task), *model_args(srv), "-o", "runs", "-q", "-c", "1"),
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("*/samples.jsonl")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)  # a killed holder: its lock must not block a resume
        first.wait()
        run_dir = only_run_dir(tmp_path / "runs")
        resume_a = subprocess.Popen(
            assay_cmd("run", "--resume", str(run_dir), "-q", "-c", "1"),
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        while (run_dir / ".lock").read_text().strip() != str(resume_a.pid):
            assert time.monotonic() < deadline and resume_a.poll() is None
            time.sleep(0.05)
        resume_b = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
        _, err_a = resume_a.communicate(timeout=120)
    assert resume_b.returncode == 2, resume_b.stderr
    assert f"process {resume_a.pid} is writing it" in resume_b.stderr
    assert resume_a.returncode == 0, err_a
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(30)} and set(counts.values()) == {1}


def test_credentials_in_the_url_and_params_never_reach_run_files_or_output(tmp_path: Path) -> None:
    secrets = ["URLPASSWORD123", "QUERYKEY456", "PARAMKEY789"]
    with OpenAITestServer(arithmetic_reply) as srv:
        url = srv.base_url.replace("http://", f"http://me:{secrets[0]}@") + f"?api_key={secrets[1]}&api-version=2"
        task = write_task(tmp_path, 4)
        proc = run_cli(
            "run", str(task), "--model", "openai:assay-test", "--base-url", url, "--param", f"api_key={secrets[2]}",
            "-o", "runs", "--format", "json", cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert srv.requests[0]["api_key"] == secrets[2]  # sent as given
    run_dir = only_run_dir(tmp_path / "runs")
    for secret in secrets:
        assert secret not in proc.stdout + proc.stderr
        for path in run_dir.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), (secret, path)
    model = json.loads((run_dir / "run.json").read_text())["model"]
    assert model["base_url"].startswith("http://me:***@127.0.0.1:") and "api_key=***&api-version=2" in model["base_url"]
    assert model["params"]["api_key"] == "***"
    resume = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert resume.returncode == 2 and "without its credentials" in resume.stderr


def test_a_long_answer_is_stored_capped_and_scored_whole(tmp_path: Path) -> None:
    long_answer = "x" * 5000 + " END"
    with OpenAITestServer(long_answer) as srv:
        task = write_task(tmp_path, 2, extra={"evaluators": [{"name": "contains", "substrings": ["END"]}]})
        proc = run_cli(
            "run", str(task), *model_args(srv), "-o", "runs", "-q", "--max-response-chars", "1000", cwd=tmp_path
        )
    assert proc.returncode == 0, proc.stderr
    assert "2 long answers stored shortened" in proc.stderr
    for line in sample_lines(only_run_dir(tmp_path / "runs")):
        response = line["responses"][0]
        assert len(response["text"]) == 1000 and response["truncated_from"] == len(long_answer)
        assert line["filters"]["none"]["passed"]["contains"] is True  # END is past the cap: the whole text was scored
        assert all(len(v) <= 1000 for v in line["filters"]["none"]["filtered"])


def _file_size_limit(limit: int) -> Any:
    def limit_writes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG, as on a full disk

    return limit_writes


def test_a_full_disk_gives_one_message_and_resume_loses_nothing(tmp_path: Path, server: OpenAITestServer) -> None:
    task = write_task(tmp_path, 200)
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
    proc = subprocess.run(
        assay_cmd("run", str(task), *model_args(server), "-o", "runs", "-q", "-c", "4"),
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, preexec_fn=_file_size_limit(60_000),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "a file size limit was reached" in proc.stderr and "resume with: assay run --resume runs/" in proc.stderr
    run_dir = only_run_dir(tmp_path / "runs")
    written = sample_lines(run_dir)  # every line whole: no torn record
    assert 0 < len(written) < 200
    again = run_cli("run", "--resume", str(run_dir), "-q", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(200)} and set(counts.values()) == {1}
