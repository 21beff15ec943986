"""Logged records read back to be scored again: a ``samples.jsonl`` line (or its parsed record) becomes the
:class:`~assay.runner.offline.Answered` the offline scorer takes, here or in a worker (a process, a Ray actor)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.jsonfast import loads
from assay.models.base import Response
from assay.runner.offline import Answered
from assay.tasks.sample import Sample

# a logged line on its way to a Ray worker: the task's sample when the driver found it (else the worker rebuilds it
# from the record), the line (its bytes; parsed when its first keys are not where SampleRecord writes them), and
# its line number
LoggedLine = tuple["Sample | None", "bytes | dict[str, Any]", int]


def _sample_for(record: dict[str, Any], samples: Sequence[Sample]) -> Sample:
    """The task's sample behind a logged record (its input is not logged), else one rebuilt from the record."""
    doc_id, sample_id = record.get("doc_id"), str(record.get("sample_id"))
    if isinstance(doc_id, int) and 0 <= doc_id < len(samples) and samples[doc_id].id == sample_id:
        return samples[doc_id]
    return Sample(
        doc_id=doc_id if isinstance(doc_id, int) else -1,
        id=sample_id,
        doc=record.get("doc") or {},
        input=None,
        target=record.get("target"),
        metadata=record.get("metadata") or {},
    )


def answered_from_record(record: dict[str, Any], samples: Sequence[Sample], sample: Sample | None = None) -> Answered:
    """A logged record as the offline scorer takes it: its logged responses, with ``sample`` or the task's sample."""
    responses = [None if r is None else Response.model_validate(r) for r in record.get("responses") or []]
    errors = list(record.get("response_errors") or [None] * len(responses))
    return Answered(sample or _sample_for(record, samples), responses, errors, logged=record)


def iter_sample_lines_of(lines: list[bytes], path: Path | str, first: int) -> Iterator[dict[str, Any]]:
    """Parsed records of ``lines`` (numbered from ``first`` in ``path``); a corrupt one is a DataError naming it."""
    for lineno, raw in enumerate(lines, first):
        try:
            record = loads(raw, json.loads)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise DataError(f"{path}:{lineno}: corrupt sample line: {err}") from None
        if not isinstance(record, dict):
            raise DataError(f"{path}:{lineno}: corrupt sample line: not a JSON object")
        yield record


def answered_from_line(item: LoggedLine, source: str) -> Answered:
    """A logged line as a Ray worker scores it (the :class:`Answered` the local re-score makes of it)."""
    sample, line, lineno = item
    record = line if isinstance(line, dict) else next(iter_sample_lines_of([line], source, lineno))
    return answered_from_record(record, [], sample)
