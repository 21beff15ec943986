"""A task with two prompt variants and a test server whose replies differ by model name and by prompt, so every
cell of a 2 models x 2 variants matrix has its own, hand-computed figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

N = 10
# exact_match per cell: alpha always right tersely, wrong on i % 5 == 0 when asked verbosely; beta right on even i
# tersely, on i < 3 verbosely
EXPECTED = {"alpha/terse": 1.0, "alpha/verbose": 0.8, "beta/terse": 0.5, "beta/verbose": 0.3}


def right(model: str, verbose: bool, i: int) -> bool:
    """Whether the scripted model answers question ``i`` correctly."""
    if model == "alpha":
        return not verbose or i % 5 != 0
    return i < 3 if verbose else i % 2 == 0


def reply(request: dict[str, Any]) -> Any:
    """The scripted answer: the sum, off by one where :func:`right` says the model gets it wrong; model "broken"
    fails every request (HTTP 500)."""
    if request["model"] == "broken":
        return {"status": 500, "error": "scripted failure"}
    text = request["messages"][-1]["content"]
    verbose = text.startswith("Please work out")
    words = text.replace("?", "").split()
    a, b = int(words[-3]), int(words[-1])
    return str(a + b if right(request["model"], verbose, a) else a + b + 1)


def write_task(tmp_path: Path, *, variants: bool = True, name: str = "add") -> Path:
    """A task over N addition questions; with ``variants``, a terse and a verbose prompt."""
    data = tmp_path / f"{name}.jsonl"
    with open(data, "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i + 1}?", "answer": str(2 * i + 1)}))
            fh.write("\n")
    task: dict[str, Any] = {
        "name": name,
        "dataset": {"path": data.name},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "{{ question }}",
        "evaluators": [{"name": "exact_match", "strip": True}],
    }
    if variants:
        task["variants"] = {
            "terse": "{{ question }}",
            "verbose": {"template": "Please work out the sum. {{ question }}", "system": "You are careful."},
        }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def models(base_url: str) -> list[str]:
    """The --model and --base-url arguments of the two scripted models."""
    return ["--model", "alpha=openai:alpha", "--model", "openai:beta", "--base-url", base_url]
