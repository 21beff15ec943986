"""What calibration compares: per judge metric of a run, the judge's value of each judged output beside the
people's labels of it, read in one pass over ``samples.jsonl`` (no model is called).

The value compared depends on the labels (the *level*): ``pass`` / ``fail`` labels are compared with whether the
verdict passed (whatever the judge's scale); numeric labels with the judge's grade on an integer scale
(``ordinal``: 1-5, 1-10) or with its score on a continuous one (``interval``: 0-1, the RAG metrics); label names
with the grade of a label scale (``categorical``). An error verdict is no judgement: counted apart, never paired.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.errors import DataError
from assay.evaluators.judge.calibration.identity import is_judge, judge_identity
from assay.evaluators.judge.calibration.labels import Label, latest
from assay.evaluators.judge.parse import Scale
from assay.record import RunManifest

Level = Literal["binary", "ordinal", "interval", "categorical"]


@dataclass
class Judged:
    """One judged output: the verdict's score and pass, its grade, the output's length and a hash of its text."""

    score: float
    passed: bool
    grade: Any
    length: int
    output_hash: str


@dataclass
class JudgeMetric:
    """A judge metric of a run and every judgement it made, keyed by (sample id, repeat)."""

    task: str
    metric: str
    evaluator: dict[str, Any]
    identity: dict[str, Any]
    scale: Scale
    judged: dict[tuple[str, int], Judged] = field(default_factory=dict)
    n_errors: int = 0
    labels: dict[tuple[str, int], dict[str, Label]] = field(default_factory=dict)  # item -> who -> latest label
    positions: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)  # pairwise: details["position"]

    @property
    def key(self) -> str:
        """``task/metric``."""
        return f"{self.task}/{self.metric}"


def judge_metrics(manifest: RunManifest, evaluator: str | None = None) -> list[JudgeMetric]:
    """The run's judge metrics (``evaluator``: only the metric or evaluator of that name); none is a DataError."""
    found: list[JudgeMetric] = []
    every: list[str] = []
    for task in manifest.tasks:
        for m in task.metrics:
            every.append(f"{task.name}/{m.name} ({m.evaluator.get('name')})")
            if not is_judge(m.evaluator):
                continue
            if evaluator is not None and evaluator not in (m.name, m.evaluator.get("name")):
                continue
            scale = Scale.parse(m.evaluator.get("scale", "binary")) if m.evaluator.get("name") == "llm_judge" else None
            found.append(
                JudgeMetric(task.name, m.name, m.evaluator, judge_identity(m.evaluator), scale or Scale.parse("0-1"))
            )
    if not found:
        which = f" named {evaluator!r}" if evaluator else ""
        raise DataError(f"no judge metric{which} in this run; its metrics: {', '.join(every) or 'none'}")
    return found


def _output_text(filtered: Any, repeat: int) -> str:
    value = filtered[repeat] if isinstance(filtered, list) and repeat < len(filtered) else filtered
    return value if isinstance(value, str) else repr(value)


def read_judgements(metrics: Sequence[JudgeMetric], records: Iterable[Mapping[str, Any]]) -> None:
    """Fill each metric's judgements from the run's record dicts (a sample written twice: its last copy)."""
    by_task: dict[str, list[JudgeMetric]] = {}
    for jm in metrics:
        by_task.setdefault(jm.task, []).append(jm)
    errors: dict[tuple[str, str, str], int] = {}
    for rec in records:
        mine = by_task.get(str(rec.get("task")))
        if not mine:
            continue
        sample_id = str(rec.get("sample_id"))
        filters = rec.get("filters") or {}
        for jm in mine:
            for fr in filters.values():
                verdicts = (fr.get("verdicts") or {}).get(jm.metric)
                if verdicts is None:
                    continue
                errors[(jm.task, jm.metric, sample_id)] = 0
                for j, v in enumerate(verdicts):
                    jm.judged.pop((sample_id, j), None)
                    position = (v.get("details") or {}).get("position")
                    if isinstance(position, dict):  # counted errored or not: all orders flipping is an error
                        jm.positions[(sample_id, j)] = position
                    if v.get("error") is not None or v.get("score") is None:
                        errors[(jm.task, jm.metric, sample_id)] += 1
                        continue
                    text = _output_text(fr.get("filtered"), j)
                    details = v.get("details") or {}
                    jm.judged[(sample_id, j)] = Judged(
                        float(v["score"]),
                        bool(v.get("passed")),
                        details.get("grade"),
                        len(text),
                        hashlib.sha256(text.encode()).hexdigest()[:16],
                    )
                break  # the first filter that judged the metric
    for jm in metrics:
        jm.n_errors = sum(n for (t, m, _), n in errors.items() if (t, m) == (jm.task, jm.metric))


def attach_labels(metrics: Sequence[JudgeMetric], labels: Iterable[Label]) -> int:
    """Give each metric the latest label per person of each item; returns how many labels named no judge metric."""
    index = {(jm.task, jm.metric): jm for jm in metrics}
    unmatched = 0
    for (task, sample_id, repeat, metric, who), lab in latest(labels).items():
        jm = index.get((task, metric))
        if jm is None:
            unmatched += 1
            continue
        jm.labels.setdefault((sample_id, repeat), {})[who] = lab
    return unmatched


def level_of(jm: JudgeMetric) -> Level:
    """How the metric's labels compare with its judgements (see the module docstring); mixed labels name the
    metric."""
    kinds = Counter(
        "binary" if lab.label in ("pass", "fail") else "number" if isinstance(lab.label, float) else "name"
        for people in jm.labels.values()
        for lab in people.values()
    )
    if len(kinds) > 1:
        raise DataError(
            f"{jm.key}: the labels mix pass/fail, numbers and label names ({dict(kinds)}); use one kind per metric"
        )
    kind = next(iter(kinds), "binary")
    if kind == "binary":
        return "binary"
    if kind == "name":
        if not jm.scale.labels:
            raise DataError(f"{jm.key}: labels name grades, but the judge's scale {jm.scale.name!r} has none")
        return "categorical"
    return "ordinal" if jm.scale.integer else "interval"


def judge_value(jm: JudgeMetric, item: Judged, level: Level) -> Any:
    """The judge's value of one output at ``level``."""
    if level == "binary":
        return "pass" if item.passed else "fail"
    if level == "categorical":
        return str(item.grade).strip().casefold()
    if level == "ordinal":
        if isinstance(item.grade, int | float) and not isinstance(item.grade, bool):
            return float(item.grade)
        return float(round(jm.scale.low + item.score * (jm.scale.high - jm.scale.low)))
    return item.score


def person_value(label: Label, level: Level) -> Any:
    """A person's label at ``level`` (label names compare case-insensitively)."""
    return label.label.strip().casefold() if level == "categorical" and isinstance(label.label, str) else label.label


def categories(jm: JudgeMetric, level: Level) -> list[Any] | None:
    """The confusion matrix's categories in the scale's order (None for an interval level: no matrix)."""
    if level == "binary":
        return ["pass", "fail"]
    if level == "categorical":
        return [name.casefold() for name, _ in jm.scale.labels]
    if level == "ordinal":
        return [float(g) for g in range(int(jm.scale.low), int(jm.scale.high) + 1)]
    return None


def consensus(values: Sequence[Any]) -> Any:
    """The people's label of an item: the most common; a tie goes to the latest given (values in time order)."""
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in reversed(values) if counts[v] == top)
