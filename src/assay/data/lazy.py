"""The rows of a large JSONL file, parsed on demand, so that memory stays flat in the size of the dataset.

One validating pass (the same errors, naming file and line, as the eager reader) records where each row starts,
its length and its line, and hashes the rows on the way; afterwards a row is read back with one ``pread`` and
parsed when asked for, and iteration reads the file in large blocks. 20 bytes a row stay in memory, where a
parsed row of a typical QA dataset costs about 750 (measured: 1M rows, 144 MB of JSONL, 750 MB as dicts).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol, cast, overload, runtime_checkable

from assay.errors import DataError
from assay.forking import Forked, may_fork
from assay.jsonfast import loads

Row = dict[str, Any]
BLOCK_ROWS = 4096  # rows read together when iterating


PARALLEL_MIN_BYTES = 32 << 20  # a file this large is scanned by two processes, half each


@runtime_checkable
class Splittable(Protocol):
    """A row visitor whose findings over a later stretch of the rows (a forked copy of it shown them) can be
    added to its own: :meth:`findings` in the copy, :meth:`merge` here."""

    def __call__(self, index: int, row: Row) -> None: ...

    def findings(self) -> Any: ...

    def merge(self, findings: Any) -> None: ...


class _ScanPart(NamedTuple):
    """What a forked helper found in the second half: offsets, lengths and lines of its rows, their canonical
    text (what the content hash reads, in order) and its visitor's findings."""

    starts: array[int]
    lengths: array[int]
    lines: array[int]
    hashed: bytes
    visited: Any


class _Collect:
    """A digest stand-in that keeps what it is fed (a helper's canonical text, hashed by the parent in order)."""

    def __init__(self) -> None:
        self.kept = bytearray()  # one buffer, not an object a row

    def update(self, data: bytes) -> None:
        self.kept += data


def _scan_half(rows: JsonlRows, start: int, visit: Callable[[int, Row], None] | None) -> _ScanPart | None:
    """In a forked child: scan the file from byte ``start`` (every line before it a row, as :meth:`JsonlRows._half`
    made sure) with fresh offsets; None on a bad line, which the parent then finds and names itself."""
    with open(rows.path, "rb") as fh:
        before = fh.read(start).count(b"\n")
    rows._starts, rows._lengths, rows.lines = array("q"), array("I"), array("q")
    rows._first_row = before
    collected = _Collect()
    try:
        rows._scan_range(collected, visit, start, None, before)
    except DataError:
        return None
    findings = cast(Splittable, visit).findings() if visit is not None else None
    return _ScanPart(rows._starts, rows._lengths, rows.lines, bytes(collected.kept), findings)


class JsonlRows(Sequence[Row]):
    """A read-only sequence of a JSONL file's rows; ``lines`` are their 1-based line numbers.

    Each access parses the row again (a fresh dict: mutating it changes nothing). The file must not change while
    the rows are in use: its size and modification time are checked at every block read.
    """

    def __init__(self, path: Path, name: str, visit: Callable[[int, Row], None] | None = None) -> None:
        self.path = path
        self.name = name
        self._starts = array("q")
        self._lengths = array("I")
        self.lines = array("q")
        self._first_row = 0  # the index of the first row recorded here (a forked helper's half starts later)
        self.content_hash = self._scan(visit)
        st = path.stat()
        self._stamp = (st.st_size, st.st_mtime_ns)
        self._fd: int | None = None

    def _scan(self, visit: Callable[[int, Row], None] | None) -> str:
        """Validate every line as :func:`assay.data.readers.iter_jsonl` does; record offsets; hash as ``rows_hash``;
        show each row with its index to ``visit`` (whoever checks the rows, so that they are parsed once).

        A large file's second half is scanned meanwhile by a forked helper (:meth:`_half`), whose offsets, hashed
        text and visitor's findings (:class:`Splittable`) are added after this process's; any trouble there and
        this process scans that half itself, so errors are the serial pass's."""
        digest = hashlib.sha256()
        half = self._half(visit)
        helper = Forked.start(_scan_half, self, half, visit) if half is not None else None
        try:
            lines = self._scan_range(digest, visit, 0, half if helper is not None else None)
            if half is not None and helper is not None:
                part = helper.result()
                if not isinstance(part, _ScanPart):  # this process scans that half too
                    self._scan_range(digest, visit, half, None, lines)
                else:
                    self._starts.extend(part.starts)
                    self._lengths.extend(part.lengths)
                    self.lines.extend(part.lines)
                    digest.update(part.hashed)
                    if visit is not None:
                        cast(Splittable, visit).merge(part.visited)
        finally:
            if helper is not None:
                helper.close()
        return digest.hexdigest()

    def _scan_range(
        self, digest: Any, visit: Callable[[int, Row], None] | None, start: int, end: int | None, before: int = 0
    ) -> int:
        """Scan the lines from byte ``start`` (where a line begins; line ``before + 1``) to ``end`` (just past a
        newline; None: the end of the file), adding to the offsets already recorded; how many lines were read."""
        from assay.data.readers import jsonl_row
        from assay.hashing import canonical_bytes

        starts, lengths, lines = self._starts, self._lengths, self.lines
        first = self._first_row
        pos, lineno = start, before
        try:
            with open(self.path, "rb") as fh:
                fh.seek(start)
                for raw in fh:
                    if end is not None and pos >= end:
                        break
                    lineno += 1
                    begin, pos = pos, pos + len(raw)
                    obj = jsonl_row(raw, lineno, self.name)
                    if obj is None:
                        continue
                    if visit is not None:
                        visit(first + len(starts), obj)
                    skip = 3 if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else 0  # a UTF-8 BOM
                    starts.append(begin + skip)
                    lengths.append(len(raw) - skip)
                    lines.append(lineno)
                    digest.update(canonical_bytes(obj))
                    digest.update(b"\n")
        except OSError as err:
            raise DataError(f"{self.name}: cannot read: {err}") from None
        return lineno

    def _half(self, visit: Callable[[int, Row], None] | None) -> int | None:
        """Where a forked helper starts scanning (a line's start near the middle), or None: a file under
        :data:`PARALLEL_MIN_BYTES`, a visitor whose findings cannot be added up (:class:`Splittable`), forking not
        safe here (:func:`may_fork`), or a first half where a line does not begin with ``{`` (a blank line would
        leave the helper unsure of its rows' indices)."""
        if visit is not None and not isinstance(visit, Splittable):
            return None
        try:
            size = self.path.stat().st_size
            if size < PARALLEL_MIN_BYTES or not may_fork():
                return None
            with open(self.path, "rb") as fh:
                fh.seek(size // 2)
                half = size // 2 + len(fh.readline())
                fh.seek(0)
                head = fh.read(half)
        except OSError:
            return None  # the serial pass says why
        if half >= size or not head.endswith(b"\n"):
            return None
        if head.startswith(b"\xef\xbb\xbf"):
            head = head[3:]
        if not head.startswith(b"{") or head.count(b"\n{") != head.count(b"\n") - 1:
            return None
        return half

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> Row: ...
    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...
    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self._starts)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("row index out of range")
        raw = os.pread(self._open(), self._lengths[index], self._starts[index])
        return self._parse(raw, index)

    def __iter__(self) -> Iterator[Row]:
        for start in range(0, len(self), BLOCK_ROWS):
            yield from self.block(start, min(start + BLOCK_ROWS, len(self)))

    def block(self, first: int, stop: int) -> list[Row]:
        """Rows ``first`` to ``stop - 1``, read with one system call."""
        if first >= stop:
            return []
        begin = self._starts[first]
        end = self._starts[stop - 1] + self._lengths[stop - 1]
        buf = os.pread(self._open(), end - begin, begin)
        starts, lengths = self._starts, self._lengths
        return [self._parse(buf[starts[i] - begin : starts[i] - begin + lengths[i]], i) for i in range(first, stop)]

    def _parse(self, raw: bytes, index: int) -> Row:
        try:
            row = loads(raw, json.loads)
        except ValueError:
            row = None
        if type(row) is not dict:
            raise DataError(f"{self.name}:{self.lines[index]}: the file changed while the run was reading it")
        return row

    def _open(self) -> int:
        st = self.path.stat() if self._fd is None else os.fstat(self._fd)
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise DataError(f"{self.name}: the file changed while the run was reading it")
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        return self._fd

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_fd": None}  # an open file is not sent with the rows (Ray, multiprocessing)

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __repr__(self) -> str:
        return f"JsonlRows({self.name!r}, {len(self)} rows)"


def is_lazy(rows: Sequence[Any]) -> bool:
    """True for rows read on demand (whose copies are not worth holding in a list)."""
    return isinstance(rows, JsonlRows)
