"""Calibration records: what ``assay judge calibrate`` measured of one judge, bound to that judge's identity.

A record lives in a run folder's ``calibrations.jsonl`` and, with ``--save FILE``, in a project-level file of the
same format (``require_calibration: {records: FILE}``). It covers a judge only when its ``judge_id`` equals the
judge's identity id (:func:`assay.evaluators.judge.calibration.identity.judge_identity`): another model, an
edited rubric or a changed template is another judge, and no earlier record speaks for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.store.jsonlfiles import CALIBRATIONS, append_jsonl, iter_jsonl

KIND = "assay.calibration"
FORMAT_VERSION = 1


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Append calibration records to a records file (a run's calibrations.jsonl or a project file)."""
    path = Path(path)
    if path.parent and not path.parent.is_dir():
        raise DataError(f"{path}: its folder does not exist")
    return append_jsonl(path, records)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The calibration records of a records file (none when it does not exist); a line that is not one names
    the file and line."""
    path = Path(path)
    out: list[dict[str, Any]] = []
    for lineno, obj in iter_jsonl(path):
        if obj.get("kind") != KIND or not isinstance(obj.get("judge_id"), str):
            raise DataError(f"{path}:{lineno}: not a calibration record (no kind {KIND!r} and judge_id)")
        out.append(obj)
    return out


def run_records(run_dir: Path) -> list[dict[str, Any]]:
    """The calibration records kept in a run folder."""
    return read_records(Path(run_dir) / CALIBRATIONS)


def headline_kappa(record: Mapping[str, Any]) -> float | None:
    """The κ a gate compares with ``min_kappa``: Cohen's κ (pass/fail, categories) or the quadratic weighted κ
    (ordinal grades); None when it could not be computed."""
    value = record.get("kappa")
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def best_match(records: Iterable[Mapping[str, Any]], judge_id: str, min_kappa: float) -> Mapping[str, Any] | None:
    """The newest record of ``judge_id`` whose κ reaches ``min_kappa`` (None when no record qualifies)."""
    found: Mapping[str, Any] | None = None
    for record in records:
        kappa = headline_kappa(record)
        if record.get("judge_id") != judge_id or kappa is None or kappa < min_kappa:
            continue
        if found is None or float(record.get("created_at") or 0) >= float(found.get("created_at") or 0):
            found = record
    return found
