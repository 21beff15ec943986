"""The optimisation's journal: every finished evaluation, optimiser call and candidate, appended and flushed at once.

A resumed optimisation replays its (seeded, deterministic) strategy from the start; each step whose result is in
the journal is answered from it, so nothing finished is paid for twice and the replay reaches the same state.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from assay.errors import ConfigError

JOURNAL = "journal.jsonl"
DURABLE = frozenset({"propose"})  # entries fsynced one by one
# what a replay reads of each kind of entry, with its JSON type
REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "eval": {"cid": str, "split": str, "rows": list, "scores": dict, "run_dir": str, "calls": int},
    "propose": {"text": str},
    "candidate": {"candidate": dict, "parents": list},
}


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
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as err:  # JSONDecodeError, or bytes that are not UTF-8
                raise ConfigError(
                    f"{self.path}:{number}: not a journal entry ({err}); the file was edited or damaged. Only a cut "
                    "last line (a kill mid-write) is dropped on resume; fix or delete this line to resume"
                ) from None
            if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str) or "key" not in entry:
                raise ConfigError(
                    f"{self.path}:{number}: not a journal entry (a JSON object with 'kind' and 'key'); the file was "
                    "edited or damaged: fix or delete this line to resume"
                )
            for name, kind in REQUIRED.get(entry["kind"], {}).items():
                if not isinstance(entry.get(name), kind) or isinstance(entry.get(name), bool):
                    raise ConfigError(
                        f"{self.path}:{number}: a {entry['kind']} entry without a valid {name!r}; the file was edited "
                        "or damaged: fix or delete this line to resume"
                    )
            self.entries[(entry["kind"], str(entry["key"]))] = entry
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
