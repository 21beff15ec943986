"""Offline shards and their scored form, as any pool of workers (Ray actors, forked processes) takes and returns
them: consecutive samples of one task going out, encoded samples.jsonl lines coming back for the one writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import pydantic_core

if TYPE_CHECKING:
    from assay.tasks import Task


@dataclass
class OfflineShard:
    """Consecutive samples of one task as workers take them: a predictions run's (sample, answers, errors), with
    the timings their new records get; or a re-score's logged lines of the samples file ``source``."""

    task: Task
    items: list[Any]
    started_at: float = 0.0
    model_seconds: float = 0.0
    attempts: int = 0
    source: str | None = None
    before: int = 0  # records of the task handed out before these (for the results scan made ahead)

    def sample_name(self, i: int) -> str:
        item = self.items[i]
        return repr(item[0].id) if item[0] is not None else f"at line {item[2]} of {self.source}"

    def part(self, items: list[Any], attempts: int) -> OfflineShard:
        return OfflineShard(self.task, items, self.started_at, self.model_seconds, attempts, self.source)


class Scored(NamedTuple):
    """A scored offline shard as a worker sends it back: each record's samples.jsonl line (encoded, so the driver
    only appends them), its first error verdict, how many of its answers were stored cut, and its first model
    error (a re-score counts its failed samples as the runner does)."""

    lines: list[bytes]
    evaluator_errors: list[str | None]
    truncated: list[int]
    model_errors: list[str | None]


def scored(records: Sequence[dict[str, Any]], lines: list[bytes] | None = None) -> Scored:
    """Finished records (SampleRecord's JSON form) as a worker sends them back (``lines``: already encoded)."""
    return Scored(
        lines if lines is not None else [encode(record) for record in records],
        [verdict_error(record["filters"]) for record in records],
        [sum(r is not None and r.get("truncated_from") is not None for r in rec["responses"]) for rec in records],
        [next((e for e in rec.get("response_errors") or () if e), None) for rec in records],
    )


def encode(record: Mapping[str, Any]) -> bytes:
    """One samples.jsonl line (UTF-8, without its newline) for a record in SampleRecord's JSON form."""
    return pydantic_core.to_json(record)


def verdict_error(filters: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The first error verdict of a record's filters (JSON form), as the per-sample path finds it."""
    for filtered in filters.values():
        for metric, verdicts in filtered["verdicts"].items():
            for verdict in verdicts:
                if verdict.get("error"):
                    return f"{metric}: {verdict['error']}"
    return None
