"""The optimisation's journal: every finished evaluation, optimiser call and candidate, appended and flushed at once.

A resumed optimisation replays its (seeded, deterministic) strategy from the start; each step whose result is in
the journal is answered from it, so nothing finished is paid for twice and the replay reaches the same state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

JOURNAL = "journal.jsonl"
DURABLE = frozenset({"propose"})  # entries fsynced one by one


class Journal:
    """Entries by kind and key; :meth:`append` writes one JSON line and fsyncs it before returning."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL
        self.entries: dict[tuple[str, str], dict[str, Any]] = {}
        self.order: list[dict[str, Any]] = []
        if self.path.is_file():
            self._read()
        self._file = self.path.open("a", encoding="utf-8")

    def _read(self) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        good = len(raw)
        if lines and lines[-1]:  # a torn last line (killed mid-write): drop it
            good = len(raw) - len(lines[-1])
            lines = lines[:-1]
        for line in lines:
            if not line.strip():
                continue
            entry = json.loads(line)
            self.entries[(entry["kind"], entry["key"])] = entry
            self.order.append(entry)
        if good != len(raw):
            with self.path.open("r+b") as fh:
                fh.truncate(good)

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The entry of ``kind`` with ``key``, if it was written."""
        return self.entries.get((kind, key))

    def append(self, entry: dict[str, Any]) -> None:
        """Write an entry (it must have ``kind`` and ``key``); flushed at once, so a killed process loses nothing.

        Optimiser replies are also fsynced (they were paid for and exist nowhere else); an evaluation's results live
        in its run folder, which the runner makes durable, and a lost entry is recovered by resuming that folder
        without model calls; trials and lineage are rebuilt by the replay.
        """
        self._file.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()
        if entry["kind"] in DURABLE:
            os.fsync(self._file.fileno())
        self.entries[(entry["kind"], entry["key"])] = entry
        self.order.append(entry)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        """Entries of one kind in the order written."""
        return [e for e in self.order if e["kind"] == kind]

    def close(self) -> None:
        """Close the file."""
        self._file.close()
