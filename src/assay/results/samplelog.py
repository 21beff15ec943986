"""``samples_<task>.jsonl`` (lm-eval's per-sample logs), written while the results scan reads each record once.

Each record's lines (one per filter) are encoded as the scan passes it and appended to a spool file per task and
filter in the run folder; once the results are computed the spools become the sample logs in doc_id order: renamed
into place when the records were written in that order (the usual case), else copied line by line in that order.
The bytes are exactly ``json.dumps(schema.sample_log_line_raw(...), ensure_ascii=False)``: a line is put together
from its values encoded by the same C encoder, each value once per record whatever the number of filters (a
filtered response equal to the response is not escaped twice), and the doc hashed without Python's slow indenting
encoder.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
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
        encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        False,
        False,
        encoder.allow_nan,
    )
    return lambda value: "".join(c_encode(value, 0))


_VALUE = _encoder(ensure_ascii=False, allow_nan=False)  # json.dumps(line, ensure_ascii=False, allow_nan=False)
_COPY_CHUNK = 1 << 16  # lines moved per step when reordering a spool (bounds the index lists built)
_SCALARS = {bool: lambda v: "true" if v else "false", type(None): lambda v: "null", int: int.__repr__}


def _flat_items(doc: dict[str, Any]) -> list[str] | None:
    """``"key": value`` of each item of a doc whose values are strings or finite numbers, as json.dumps writes
    them; None for any other doc (nested, non-finite or not JSON), which goes through the general encoders."""
    items = []
    for key, value in doc.items():
        kind = type(value)
        if type(key) is not str:
            return None
        if kind is str:
            text = encode_basestring(value)
        elif kind is float and math.isfinite(value):
            text = float.__repr__(value)
        elif kind in _SCALARS:
            text = _SCALARS[kind](value)
        else:
            return None
        items.append(f"{encode_basestring(key)}: {text}")
    return items


def encoded_doc(doc: Any) -> tuple[str, str]:
    """(the doc as json.dumps writes it in a sample-log line, its lm-eval ``doc_hash``): a flat doc's items are
    encoded once for both (the hash reads them as ``json.dumps(indent=2)`` lays them out)."""
    items = _flat_items(doc) if type(doc) is dict else None
    if items is None:
        return _VALUE(doc), schema.doc_hash(doc)
    if not items:
        return "{}", schema.hash_string("{}")
    return "{" + ", ".join(items) + "}", schema.hash_string("{\n  " + ",\n  ".join(items) + "\n}")


def doc_hash(doc: Any) -> str:
    """:func:`schema.doc_hash`, without Python's indenting encoder for a flat doc."""
    return encoded_doc(doc)[1]


def _as_text(value: Any) -> str:
    return value if type(value) is str else schema.as_text(value)


class _TaskSpool:
    """One task's encoded lines: a spool file per filter, and the doc_ids of its records in the order added."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.filename = schema.samples_filename(name)
        self.filters: list[str] | None = None
        self.files: list[IO[bytes]] = []
        self.paths: list[Path] = []
        self.doc_ids = array("q")
        self.names_json: dict[tuple[str, ...], str] = {}

    def _open(self, filters: list[str]) -> None:
        self.filters = filters
        for _ in filters:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
            self.paths.append(Path(tmp))
            self.files.append(os.fdopen(fd, "wb", buffering=1 << 20))

    def add(self, rec: dict[str, Any], per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        if self.filters is None:
            self._open([f for f, _ in per_filter])
        doc_id = int(rec["doc_id"])
        self.doc_ids.append(doc_id)
        doc, prompt = rec["doc"], rec["prompt"]
        target = str(rec.get("target"))
        escaped: dict[str, str] = {}  # each text escaped once: a filtered response is often the response

        def text_json(value: Any) -> str:
            text = _as_text(value)
            out = escaped.get(text)
            if out is None:
                out = escaped[text] = encode_basestring(text)
            return out

        resps = ", ".join(text_json(r.get("text")) if r is not None else '""' for r in rec.get("responses") or ())
        doc_json, doc_hex = encoded_doc(doc)
        gen_kwargs = _VALUE(dict(rec.get("gen_kwargs") or {}))
        head = (
            f'{{"doc_id": {doc_id}, "doc": {doc_json}, "target": {encode_basestring(target)}, "arguments": '
            f'{{"gen_args_0": {{"arg_0": {encode_basestring(prompt)}, "arg_1": {gen_kwargs}}}}}, '
            f'"resps": [[{resps}]], "filtered_resps": '
        )
        tail = (
            f'"doc_hash": "{doc_hex}", "prompt_hash": "{schema.hash_string(prompt)}", '
            f'"target_hash": "{schema.hash_string(target)}"'
        )
        rec_filters = rec.get("filters") or {}
        for (fname, present), fh in zip(per_filter, self.files, strict=True):
            fr = rec_filters.get(fname)
            if fr is None:
                filtered = "[]"
            else:
                values = [text_json(v) for v in fr.get("filtered") or ()]
                filtered = f"[{values[0]}]" if len(values) == 1 else f"[[{', '.join(values)}]]"
            names = tuple(m for m, _ in present)
            names_json = self.names_json.get(names)
            if names_json is None:
                names_json = self.names_json[names] = _VALUE(list(names))
            scores = "".join(
                f", {encode_basestring(m)}: {float.__repr__(v) if math.isfinite(v) else _VALUE(v)}" for m, v in present
            )
            line = f'{head}{filtered}, "filter": {_VALUE(fname)}, "metrics": {names_json}, {tail}{scores}}}\n'
            fh.write(line.encode("utf-8"))

    def _flush(self) -> None:
        for fh in self.files:
            fh.close()
        self.files = []

    def commit(self) -> None:
        """Make the spools ``samples_<task>.jsonl`` in doc_id order (atomically: complete or not at all)."""
        final = self.root / self.filename
        mode = _file_mode(final)
        self._flush()
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
        """A new file with each spool's lines in ``order`` (lines hold no raw newline: JSON escapes it)."""
        fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
        self.paths.append(Path(tmp))
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            for path in self.paths[:-1]:
                if not path.stat().st_size:
                    continue
                with open(path, "rb") as src, mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    ends = _line_ends(mm)
                    starts = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1]])
                    for lo in range(0, order.size, _COPY_CHUNK):
                        part = order[lo : lo + _COPY_CHUNK]
                        for a, b in zip(starts[part].tolist(), ends[part].tolist(), strict=True):
                            out.write(mm[a:b])
        return Path(tmp)

    def discard(self) -> None:
        for fh in self.files:
            fh.close()
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.files, self.paths, self.filters = [], [], None
        self.doc_ids = array("q")


def _line_ends(data: mmap.mmap) -> Any:
    """The offset just past each newline of ``data``, found a block at a time (memory stays flat)."""
    block = 1 << 24
    parts = []
    for lo in range(0, len(data), block):
        chunk = np.frombuffer(data[lo : lo + block], dtype=np.uint8)
        parts.append(np.flatnonzero(chunk == 10).astype(np.int64) + (lo + 1))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


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
