"""SIGKILL mid-run, then --resume: every trajectory is in samples.jsonl exactly once, and no finished trajectory
runs its tools again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from agent_support import write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.e2e.e2e_support import assay_cmd, only_run_dir, sample_lines
from tests.support import lines_written, wait_for

HERE = Path(__file__).parent


def _step(conv: Conversation) -> Any:
    tag = conv.user.split()[-1]
    if not conv.tool_results:
        return {"tool_calls": [{"name": "log_call", "arguments": {"tag": tag}}]}
    return conv.tool_results[0]["content"]


def test_sigkill_mid_run_then_resume_runs_every_trajectory_once(tmp_path: Path) -> None:
    n = 40
    rows = [{"id": f"s{i}", "input": f"log s{i}", "target": f"logged s{i}"} for i in range(n)]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:log_call"}])
    log = tmp_path / "tool.log"
    env = {**os.environ, "AGENT_TOOL_LOG": str(log), "ASSAY_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    with OpenAITestServer(ConversationReplies(_step), latency_s=0.05) as srv:
        model = ["--model", "openai:assay-test", "--base-url", srv.base_url]
        cmd = assay_cmd("run", str(task), *model, "-o", "runs", "-q", "-c", "2", "--no-cache")
        proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        runs = tmp_path / "runs"
        wait_for(lambda: lines_written(runs) >= 8, 60, "8 samples written", interval=0.01, proc=proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        run_dir = only_run_dir(runs)
        before = [
            json.loads(line)["sample_id"]
            for line in (run_dir / "samples.jsonl").read_bytes().splitlines()
            if line.endswith(b"}")
        ]
        assert 8 <= len(before) < n
        ran_before = Counter(log.read_text().split())
        resumed = subprocess.run(
            assay_cmd("run", "--resume", str(run_dir), "-q"),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
    lines = sample_lines(run_dir)
    assert Counter(line["sample_id"] for line in lines) == Counter({f"s{i}": 1 for i in range(n)})
    ran = Counter(log.read_text().split())
    for sample_id in before:  # a finished trajectory's tool never ran again
        assert ran[sample_id] == ran_before[sample_id] == 1
    assert set(ran) == {f"s{i}" for i in range(n)}
    results = json.loads((run_dir / "results.json").read_text())
    assert results["results"]["agent"]["contains,none"] == 1.0


def test_run_json_records_every_key_the_task_hash_covers(tmp_path: Path) -> None:
    """The config run.json keeps rebuilds the same task (same hash): `agent:` and `user:` included."""
    from assay.tasks import Task
    from assay.tasks.identity import hash_payload, request_payload

    rows = [{"id": "s0", "input": "hi", "target": "x", "goal": "book a table"}]
    user = {"model": {"provider": "openai", "model": "sim", "base_url": "http://127.0.0.1:9/v1"}, "max_turns": 2}
    path = write_agent_task(
        tmp_path,
        rows,
        tools=[{"python": "agent_tools:add"}],
        agent={"max_turns": 4, "tool_timeout_s": 5, "submit": True},
        user=user,
        system="Be brief.",
        generation={"temperature": 0.5},
    )
    task = Task.from_yaml(path)
    recorded = json.loads(json.dumps(task.info(1).config))
    assert recorded["agent"] == {"max_turns": 4, "tool_timeout_s": 5, "submit": True} and recorded["user"] == user
    rebuilt = Task.from_config(recorded)
    assert request_payload(rebuilt) == request_payload(task) and hash_payload(rebuilt) == hash_payload(task)
    assert rebuilt.hash == task.hash


def test_a_simulated_users_credentials_never_reach_run_json(tmp_path: Path) -> None:
    """`api_key:` and header values of the `user:` model are written as *** (as every model spec's are), the task's
    hash does not depend on them, and a resume from run.json alone names the missing key instead of sending ***."""
    import pytest

    from assay.errors import ConfigError
    from assay.tasks import Task

    rows = [{"id": "s0", "input": "hi", "target": "x", "goal": "book a table"}]
    spec = {"provider": "openai", "model": "sim", "base_url": "http://127.0.0.1:9/v1"}
    secret = {**spec, "api_key": "sk-user-secret-123", "headers": {"X-Org": "org-secret-456"}}
    path = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:add"}], user={"model": secret})
    task = Task.from_yaml(path)
    text = json.dumps(task.info(1).config)
    assert "sk-user-secret-123" not in text and "org-secret-456" not in text
    recorded = json.loads(text)
    assert recorded["user"]["model"]["api_key"] == "***" and recorded["user"]["model"]["headers"] == "***"
    (tmp_path / "plain").mkdir()
    plain = Task.from_yaml(write_agent_task(tmp_path / "plain", rows, tools=[{"python": "agent_tools:add"}],
                                            user={"model": {**secret, "api_key": "another"}}))  # fmt: skip
    assert plain.hash == task.hash  # the key is not what the task is
    with pytest.raises(ConfigError, match=r"user\.model\.api_key is not recorded in run\.json.*api_key_env"):
        Task.from_config(recorded)
