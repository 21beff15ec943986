"""A key inside a judge's own base URL (llm_judge ``model.base_url``) never reaches the run folder, and a resumed
run gets the task file again to judge with it (issue 9, no secrets in run files), against real local servers."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from assay.testing.server import OpenAITestServer
from tests.e2e.e2e_support import arithmetic_reply, assay_cmd, only_run_dir, sample_lines, write_task
from tests.evaluators.judge.judge_support import blocks

KEY = "JUDGEKEY0123456789"


def judge_reply(request: dict[str, Any]) -> str:
    return json.dumps({"explanation": "ok", "label": "pass" if blocks(request)["response"] else "fail"})


def _files_holding(run_dir: Path, text: str) -> list[str]:
    return sorted(p.name for p in run_dir.rglob("*") if p.is_file() and text.encode() in p.read_bytes())


def test_a_key_in_a_judge_url_is_never_written_and_resume_asks_for_the_task_file(tmp_path: Path) -> None:
    with (
        OpenAITestServer(arithmetic_reply, api_key="right-key") as student,
        OpenAITestServer(judge_reply) as judge_server,
    ):
        judge_url = judge_server.base_url.replace("http://", f"http://me:{KEY}@")
        judge = {"name": "llm_judge", "criteria": "Is the sum right?", "max_attempts": 1, "cache": False}
        # the URL's credentials are the judge's only auth (aiohttp refuses a Bearer header on top of them)
        judge["model"] = {"provider": "openai", "model": "judge", "base_url": judge_url, "api_key_env": "NO_SUCH_VAR"}
        task = write_task(tmp_path, 12, extra={"evaluators": [{"name": "exact_match", "strip": True}, judge]})
        base = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"}
        model = ["--model", "openai:assay-test", "--base-url", student.base_url, "--max-error-rate", "1"]

        def cli(*args: str, key: str) -> subprocess.CompletedProcess[str]:
            env = {**base, "OPENAI_API_KEY": key}
            return subprocess.run(assay_cmd(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

        first = cli("run", str(task), *model, "-o", "runs", "-q", "-c", "2", key="wrong")
        assert first.returncode == 3, first.stderr  # the student's key is wrong: stopped, samples pending
        run_dir = only_run_dir(tmp_path / "runs")
        assert _files_holding(run_dir, KEY) == [] and KEY not in first.stdout + first.stderr
        recorded = json.loads((run_dir / "run.json").read_text())["tasks"][0]
        assert recorded["redacted"] == ["evaluators[1].model.base_url"]
        assert recorded["config"]["evaluators"][1]["model"]["base_url"].startswith("http://me:***@127.0.0.1:")
        assert KEY not in json.dumps(recorded["metrics"])

        refused = cli("run", "--resume", str(run_dir), "-q", key="right-key")
        assert refused.returncode == 2, refused.stderr
        assert "evaluators[1].model.base_url" in refused.stderr and "give the task file again" in refused.stderr
        assert KEY not in refused.stderr

        changed = yaml.safe_load(task.read_text())
        changed["template"] = "Q: {{ question }}"
        other = tmp_path / "other.yaml"
        other.write_text(yaml.safe_dump(changed))
        wrong = cli("run", "--resume", str(run_dir), str(other), "-q", key="right-key")
        assert wrong.returncode == 2 and "differs from the one the run started with" in wrong.stderr

        judge_server.last_authorization = None
        done = cli("run", "--resume", str(run_dir), str(task), "-q", key="right-key")
        assert done.returncode == 0, done.stderr
        # the resumed run judged with the real credentials of the task file, not the redacted ones of run.json
        assert judge_server.last_authorization == "Basic " + base64.b64encode(f"me:{KEY}".encode()).decode()
        # re-scoring rebuilds the judge too: from the task file, never from the redacted URL
        no_task = cli("score", str(run_dir), "-q", key="right-key")
        assert no_task.returncode == 2 and "--task TASK.yaml" in no_task.stderr, no_task.stderr
        judge_server.last_authorization = None
        rescored = cli("score", str(run_dir), "--task", str(task), "-q", key="right-key")
        assert rescored.returncode == 0, rescored.stderr
        assert judge_server.last_authorization == "Basic " + base64.b64encode(f"me:{KEY}".encode()).decode()
    counts = Counter(line["sample_id"] for line in sample_lines(run_dir))
    assert set(counts) == {f"q{i}" for i in range(12)} and set(counts.values()) == {1}
    verdicts = [line["filters"]["none"]["verdicts"]["llm_judge"][0] for line in sample_lines(run_dir)]
    assert all(v["error"] is None and v["passed"] for v in verdicts)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "finished"
    assert (run_dir / "results.json").is_file() and _files_holding(run_dir, KEY) == []
    assert KEY not in done.stdout + done.stderr
