"""``samples_<task>.jsonl`` (lm-eval's per-sample logs), written while the results scan reads each record once.

Each record's lines (one per filter) are encoded as the scan passes it and appended to a spool file per task and
filter in the run folder; once the results are computed the spools become the sample logs in doc_id order: renamed
into place when the records were written in that order (the usual case), else copied line by line in that order.
The bytes are exactly ``json.dumps(schema.sample_log_line_raw(...), ensure_ascii=False)``: a line is put together
from its values encoded by json's encoder, each value once per record whatever the number of filters (a filtered
response equal to the response is not escaped twice), and a flat doc hashed from the same encoded items (Python's
indenting encoder costs 12 µs a doc).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from hashlib import sha256
from json.encoder import encode_basestring
from pathlib import Path
from typing import IO, Any

import numpy as np

from assay.atomicfile import file_mode, kernel_copy
from assay.results import schema

_VALUE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # json.dumps(v, ensure_ascii=False, ...)
_SPOOL_BLOCK = 1 << 16  # a task's lines are appended to its spools once they hold this many bytes (memory is
# bounded by tasks x this, and no spool file stays open)
_READ_MAX = 1 << 20  # bytes of adjacent lines read at once when reordering (the transient buffer it costs)
_LINE_BLOCK = 1 << 20  # bytes read at once when finding a spool's line ends
_COPY_CHUNK = 1 << 16  # lines moved per step when reordering a spool (bounds the index lists built)
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
_SCALARS = {bool: lambda v: "true" if v else "false", type(None): lambda v: "null", int: int.__repr__}


def _as_text(value: Any) -> str:
    return value if type(value) is str else schema.as_text(value)


class _TaskSpool:
    """One task's encoded lines: a spool file per filter, and the doc_ids of its records in the order added."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.filename = schema.samples_filename(name)
        self.filters: list[str] | None = None
        self.pending: list[list[bytes]] = []  # per filter: lines not yet appended to its spool
        self.pending_bytes = 0
        self.paths: list[Path] = []
        self.doc_ids = array("q")
        self.gen: tuple[Any, list[type], str] = (None, [], "")  # the last gen_kwargs (most records share them)
        self.key_json: dict[str, str] = {}  # a doc key, encoded with its separator
        self.metric_json: dict[tuple[str, tuple[str, ...]], tuple[str, list[str]]] = {}

    def _open(self, filters: list[str]) -> None:
        self.filters = filters
        for _ in filters:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
            self.paths.append(Path(tmp))
            os.close(fd)  # appended to a block at a time: no file stays open (a run may have hundreds of tasks)
            self.pending.append([])

    def add(self, rec: dict[str, Any], per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        if self.filters is None:
            self._open([f for f, _ in per_filter])
        esc = encode_basestring
        doc_id = int(rec["doc_id"])
        self.doc_ids.append(doc_id)
        doc, prompt = rec["doc"], rec["prompt"]
        target = str(rec.get("target"))
        texts: list[str] = []  # each response's text, and escaped: a filtered response is often the response
        escaped: list[str] = []
        for r in rec.get("responses") or ():
            text = "" if r is None else _as_text(r.get("text"))
            texts.append(text)
            escaped.append(esc(text))
        doc_json, doc_hex = self._doc(doc)
        gen = rec.get("gen_kwargs") or {}
        gen_types = [type(v) for v in gen.values()]
        if gen == self.gen[0] and gen_types == self.gen[1]:  # the same as the last record's (1 == 1.0, not in JSON)
            gen_json = self.gen[2]
        else:
            gen_json = _VALUE(dict(gen))
            if _JSON_SCALARS.issuperset(gen_types):  # nested values could hide 1 == 1.0: not reused
                self.gen = (gen, gen_types, gen_json)
        head = (
            f'{{"doc_id": {doc_id}, "doc": {doc_json}, "target": {esc(target)}, "arguments": {{"gen_args_0": '
            f'{{"arg_0": {esc(prompt)}, "arg_1": {gen_json}}}}}, "resps": [[{", ".join(escaped)}]], "filtered_resps": '
        )
        tail = (
            f'"doc_hash": "{doc_hex}", "prompt_hash": "{sha256(prompt.encode()).hexdigest()}", '
            f'"target_hash": "{sha256(target.encode()).hexdigest()}"'
        )  # schema.hash_string, inline
        rec_filters = rec.get("filters") or {}
        for (fname, present), pending in zip(per_filter, self.pending, strict=True):
            fr = rec_filters.get(fname)
            if fr is None:
                filtered = "[]"
            else:
                values = [v if type(v) is str else _as_text(v) for v in fr.get("filtered") or ()]
                if values == texts:
                    encoded = escaped
                else:
                    encoded = [escaped[texts.index(v)] if v in texts else esc(v) for v in values]
                filtered = f"[{encoded[0]}]" if len(encoded) == 1 else f"[[{', '.join(encoded)}]]"
            names = tuple([m for m, _ in present])
            pieces = self.metric_json.get((fname, names))
            if pieces is None:
                pieces = self.metric_json[(fname, names)] = (
                    f', "filter": {esc(fname)}, "metrics": {_VALUE(list(names))}, ',
                    [f", {esc(m)}: " for m in names],
                )
            scores = "".join(
                [
                    p + (float.__repr__(v) if v - v == 0.0 else _VALUE(v))
                    for p, (_, v) in zip(pieces[1], present, strict=True)
                ]
            )
            line = f"{head}{filtered}{pieces[0]}{tail}{scores}}}\n".encode()
            pending.append(line)
            self.pending_bytes += len(line)
        if self.pending_bytes >= _SPOOL_BLOCK:
            self._flush()

    def _doc(self, doc: Any) -> tuple[str, str]:
        """(the doc as json.dumps writes it in a line, its lm-eval ``doc_hash``): a flat doc's items are encoded once
        for both (the hash reads them as ``json.dumps(indent=2)`` lays them out); any other goes the general way."""
        if type(doc) is not dict:
            return _VALUE(doc), schema.doc_hash(doc)
        keys = self.key_json
        items = []
        for key, value in doc.items():
            kind = type(value)
            if kind is str:
                text = encode_basestring(value)
            elif kind is float and value - value == 0.0:
                text = float.__repr__(value)
            elif kind in _SCALARS:
                text = _SCALARS[kind](value)
            else:
                return _VALUE(doc), schema.doc_hash(doc)
            prefix = keys.get(key)
            if prefix is None:
                if type(key) is not str:
                    return _VALUE(doc), schema.doc_hash(doc)
                prefix = encode_basestring(key) + ": "
                if len(keys) < 1024:
                    keys[key] = prefix
            items.append(prefix + text)
        if not items:
            return "{}", schema.hash_string("{}")
        return "{" + ", ".join(items) + "}", schema.hash_string("{\n  " + ",\n  ".join(items) + "\n}")

    def _flush(self) -> None:
        for path, pending in zip(self.paths, self.pending, strict=False):
            if pending:
                with open(path, "ab") as fh:
                    fh.write(b"".join(pending))
                pending.clear()
        self.pending_bytes = 0

    def detach(self) -> SpoolFiles:
        """This spool's files, written out, handed to the caller (who must adopt or delete them); it forgets them."""
        self._flush()
        files = SpoolFiles(self.filters, list(self.paths), self.doc_ids)
        self.paths, self.pending, self.filters, self.doc_ids = [], [], None, array("q")
        return files

    def adopt(self, later: SpoolFiles) -> bool:
        """Append the lines of ``later`` (a spool of the records after this one's), taking its files over; False
        (the files left to the caller) when its filters differ."""
        if later.filters is None:  # no records
            return True
        if self.filters is None:
            self.filters, self.paths, self.pending = list(later.filters), list(later.paths), [[] for _ in later.filters]
        elif later.filters != self.filters:
            return False
        else:
            self._flush()
            for mine, theirs in zip(self.paths, later.paths, strict=False):
                _append_file(mine, theirs)
                theirs.unlink()
        self.doc_ids.extend(later.doc_ids)
        later.paths = []  # this spool's now
        return True

    def commit(self) -> None:
        """Make the spools ``samples_<task>.jsonl`` in doc_id order (atomically: complete or not at all)."""
        final = self.root / self.filename
        mode = file_mode(final)
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
        """A new file with each spool's lines in ``order`` (lines hold no raw newline: JSON escapes it). Lines are
        read with pread, lines next to each other in one read: page cache, not the process's memory (an mmap of the
        spool would count in its RSS)."""
        fd, tmp = tempfile.mkstemp(prefix=f".{self.filename}.", suffix=".tmp", dir=self.root)
        self.paths.append(Path(tmp))
        with os.fdopen(fd, "wb", buffering=1 << 20) as out:
            for path in self.paths[:-1]:
                with open(path, "rb", buffering=0) as src:
                    ends = _line_ends(src)
                    if not ends.size:
                        continue
                    starts = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1]])
                    for lo in range(0, order.size, _COPY_CHUNK):
                        part = order[lo : lo + _COPY_CHUNK]
                        run_start = run_end = -1
                        for a, b in zip(starts[part].tolist(), ends[part].tolist(), strict=True):
                            if a != run_end or run_end - run_start >= _READ_MAX:
                                if run_end > run_start:
                                    out.write(_pread(src.fileno(), run_start, run_end))
                                run_start = a
                            run_end = b
                        if run_end > run_start:
                            out.write(_pread(src.fileno(), run_start, run_end))
        return Path(tmp)

    def discard(self) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.pending, self.paths, self.filters, self.pending_bytes = [], [], None, 0
        self.doc_ids = array("q")


@dataclass
class SpoolFiles:
    """A task's spooled sample-log lines handed between processes: its filters (None: no record), a file per
    filter, and the doc_ids of its records in the order spooled."""

    filters: list[str] | None
    paths: list[Path]
    doc_ids: array[int]

    def delete(self) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)


def _append_file(dst: Path, src: Path) -> None:
    """Append the bytes of ``src`` to ``dst``: in the kernel where it can, the rest through a buffer."""
    with open(src, "rb") as fin:
        size = os.fstat(fin.fileno()).st_size
        at = dst.stat().st_size
        done = kernel_copy(fin.fileno(), dst, size, at)
        if done < size:
            fin.seek(done)
            with open(dst, "r+b") as fout:
                fout.seek(at + done)
                shutil.copyfileobj(fin, fout, 1 << 22)


def _line_ends(src: IO[bytes]) -> Any:
    """The offset just past each newline of the file ``src``, read a block at a time (memory stays flat: a block
    and its mask are the transient cost, 2 MiB at ``_LINE_BLOCK``; 16 MiB blocks made it 33 MB)."""
    parts = []
    offset = 0
    while block := src.read(_LINE_BLOCK):
        parts.append(np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10).astype(np.int64) + (offset + 1))
        offset += len(block)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _pread(fd: int, start: int, end: int) -> bytes:
    """The bytes [start, end) of a file, however many reads that takes."""
    chunks = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            raise OSError(f"unexpected end of a sample-log spool at byte {start}")
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)


class SampleLogSpool:
    """The sample logs of a run being scanned (a :class:`assay.results.sources.SampleLogSink`): lines are spooled
    as records pass, :meth:`commit` puts them in place, :meth:`discard` removes every trace (on any error)."""

    def __init__(self, root: Path, tasks: Iterable[str]) -> None:
        self.root = root
        self.tasks = {name: _TaskSpool(root, name) for name in tasks}

    def reset(self) -> None:
        for spool in self.tasks.values():
            spool.discard()

    def add(self, task: str, rec: dict[str, Any], per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        self.tasks[task].add(rec, per_filter)

    def detach(self) -> dict[str, SpoolFiles]:
        """Every task's spooled files, handed to the caller (see :meth:`_TaskSpool.detach`)."""
        return {name: spool.detach() for name, spool in self.tasks.items()}

    def adopt(self, later: dict[str, SpoolFiles]) -> bool:
        """Append the spools of the records after this one's (as :meth:`detach` gave them), taking their files
        over; False when they cannot be appended (different filters): the caller deletes what is left."""
        return all(self.tasks[name].adopt(files) for name, files in later.items())

    def commit(self) -> None:
        """Write every task's ``samples_<task>.jsonl`` (an empty file for a task without records)."""
        for spool in self.tasks.values():
            spool.commit()

    def discard(self) -> None:
        self.reset()
