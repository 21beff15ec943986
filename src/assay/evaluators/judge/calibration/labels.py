"""Human labels of judged samples: one line of ``labels.jsonl`` per label given, the latest per key counting.

A label is keyed by (task, sample id, repeat, metric) and says ``pass`` / ``fail`` or a grade on the judge's
scale (a number on ``1-5``, ``1-10``, ``0-1``; a label name on a label scale), with a note, who gave it and when.
The file is append-only: correcting a label appends a new line, so every earlier judgement of a person stays.
Labels are imported from CSV or JSONL keyed by sample id (:func:`read_label_file`).
"""

from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.store.rundir import LABELS, append_jsonl, iter_jsonl

PASS_FAIL = ("pass", "fail")
MAX_NOTE = 4000


@dataclass(frozen=True)
class Label:
    """One person's label of one judged output."""

    task: str
    sample_id: str
    metric: str
    label: str | float
    repeat: int = 0
    note: str = ""
    who: str = ""
    when: float = field(default_factory=time.time)

    @property
    def key(self) -> tuple[str, str, int, str]:
        """(task, sample id, repeat, metric): what the label is of."""
        return (self.task, self.sample_id, self.repeat, self.metric)

    def to_dict(self) -> dict[str, Any]:
        """The labels.jsonl line."""
        return {
            "task": self.task,
            "sample_id": self.sample_id,
            "repeat": self.repeat,
            "metric": self.metric,
            "label": self.label,
            "note": self.note,
            "who": self.who,
            "when": self.when,
        }


def parse_value(raw: Any, where: str) -> str | float:
    """A label value: ``pass`` / ``fail`` (also true/false, 1/0 as words), a finite number, or a label name (an
    object, a list or a non-finite number is refused: it would be stored as something no reader takes back)."""
    if isinstance(raw, bool):
        return "pass" if raw else "fail"
    if isinstance(raw, int | float):
        if not math.isfinite(raw):
            raise DataError(f"{where}: 'label' must be a finite number, got {raw!r}")
        return float(raw)
    if isinstance(raw, dict | list | tuple):
        kind = "an object" if isinstance(raw, dict) else "a list"
        raise DataError(f"{where}: 'label' is pass/fail, a number or a name, got {kind}")
    text = str(raw).strip()
    if not text:
        raise DataError(f"{where}: 'label' is empty")
    low = text.casefold()
    if low in ("pass", "passed", "true", "yes", "good"):
        return "pass"
    if low in ("fail", "failed", "false", "no", "bad"):
        return "fail"
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text


def label_from(
    obj: Mapping[str, Any], where: str, *, task: str | None = None, metric: str | None = None, who: str = ""
) -> Label:
    """A Label from a mapping (a labels.jsonl line, an imported row, a POST); a missing key names ``where``."""
    sample_id = obj.get("sample_id", obj.get("id"))
    if sample_id is None or str(sample_id).strip() == "":
        raise DataError(f"{where}: no 'sample_id'")
    if "label" not in obj or obj["label"] is None:
        raise DataError(f"{where}: no 'label'")
    the_task = obj.get("task") or task
    the_metric = obj.get("metric") or obj.get("evaluator") or metric
    if not the_task:
        raise DataError(f"{where}: no 'task' (give it in the file, or --task)")
    if not the_metric:
        raise DataError(f"{where}: no 'metric' (give it in the file, or --metric)")
    try:
        repeat = int(obj.get("repeat") or 0)
        when = float(obj.get("when") or time.time())
        if not math.isfinite(when):
            raise ValueError(when)
    except (TypeError, ValueError, OverflowError):
        raise DataError(f"{where}: 'repeat' must be an integer and 'when' a finite number") from None
    note = str(obj.get("note") or "")
    if len(note) > MAX_NOTE:
        raise DataError(f"{where}: the note is longer than {MAX_NOTE} characters")
    return Label(
        str(the_task),
        str(sample_id),
        str(the_metric),
        parse_value(obj["label"], where),
        repeat,
        note,
        str(obj.get("who") or who),
        when,
    )


def append_labels(run_dir: Path, labels: Iterable[Label]) -> int:
    """Append labels to the run folder's labels.jsonl (its own lock; nothing else in the folder is written)."""
    return append_jsonl(Path(run_dir) / LABELS, (lab.to_dict() for lab in labels))


def read_labels(path: Path) -> list[Label]:
    """Every label line of a labels.jsonl file, in the order given (a bad line names file and line)."""
    return [label_from(obj, f"{path}:{n}") for n, obj in iter_jsonl(path)]


def latest(labels: Iterable[Label]) -> dict[tuple[str, str, int, str, str], Label]:
    """The latest label per (task, sample id, repeat, metric, who): a person's correction replaces their own
    earlier label, never another person's."""
    out: dict[tuple[str, str, int, str, str], Label] = {}
    for lab in sorted(labels, key=lambda lab: lab.when):
        out[(*lab.key, lab.who)] = lab
    return out


def run_labels(run_dir: Path) -> list[Label]:
    """The labels recorded in a run folder."""
    return read_labels(Path(run_dir) / LABELS)


def read_label_file(path: Path, *, task: str | None = None, metric: str | None = None, who: str = "") -> list[Label]:
    """Labels from a CSV (a header row with sample_id and label; task, metric, repeat, note, who optional) or a
    JSONL file (one object per line, the same keys); ``task`` / ``metric`` fill in rows that lack them."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "label" not in reader.fieldnames:
                raise DataError(f"{path}:1: the header must name a 'label' column (and 'sample_id')")
            return [
                label_from(row, f"{path}:{n}", task=task, metric=metric, who=who) for n, row in enumerate(reader, 2)
            ]
    out: list[Label] = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                raise DataError(f"{path}:{n}: not valid JSON ({err})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{n}: expected a JSON object")
            out.append(label_from(obj, f"{path}:{n}", task=task, metric=metric, who=who))
    return out
