"""The files a promptfoo config names with ``file://``: found relative to the folder of the file that names them
(globs in sorted order), read as promptfoo reads them (YAML 1.2, JSON, JSONL, CSV with a BOM and
``PROMPTFOO_CSV_DELIMITER``), every mapping remembering its file and line (a CSV row: the line it starts on)."""

from __future__ import annotations

import csv
import glob
import io
import json
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList, load_yaml12

FILE = "file://"
GLOB = frozenset("*?[]{}")
CODE = (".py", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")


def strip_file(ref: str) -> str:
    return ref[len(FILE) :] if ref.startswith(FILE) else ref


def split_function(spec: str) -> tuple[str, str | None]:
    """``x.py:fn`` -> (``x.py``, ``fn``); a path without a function name -> (path, None)."""
    head, sep, tail = spec.rpartition(":")
    if sep and len(head) > 1 and head.lower().endswith(CODE) and tail and "/" not in tail:
        return head, tail
    return spec, None


def tag(value: Any, source: str, line: int | None) -> Any:
    """Plain JSON data as LineDict/LineList containers, all at ``line`` of ``source``."""
    if isinstance(value, dict):
        out = LineDict(source=source, line=line)
        for k, v in value.items():
            out[k] = tag(v, source, line)
            out.lines[k] = line
        return out
    if isinstance(value, list):
        seq = LineList((tag(v, source, line) for v in value), source=source, line=line)
        seq.lines.extend([line] * len(value))
        return seq
    return value


class Files:
    """File references of one config, relative to ``base`` (the folder of the file that names them)."""

    def __init__(self, base: Path, env: dict[str, str] | None = None) -> None:
        self.base = base
        self.env = env or {}

    def under(self, base: Path) -> Files:
        return Files(base, self.env)

    def paths(self, ref: str, at: At, *, allow_none: bool = False) -> list[Path]:
        """The files a reference names (a glob may name several, sorted); none found is refused naming ``at``."""
        spec = strip_file(ref)
        if any(ch in GLOB for ch in spec):
            pattern = str(self.base / spec)  # an absolute spec stays itself
            found = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
            if not found and not allow_none:
                raise at.error(f"{ref!r}: no file matches (looked in {self.base})")
            return found
        path = (self.base / spec).resolve()
        if not path.is_file():
            raise at.error(f"{ref!r}: file not found ({path})")
        return [path]

    def code(self, ref: str, at: At) -> tuple[Path, str | None]:
        """A python/javascript file reference (``file://x.py`` or ``file://x.py:fn``), checked to exist."""
        spec, function = split_function(strip_file(ref))
        path = (self.base / spec).resolve()
        if not path.is_file():
            raise at.error(f"{ref!r}: file not found ({path})")
        return path, function

    def text(self, path: Path, at: At) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise at.error(f"cannot read {path}: {err}") from None

    def load(self, path: Path, at: At) -> Any:
        """A file's content: YAML/JSON/JSONL parsed (containers remember their lines), CSV rows, else its text."""
        suffix = path.suffix.lower()
        text = self.text(path, at)
        if suffix in (".yaml", ".yml"):
            return load_yaml12(text, str(path))
        if suffix == ".json":
            return self.json(text, path)
        if suffix == ".jsonl":
            return self.jsonl(text, path)
        if suffix == ".csv":
            return self.csv(text, path)
        return text

    def json(self, text: str, path: Path) -> Any:
        try:
            data = json.loads(text)
        except ValueError as err:
            line = getattr(err, "lineno", None)
            raise ConfigError(f"{path}{':' + str(line) if line else ''}: invalid JSON: {err}") from None
        try:  # the same document read as YAML gives each key its line; PyYAML reads almost every JSON file
            lined = load_yaml12(text, str(path))
        except ConfigError:
            lined = None
        return lined if lined == data else tag(data, str(path), None)

    def jsonl(self, text: str, path: Path) -> list[Any]:
        out = LineList(source=str(path), line=1)
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                out.append(tag(json.loads(line), str(path), number))
            except ValueError as err:
                raise ConfigError(f"{path}:{number}: invalid JSON: {err}") from None
            out.lines.append(number)
        return out

    def csv(self, text: str, path: Path) -> list[LineDict]:
        """CSV rows as promptfoo reads them (columns: true, BOM dropped, keys trimmed), each at its first line."""
        delimiter = self.env.get("PROMPTFOO_CSV_DELIMITER", ",")
        if len(delimiter) != 1:
            raise ConfigError(f"{path}: PROMPTFOO_CSV_DELIMITER must be one character, got {delimiter!r}")
        reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), delimiter=delimiter)
        rows = LineList(source=str(path), line=1)
        try:
            header = next(reader, None)
            if header is None:
                return rows
            columns = [c.strip() for c in header]
            start = reader.line_num + 1
            for record in reader:
                if record:
                    if len(record) != len(columns):
                        raise ConfigError(
                            f"{path}:{start}: a row of {len(record)} fields under a header of {len(columns)} columns"
                        )
                    row = LineDict(zip(columns, record, strict=True), source=str(path), line=start)
                    row.lines.update(dict.fromkeys(columns, start))
                    rows.append(row)
                    rows.lines.append(start)
                start = reader.line_num + 1
        except csv.Error as err:
            raise ConfigError(f"{path}:{reader.line_num}: invalid CSV: {err}") from None
        return rows
