"""A config's ``tests`` read as promptfoo's readTests reads them: inline tests, ``file://`` CSV/JSON/JSONL/YAML
files and globs, ``{path, config}`` entries, Python test generators (``file://gen.py:function``, run as the user,
as promptfoo runs them), ``vars`` given as files or globs; each test a mapping that remembers its file and line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.tasks.importers.promptfoo.csvtests import csv_row_test
from assay.tasks.importers.promptfoo.files import CODE, FILE, Files, split_function, strip_file, tag
from assay.tasks.importers.promptfoo.refs import resolve_refs
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList

REQUIRED = ("assert", "vars", "options", "metadata", "provider", "providerOutput", "threshold")
GENERATOR_TIMEOUT = 600.0
_WRAPPER = """
import importlib.util, json, sys
path, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("promptfoo_tests", path)
module = importlib.util.module_from_spec(spec)
sys.path.insert(0, __import__("os").path.dirname(path))
spec.loader.exec_module(module)
args = json.load(sys.stdin)
result = getattr(module, name)(*args)
sys.stdout.write("\\n@@assay-tests@@" + json.dumps(result))
"""


@dataclass
class RawTest:
    """A test as read, before defaultTest is merged in: its mapping, where it is, and its file's folder."""

    data: LineDict
    at: At
    base: Path


class TestFiles:
    """Reads the tests of one config (its folder ``files.base``)."""

    def __init__(self, files: Files) -> None:
        self.files = files

    def read(self, raw: Any, at: At) -> list[RawTest]:
        """promptfoo's readTests: a string (a file or glob), ``{path, config}``, or a list of tests and those."""
        if raw is None:
            return []
        if isinstance(raw, str):
            spec = strip_file(raw)
            if spec.endswith(("yaml", "yml")):
                return list(self.glob(raw, at))
            return list(self.standalone(raw, at, None, glob=True))
        if isinstance(raw, dict) and isinstance(raw.get("path"), str):
            return list(self.standalone(raw["path"], at.key(raw, "path"), raw.get("config"), glob=True))
        if not isinstance(raw, list):
            raise at.error(f"tests are a list of tests, a file:// reference or {{path, config}}, got {raw!r}")
        out: list[RawTest] = []
        for i, item in enumerate(raw):
            item_at = at.key(raw, i)
            if isinstance(item, str):
                spec, function = split_function(strip_file(item))
                if function is not None or spec.endswith(CODE) or spec.lower().endswith((".xlsx", ".xls")):
                    out += self.standalone(item, item_at, None)
                else:
                    out += self.glob(item, item_at)
            elif isinstance(item, dict) and "path" in item and "vars" not in item and "assert" not in item:
                from assay.tasks.importers.promptfoo.keys import check_keys

                check_keys(item, "test_file", item_at)
                out += self.standalone(str(item["path"]), item_at.key(item, "path"), item.get("config"), glob=True)
            else:
                out.append(self.test(item, item_at, self.files.base))
        return out

    def test(self, item: Any, at: At, base: Path, *, default: bool = False) -> RawTest:
        """promptfoo's readTest: ``vars`` given as a file or glob (or a list of them) read and merged."""
        if not isinstance(item, dict):
            raise at.error(f"a test is a mapping (vars, assert, …), got {item!r}")
        data = item if isinstance(item, LineDict) else tag(item, at.file, at.line)
        if isinstance(data.get("vars"), str | list):
            merged = LineDict(source=data.source, line=data.lines.get("vars", data.line))
            refs = [data["vars"]] if isinstance(data["vars"], str) else data["vars"]
            for k, ref in enumerate(refs):
                ref_at = (
                    at.key(data, "vars") if isinstance(data["vars"], str) else at.key(data, "vars").key(data["vars"], k)
                )
                if not isinstance(ref, str):
                    raise ref_at.error(f"vars are a mapping, a file:// reference or a list of them, got {ref!r}")
                for path in self.files.under(base).paths(ref, ref_at):
                    content = self.files.load(path, ref_at)
                    if not isinstance(content, dict):
                        raise ref_at.error(f"{path} holds {type(content).__name__}, not a mapping of vars")
                    merged.update(content)
                    merged.lines.update(getattr(content, "lines", {}))
            data = LineDict(data, source=data.source, line=data.line)
            data.lines.update(item.lines if isinstance(item, LineDict) else {})
            data["vars"] = merged
        if not default and not any(k in data for k in REQUIRED):
            raise at.error(
                "a test needs one of " + ", ".join(REQUIRED) + f" (promptfoo refuses it too), got {dict(data)!r}"
            )
        return RawTest(data, at, base)

    def glob(self, ref: str, at: At) -> Iterator[RawTest]:
        """promptfoo's loadTestsFromGlob: CSV files as standalone files, YAML/JSON/JSONL lists of tests."""
        for path in self.files.paths(ref, at):
            suffix = path.suffix.lower()
            if suffix == ".csv":
                yield from self.standalone(str(path), at, None)
                continue
            if suffix not in (".yaml", ".yml", ".json", ".jsonl"):
                raise at.error(f"{path}: a tests file is CSV, JSON, JSONL or YAML")
            content = resolve_refs(self.files.load(path, at), path, self.files)
            content = self.external(content, At.of(content, "", At(str(path), None)))
            items = content if isinstance(content, list) else [content]
            for i, item in enumerate(items):
                yield self.test(item, At.of(item, f"{path.name}[{i}]", At(str(path), None)), path.parent)

    def standalone(self, ref: str, at: At, config: Any, *, glob: bool = False) -> Iterator[RawTest]:
        """promptfoo's readStandaloneTestsFile: CSV (each row a test, ``Row #N`` when it has no description),
        JSON/JSONL/YAML lists, a Python generator; assay also reads a glob of them here (promptfoo 0.123.1 fails)."""
        spec, _ = split_function(strip_file(ref))
        if spec.endswith(CODE[1:]) or spec.lower().endswith((".xlsx", ".xls")):
            raise at.error(
                f"{ref!r}: JavaScript test generators and Excel files are not read by assay (a Python "
                "generator file.py:function, CSV, JSON, JSONL and YAML are)"
            )
        if spec.endswith(".py"):
            yield from self.generated(ref, at, config)
            return
        paths = self.files.paths(ref, at) if glob else self.files.paths(spec, at)
        for path in paths:
            content = self.files.load(path, at)
            rows = content if isinstance(content, list) else [content]
            for j, row in enumerate(rows):
                row_at = At.of(row, "", At(str(path), None))
                test: Any
                if path.suffix.lower() == ".csv":
                    test = csv_row_test(row, row_at)
                elif isinstance(row, dict):
                    test = row if isinstance(row, LineDict) else tag(row, str(path), None)
                else:
                    raise row_at.error(f"a test is a mapping, got {row!r}")
                if not test.get("description"):
                    lines = test.lines
                    test = LineDict(test, source=test.source, line=test.line)
                    test.lines.update(lines)
                    test["description"] = f"Row #{j + 1}"
                yield self.test(test, row_at.named(f"{path.name} row {j + 1}"), path.parent)

    def generated(self, ref: str, at: At, config: Any) -> Iterator[RawTest]:
        """A Python test generator's tests: ``function(config)`` (default ``generate_tests``) in a new interpreter."""
        path, function = self.files.code(ref, at)
        args = [] if config is None else [config]
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, str(path), function or "generate_tests"],
            input=json.dumps(args),
            capture_output=True,
            text=True,
            timeout=GENERATOR_TIMEOUT,
            cwd=path.parent,
        )
        _, marker, result = proc.stdout.rpartition("\n@@assay-tests@@")
        if proc.returncode != 0 or not marker:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise at.error(f"the test generator {path.name}:{function or 'generate_tests'} failed: {last}")
        tests = json.loads(result)
        if not isinstance(tests, list):
            raise at.error(f"the test generator {path.name} returned {type(tests).__name__}, not a list of tests")
        for i, item in enumerate(tests):
            yield self.test(tag(item, at.file, at.line), at.named(f"{at.path}[{path.name} test {i + 1}]"), path.parent)

    def external(self, value: Any, at: At, context: str | None = None) -> Any:
        """promptfoo's maybeLoadConfigFromExternalFile over a tests file: ``file://`` values replaced by the file's
        content (JSON/YAML parsed, CSV rows, else text), except in vars and python/javascript assertion values."""
        if isinstance(value, list):
            seq = LineList(source=getattr(value, "source", at.file), line=getattr(value, "line", at.line))
            seq.lines.extend(getattr(value, "lines", []))
            seq.extend(self.external(v, at.key(value, i), context) for i, v in enumerate(value))
            return seq
        if isinstance(value, dict):
            out = LineDict(source=getattr(value, "source", at.file), line=getattr(value, "line", at.line))
            out.lines.update(getattr(value, "lines", {}))
            for key, item in value.items():
                code = key == "value" and value.get("type") in ("python", "javascript")
                out[key] = self.external(item, at.key(value, key), "keep" if code or key == "vars" else context)
            return out
        if not isinstance(value, str) or not value.startswith(FILE) or context == "keep":
            return value
        spec, function = split_function(strip_file(value))
        if function is not None:
            return value
        paths = self.files.paths(spec, at)
        contents = [
            self.files.text(p, at) if p.suffix.lower() == ".jsonl" else _external_content(self.files.load(p, at))
            for p in paths
        ]
        if not any(ch in spec for ch in "*?[{"):
            return contents[0]
        items: list[Any] = []
        for content in contents:
            items += content if isinstance(content, list) else [content]
        return items


def _external_content(content: Any) -> Any:
    if isinstance(content, list) and content and all(isinstance(r, dict) and len(r) == 1 for r in content):
        return [next(iter(r.values())) for r in content]  # a one-column CSV: its values
    return content


def json_dump(value: Any) -> str:
    """JavaScript's JSON.stringify of a value (no spaces, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
