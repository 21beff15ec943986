"""The dataset file formats read into rows: JSONL (``.gz`` too), CSV/TSV and JSON, each row with the line it came
from, and the errors naming file and line. :mod:`assay.data.readers` picks the format; :mod:`assay.data.lazy` reads
JSONL rows on demand with the same checks."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from sys import intern
from typing import Any

from assay.errors import DataError
from assay.jsonerror import same_error
from assay.jsonfast import NOT_SURE, try_loads

Row = dict[str, Any]


def display_path(path: str | Path) -> str:
    """``path`` relative to the working directory when inside it (shorter messages), else absolute."""
    p = Path(path)
    try:
        rel = os.path.relpath(p)
    except ValueError:  # another drive on Windows
        return str(p)
    return rel if not rel.startswith("..") else str(p)


def read_text(path: Path, name: str) -> str:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix.lower() == ".gz" else path.read_bytes()
    except (OSError, EOFError) as err:
        raise DataError(f"{name}: cannot read: {err}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise DataError(f"{name}:{line}: not valid UTF-8 ({err.reason} at byte {err.start})") from None


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def iter_jsonl(path: Path, name: str | None = None, chunk: int = 8192) -> Iterator[tuple[list[Row], list[int]]]:
    """The rows of a JSONL file (``.gz`` too) and their line numbers, ``chunk`` rows at a time, read as a stream:
    the file's text is never held whole. A bad line raises DataError ``name:line: ...``, as :func:`parse_jsonl`."""
    name = name or display_path(path)
    rows: list[Row] = []
    lines: list[int] = []
    try:
        fh = gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb")  # noqa: SIM115
        with fh:
            for lineno, raw in enumerate(fh, 1):
                obj = jsonl_row(raw, lineno, name)
                if obj is None:
                    continue
                rows.append({intern(k): v for k, v in obj.items()})  # one copy of each field name, not one per row
                lines.append(lineno)
                if len(rows) >= chunk:
                    yield rows, lines
                    rows, lines = [], []
    except (OSError, EOFError) as err:
        raise DataError(f"{name}: cannot read: {err}") from None
    if rows:
        yield rows, lines


def jsonl_row(raw: bytes, lineno: int, name: str) -> Row | None:
    """Line ``lineno`` of a JSONL file as its object (None for a blank line); a bad line raises DataError
    ``name:line: ...`` (not UTF-8, not JSON, not an object). A UTF-8 BOM on line 1 is allowed."""
    obj = try_loads(raw[3:] if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else raw)
    if obj is not NOT_SURE:  # orjson read it (so it is UTF-8, and not blank) as json.loads reads it
        if type(obj) is not dict:
            raise DataError(f"{name}:{lineno}: expected a JSON object on each line, got {_kind(obj)}")
        return obj
    try:
        line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{name}:{lineno}: not valid UTF-8 ({err.reason} at byte {err.start})") from None
    if not line or line.isspace():
        return None
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        err = same_error(err)  # worded as on Python 3.13+, whichever runs
        raise DataError(f"{name}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
    if type(obj) is not dict:
        raise DataError(f"{name}:{lineno}: expected a JSON object on each line, got {_kind(obj)}")
    return obj


def parse_jsonl(text: str, name: str) -> tuple[list[Row], list[int]]:
    """One JSON object per line; blank lines are skipped. A bad line raises DataError ``name:line: ...``."""
    rows: list[Row] = []
    lines: list[int] = []
    loads = json.loads
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line or line.isspace():
            continue
        try:
            obj = loads(line)
        except json.JSONDecodeError as err:
            err = same_error(err)  # worded as on Python 3.13+, whichever runs
            raise DataError(f"{name}:{lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
        if type(obj) is not dict:
            raise DataError(f"{name}:{lineno}: expected a JSON object on each line, got {_kind(obj)}")
        rows.append(obj)
        lines.append(lineno)
    return rows, lines


def parse_csv(text: str, name: str, delimiter: str = ",") -> tuple[list[Row], list[int]]:
    """A header row then one row per record (values are strings); ragged rows raise DataError naming the line."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[Row] = []
    lines: list[int] = []
    header: list[str] | None = None
    header_line = 0
    prev = 0
    try:
        for record in reader:
            start, prev = prev + 1, reader.line_num
            if not record:  # blank line
                continue
            if header is None:
                header, header_line = record, start
                seen: set[str] = set()
                for col in header:
                    if col in seen:
                        raise DataError(f"{name}:{start}: duplicate column {col!r} in the header")
                    seen.add(col)
                continue
            if len(record) != len(header):
                raise DataError(
                    f"{name}:{start}: expected {len(header)} fields (as in the header on line {header_line}), "
                    f"got {len(record)}"
                )
            rows.append(dict(zip(header, record, strict=True)))
            lines.append(start)
    except csv.Error as err:
        raise DataError(f"{name}:{reader.line_num}: malformed CSV: {err}") from None
    if header is None:
        raise DataError(f"{name}: empty CSV file (no header row)")
    return rows, lines


def parse_json(text: str, name: str) -> list[Row]:
    """A JSON array of objects, or an object holding one under ``data`` or ``rows``."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        err = same_error(err)  # worded as on Python 3.13+, whichever runs
        raise DataError(f"{name}:{err.lineno}: invalid JSON: {err.msg} (column {err.colno})") from None
    where = ""
    if isinstance(doc, dict):
        key = next((k for k in ("data", "rows") if isinstance(doc.get(k), list)), None)
        if key is None:
            raise DataError(f"{name}: expected a JSON array of objects, or an object with a 'data' or 'rows' array")
        doc, where = doc[key], f" of {key!r}"
    if not isinstance(doc, list):
        raise DataError(f"{name}: expected a JSON array of objects, got {_kind(doc)}")
    for i, row in enumerate(doc):
        if type(row) is not dict:
            raise DataError(f"{name}: row {i + 1} (item {i}{where}): expected an object, got {_kind(row)}")
    return doc
