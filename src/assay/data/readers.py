"""Dataset readers: JSONL, CSV/TSV, JSON, inline rows and Hugging Face datasets, each row remembering where it came
from (the formats themselves: :mod:`assay.data.formats`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from assay.data.formats import Row, display_path, iter_jsonl, parse_csv, parse_json, read_text
from assay.data.lazy import JsonlRows
from assay.data.spec import DatasetSpec
from assay.errors import DataError

# JSONL files from this size on are read on demand (:class:`JsonlRows`), so a run's memory does not grow with its
# dataset: a parsed row costs 3-5 times its bytes (25k multiple-choice rows: 6 MB of JSONL, 21 MB as dicts), and
# reading on demand cost no time there (0.13 s to scan and iterate against 0.14 s to parse). Smaller files, where
# the rows cost at most a few MB, are parsed once.
LAZY_MIN_BYTES = 1 << 20


@dataclass(frozen=True)
class Dataset:
    """Rows read from one source, with where each came from (for error messages) and a content hash."""

    rows: Sequence[Row]  # a list, or for a large JSONL file its rows read on demand (:class:`JsonlRows`)
    source: str  # display name: a file path, "task.yaml" for inline rows, "hf:repo[split]"
    lines: Sequence[int] | None = field(default=None, repr=False)  # 1-based line of each row, where known

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, index: int) -> str:
        """Where row ``index`` came from: ``data.jsonl:17`` where the line is known, else ``data.json: row 3``."""
        if self.lines is not None and 0 <= index < len(self.lines) and self.lines[index] > 0:
            return f"{self.source}:{self.lines[index]}"
        return f"{self.source}: row {index + 1}"

    @cached_property
    def content_hash(self) -> str:
        """sha256 over the rows' canonical JSON: the same rows hash the same from any file format or key order."""
        from assay.hashing import rows_hash

        if isinstance(self.rows, JsonlRows):
            return self.rows.content_hash  # hashed as the file was checked
        return rows_hash(self.rows)


def read_rows(
    source: str | Path | DatasetSpec | list[Row] | dict[str, Any], base_dir: str | Path | None = None
) -> list[Row]:
    """The rows of a dataset file, inline list, spec dict or :class:`DatasetSpec` (relative paths from ``base_dir``)."""
    return list(read_dataset(as_spec(source), base_dir).rows)


def as_spec(source: str | Path | DatasetSpec | list[Row] | dict[str, Any]) -> DatasetSpec:
    """A :class:`DatasetSpec` from a path, a list of rows, a spec dict or a spec."""
    if isinstance(source, DatasetSpec):
        return source
    if isinstance(source, str | Path):
        return DatasetSpec(path=str(source))
    if isinstance(source, list):
        return DatasetSpec(rows=source)
    if isinstance(source, dict):
        return DatasetSpec(**source)
    raise TypeError(f"a dataset is a path, a list of rows, a spec dict or a DatasetSpec, not {type(source).__name__}")


def read_dataset(
    spec: DatasetSpec,
    base_dir: str | Path | None = None,
    *,
    inline_source: str = "<inline rows>",
    inline_lines: list[int] | None = None,
    visit: Callable[[int, Row], None] | None = None,
) -> Dataset:
    """Read a dataset. Malformed content raises DataError naming the file and line.

    Rows read on demand (a large JSONL file) are shown to ``visit`` (index, row) as the file is checked."""
    spec = spec.resolve(base_dir)
    fmt = spec.resolved_format()
    if fmt == "inline":
        assert spec.rows is not None
        return Dataset(list(spec.rows), inline_source, inline_lines)
    if fmt == "hf":
        from assay.data.hf import hf_rows

        hf, source = hf_rows(spec)
        return Dataset(hf, source, None)
    assert spec.path is not None
    path = Path(spec.path)
    name = display_path(path)
    if not path.is_file():
        raise DataError(f"{name}: dataset file not found" if not path.exists() else f"{name}: not a file")
    if fmt == "jsonl" and path.suffix.lower() != ".gz" and path.stat().st_size >= LAZY_MIN_BYTES:
        lazy = JsonlRows(path, name, visit)
        return Dataset(lazy, name, lazy.lines)
    if fmt == "jsonl":
        rows: list[Row] = []
        lines: list[int] = []
        for chunk_rows, chunk_lines in iter_jsonl(path, name):
            rows.extend(chunk_rows)
            lines.extend(chunk_lines)
        return Dataset(rows, name, lines)
    text = read_text(path, name)
    if fmt in ("csv", "tsv"):
        delimiter = spec.delimiter or ("\t" if fmt == "tsv" else ",")
        csv_rows, csv_lines = parse_csv(text, name, delimiter)
        return Dataset(csv_rows, name, csv_lines)
    return Dataset(parse_json(text, name), name, None)
