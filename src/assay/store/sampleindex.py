"""Reading ``samples.jsonl``: its lines one at a time, the offset index (a sample written twice keeps its last
record), records streamed in file or doc_id order, and what a resume needs (finished and errored keys, error
counts). Nothing here holds the records of a run; :mod:`assay.store.rundir` re-exports it all."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import pydantic_core
from pydantic import ValidationError

from assay.errors import DataError
from assay.jsonfast import NOT_SURE, loads_text, try_loads
from assay.record import SampleRecord
from assay.store.growth import Abandoned, Growth

if TYPE_CHECKING:  # numpy loads when a run folder is indexed, not when the runner is imported (start-up time)
    import numpy as np
    import numpy.typing as npt

SAMPLES = "samples.jsonl"
_BLOCK = 1 << 16  # positions turned into Python ints at a time


def iter_sample_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, parsed object) for each complete line of a samples file."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                return  # torn tail: not a finished sample
            if not line.strip():
                continue
            try:
                yield lineno, loads_text(line, json.loads)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{lineno}: corrupt sample line: {err.msg}") from None


_JSON_STR = rb'("(?:[^"\\]|\\.)*")'
_KEY_PREFIX = re.compile(  # the first keys of a record as SampleRecord.model_dump_json (or json.dumps) writes them
    rb'\{\s*"task"\s*:\s*' + _JSON_STR + rb'\s*,\s*"task_hash"\s*:\s*"[^"\\]*"\s*,\s*"doc_id"\s*:\s*-?\d+\s*,'
    rb'\s*"sample_id"\s*:\s*' + _JSON_STR
)


@dataclass
class SampleIndex:
    """Where each finished sample of ``samples.jsonl`` starts: one byte offset and line number per kept line.

    A sample written twice (a resume) keeps its last line; a torn last line (a crash mid-write) is left out and
    counted. Two int64 arrays, so a run of millions of samples is indexed in a few tens of MB.
    """

    path: Path
    offsets: npt.NDArray[np.int64]
    linenos: npt.NDArray[np.int64]
    torn: int = 0

    def __len__(self) -> int:
        return int(self.offsets.size)


def _json_string(quoted: bytes) -> str:
    """A JSON string literal's value (without the JSON parser when it has no escapes)."""
    if b"\\" not in quoted:
        return quoted[1:-1].decode("utf-8")
    value = json.loads(quoted.decode("utf-8"))
    return value if isinstance(value, str) else str(value)


def _line_key(raw: bytes) -> tuple[Any, Any] | None:
    """The (task, sample_id) of a line (None when the line is not a JSON object)."""
    found = _KEY_PREFIX.match(raw, 0, 4096)
    try:
        if found is not None:  # the layout SampleRecord.model_dump_json writes: no need to parse the whole line
            return _json_string(found.group(1)), _json_string(found.group(2))
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return (obj.get("task"), obj.get("sample_id")) if isinstance(obj, dict) else None


def _corrupt(path: Path, lineno: int, raw: bytes) -> DataError:
    try:
        SampleRecord.model_validate_json(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(line)"
        return DataError(f"{path}:{lineno}: invalid sample record at {where}: {first['msg']}")
    return DataError(f"{path}:{lineno}: corrupt sample line")


def index_samples(run_dir: Path) -> SampleIndex:
    """Index ``samples.jsonl`` in one pass over its bytes, holding no record (see :class:`SampleIndex`).

    A line that is not JSON is a DataError naming file and line, unless it is the last one (torn by a crash).
    """
    import numpy as np

    path = run_dir / SAMPLES
    empty = np.zeros(0, dtype=np.int64)
    if not path.is_file():
        return SampleIndex(path, empty, empty, 0)
    offsets, linenos, hashes = array("q"), array("q"), array("q")
    torn = 0
    pos = 0
    with open(path, "rb") as fh:
        lineno = 0
        pending: tuple[bytes, int, int] | None = None  # the last non-blank line, checked once the file ends
        for raw in fh:
            lineno += 1
            start, pos = pos, pos + len(raw)
            if raw.isspace():  # a blank line (isspace copies nothing, unlike strip)
                continue
            if pending is not None:
                _add_line(pending, path, offsets, linenos, hashes)
            pending = (raw, start, lineno)
        if pending is not None:
            try:
                SampleRecord.model_validate_json(pending[0])
                _add_line(pending, path, offsets, linenos, hashes)
            except ValidationError:
                torn = 1  # the last line was cut mid-write by a crash: not a finished sample
    off = np.frombuffer(offsets, dtype=np.int64).copy() if offsets else empty
    num = np.frombuffer(linenos, dtype=np.int64).copy() if linenos else empty
    dropped = rewritten_lines(path, off, np.frombuffer(hashes, dtype=np.int64) if hashes else empty)
    if dropped.size:
        keep = np.ones(off.size, dtype=bool)
        keep[dropped] = False
        off, num = off[keep], num[keep]
    return SampleIndex(path, off, num, torn)


def _add_line(
    line: tuple[bytes, int, int], path: Path, offsets: array[int], linenos: array[int], hashes: array[int]
) -> None:
    raw, start, lineno = line
    key = _line_key(raw)
    if key is None:
        raise _corrupt(path, lineno, raw)
    offsets.append(start)
    linenos.append(lineno)
    hashes.append(hash(key))


def rewritten_lines(path: Path, offsets: npt.NDArray[np.int64], hashes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Positions of lines that a later line of the same sample replaces (equal hashes, then keys compared)."""
    import numpy as np

    none = np.zeros(0, dtype=np.int64)
    if hashes.size < 2:
        return none
    order = np.argsort(hashes, kind="stable")
    ranked = hashes[order]
    same = np.flatnonzero(ranked[1:] == ranked[:-1])
    if not same.size:
        return none
    candidates = np.unique(np.concatenate([order[same], order[same + 1]]))
    last: dict[tuple[Any, Any], int] = {}
    dropped: list[int] = []
    with open(path, "rb") as fh:
        for i in candidates:  # ascending: file order
            fh.seek(int(offsets[i]))
            key = _line_key(fh.readline())
            if key is None:
                continue
            before = last.get(key)
            if before is not None:
                dropped.append(before)
            last[key] = int(i)
    return np.asarray(dropped, dtype=np.int64)


def iter_records(source: Path | SampleIndex) -> Iterator[SampleRecord]:
    """Every finished sample of a run folder (or of an index of one), one at a time, in file order.

    Memory stays flat in the size of the run; a bad line is a DataError naming file and line.
    """
    for _, record in iter_indexed(source if isinstance(source, SampleIndex) else index_samples(source)):
        yield record


def iter_indexed(index: SampleIndex, order: npt.NDArray[np.int64] | None = None) -> Iterator[tuple[int, SampleRecord]]:
    """(position in the index, record) for each indexed line, in file order or in the positions of ``order``."""
    if not len(index):
        return
    with open(index.path, "rb") as fh:
        if order is None:
            wanted = 0
            offsets = index.offsets
            pos = 0
            for raw in fh:
                if wanted < offsets.size and pos == offsets[wanted]:
                    yield wanted, parse_record(raw, index.path, int(index.linenos[wanted]))
                    wanted += 1
                pos += len(raw)
            return
        for i in order:
            fh.seek(int(index.offsets[i]))
            yield int(i), parse_record(fh.readline(), index.path, int(index.linenos[i]))


def iter_dicts(index: SampleIndex) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position in the index, parsed JSON object) of each indexed line, in file order, without validating it as a
    SampleRecord (several times faster); a line that is not a JSON object is a DataError naming file, line and key.
    """
    if not len(index):
        return
    offsets = array("q")
    offsets.frombytes(index.offsets.tobytes())  # indexing an array is several times cheaper than a numpy one
    n = len(offsets)
    with open(index.path, "rb", buffering=1 << 20) as fh:
        wanted = 0
        pos = 0
        for raw in fh:
            if pos == offsets[wanted]:
                yield wanted, _parse_dict(raw, index.path, int(index.linenos[wanted]))
                wanted += 1
                if wanted == n:
                    return
            pos += len(raw)


def iter_dicts_at(index: SampleIndex, order: npt.NDArray[np.int64]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position in the index, parsed JSON object) of the lines at the positions of ``order``, in that order, not
    validated as SampleRecords (as :func:`iter_dicts`). A 1 MiB buffer serves the next line without a read when
    it follows the last one (a task's records in doc_id order mostly do)."""
    if not len(index) or not len(order):
        return
    with open(index.path, "rb", buffering=1 << 20) as fh:
        at = 0
        for lo in range(0, len(order), _BLOCK):  # positions as Python ints a block at a time: memory stays flat
            part = order[lo : lo + _BLOCK]
            offsets, linenos = index.offsets[part].tolist(), index.linenos[part].tolist()
            for i, offset, lineno in zip(part.tolist(), offsets, linenos, strict=True):
                if offset != at:
                    fh.seek(offset)  # within the buffer when the line is near: no system call
                raw = fh.readline()
                at = offset + len(raw)
                yield i, _parse_dict(raw, index.path, lineno)


def _parse_dict(raw: bytes, path: Path, lineno: int) -> dict[str, Any]:
    obj = try_loads(raw)
    if obj is NOT_SURE:  # pydantic_core.from_json's value or refusal, as before
        try:
            obj = pydantic_core.from_json(raw)
        except ValueError:
            obj = None
    if type(obj) is not dict:
        parse_record(raw, path, lineno)  # raises the DataError naming the bad key
        raise DataError(f"{path}:{lineno}: corrupt sample line")
    return obj


def _followed_lines(fh: BinaryIO, growth: Growth | None) -> Iterator[bytes]:
    """The lines of ``fh`` as ``for raw in fh`` gives them; with ``growth``, the file is followed as it grows:
    only the bytes the writer says are written whole are read, and the lines end once the file is complete."""
    if growth is None:
        yield from fh
        return
    pos = 0
    size: int | None = growth.size
    while size is not None:
        for raw in iter(fh.readline, b""):
            if growth.state == "abandoned":  # the run stopped: no need to read what is left behind
                raise Abandoned("the samples file was abandoned by its writer")
            end = pos + len(raw)
            if end > size or not raw.endswith(b"\n"):  # past what the writer vouches for: read it again later
                fh.seek(pos)
                break
            pos = end
            yield raw
        size = growth.wait(size)
    yield from fh  # complete: the rest is read as a file that no longer grows


class SampleStream:
    """``samples.jsonl`` read once: each finished line parsed to a dict and indexed as it passes, so a results
    pass needs no separate indexing pass. Iterate it for (position, dict) as :func:`iter_dicts` would give them;
    afterwards :attr:`torn` and :meth:`index` are what :func:`index_samples` gives. When a sample was written twice
    (:attr:`rewritten`), the pass saw every copy: read again through :meth:`index`, which keeps the last.

    With ``follow`` (the whole file only), it is read while a run appends to it (a resumed run's lines first),
    waiting on the writer's :class:`~assay.store.growth.Growth`; the pass ends once the writer marks it complete."""

    def __init__(self, run_dir: Path, start: int = 0, end: int | None = None, follow: Growth | None = None) -> None:
        if follow is not None and (start or end is not None):
            raise ValueError("a followed samples file is read whole, not in a byte range")
        self.path = run_dir / SAMPLES
        self.start, self.end = start, end  # a byte range starting and (unless None: the file's end) ending a line
        self.follow = follow
        self.torn = 0
        self.rewritten = False
        self._offsets, self._linenos, self._hashes = array("q"), array("q"), array("q")

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        self.torn, self.rewritten = 0, False
        self._offsets, self._linenos, self._hashes = array("q"), array("q"), array("q")
        if self.follow is None and not self.path.is_file():
            return
        offsets, linenos, hashes = self._offsets, self._linenos, self._hashes
        path, end = self.path, self.end
        pending: tuple[bytes, int, int] | None = None  # the last non-blank line, checked once the file ends
        with open(path, "rb", buffering=1 << 20) as fh:
            fh.seek(self.start)
            lineno, pos = 0, self.start  # line numbers count from the range's start
            for raw in _followed_lines(fh, self.follow):
                if end is not None and pos >= end:
                    break
                lineno += 1
                start, pos = pos, pos + len(raw)
                if raw.isspace():
                    continue
                if pending is not None:
                    obj = _parse_dict(pending[0], path, pending[2])
                    offsets.append(pending[1])
                    linenos.append(pending[2])
                    hashes.append(hash((obj.get("task"), obj.get("sample_id"))))
                    yield len(offsets) - 1, obj
                pending = (raw, start, lineno)
        if pending is not None:
            try:
                if end is None:  # the file's last line may be torn; a range's last line ends before the next range
                    SampleRecord.model_validate_json(pending[0])
            except ValidationError:
                self.torn = 1  # the last line was cut mid-write by a crash: not a finished sample
            else:
                obj = _parse_dict(pending[0], path, pending[2])
                offsets.append(pending[1])
                linenos.append(pending[2])
                hashes.append(hash((obj.get("task"), obj.get("sample_id"))))
                yield len(offsets) - 1, obj
        self.rewritten = bool(self._dropped().size)

    def keys_read(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(byte offset, hash of task and sample id) of each line read: what finds a sample written twice when a
        file is read in ranges (the hashes are this interpreter's, equal in processes forked from it)."""
        import numpy as np

        return np.frombuffer(self._offsets, dtype=np.int64).copy(), np.frombuffer(self._hashes, dtype=np.int64).copy()

    def _dropped(self) -> npt.NDArray[np.int64]:
        import numpy as np

        empty = np.zeros(0, dtype=np.int64)
        off = np.frombuffer(self._offsets, dtype=np.int64) if self._offsets else empty
        return rewritten_lines(self.path, off, np.frombuffer(self._hashes, dtype=np.int64) if self._hashes else empty)

    def index(self) -> SampleIndex:
        """The index of the lines read (after a full pass): the last copy of each sample, as index_samples."""
        import numpy as np

        empty = np.zeros(0, dtype=np.int64)
        off = np.frombuffer(self._offsets, dtype=np.int64).copy() if self._offsets else empty
        num = np.frombuffer(self._linenos, dtype=np.int64).copy() if self._linenos else empty
        dropped = self._dropped()
        if dropped.size:
            keep = np.ones(off.size, dtype=bool)
            keep[dropped] = False
            off, num = off[keep], num[keep]
        return SampleIndex(self.path, off, num, self.torn)

    def explain(self, position: int) -> None:
        """Raise the DataError naming what is wrong with the line at ``position`` (of the pass under way)."""
        with open(self.path, "rb") as fh:
            fh.seek(self._offsets[position])
            parse_record(fh.readline(), self.path, self._linenos[position])


def parse_record(raw: bytes, path: Path, lineno: int) -> SampleRecord:
    """One line of samples.jsonl as a record; a DataError names file, line and the bad key."""
    try:
        return SampleRecord.model_validate_json(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(line)"
        raise DataError(f"{path}:{lineno}: invalid sample record at {where}: {first['msg']}") from None


def read_samples(run_dir: Path) -> tuple[list[SampleRecord], int]:
    """Every finished sample of a run folder in a list, and how many torn lines (a crash mid-write) were skipped.

    For small runs and tests: large runs stream with :func:`iter_records`. A sample written twice keeps its last
    record; a bad line elsewhere is a DataError naming file and line.
    """
    index = index_samples(run_dir)
    return list(iter_records(index)), index.torn


def read_records(run_dir: Path) -> list[SampleRecord]:
    """Every finished sample of a run folder, in the order written (a list: see :func:`iter_records`)."""
    return read_samples(run_dir)[0]


def finished_keys(run_dir: Path) -> set[tuple[str, str]]:
    """(task, sample_id) of every finished sample, for resume; a duplicate line is a corrupt run."""
    path = run_dir / SAMPLES
    done: set[tuple[str, str]] = set()
    if not path.exists():
        return done
    for lineno, obj in iter_sample_lines(path):
        key = (str(obj.get("task")), str(obj.get("sample_id")))
        if key in done:
            raise DataError(f"{path}:{lineno}: sample {key[1]!r} of task {key[0]!r} appears twice")
        done.add(key)
    return done


def errored_keys(run_dir: Path) -> set[tuple[str, str]]:
    """(task, sample_id) of finished samples where a model request failed (for ``--retry-errors``)."""
    path = run_dir / SAMPLES
    if not path.exists():
        return set()
    return {
        (str(obj.get("task")), str(obj.get("sample_id")))
        for _, obj in iter_sample_lines(path)
        if any(obj.get("response_errors") or [])
    }


def _verdict_errored(obj: dict[str, Any]) -> bool:
    for filtered in (obj.get("filters") or {}).values():
        for verdicts in (filtered.get("verdicts") or {}).values():
            if any(isinstance(v, dict) and v.get("error") for v in verdicts):
                return True
    return False


def error_counts(run_dir: Path, *, exclude: set[tuple[str, str]] | None = None) -> tuple[int, int, int]:
    """(finished samples, samples whose model request failed, other samples with an error verdict) of a run
    folder, leaving out ``exclude`` (samples about to be asked again): a resumed run's error rate covers them all."""
    path = run_dir / SAMPLES
    done = model = evaluator = 0
    if not path.exists():
        return 0, 0, 0
    for _, obj in iter_sample_lines(path):
        if exclude and (str(obj.get("task")), str(obj.get("sample_id"))) in exclude:
            continue
        done += 1
        if any(obj.get("response_errors") or []):
            model += 1
        elif _verdict_errored(obj):
            evaluator += 1
    return done, model, evaluator
