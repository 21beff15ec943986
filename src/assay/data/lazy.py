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
from typing import Any, overload

from assay.data.formats import jsonl_row
from assay.errors import DataError
from assay.jsonfast import loads

Row = dict[str, Any]
BLOCK_ROWS = 4096  # rows read together when iterating


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
        self.content_hash = self._scan(visit)
        st = path.stat()
        self._stamp = (st.st_size, st.st_mtime_ns)
        self._fd: int | None = None

    def _scan(self, visit: Callable[[int, Row], None] | None) -> str:
        """Validate every line as :func:`assay.data.formats.iter_jsonl` does; record offsets; hash as ``rows_hash``;
        show each row with its index to ``visit`` (whoever checks the rows, so that they are parsed once)."""
        from assay.hashing import canonical_bytes

        digest = hashlib.sha256()
        starts, lengths, lines = self._starts, self._lengths, self.lines
        pos, lineno = 0, 0
        try:
            with open(self.path, "rb") as fh:
                for raw in fh:
                    lineno += 1
                    begin, pos = pos, pos + len(raw)
                    obj = jsonl_row(raw, lineno, self.name)
                    if obj is None:
                        continue
                    if visit is not None:
                        visit(len(starts), obj)
                    skip = 3 if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else 0  # a UTF-8 BOM
                    starts.append(begin + skip)
                    lengths.append(len(raw) - skip)
                    lines.append(lineno)
                    digest.update(canonical_bytes(obj))
                    digest.update(b"\n")
        except OSError as err:
            raise DataError(f"{self.name}: cannot read: {err}") from None
        return digest.hexdigest()

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
