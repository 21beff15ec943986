"""Whether a run's ``samples.jsonl`` still holds what its ``results.json`` was computed from: a torn last line (a
record cut mid-write) or a corrupt line, named by file and line, so that a report of the stored figures says so.

Cheap for a sound run: the file's last byte and the two files' times are looked at, and the file is read (indexed)
only when its last line is torn or it changed after results.json was written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import DataError
from assay.store.sampleindex import SAMPLES

if TYPE_CHECKING:
    from assay.results.loader import Run

RESULTS = "results.json"


@dataclass(frozen=True)
class SamplesCheck:
    """What a report must say about the samples file: ``notes`` to show beside the figures, and ``corrupt`` (the
    error naming file and line) when the per-sample records cannot be read at all."""

    notes: list[str] = field(default_factory=list)
    corrupt: str | None = None


def check_samples(run: Run) -> SamplesCheck:
    """Check ``run``'s samples file against its stored results (see the module docstring); a run whose results were
    computed from the samples just now (no results.json) needs no check. The index made is kept on ``run``."""
    path = run.path / SAMPLES
    results = run.path / RESULTS
    if run.computed or not path.is_file() or not results.is_file():
        return SamplesCheck()
    torn_tail = _ends_unfinished(path)
    if not torn_tail and path.stat().st_mtime <= results.stat().st_mtime and run.loaded_index is None:
        return SamplesCheck()  # untouched since the figures were computed
    stored = "the figures shown are from results.json, computed before"
    try:
        index = run.index
    except DataError as err:
        return SamplesCheck([f"samples.jsonl is corrupt: {err}; {stored} the file was damaged"], str(err))
    notes: list[str] = []
    if index.torn:
        lineno = _torn_line(path, index.offsets, index.linenos)
        notes.append(
            f"samples.jsonl is torn: line {lineno} of {path} is an unfinished record (cut mid-write, e.g. by a "
            f"crash or a full disk), not a finished sample; {stored} it was cut"
        )
    counted = _records_counted(run)
    if counted is not None and counted != len(index):
        notes.append(
            f"{path} holds {len(index)} finished sample(s) but results.json counts {counted}: the file changed after "
            "the figures were computed (assay score RUN_DIR computes them again)"
        )
    return SamplesCheck(notes)


def _ends_unfinished(path: Path) -> bool:
    """True when the file's last byte is not a newline: its last line was cut mid-write."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False
        fh.seek(-1, 2)
        return fh.read(1) != b"\n"


def _torn_line(path: Path, offsets: Any, linenos: Any) -> int:
    """The number of the torn (last non-blank) line, read from the last finished line on."""
    import numpy as np

    offs, nums = np.asarray(offsets), np.asarray(linenos)
    start, first = (int(offs[-1]), int(nums[-1])) if offs.size else (0, 0)
    with open(path, "rb") as fh:
        fh.seek(start)
        if offs.size:
            fh.readline()  # the last finished line
        rest = fh.read().split(b"\n")
    ahead = next((k for k, line in enumerate(rest) if line.strip()), 0)
    return first + 1 + ahead


def _records_counted(run: Run) -> int | None:
    """How many records results.json was computed from (None when it does not say: another tool wrote it)."""
    tasks = run.settings.get("tasks")
    if not isinstance(tasks, dict) or not tasks:
        return None
    counts = [info.get("n_records") for info in tasks.values() if isinstance(info, dict)]
    numbers = [n for n in counts if isinstance(n, int)]
    return sum(numbers) if counts and len(numbers) == len(counts) else None
