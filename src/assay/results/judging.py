"""How far a run's judges can be trusted, from its verdicts: the position-bias rate of pairwise judges.

A pairwise judgement is read in both orders (the output shown first, then second). When the output wins in one
order and loses in the other, the judge followed the position, not the responses: a *position-inconsistent*
judgement. The rate is the share of judgements read in both orders that flipped, per metric and per judge model.
Counts are summed one verdict at a time, so a run of any size is read in one streaming pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.record import SampleRecord
from assay.results.aggregate import as_record_dict

_COUNTS = ("judgements", "inconsistent", "prefers_first", "prefers_second")


def _counts_from_orders(orders: Any) -> dict[str, int]:
    """Counts for a verdict recorded before ``details["position"]`` existed, from its ``orders`` pairs."""
    pairs = [o for o in orders if isinstance(o, list | tuple) and len(o) == 2] if isinstance(orders, list) else []
    first = sum(list(o) == ["win", "loss"] for o in pairs)
    second = sum(list(o) == ["loss", "win"] for o in pairs)
    return {"judgements": len(pairs), "inconsistent": first + second, "prefers_first": first, "prefers_second": second}


@dataclass
class PositionBias:
    """Summed position-bias counts of pairwise judge verdicts, overall and per judge model."""

    verdicts: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_COUNTS, 0))
    by_judge: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, verdict: Mapping[str, Any]) -> None:
        """Count one verdict dict (anything but a pairwise judge verdict is ignored)."""
        details = verdict.get("details")
        if not isinstance(details, Mapping) or details.get("mode") != "pairwise":
            return
        position = details.get("position")
        if not isinstance(position, Mapping):
            position = _counts_from_orders(details.get("orders"))
            model = str((details.get("judge") or {}).get("model", "judge"))
            position = {**position, "by_judge": {model: position}}
        self.verdicts += 1
        for key in _COUNTS:
            self.counts[key] += int(position.get(key, 0))
        for model, counts in (position.get("by_judge") or {}).items():
            mine = self.by_judge.setdefault(str(model), dict.fromkeys(_COUNTS, 0))
            for key in _COUNTS:
                mine[key] += int(counts.get(key, 0))

    def merge(self, other: PositionBias) -> None:
        """Add another sum's counts."""
        self.verdicts += other.verdicts
        for key in _COUNTS:
            self.counts[key] += other.counts[key]
        for model, counts in other.by_judge.items():
            mine = self.by_judge.setdefault(model, dict.fromkeys(_COUNTS, 0))
            for key in _COUNTS:
                mine[key] += counts[key]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe figures: the counts and ``rate`` (inconsistent / judgements; None with no judgement)."""
        return {
            "verdicts": self.verdicts,
            **_with_rate(self.counts),
            "by_judge": {model: _with_rate(c) for model, c in sorted(self.by_judge.items())},
        }


def _with_rate(counts: Mapping[str, int]) -> dict[str, Any]:
    n = counts["judgements"]
    return {**counts, "rate": counts["inconsistent"] / n if n else None}


def position_bias(verdicts: Iterable[Mapping[str, Any]]) -> PositionBias:
    """The position-bias counts of an iterable of verdict dicts (as stored in ``samples.jsonl``)."""
    summed = PositionBias()
    for verdict in verdicts:
        summed.add(verdict)
    return summed


class JudgingFigures:
    """``assay.judging`` of results.json, summed one record at a time (for a streaming writer): position-bias
    figures per ``task/metric[,filter]`` that has pairwise judge verdicts."""

    def __init__(self) -> None:
        self._by_metric: dict[str, PositionBias] = {}

    def add(self, record: SampleRecord | Mapping[str, Any]) -> None:
        """Count the verdicts of one sample record (or its dict, as parsed from its line)."""
        rec = as_record_dict(record)
        task = rec["task"]
        for filter_name, filtered in (rec.get("filters") or {}).items():
            for metric, verdicts in (filtered.get("verdicts") or {}).items():
                for verdict in verdicts:
                    details = verdict.get("details")
                    if isinstance(details, Mapping) and details.get("mode") == "pairwise":
                        self.add_pairwise(task, filter_name, metric, verdict)

    def add_pairwise(self, task: str, filter_name: str, metric: str, verdict: Mapping[str, Any]) -> None:
        """Count one pairwise judge verdict of ``task``'s ``metric`` under ``filter_name``."""
        key = f"{task}/{metric}" + ("" if filter_name == "none" else f",{filter_name}")
        bias = self._by_metric.get(key)
        if bias is None:
            bias = self._by_metric[key] = PositionBias()
        bias.add(verdict)

    def merge(self, other: JudgingFigures) -> None:
        """Add the counts another instance summed (of other records)."""
        for key, bias in other._by_metric.items():
            self._by_metric.setdefault(key, PositionBias()).merge(bias)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe figures; empty when no metric has a pairwise judge."""
        if not self._by_metric:
            return {}
        return {"position_bias": {key: bias.to_dict() for key, bias in sorted(self._by_metric.items())}}


def judging_figures(records: Iterable[SampleRecord]) -> dict[str, Any]:
    """``assay.judging`` of results.json for an iterable of records (see :class:`JudgingFigures`)."""
    figures = JudgingFigures()
    for record in records:
        figures.add(record)
    return figures.to_dict()
