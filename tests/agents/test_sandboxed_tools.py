"""A ReAct-style task with the sandboxed python and bash tools: the model's code runs, the answer depends on its
output, files persist between the calls of one sample (and only that sample), hostile code is contained as in
code_exec, and the sandbox is gone once the trajectory ends."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest
from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from assay.tools.base import SampleTools, ToolError, ToolSet
from assay.tools.sandboxed import SandboxTool
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap


def _script(secret_path: str) -> ConversationReplies:
    """Call 1 computes and saves a value, call 2 reads it back (bash), call 3 tries to escape; then answer."""

    def step(conv: Conversation) -> Any:
        done = len(conv.tool_results)
        word = conv.user.split()[-1]
        if done == 0:
            code = (
                "import hashlib\n"
                f"v = hashlib.sha256(b'{word}').hexdigest()[:12]\n"
                "open('state.txt', 'w').write(v)\n"
                "print(v)\n"
            )
            return {"tool_calls": [{"name": "python", "arguments": {"code": code}}]}
        if done == 1:
            return {"tool_calls": [{"name": "bash", "arguments": {"cmd": "cat state.txt; echo; ls"}}]}
        if done == 2:
            hostile = f"print(open({secret_path!r}).read())\n"
            return {
                "tool_calls": [
                    {"name": "python", "arguments": {"code": hostile}},
                    {"name": "bash", "arguments": {"cmd": "cat other.txt 2>&1; echo hi > other.txt"}},
                ]
            }
        first, second, hostile, other = (r["content"] for r in conv.tool_results[:4])
        return f"computed {first.strip()} read {second.split()[0]} | {hostile[:300]} | {other[:100]}"

    return ConversationReplies(step)


def test_react_task_with_sandboxed_python_and_bash(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    words = ["alpha", "beta"]
    rows = [
        {"id": w, "input": f"hash the word {w}", "target": hashlib.sha256(w.encode()).hexdigest()[:12]} for w in words
    ]
    task = write_agent_task(
        tmp_path, rows, tools=[{"sandbox": "python"}, {"sandbox": "bash"}], agent={"parallel_tool_calls": 1}
    )
    with OpenAITestServer(_script(str(secret))) as server:
        run = run_task(tmp_path, task, server, concurrency=1)
    assert run.results["results"]["agent"]["contains,none"] == 1.0  # the answers hold the code's output
    for record in run.records:
        response = record.responses[0]
        target = record.target
        first, second, hostile, other = response.tool_calls
        assert first.result.strip() == target and first.error is None
        assert second.result.split() == [target, "state.txt"]  # the file the first call wrote is still there
        assert hostile.error is not None and "TOP-SECRET" not in (hostile.result or "")  # the host file unseen
        assert "No such file" in (other.result or "")  # nothing of the other sample's sandbox is visible
        assert response.text.startswith(f"computed {target} read {target}")
    assert secret.read_text() == "TOP-SECRET-VALUE"


def test_the_sandbox_is_removed_after_the_trajectory(tmp_path: Path, monkeypatch: Any) -> None:
    import tempfile

    from assay.sandbox.bwrap import find_host

    base = tmp_path / "tmp"
    base.mkdir(mode=0o777)
    base.chmod(0o777)
    monkeypatch.setattr(tempfile, "tempdir", str(base))  # this run's sandboxes, apart from other tests'
    made: list[Path] = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(Path(real_mkdtemp(*a, **k))) or made[-1])
    assert find_host(None) is not None

    def step(conv: Conversation) -> Any:
        if not conv.tool_results:
            return {"tool_calls": [{"name": "bash", "arguments": {"cmd": "pwd; echo x > f.txt; sleep 0.1"}}]}
        return conv.tool_results[0]["content"]

    task = write_agent_task(tmp_path, [{"id": "s", "input": "go", "target": "/sandbox"}], tools=[{"sandbox": "bash"}])
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server)
    assert run.records[0].responses[0].text.strip() == "/sandbox"
    assert len(made) == 1 and made[0].name.startswith("assay-sandbox-")
    assert not made[0].exists()


def test_a_busy_loop_is_a_time_out_whichever_limit_ends_it() -> None:
    """The CPU limit equals the tool's time limit, so a busy loop may reach either first: the reply says it timed
    out either way (not "exit code 152"), and the sample's sandbox still works for the next call."""

    # The second loop lowers its own CPU limit to 1 s under the tool's 10 s: the CPU limit ends it, for certain.
    cpu_first = "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (1, 2))\nwhile True:\n    pass"

    async def calls() -> tuple[str, str, str]:
        tool, cpu_tool = SandboxTool("python", timeout_s=1), SandboxTool("python", timeout_s=10)
        state, cpu_state = SampleTools(ToolSet([tool])), SampleTools(ToolSet([cpu_tool]))
        try:
            with pytest.raises(ToolError) as busy:
                await tool.call({"code": "while True:\n    pass"}, state)
            with pytest.raises(ToolError) as at_cpu:
                await cpu_tool.call({"code": cpu_first}, cpu_state)
            return str(busy.value), str(at_cpu.value), await tool.call({"code": "print(6 * 7)"}, state)
        finally:
            await state.aclose()
            await cpu_state.aclose()

    busy, at_cpu, after = asyncio.run(calls())
    assert busy.startswith("timed out") and "152" not in busy
    assert at_cpu.startswith("timed out at the") and "CPU time limit" in at_cpu
    assert after.strip() == "42"
