"""Read a promptfoo config as promptfoo reads it: YAML 1.2, ``file://`` references (text, YAML, JSON, JSONL, CSV,
globs) relative to the config's folder, prompt files split at ``---`` lines, CSV test files with their ``__expected``
columns, ``defaultTest`` merged into every test, list-valued vars expanded into one test per combination."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.yaml12 import load_yaml12
from assay.tasks.rowchecks import UNSUPPORTED, known_type

FILE = "file://"
TEST_KEYS = {"vars", "assert", "description", "threshold", "options", "metadata"}
CONFIG_KEYS = {
    "description", "prompts", "providers", "tests", "defaultTest", "assertionTemplates", "outputPath", "sharing",
    "env", "evaluateOptions", "writeLatestResults", "nunjucksFilters", "tags", "scenarios",
}  # fmt: skip
IGNORED_KEYS = {"outputPath", "sharing", "writeLatestResults", "tags", "evaluateOptions", "env"}  # output/UI only


@dataclass
class Prompt:
    """One prompt: a template text, or chat messages whose contents are templates; and its label."""

    label: str
    text: str | None = None
    messages: list[dict[str, str]] | None = None


@dataclass
class TestCase:
    """One test after defaultTest is merged in and vars are expanded: its vars, checks and pass threshold."""

    vars: dict[str, Any]
    checks: list[dict[str, Any]]
    description: str | None = None
    threshold: float | None = None


@dataclass
class PromptfooConfig:
    """What a promptfoo config holds that assay runs."""

    path: Path
    description: str | None
    prompts: list[Prompt]
    providers: list[Any]
    tests: list[TestCase]
    templates: dict[str, Any] = field(default_factory=dict)
    grader: Any = None  # defaultTest.options.provider: the model that grades llm-rubric checks


class Reader:
    """Resolves one config's file references (relative to its folder) and names the key of any problem."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.base = path.resolve().parent

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {message}")

    def files(self, ref: str, key: str) -> list[Path]:
        """The files a ``file://`` reference names (a glob may name several, in sorted order)."""
        spec = ref[len(FILE) :] if ref.startswith(FILE) else ref
        if ":" in Path(spec).name and not Path(spec).exists():  # file://prompts.py:fn, a function reference
            raise self.error(key, f"{ref!r}: prompt and test functions (file.py:function) are not supported")
        if any(ch in spec for ch in "*?["):
            found = sorted(p for p in self.base.glob(spec) if p.is_file())
            if not found:
                raise self.error(key, f"{ref!r}: no file matches")
            return found
        path = (self.base / spec).resolve()
        if not path.is_file():
            raise self.error(key, f"{ref!r}: file not found ({path})")
        return [path]

    def text(self, path: Path, key: str) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise self.error(key, f"cannot read {path}: {err}") from None

    def data(self, path: Path, key: str) -> Any:
        """A referenced file's content: parsed YAML/JSON/JSONL, CSV rows, else its text."""
        text, suffix = self.text(path, key), path.suffix.lower()
        if suffix in (".yaml", ".yml"):
            return load_yaml12(text, str(path))
        try:
            if suffix == ".json":
                return json.loads(text)
            if suffix == ".jsonl":
                return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as err:
            raise self.error(key, f"{path}: invalid JSON: {err}") from None
        if suffix == ".csv":
            return list(csv.DictReader(io.StringIO(text)))
        return text

    def value(self, value: Any, key: str) -> Any:
        """A var's value with a ``file://`` reference replaced by the file's content (promptfoo's rule)."""
        if isinstance(value, str) and value.startswith(FILE):
            paths = self.files(value, key)
            return self.data(paths[0], key) if len(paths) == 1 else [self.data(p, key) for p in paths]
        return value


def read_config(path: str | Path) -> PromptfooConfig:
    """A promptfoo config file, read and checked; a problem names the file and the config key."""
    p = Path(path)
    reader = Reader(p)
    try:
        raw = load_yaml12(p.read_text(encoding="utf-8"), str(p))
    except OSError as err:
        raise ConfigError(f"{p}: cannot read the promptfoo config: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: a promptfoo config is a mapping (prompts, providers, tests, …)")
    unknown = sorted(set(raw) - CONFIG_KEYS)
    if unknown or raw.get("scenarios") or raw.get("nunjucksFilters"):
        names = unknown or [k for k in ("scenarios", "nunjucksFilters") if raw.get(k)]
        raise reader.error(names[0], "not supported by assay's promptfoo reader" + _listing(names))
    templates = raw.get("assertionTemplates") or {}
    if not isinstance(templates, dict):
        raise reader.error("assertionTemplates", "a mapping of name -> assertion")
    default = raw.get("defaultTest") or {}
    if isinstance(default, str):
        default = reader.data(reader.files(default, "defaultTest")[0], "defaultTest")
    if not isinstance(default, dict):
        raise reader.error("defaultTest", f"a mapping (vars, assert, options), got {default!r}")
    grader = (default.get("options") or {}).get("provider")
    return PromptfooConfig(
        path=p,
        description=raw.get("description"),
        prompts=read_prompts(reader, raw.get("prompts")),
        providers=_as_list(raw.get("providers")),
        tests=read_tests(reader, raw.get("tests"), default),
        templates=templates,
        grader=grader,
    )


def _listing(names: list[str]) -> str:
    return f" ({', '.join(names)})" if len(names) > 1 else ""


def _as_list(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


PROMPT_SPLIT = re.compile(r"^-{3,}\s*$", re.MULTILINE)


def read_prompts(reader: Reader, raw: Any) -> list[Prompt]:
    """Prompts from strings, ``file://`` files (split at ``---`` lines; a JSON file is chat messages), or
    ``{raw|id, label}`` mappings; a config without prompts is refused."""
    if isinstance(raw, dict) and not ({"raw", "id"} & set(raw)):  # {file://x: label}
        raw = [{"id": k, "label": v} for k, v in raw.items()]
    items = _as_list(raw)
    if not items:
        raise reader.error("prompts", "a promptfoo config needs at least one prompt")
    out: list[Prompt] = []
    for i, item in enumerate(items):
        key = f"prompts[{i}]"
        label = None
        if isinstance(item, dict):
            label = item.get("label")
            item = item.get("raw", item.get("id"))
        if not isinstance(item, str):
            raise reader.error(key, f"a prompt is a string, a file:// reference or {{raw, label}}, got {item!r}")
        if not item.startswith(FILE):
            out.append(_prompt(item, label or item, reader, key))
            continue
        for path in reader.files(item, key):
            content = reader.data(path, key)
            if isinstance(content, list):  # chat messages from a JSON/YAML file
                out.append(_prompt(content, label or path.name, reader, key))
                continue
            parts = [part.strip() for part in PROMPT_SPLIT.split(str(content)) if part.strip()]
            for k, part in enumerate(parts):
                name = label or (path.name if len(parts) == 1 else f"{path.name}:{k + 1}")
                out.append(_prompt(part, name, reader, key))
    return out


def _prompt(content: Any, label: str, reader: Reader, key: str) -> Prompt:
    if isinstance(content, str):
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if not isinstance(parsed, list):
            return Prompt(label, text=content)
        content = parsed
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") for m in content):
        raise reader.error(key, "a chat prompt is a list of {role, content} messages")
    return Prompt(label, messages=[{"role": str(m["role"]), "content": m["content"]} for m in content])


def read_tests(reader: Reader, raw: Any, default: dict[str, Any]) -> list[TestCase]:
    """Every test, with defaultTest's vars under its own and defaultTest's checks before its own."""
    tests: list[tuple[str, Any]] = []
    for i, item in enumerate(_as_list(raw)):
        key = f"tests[{i}]" if isinstance(raw, list) else "tests"
        if isinstance(item, str):
            for path in reader.files(item, key):
                content = reader.data(path, key)
                rows = content if isinstance(content, list) else [content]
                from_csv = path.suffix.lower() == ".csv"
                tests += [
                    (f"{key} ({path.name} row {j + 1})", csv_test(r) if from_csv else r) for j, r in enumerate(rows)
                ]
        else:
            tests.append((key, item))
    out: list[TestCase] = []
    for key, test in tests:
        if not isinstance(test, dict):
            raise reader.error(key, f"a test is a mapping (vars, assert, …), got {test!r}")
        unknown = sorted(set(test) - TEST_KEYS)
        if unknown:
            raise reader.error(f"{key}.{unknown[0]}", "not supported by assay's promptfoo reader" + _listing(unknown))
        merged = {**(default.get("vars") or {}), **(test.get("vars") or {})}
        values = {name: reader.value(v, f"{key}.vars.{name}") for name, v in merged.items()}
        checks = [*(default.get("assert") or []), *(test.get("assert") or [])]
        threshold = test.get("threshold", default.get("threshold"))
        for combination in expand_vars(values):
            out.append(TestCase(combination, checks, test.get("description"), threshold))
    return out


def expand_vars(values: dict[str, Any]) -> list[dict[str, Any]]:
    """promptfoo's rule: a var given a list makes one test per value (every combination of several such vars)."""
    listed = [name for name, v in values.items() if isinstance(v, list)]
    if not listed:
        return [values]
    return [values | dict(zip(listed, combo, strict=True)) for combo in itertools.product(*(values[n] for n in listed))]


def csv_test(row: dict[str, str]) -> dict[str, Any]:
    """A CSV test row: its columns are vars, but ``__expected[N]`` (checks), ``__description``, ``__threshold``."""
    test: dict[str, Any] = {"vars": {}, "assert": []}
    for column, cell in row.items():
        if column is None or cell is None:
            continue
        if column.startswith("__expected"):
            if cell.strip():
                test["assert"].append(expected_check(cell))
        elif column == "__description":
            test["description"] = cell
        elif column == "__threshold":
            test["threshold"] = float(cell) if cell.strip() else None
        elif not column.startswith("__"):
            test["vars"][column] = cell
    return test


SHORTHAND = re.compile(r"^(?P<type>[a-z-]+)(?:\((?P<threshold>[0-9.]+)\))?:(?P<value>.*)$", re.DOTALL)


def expected_check(cell: str) -> dict[str, Any]:
    """A CSV ``__expected`` cell as a check, as promptfoo reads it: ``fn:`` javascript, ``eval:`` javascript,
    ``python:``, ``grade:``/``llm-rubric:``, ``similar(0.8):``, ``contains:`` and other ``type:value`` forms, a
    bare type that takes no value (``is-json``), else the text equals the output."""
    text = cell.strip()
    if text in ("is-json", "contains-json", "is-sql", "is-xml"):
        return {"type": text}
    for prefix, kind in (("fn:", "javascript"), ("eval:", "javascript"), ("grade:", "llm-rubric")):
        if text.startswith(prefix):
            return {"type": kind, "value": text[len(prefix) :].strip()}
    m = SHORTHAND.match(text)
    if m is not None and (known_type(m["type"]) or m["type"] in UNSUPPORTED):
        check: dict[str, Any] = {"type": m["type"], "value": m["value"].strip()}
        if m["threshold"]:
            check["threshold"] = float(m["threshold"])
        return check
    return {"type": "equals", "value": cell}
