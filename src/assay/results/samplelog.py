"""``samples_<task>.jsonl`` (lm-eval's per-sample logs), written while the results scan reads each record once.

Each record's lines (one per filter) are encoded as the scan passes it and appended to a spool file per task and
filter in the run folder, with their offsets; once the results are computed the spools become the sample logs in
doc_id order: renamed into place when the records were written in that order (the usual case), else copied line by
line in that order. The bytes are exactly ``json.dumps(schema.sample_log_line_raw(...), ensure_ascii=False)``,
with the hashes computed once per record and the doc hashed without Python's slow indenting encoder.
"""

from __future__ import annotations

import json
import mmap
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import numpy as np

from assay.results import schema


def _encoder(**options: Any) -> Callable[[Any], str]:
    """``json.JSONEncoder(**options).encode`` with its C encoder built once, not at every call as ``encode`` does
    (the same bytes: it is the encoder ``json.dumps`` uses; no cycle check, as parsed JSON has no cycles)."""
    encoder = json.JSONEncoder(**options)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.ensure_ascii or encoder.indent is not None:
        return encoder.encode
    c_encode = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        False,
        False,
        encoder.allow_nan,
    )
    return lambda value: "".join(c_encode(value, 0))


_LINE = _encoder(ensure_ascii=False, allow_nan=False)  # json.dumps(line, ensure_ascii=False, allow_nan=False)
_FLAT_INDENTED = _encoder(ensure_ascii=False, separators=(",\n  ", ": "), default=str)
_COPY_CHUNK = 1 << 16  # lines moved per step when reordering a spool (bounds the index lists built)


def doc_hash(doc: Any) -> str:
    """:func:`schema.doc_hash` (sha256 of the doc as ``json.dumps(indent=2)``): a flat doc is encoded by the C
    encoder with the separators indent=2 would put between its items (Python's indenting encoder is ~10x slower)."""
    if isinstance(doc, dict) and not any(isinstance(v, dict | list | tuple) for v in doc.values()):
        text = "{\n  " + _FLAT_INDENTED(doc)[1:-1] + "\n}" if doc else "{}"
        return schema.hash_string(text)
    return schema.doc_hash(doc)


def _as_text(value: Any) -> str:
    return value if type(value) is str else schema.as_text(value)


class _TaskSpool:
    """One task's encoded lines: a file per filter, the offset of each record's line in it, and its doc_ids."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.filename = schema.samples_filename(name)
        self.filters: list[str] | None = None
        self.files: list[IO[bytes]] = []
        self.paths: list[Path] = []
        self.ends: list[array[int]] = []
        self.doc_ids = array("q")

    def _open(self, filters: list[str]) -> None:
        self.filters = filters
        for _ in filters:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
            self.paths.append(Path(tmp))
            self.files.append(os.fdopen(fd, "wb", buffering=1 << 20))
            self.ends.append(array("q"))

    def add(self, rec: dict[str, Any], per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        if self.filters is None:
            self._open([f for f, _ in per_filter])
        doc_id = int(rec["doc_id"])
        self.doc_ids.append(doc_id)
        doc, prompt = rec["doc"], rec["prompt"]
        target = str(rec.get("target"))
        resps = [_as_text(r.get("text")) if r is not None else "" for r in rec.get("responses") or ()]
        arguments = {"gen_args_0": {"arg_0": prompt, "arg_1": dict(rec.get("gen_kwargs") or {})}}
        hashes = (doc_hash(doc), schema.hash_string(prompt), schema.hash_string(target))
        rec_filters = rec.get("filters") or {}
        for (fname, present), fh, ends in zip(per_filter, self.files, self.ends, strict=True):
            fr = rec_filters.get(fname)
            filtered: list[Any] = []
            if fr is not None:
                values = [_as_text(v) for v in fr.get("filtered") or ()]
                filtered = values if len(values) == 1 else [values]
            line: dict[str, Any] = {
                "doc_id": doc_id,
                "doc": doc,
                "target": target,
                "arguments": arguments,
                "resps": [resps],
                "filtered_resps": filtered,
                "filter": fname,
                "metrics": [m for m, _ in present],
                "doc_hash": hashes[0],
                "prompt_hash": hashes[1],
                "target_hash": hashes[2],
            }
            line.update(present)
            data = (_LINE(line) + "\n").encode("utf-8")
            fh.write(data)
            ends.append((ends[-1] if ends else 0) + len(data))

    def commit(self) -> None:
        """Make the spools ``samples_<task>.jsonl`` in doc_id order (atomically: complete or not at all)."""
        final = self.root / self.filename
        mode = _file_mode(final)
        for fh in self.files:
            fh.close()
        self.files = []
        if self.filters is None:  # no record: an empty file
            fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
            os.close(fd)
            target = Path(tmp)
            self.paths.append(target)
        else:
            n = len(self.doc_ids)
            order = np.argsort(np.frombuffer(self.doc_ids, dtype=np.int64), kind="stable")
            if np.array_equal(order, np.arange(n)):  # written in doc_id order: the spools are the file
                target = self.paths[0]
                with open(target, "ab") as out:
                    for path in self.paths[1:]:
                        with open(path, "rb") as src:
                            while chunk := src.read(1 << 22):
                                out.write(chunk)
            else:
                target = self._reordered(order)
        os.chmod(target, mode)
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(target, final)
        self.paths.remove(target)
        self.discard()

    def _reordered(self, order: Any) -> Path:
        fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            for path, ends_arr in zip(self.paths, self.ends, strict=True):
                if not ends_arr or ends_arr[-1] == 0:
                    continue
                ends = np.frombuffer(ends_arr, dtype=np.int64)
                starts = np.concatenate([[0], ends[:-1]])
                with open(path, "rb") as src, mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    for lo in range(0, order.size, _COPY_CHUNK):
                        part = order[lo : lo + _COPY_CHUNK]
                        for a, b in zip(starts[part].tolist(), ends[part].tolist(), strict=True):
                            out.write(mm[a:b])
        self.paths.append(Path(tmp))
        return Path(tmp)

    def discard(self) -> None:
        for fh in self.files:
            fh.close()
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.files, self.paths, self.ends, self.filters = [], [], [], None
        self.doc_ids = array("q")


def _file_mode(path: Path) -> int:
    """The mode an ordinary write would give ``path``: the existing file's, else the umask's."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


class SampleLogSpool:
    """The sample logs of a run being scanned (a :class:`assay.results.columns.SampleLogSink`): lines are spooled
    as records pass, :meth:`commit` puts them in place, :meth:`discard` removes every trace (on any error)."""

    def __init__(self, root: Path, tasks: Iterable[str]) -> None:
        self.root = root
        self.tasks = {name: _TaskSpool(root, name) for name in tasks}

    def reset(self) -> None:
        for spool in self.tasks.values():
            spool.discard()

    def add(self, task: str, rec: dict[str, Any], per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        self.tasks[task].add(rec, per_filter)

    def commit(self) -> None:
        """Write every task's ``samples_<task>.jsonl`` (an empty file for a task without records)."""
        for spool in self.tasks.values():
            spool.commit()

    def discard(self) -> None:
        self.reset()
