"""The HTML report's drawer shows an agent's transcript as a conversation, in headless Chromium: every message with
its role in order, the assistant's tool calls folded with their arguments, tool results (a failed tool marked),
per-call latency and tokens, why the loop stopped; markup in tool results and answers stays text."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from agent_support import run_task, write_agent_task

from assay.testing.server import Conversation, ConversationReplies, OpenAITestServer
from tests.browser.conftest import browser, watched
from tests.e2e.e2e_support import assay_cmd

__all__ = ["browser", "watched"]
PAYLOAD = '<img src=x onerror="alert(1)">'


def _step(conv: Conversation) -> Any:
    if not conv.tool_results:
        calls = [{"name": "add", "arguments": {"x": 2, "y": 3}}, {"name": "explode", "arguments": {"reason": PAYLOAD}}]
        return {"tool_calls": calls}
    total = next(r["content"] for r in conv.tool_results if r["name"] == "add")
    return f"<script>alert(2)</script> {total}"


def test_the_drawer_shows_the_transcript_as_a_conversation(watched: Any, tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "What is 2 + 3?", "target": "5"}]
    task = write_agent_task(tmp_path, rows, tools=[{"python": "agent_tools:add"}, {"python": "agent_tools:explode"}])
    with OpenAITestServer(ConversationReplies(_step)) as server:
        run = run_task(tmp_path, task, server)
    page_file = tmp_path / "report.html"
    proc = subprocess.run(assay_cmd("report", str(run.path), "--html", str(page_file)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    watched.load(page_file.as_uri())
    page = watched.page
    assert page.text_content("#samples .agent-note") == "2 turns · 2 tool calls"  # the list shows the loop's size
    watched.load(page_file.as_uri() + "#sample=agent/a")
    assert page.is_visible("#detail")
    summary = page.text_content("#detail details.transcript > summary")
    assert summary == "Transcript: 5 messages, 1 user turn, 2 tool calls · stopped: answer"
    roles = page.eval_on_selector_all("#detail .transcript .msg", "ms => ms.map(m => m.className)")
    assert roles == ["msg user", "msg assistant", "msg tool", "msg tool error", "msg assistant"]
    texts = page.eval_on_selector_all("#detail .transcript .msg pre.text", "ps => ps.map(p => p.textContent)")
    assert texts[0] == "What is 2 + 3?" and texts[1] == "5" and texts[-1] == "<script>alert(2)</script> 5"
    assert PAYLOAD in texts[2] and "boom" in texts[2]  # the failed tool's error, as the model saw it, as text
    calls = page.eval_on_selector_all(
        "#detail .transcript .msg.assistant details.tool", "ds => ds.map(d => d.textContent)"
    )
    assert calls[0].startswith("calls add") and '"x": 2' in calls[0] and calls[1].startswith("calls explode")
    heads = page.eval_on_selector_all("#detail .transcript .msg > .sub", "ss => ss.map(s => s.textContent)")
    assert any("in /" in h and "out" in h for h in heads)  # the model calls' tokens; latencies beside them
    assert page.query_selector("#detail img") is None and page.query_selector("#detail .transcript script") is None
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []


def test_the_drawer_shows_what_an_agent_changed_in_its_environment(watched: Any, tmp_path: Path) -> None:
    """An environment sample: each tool message says what the call wrote and its exit code, and the workspace's
    final diff is shown folded under the output, as text (markup the agent wrote into a file stays text)."""

    def step(conv: Conversation) -> Any:
        calls = [
            {"name": "bash", "arguments": {"cmd": f"printf '%s\\n' '{PAYLOAD}' > page.html && rm old.txt"}},
            {
                "name": "text_editor",
                "arguments": {"command": "str_replace", "path": "app.py", "old_str": "1", "new_str": "2"},
            },
        ]
        done = len(conv.tool_results)
        return {"tool_calls": [calls[done]]} if done < len(calls) else "done"

    rows = [{"id": "a", "input": "change it", "target": "done", "files": {"app.py": "x = 1\n", "old.txt": "bye\n"}}]
    task = write_agent_task(tmp_path, rows, tools=["bash", "text_editor"], environment={})
    with OpenAITestServer(ConversationReplies(step)) as server:
        run = run_task(tmp_path, task, server)
    page_file = tmp_path / "report.html"
    proc = subprocess.run(assay_cmd("report", str(run.path), "--html", str(page_file)), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    watched.load(page_file.as_uri() + "#sample=agent/a")
    page = watched.page
    changed = page.eval_on_selector_all("#detail .transcript .msg.tool > div.sub", "ds => ds.map(d => d.textContent)")
    assert changed == ["changed: exit 0 · wrote page.html · deleted old.txt", "changed: wrote app.py"]
    diff = page.eval_on_selector_all("#detail details.reasoning", "ds => ds.map(d => d.textContent)")
    (shown,) = [d for d in diff if d.startswith("Workspace diff")]
    assert "+++ b/app.py" in shown and "-x = 1" in shown and "+x = 2" in shown
    assert "--- a/old.txt" in shown and PAYLOAD in shown  # the deleted file, and the new file's markup as text
    assert page.query_selector("#detail img") is None
    assert watched.dialogs == [] and watched.errors == [] and watched.csp_violations() == []
