"""Build synthetic run folders (run.json + samples.jsonl) for the results and report tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.models.base import Response, Usage
from assay.record import FilterRecord, MetricInfo, RunManifest, SampleRecord, TaskInfo


def verdict(
    score: float | None,
    passed: bool | None = None,
    *,
    reason: str | None = None,
    feedback: str | None = None,
    error: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Verdict.to_dict(): an error when ``error`` is set (score None)."""
    if error is not None:
        return {
            "score": None,
            "passed": False,
            "reason": None,
            "feedback": None,
            "details": details or {},
            "error": error,
        }
    ok = bool(score >= 1.0) if passed is None else passed
    return {
        "score": score,
        "passed": ok,
        "reason": None if ok else (reason or "mismatch"),
        "feedback": feedback,
        "details": details or {},
        "error": None,
    }


def judge_details(model: str = "judge-1", tin: int = 100, tout: int = 20, latency: float = 0.5, cached: bool = False):
    return {
        "judge": {
            "model": model,
            "usage": {"input_tokens": tin, "output_tokens": tout},
            "latency_s": latency,
            "cached": cached,
        }
    }


def task(
    name: str,
    metrics: Sequence[tuple[str, bool]] = (("exact_match", True),),
    *,
    filters: Sequence[str] = ("none",),
    repeats: int = 1,
    groups: Sequence[str] = (),
    n: int = 10,
    n_selected: int | None = None,
    config: dict[str, Any] | None = None,
    system_instruction: str | None = None,
    n_shot: int = 0,
) -> TaskInfo:
    return TaskInfo(
        name=name,
        version="1.0",
        task_hash=f"hash-{name}",
        config={"task": name, **(config or {})},
        n_shot=n_shot,
        metrics=[MetricInfo(name=m, evaluator={"name": m}, higher_is_better=h) for m, h in metrics],
        filters=list(filters),
        repeats=repeats,
        groups=list(groups),
        n_docs=n,
        n_selected=n if n_selected is None else n_selected,
        system_instruction=system_instruction,
    )


def record(
    task_name: str,
    doc_id: int,
    verdicts: dict[str, list[dict[str, Any]]] | None = None,
    *,
    filter_name: str = "none",
    filters: dict[str, dict[str, list[dict[str, Any]]]] | None = None,
    texts: Sequence[str | None] = ("answer",),
    response_errors: Sequence[str | None] | None = None,
    metadata: dict[str, Any] | None = None,
    doc: dict[str, Any] | None = None,
    target: Any = "answer",
    prompt: str | None = None,
    model: str = "test-model",
    tokens: tuple[int, int] = (10, 2),
    latency: float = 0.1,
    cached: bool = False,
) -> SampleRecord:
    """A finished sample; a ``None`` text is a failed model call (no response)."""
    per_filter = filters if filters is not None else {filter_name: verdicts or {}}
    responses = [
        None
        if t is None
        else Response(
            text=t,
            usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
            latency_s=latency,
            model=model,
            cached=cached,
        )
        for t in texts
    ]
    if response_errors is None:
        response_errors = [None if t is not None else "HTTP 500" for t in texts]
    frs = {}
    for fname, by_metric in per_filter.items():
        scores = {}
        passed = {}
        for m, vs in by_metric.items():
            ok = [v for v in vs if v["error"] is None]
            scores[m] = sum(v["score"] for v in ok) / len(ok) if ok else None
            passed[m] = all(v["passed"] for v in ok) if ok else None
        frs[fname] = FilterRecord(
            filtered=[t for t in texts if t is not None], verdicts=by_metric, scores=scores, passed=passed
        )
    the_doc = doc if doc is not None else {"question": f"q{doc_id}", "answer": target}
    return SampleRecord(
        task=task_name,
        task_hash=f"hash-{task_name}",
        doc_id=doc_id,
        sample_id=f"{task_name}-{doc_id}",
        doc=the_doc,
        prompt=prompt if prompt is not None else f"Question: q{doc_id}\nAnswer:",
        messages=[{"role": "user", "content": prompt or f"Question: q{doc_id}\nAnswer:"}],
        gen_kwargs={"temperature": 0.0, "max_tokens": 16},
        target=target,
        metadata=metadata or {},
        responses=responses,
        response_errors=list(response_errors),
        filters=frs,
        started_at=1_700_000_000.0 + doc_id,
        model_seconds=latency * len(texts),
        eval_seconds=0.001,
    )


def manifest(tasks: Sequence[TaskInfo], **overrides: Any) -> RunManifest:
    base: dict[str, Any] = {
        "run_id": "run-test",
        "assay_version": "0.1.0",
        "created_at": 1_700_000_000.0,
        "finished_at": 1_700_000_042.5,
        "total_seconds": 42.5,
        "status": "finished",
        "model": {"provider": "openai", "name": "org/test-model:v1", "base_url": "http://127.0.0.1:9/v1"},
        "judges": [],
        "tasks": list(tasks),
        "config": {"limit": None, "seed": 7},
        "git_hash": "abc1234",
    }
    base.update(overrides)
    return RunManifest(**base)


def write_run(
    path: Path, man: RunManifest, records: Sequence[SampleRecord], *, extra_lines: Sequence[str] = ()
) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(man.model_dump_json(indent=2), encoding="utf-8")
    lines = [r.model_dump_json() for r in records] + list(extra_lines)
    (path / "samples.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def binary_run(
    path: Path, outcomes: Sequence[int | None], *, task_name: str = "qa", metric: str = "exact_match"
) -> Path:
    """A one-task run whose sample i scores outcomes[i] (1 pass, 0 fail, None an errored verdict)."""
    recs = []
    for i, o in enumerate(outcomes):
        v = verdict(None, error="judge reply unparseable") if o is None else verdict(float(o))
        recs.append(record(task_name, i, {metric: [v]}))
    return write_run(path, manifest([task(task_name, ((metric, True),), n=len(outcomes))]), recs)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
