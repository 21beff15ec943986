"""Run folders for report tests, written directly as RunManifest / SampleRecord JSON plus results.json.

Outputs, prompts, reasons, ids and names carry HTML/JS injection payloads, so every test of the page is
also a test that run data stays inert.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from assay.models.base import Response, ToolCall, Usage
from assay.record import FilterRecord, MetricInfo, RunManifest, SampleRecord, TaskInfo
from assay.results import write_results

PAYLOADS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script><script>alert(2)</script>",
    "'><svg onload=alert(3)>",
    "\u2028</script>\u2029<b id=pwned>x</b>",
    "javascript:alert(4)",
    "{{7*7}} ${alert(5)} &lt;script&gt;",
]
XSS_TASK = '"><img src=x onerror=alert(9)>'
TEMPLATE_HEAD = "Answer the question in a few words; no explanation."  # every prompt's first line


def _verdict(score: float | None, passed: bool, reason: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "score": score,
        "passed": passed,
        "reason": reason,
        "feedback": extra.get("feedback"),
        "details": extra.get("details", {}),
        "error": extra.get("error"),
    }


def make_record(task: str, i: int, *, model: str, flip: bool = False, long_output: int = 0) -> SampleRecord:
    """One sample: every 3rd fails exact_match, every 11th has an errored judge, #5 has a model error.

    ``flip`` turns some failures into passes and some passes into failures (a second run to compare with).
    """
    payload = PAYLOADS[i % len(PAYLOADS)]
    target = f"answer {i}"
    question = f"Question {i}: {payload}"  # the doc's input field (fields.input: q)
    prompt = f"{TEMPLATE_HEAD}\n{question}"
    fails = (i % 3 == 0) != (flip and i % 4 == 0)
    output = (f"wrong {payload}" if fails else target) + ("x" * long_output)
    model_error = i == 5
    tool_calls = [ToolCall(name="search", arguments={"q": payload}, result=f"found {payload}")] if i % 4 == 1 else []
    response = Response(
        text=output,
        tool_calls=tool_calls,
        usage=Usage(input_tokens=20 + i % 7, output_tokens=5 + i % 3),
        latency_s=0.05 + (i % 17) * 0.02,
        finish_reason="stop",
        model=model,
        cached=i % 10 == 9,
    )
    filters: dict[str, FilterRecord] = {}
    if model_error:
        err = f"HTTP 500 {payload}"
        em = [_verdict(None, False, error=f"no response to evaluate: {err}")]
        judge = [_verdict(None, False, error=f"no response to evaluate: {err}")]
        filters["none"] = FilterRecord(
            filtered=[None], verdicts={"exact_match": em, "judge": judge}, scores={"exact_match": None, "judge": None},
            passed={"exact_match": None, "judge": None},
        )  # fmt: skip
        return SampleRecord(
            task=task, task_hash="h" * 64, doc_id=i, sample_id=f"s{i}", doc={"q": question},
            prompt=prompt, messages=[{"role": "user", "content": prompt}],
            target=target, metadata={"topic": payload}, responses=[None], response_errors=[err], filters=filters,
        )  # fmt: skip
    em = (
        [_verdict(0.0, False, f"expected {target!r}, got {output[:40]!r} {payload}", feedback=f"Answer {target}.")]
        if fails
        else [_verdict(1.0, True)]
    )
    judge_details = {"judge": {"model": "judge-1", "usage": {"input_tokens": 50, "output_tokens": 8},
                               "latency_s": 0.2 + (i % 5) * 0.05, "cached": False}, "raw": payload}  # fmt: skip
    if i % 11 == 0:
        judge = [_verdict(None, False, error=f"judge reply unparseable: {payload}", details=judge_details)]
        jscore = None
        jpassed = None
    else:
        score = 0.25 if fails else 0.75 + (i % 2) * 0.25
        judge = [_verdict(score, score >= 0.5, None if score >= 0.5 else f"off topic {payload}", details=judge_details)]
        jscore, jpassed = score, score >= 0.5
    filters["none"] = FilterRecord(
        filtered=[output], verdicts={"exact_match": em, "judge": judge},
        scores={"exact_match": em[0]["score"], "judge": jscore}, passed={"exact_match": not fails, "judge": jpassed},
    )  # fmt: skip
    return SampleRecord(
        task=task, task_hash="h" * 64, doc_id=i, sample_id=f"s{i}", doc={"q": question},
        prompt=prompt, messages=[{"role": "user", "content": prompt}],
        target=target, metadata={"topic": payload} if i % 2 else {}, responses=[response], response_errors=[None],
        filters=filters, started_at=time.time(), model_seconds=response.latency_s,
    )  # fmt: skip


def task_info(name: str, n: int) -> TaskInfo:
    return TaskInfo(
        name=name,
        task_hash="h" * 64,
        config={"task": name, "fields": {"input": "q", "target": "answer"}},
        metrics=[
            MetricInfo(name="exact_match", evaluator={"name": "exact_match"}),
            MetricInfo(name="judge", evaluator={"name": "llm_judge"}),
        ],
        n_docs=n,
        n_selected=n,
    )


def make_run(
    root: Path,
    n: int = 40,
    *,
    tasks: tuple[str, ...] = ("qa", XSS_TASK),
    model: str = "model-<b>x</b>",
    flip: bool = False,
    results: bool = True,
    bootstrap_iters: int = 200,
    long_output: int = 0,
) -> Path:
    """A finished run folder with ``n`` samples per task (and results.json unless ``results`` is False)."""
    root.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        run_id=f"run-{root.name}",
        assay_version="0.1.0",
        created_at=1_700_000_000.0,
        finished_at=1_700_000_100.0,
        total_seconds=100.0,
        status="finished",
        model={"provider": "python", "name": model},
        judges=[{"provider": "openai", "name": "judge-1"}],
        tasks=[task_info(t, n) for t in tasks],
        config={"error_policy": "exclude", "bootstrap_iters": bootstrap_iters, "seed": 1},
    )
    (root / "run.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    with open(root / "samples.jsonl", "w", encoding="utf-8") as fh:
        for t in tasks:
            for i in range(n):
                rec = make_record(t, i, model=model, flip=flip, long_output=long_output if i == 1 else 0)
                fh.write(rec.model_dump_json() + "\n")
    if results:
        write_results(root, bootstrap_iters=bootstrap_iters, seed=1)
    return root


def read_results(root: Path) -> dict[str, Any]:
    """The run's results.json."""
    data: dict[str, Any] = json.loads((root / "results.json").read_text(encoding="utf-8"))
    return data


def expected_outcomes(root: Path, task: str | None = None) -> dict[str, int]:
    """How many samples passed every metric, failed at least one, and had at least one error, per samples.jsonl."""
    counts = {"pass": 0, "fail": 0, "error": 0}
    for line in (root / "samples.jsonl").read_text(encoding="utf-8").split("\n"):
        if not line:
            continue
        rec = SampleRecord.model_validate_json(line)
        if task is not None and rec.task != task:
            continue
        passed = [p for fr in rec.filters.values() for p in fr.passed.values()]
        fail = any(p is False for p in passed)
        error = any(p is None for p in passed) or rec.error is not None
        counts["fail"] += fail
        counts["error"] += error
        counts["pass"] += not fail and not error
    return counts
