"""Shared by the optimisation tests: the demo's rows and a task config answered by a real local test server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.testing.server import OpenAITestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "optimize_format"
TEMPLATE = "{# optimize: instructions #}Answer the question.{# end optimize #}\nQuestion: {{ question }}\n"
NO_CACHE = {"cache": False, "concurrency": 8}


def demo_rows() -> list[dict[str, Any]]:
    """The 90 rows of the bundled demo."""
    return [json.loads(line) for line in (EXAMPLE / "questions.jsonl").read_text().splitlines()]


def model_spec(server: OpenAITestServer) -> dict[str, Any]:
    """An OpenAI-compatible model spec pointing at a local test server."""
    return {"provider": "openai", "model": "assay-test", "base_url": server.base_url}


def task_config(
    tmp_path: Path, rows: list[dict[str, Any]] | None = None, template: str = TEMPLATE, **optimize: Any
) -> Path:
    """A task file over ``rows`` (the demo's by default) with an ``optimize:`` section; returns its path."""
    import yaml

    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in (rows or demo_rows())))
    config = {
        "name": "fmt",
        "dataset": {"path": data.name},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": template,
        "evaluators": [{"name": "exact_match", "strip": True}],
        "optimize": {"components": ["instructions"], "splits": {"train": 0.4, "val": 0.3, "test": 0.3}, **optimize},
    }
    path = tmp_path / "task.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def journal(folder: Path) -> list[dict[str, Any]]:
    """The optimisation journal's entries."""
    return [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
