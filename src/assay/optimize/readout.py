"""What the optimiser reads from a finished candidate run: its operational figures, each training sample's input,
output and every evaluator's reasons and feedback, and the interval a run reports for a set of scores."""

from __future__ import annotations

import math
from typing import Any

MAX_FIELD = 2000  # characters of an input, output or feedback kept for the optimiser


def interval(values: list[float], confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """Mean and the interval a run reports for such scores (Wilson for pass/fail, else the studentized bootstrap,
    clipped to [0, 1]; seeded, so a replay shows the same figures)."""
    import numpy as np

    from assay.results.intervals import headline_interval

    if not values:
        return None, None, None
    x = np.asarray(values, dtype=np.float64)
    binary = bool(np.all((x == 0.0) | (x == 1.0)))
    ci, _ = headline_interval(x, binary=binary, iters=2000, rng=np.random.default_rng(0), confidence=confidence)
    return float(x.mean()), (ci[0] if ci else None), (ci[1] if ci else None)


def run_ops(operational: dict[str, Any]) -> dict[str, Any]:
    """A run's operational figures summed per role: requests, cache hits, tokens, p95 latency, cost."""
    out: dict[str, Any] = {}
    for role in ("model", "judge"):
        figures = list(((operational.get("roles") or {}).get(role) or {}).values())
        out[f"{role}_requests"] = sum(int(f.get("requests") or 0) for f in figures)
        out[f"{role}_cache_hits"] = sum(int(f.get("cache_hits") or 0) for f in figures)
        out[f"{role}_tokens"] = sum(int(f.get("input_tokens") or 0) + int(f.get("output_tokens") or 0) for f in figures)
        costs = [f.get("cost_usd") for f in figures if f.get("cost_usd") is not None]
        out[f"{role}_cost_usd"] = math.fsum(costs) if costs else None
        p95 = [float(p) for f in figures if (p := (f.get("latency_s") or {}).get("p95")) is not None]
        out[f"{role}_latency_p95"] = max(p95) if p95 else None
    return out


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 3] + "..."


def _said(fr: Any, metric: str, key: str) -> str:
    """What every evaluator said under ``key`` (reason or feedback) on a sample, the optimised metric first; each
    distinct text once (repeats often agree), labelled by its metric when more than one evaluator spoke."""
    names = [metric, *(m for m in fr.verdicts if m != metric)] if fr is not None else []
    said: list[tuple[str, str]] = []
    for name in names:
        for verdict in fr.verdicts.get(name) or ():
            text = verdict.get(key) or (verdict.get("error") if key == "reason" else None)
            if text and (name, str(text)) not in said:
                said.append((name, str(text)))
    if len({name for name, _ in said}) <= 1:
        return "\n".join(text for _, text in said)
    return "\n".join(f"{name}: {text}" for name, text in said)


def failures(run: Any, task: str, filter_name: str, metric: str, rows: list[int]) -> list[dict[str, Any]]:
    """Each training sample's input, output, score, and every evaluator's reasons and feedback (passing samples
    too, marked by the optimised metric's score)."""
    out: list[dict[str, Any]] = []
    for rec in run.task_records(task):
        fr = rec.filters.get(filter_name)
        response = rec.responses[0] if rec.responses else None
        score = fr.scores.get(metric) if fr is not None else None
        out.append(
            {
                "row": rows[rec.doc_id],
                "sample_id": rec.sample_id,
                "input": _clip(rec.prompt),
                "output": _clip(response.text if response is not None else rec.error),
                "target": rec.target if isinstance(rec.target, str | int | float) else _clip(rec.target),
                "score": score,
                "passed": fr.passed.get(metric) if fr is not None else None,
                "reason": _clip(_said(fr, metric, "reason") or rec.error),
                "feedback": _clip(_said(fr, metric, "feedback")),
            }
        )
    return out
