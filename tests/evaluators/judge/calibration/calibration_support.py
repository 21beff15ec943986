"""Runs with scripted judges of known agreement, over the OpenAI test server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import assay.api
from assay.testing.server import OpenAITestServer
from tests.evaluators.judge.judge_support import blocks, judge_spec

Script = Callable[[str, int], Any]  # (the output judged, how many times it was judged before) -> grade


def replier(grades: Script) -> Callable[[dict[str, Any]], str]:
    """A server reply function: the student echoes the row's answer; the judge grades the output by script."""
    seen: dict[str, int] = {}

    def reply(request: dict[str, Any]) -> str:
        if request["model"] == "student":
            return request["messages"][-1]["content"].split("::")[-1]
        output = blocks(request)["response"]
        n = seen.get(output, 0)
        seen[output] = n + 1
        grade = grades(output, n)
        key = "label" if isinstance(grade, str) else "score"
        return json.dumps({"explanation": "scripted", key: grade})

    return reply


def judged_run(
    tmp_path: Path,
    server: OpenAITestServer,
    answers: Mapping[str, str],
    *,
    scale: str = "binary",
    repeats: int = 1,
    extra: Mapping[str, Any] | None = None,
    name: str = "judged",
    **row: Any,
) -> Path:
    """A finished run folder: one row per answer (plus the fields ``row``), the student says it, an llm_judge
    grades it."""
    judge = {"name": "llm_judge", "expected": "none", "model": judge_spec(server), "criteria": "is it right?"}
    task = {
        "name": "qa",
        "dataset": [{"id": sid, "question": f"Say::{text}", **row} for sid, text in answers.items()],
        "fields": {"id": "id", "input": "question"},
        "template": "{{ question }}",
        "repeats": repeats,
        "evaluators": [judge | {"scale": scale, "initial_backoff_s": 0} | dict(extra or {})],
    }
    student = {"provider": "openai", "model": "student", "base_url": server.base_url}
    out = tmp_path / name
    assay.api.run(task, student, output_dir=out, progress=False, cache=False, max_error_rate=None)
    return next(out.iterdir())


def write_labels(path: Path, rows: list[dict[str, Any]]) -> Path:
    """A JSONL labels file."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
