"""The run folder's side files written after a run: ``labels.jsonl`` (human labels) and ``calibrations.jsonl``
(judge calibration records). Both are append-only, each with its own lock, so labelling or calibrating never takes
the run's writer lock and never touches ``samples.jsonl``, ``run.json`` or ``results.json``."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.atomicfile import NEW_FILE_MODE
from assay.errors import DataError

LABELS = "labels.jsonl"
CALIBRATIONS = "calibrations.jsonl"


def append_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Append ``rows`` as JSON lines, whole, under an exclusive ``flock`` on ``<path>.lock`` (one writer at a time,
    processes and threads alike), fsynced; returns how many were written. Every value passes
    :func:`assay.secrets.redact_text` first: nothing that looks like a credential reaches the file."""
    from assay.secrets import redact_text

    data = b"".join(
        (redact_text(json.dumps(dict(r), ensure_ascii=False, sort_keys=True)) + "\n").encode() for r in rows
    )
    if not data:
        return 0
    lock_fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, NEW_FILE_MODE)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, NEW_FILE_MODE)  # read: the torn-tail check
        try:
            _cut_torn_tail(fd)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(lock_fd)
    return data.count(b"\n")


def _cut_torn_tail(fd: int) -> None:
    """Cut an unfinished last line (a writer killed mid-line) so the next line starts clean."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size and os.pread(fd, 1, size - 1) != b"\n":
        start = max(0, size - (1 << 20))
        tail = os.pread(fd, size - start, start)
        cut = tail.rfind(b"\n")
        os.ftruncate(fd, start + cut + 1 if cut >= 0 else start)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each complete line of ``path`` (none when it does not exist); a malformed line
    is a DataError naming the file and line; an unfinished last line is skipped."""
    if not path.is_file():
        return
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n") or not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                raise DataError(f"{path}:{lineno}: not valid JSON ({err})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj
