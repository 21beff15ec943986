"""inspect_ai's tool_use examples (addition_problem, parallel_add) as assay tasks with Python tools: the scripted
model calls the tool, then answers with the tool's actual result, so a pass proves the tool ran."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

import assay
from assay.testing.server import OpenAITestServer, tool_then_answer

SUMS = re.compile(r"(\d+)\s*\+\s*(\d+)")


def _calls(user: str) -> list[dict[str, Any]]:
    """Every 'a + b' of the question as one add call (several: parallel calls in one reply)."""
    return [{"name": "add", "arguments": {"x": int(a), "y": int(b)}} for a, b in SUMS.findall(user)]


def _answer(user: str, results: list[str]) -> str:
    return " ".join(results)  # only the tool's output: a wrong or missing result fails the sample


def _task(tmp_path: Path, name: str, rows: list[dict[str, Any]], evaluator: str) -> Path:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = {
        "name": name,
        "dataset": str(data),
        "template": "{{ input }}",
        "tools": [{"python": "agent_tools:add"}],
        "evaluators": [evaluator],
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task))
    return path


def _run(tmp_path: Path, task: Path, server: OpenAITestServer) -> assay.Run:
    model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
    return assay.run(task, model, output_dir=tmp_path / "runs", cache=False, progress=False)


def test_addition_problem_scores_4_of_4(tmp_path: Path) -> None:
    rows = [
        {"id": f"s{i}", "input": f"What is {a} + {b}?", "target": [str(a + b), f"{a + b}.0"]}
        for i, (a, b) in enumerate([(1, 1), (2, 3), (10, 32), (7, 0)])
    ]
    task = _task(tmp_path, "addition_problem", rows, "numeric")
    with OpenAITestServer(tool_then_answer(_calls, _answer)) as server:
        run = _run(tmp_path, task, server)
        assert server.requests_total == 8  # two model calls per sample: the tool call, then the answer
        sent = server.requests
    assert run.results["results"]["addition_problem"]["numeric,none"] == 1.0
    record = next(r for r in run.records if r.sample_id == "s2")
    response = record.responses[0]
    assert response.text == "42" and response.stop_reason == "answer"
    assert [(c.name, c.arguments, c.result, c.error) for c in response.tool_calls] == [
        ("add", {"x": 10, "y": 32}, "42", None)
    ]
    roles = [m["role"] for m in response.transcript]
    assert roles == ["user", "assistant", "tool", "assistant"]
    # the tool's schema came from its signature and docstring
    schema = next(b for b in sent if b["messages"][-1]["role"] == "user")["tools"][0]["function"]
    assert schema["name"] == "add" and schema["description"].startswith("Add two numbers.")
    assert schema["parameters"]["properties"]["x"] == {"type": "integer", "description": "First number to add."}
    assert schema["parameters"]["required"] == ["x", "y"]


def test_parallel_add_scores_4_of_4(tmp_path: Path) -> None:
    pairs = [((1, 1), (2, 2)), ((3, 4), (5, 6)), ((10, 20), (30, 40)), ((0, 9), (8, 1))]
    rows = [
        {
            "id": f"p{i}",
            "input": f"Please add the numbers {a}+{b} and {c}+{d} in parallel, results side by side.",
            "target": f"{a + b} {c + d}",
        }
        for i, ((a, b), (c, d)) in enumerate(pairs)
    ]
    task = _task(tmp_path, "parallel_add", rows, "contains")
    with OpenAITestServer(tool_then_answer(_calls, _answer)) as server:
        run = _run(tmp_path, task, server)
        assert server.requests_total == 8
    assert run.results["results"]["parallel_add"]["contains,none"] == 1.0
    record = next(r for r in run.records if r.sample_id == "p2")
    response = record.responses[0]
    assert response.text == "30 70"
    assert [c.result for c in response.tool_calls] == ["30", "70"]
    assert [m["role"] for m in response.transcript] == ["user", "assistant", "tool", "tool", "assistant"]
