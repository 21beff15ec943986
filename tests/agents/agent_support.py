"""Helpers for agent tests: a task file with tools, run against the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

import assay
from assay.testing.server import OpenAITestServer


def write_agent_task(tmp_path: Path, rows: list[dict[str, Any]], *, name: str = "agent", **extra: Any) -> Path:
    """A task over ``rows`` (``id``, ``input``, ``target``) with the given keys (tools, agent, evaluators...)."""
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task: dict[str, Any] = {"name": name, "dataset": data.name, "template": "{{ input }}", "evaluators": ["contains"]}
    task.update(extra)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(task, sort_keys=False))
    return path


def run_task(tmp_path: Path, task: Path, server: OpenAITestServer, **options: Any) -> assay.Run:
    model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
    options.setdefault("cache", False)
    return assay.run(task, model, output_dir=tmp_path / "runs", progress=False, **options)
