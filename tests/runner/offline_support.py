"""A task, predictions and evaluators that exercise every branch of scoring, for the offline-vs-per-sample tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from assay.evaluators.base import BatchResult, Evaluator
from assay.evaluators.registry import register
from assay.models.base import Model, Request, Response
from assay.models.predictions import PredictionsModel
from assay.verdict import Verdict

N = 60


@register("picky_test")
class Picky(Evaluator):
    """A columnar evaluator that raises on one output ('boom'), and whose batch path raises when it sees it."""

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = actual if isinstance(actual, str) else getattr(actual, "text", "") or ""
        if "boom" in text:
            raise RuntimeError("picky cannot judge 'boom'")
        return Verdict.pass_() if text.strip().endswith(str(expected)) else Verdict.fail("wrong ending")

    def evaluate_batch(self, actuals: Sequence[Any], expecteds: Sequence[Any] | None = None) -> BatchResult:
        if any("boom" in (a if isinstance(a, str) else "") for a in actuals):
            raise RuntimeError("batch path gave up")
        return super().evaluate_batch(actuals, expecteds)


def contextual(actual: Any, expected: Any, context: dict[str, Any]) -> dict[str, Any]:
    """Needs the prompt: passes when the output's first word is in it."""
    first = (actual.split() or [""])[0] if isinstance(actual, str) else ""
    return {"score": float(first in context["prompt"]), "reason": f"{first!r} not in the prompt"}


async def slow_judge(actual: Any, expected: Any) -> float:
    """An async custom evaluator (the per-sample fallback, awaited)."""
    return 1.0 if str(expected) in str(actual) else 0.25


class Delegate(Model):
    """The same predictions behind an ordinary model, so the run goes through the per-sample request loop."""

    provider: ClassVar[str] = "predictions"
    cacheable: ClassVar[bool] = False

    def __init__(self, inner: PredictionsModel) -> None:
        self.inner = inner
        self.name = inner.name

    async def generate(self, request: Request) -> Response:
        return await self.inner.generate(request)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()


def write_inputs(tmp_path: Path, n: int = N, vague_first: bool = False) -> tuple[list[dict[str, Any]], Path]:
    """Dataset rows and a predictions file: right, wrong, unextractable, missing, short of repeats, non-ASCII;
    ``vague_first``: some first answers hold no number, or make an evaluator raise (for runs of one repeat)."""
    rows = []
    with open(tmp_path / "preds.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            row: dict[str, Any] = {"id": f"s{i}", "question": f"Wie viel ist {i} plus {i}? ✓", "answer": str(2 * i)}
            if i % 11 != 5:
                row["alt"] = f"Antwort {2 * i}"
            rows.append(row)
            if i % 13 == 4:
                continue  # no prediction: a model error for every repeat
            answers = [
                (
                    ("weiß nicht", "boom")[i % 7 == 5]
                    if vague_first and i % 7 in (3, 5)
                    else f"Die Antwort ist {2 * i}."
                ),
                f"Antwort: {2 * i + (i % 3)} ünd mehr",
                "keine Ahnung" if i % 4 else "boom",
            ]
            if i % 9 == 2:
                fh.write(json.dumps({"id": f"s{i}", "prediction": answers[0]}, ensure_ascii=False) + "\n")
            else:
                calls = [[{"name": "calc", "arguments": {"x": i}}], [], []]
                fh.write(json.dumps({"id": f"s{i}", "output": answers, "tool_calls": calls}, ensure_ascii=False) + "\n")
    return rows, tmp_path / "preds.jsonl"


def task_config(rows: list[dict[str, Any]], repeats: int = 3) -> dict[str, Any]:
    """The mix: with one repeat, most chunks take the path for one answer a sample (a missing prediction, a row
    without ``alt`` and a value the regex could not extract keep some on the general one)."""
    return {
        "name": "mix",
        "dataset": {"rows": rows},
        "fields": {"id": "id", "input": "question", "target": "answer"},
        "template": "Frage: {{ question }}",
        "repeats": repeats,
        "filters": [
            {"name": "num", "steps": [{"type": "regex", "pattern": r"(\d+)\s*\.?$"}, {"type": "strip"}]},
            {"name": "vote", "steps": [{"type": "regex", "pattern": r"(\d+)"}, {"type": "majority_vote"}]},
            {"name": "none", "steps": []},
            {"name": "json", "steps": [{"type": "extract_json"}]},
        ],
        "evaluators": [
            {"name": "exact_match", "filters": ["num", "vote"]},
            {"name": "token_f1"},
            {"name": "fuzzy_match", "threshold": 0.6},
            {"name": "contains", "expected": "doc.alt"},
            {"name": "picky_test"},
            {"name": "custom", "fn": "tests.runner.offline_support:contextual", "metric": "ctx"},
            {"name": "custom", "fn": "tests.runner.offline_support:slow_judge", "metric": "slow"},
        ],
    }
