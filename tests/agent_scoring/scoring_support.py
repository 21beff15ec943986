"""Helpers for the trajectory-scoring tests: a conversation task over the scripted server, its verdicts on the
per-sample path (the run) and on the batch path (a re-score), and the tools and evaluators the task files name."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import yaml

import assay
from assay.runner.rescore import rescore
from assay.testing.server import Conversation, OpenAITestServer

NUMBERS = re.compile(r"(\d+) and (\d+)")


def add(x: int, y: int) -> int:
    """Add two numbers.

    Args:
        x: The first number.
        y: The second number.
    """
    return x + y


def explode(output: str) -> float:
    """A custom evaluator that raises on a reply saying 'boom' (an evaluator failing on one turn)."""
    if "boom" in output:
        raise RuntimeError("cannot judge a boom")
    return 1.0


def adder(conv: Conversation) -> Any:
    """A tool-using model: each user message's two numbers go to the add tool, the reply says the tool's result."""
    found = NUMBERS.search(conv.user)
    if found and not conv.tool_results:
        return {"tool_calls": [{"name": "add", "arguments": {"x": int(found[1]), "y": int(found[2])}}]}
    if conv.tool_results:
        return f"the sum is {conv.tool_results[0]['content']}"
    return "boom" if "boom" in conv.user else "how can I help?"


def write_task(tmp_path: Path, rows: list[dict[str, Any]], **extra: Any) -> Path:
    """A conversation task over ``rows`` with the add tool and the given keys (evaluators, filters, agent...)."""
    data = tmp_path / "conv.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task: dict[str, Any] = {
        "name": "conv",
        "dataset": data.name,
        "template": "{{ input }}",
        "tools": [{"python": "tests.agent_scoring.scoring_support:add"}],
    }
    task.update(extra)
    path = tmp_path / "conv.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def run_task(tmp_path: Path, task: Path, server: OpenAITestServer, **options: Any) -> assay.Run:
    model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
    return assay.run(task, model, output_dir=tmp_path / "runs", progress=False, cache=False, **options)


def verdicts(run: assay.Run, metric: str, pipeline: str = "none") -> list[dict[str, Any]]:
    """The first verdict of ``metric`` on ``pipeline`` of every sample, in sample order."""
    records = sorted(run.records, key=lambda r: r.doc_id)
    return [r.filters[pipeline].verdicts[metric][0] for r in records]


def rescored(run: assay.Run, tmp_path: Path) -> assay.Run:
    """The run scored again on the batch path (assay.runner.offline, in this process)."""
    outcome = asyncio.run(rescore(run.path, output_dir=tmp_path / "rescored", processes=1))
    return assay.load_run(outcome.run_dir)
