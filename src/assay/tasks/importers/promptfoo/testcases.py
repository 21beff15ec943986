"""Tests as promptfoo's evaluator builds them: ``scenarios`` (each config entry merged with each of its tests,
after the tests), defaultTest merged into every test (vars under the test's, its assertions first unless
``disableDefaultAsserts``, options, metadata, threshold, prompts), vars expanded into one test per combination
(a list whose first item is a string; a ``file://`` glob: one test per file), counted before anything is built and
refused past ``max_tests``; ``file://`` vars read as promptfoo renders them, vars naming other vars resolved."""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.tasks.importers.promptfoo.files import CODE, FILE, Files, strip_file
from assay.tasks.importers.promptfoo.testfiles import RawTest, json_dump
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList, load_yaml12, place, plain

MAX_TESTS = 100_000
_MEDIA = (".pdf", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico", ".avif", ".heic",
          ".svg", ".mp4", ".webm", ".mov", ".avi", ".mkv", ".mp3", ".wav", ".ogg", ".flac", ".m4a", ".aac")  # fmt: skip
_VAR_REF = re.compile(r"\{\{\s*(\w+)\s*\}\}")


@dataclass
class TestCase:
    """One test after defaultTest is merged in and its vars expanded: what a dataset row is made of."""

    vars: dict[str, Any]
    checks: list[Any]
    description: str | None = None
    threshold: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    prompts: list[str] | None = None
    at: At = field(default_factory=lambda: At("?", None))


@dataclass
class Prepared:
    """A test with defaultTest merged in, its vars not yet expanded; ``values`` are each var's values."""

    merged: dict[str, Any]
    at: At
    values: dict[str, list[Any]]

    @property
    def count(self) -> int:
        return math.prod(len(v) for v in self.values.values())


def scenario_tests(scenarios: Any, default: dict[str, Any], at: At, read: Any) -> list[RawTest]:
    """promptfoo's buildTestsFromSuite for scenarios: each config entry × each test of the scenario (``[{}]``
    without tests), merged as mergeScenarioTest merges them (defaultTest's vars, options and metadata under the
    entry's, under the test's; the entry's assertions before the test's)."""
    from assay.tasks.importers.promptfoo.keys import check_keys

    out: list[RawTest] = []
    index = 0
    for i, scenario in enumerate(scenarios or []):
        s_at = at.key(scenarios, i)
        if not isinstance(scenario, dict):
            raise s_at.error(f"a scenario is a mapping (description, config, tests), got {scenario!r}")
        check_keys(scenario, "scenario", s_at)
        configs = scenario.get("config") or []
        if not isinstance(configs, list):
            raise s_at.key(scenario, "config").error("a scenario's config is a list of mappings")
        tests = read(scenario["tests"], s_at.key(scenario, "tests")) if scenario.get("tests") else None
        for j, data in enumerate(configs):
            d_at = s_at.key(scenario, "config").key(configs, j)
            if not isinstance(data, dict):
                raise d_at.error(f"a scenario's config entry is a mapping (vars, assert, …), got {data!r}")
            check_keys(data, "test", d_at)
            for test in tests or [RawTest(LineDict(source=d_at.file, line=d_at.line), d_at, Path("."))]:
                t = test.data
                merged = LineDict({**default, **data, **t}, source=t.source or d_at.file, line=t.line or d_at.line)
                merged.lines.update({**dict.fromkeys(default, d_at.line), **getattr(data, "lines", {}), **t.lines})
                for key in ("vars", "options"):
                    merged[key] = _merge(default.get(key), data.get(key), t.get(key))
                merged["assert"] = _cat(data.get("assert"), t.get("assert"))
                metadata = _merge(default.get("metadata"), data.get("metadata"), t.get("metadata"))
                metadata.setdefault("conversationId", f"__scenario_{index}__")
                merged["metadata"] = metadata
                out.append(RawTest(merged, test.at if tests else d_at, test.base))
            index += 1
    return out


def _merge(*parts: Any) -> LineDict:
    """Mappings merged as JavaScript's ``{...a, ...b}``; each key remembers the file and line it came from."""
    out = LineDict(source="", line=None)
    for part in parts:
        if isinstance(part, dict):
            out.update(part)
            out.lines.update({k: place(part, k) for k in part})
            out.source, out.line = out.source or getattr(part, "source", ""), out.line or getattr(part, "line", None)
    return out


def _cat(*parts: Any) -> LineList:
    """Lists concatenated; each item remembers the file and line it came from."""
    out = LineList()
    for part in parts:
        if isinstance(part, list):
            out.extend(part)
            out.lines.extend(place(part, i) for i in range(len(part)))
            out.source, out.line = out.source or getattr(part, "source", ""), out.line or getattr(part, "line", None)
    return out


def prepare(test: RawTest, default: dict[str, Any], files: Files, env: dict[str, str]) -> Prepared:
    """promptfoo's prepareTestCaseForEval and prepareTestVariables for one test, its var values listed."""
    data, at = test.data, test.at
    options = _merge(default.get("options"), data.get("options"))
    merged = LineDict(data, source=data.source, line=data.line)
    merged.lines.update(data.lines)
    merged["vars"] = _merge(default.get("vars"), data.get("vars"))
    merged["assert"] = _cat([] if options.get("disableDefaultAsserts") is True else default.get("assert"),
                            data.get("assert"))  # fmt: skip
    if merged.get("threshold") is None and default.get("threshold") is not None:
        merged["threshold"] = default["threshold"]
    for key in ("prefix", "suffix"):  # promptfoo: test.options.prefix || defaultTest.options.prefix
        if not options.get(key) and (default.get("options") or {}).get(key):
            options[key] = default["options"][key]
    merged["options"] = options
    merged["metadata"] = _merge(default.get("metadata"), data.get("metadata"))
    for key in ("prompts", "providers"):
        if merged.get(key) is None and default.get(key) is not None:
            merged[key] = default[key]
    vars_ = merged["vars"]
    if not isinstance(vars_, dict):
        raise at.key(data, "vars").error(f"vars are a mapping of name: value, got {vars_!r}")
    no_expansion = options.get("disableVarExpansion") or _flag(env, "PROMPTFOO_DISABLE_VAR_EXPANSION")
    values: dict[str, list[Any]] = {}
    for name, value in vars_.items():
        var_at = at.key(vars_, name).named(f"{at.path}.vars.{name}" if at.path else f"vars.{name}")
        if no_expansion:
            values[name] = [value]
        elif isinstance(value, str) and value.startswith(FILE):
            _check_var_file(value, var_at)
            values[name] = [FILE + str(p) for p in files.paths(value, var_at)]
        elif isinstance(value, list) and value and isinstance(value[0], str):
            values[name] = list(value)
        else:
            values[name] = [value]
        for item in values[name]:
            if isinstance(item, str) and item.startswith(FILE):
                _check_var_file(item, var_at)
    return Prepared(merged, at, values)


def _flag(env: dict[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "yup", "yeppers")


def _check_var_file(ref: str, at: At) -> None:
    suffix = Path(strip_file(ref)).suffix.lower()
    if suffix in CODE:
        raise at.error(f"{ref!r}: a var computed by a python/javascript file (get_var) is not run by assay")
    if suffix in _MEDIA:
        raise at.error(f"{ref!r}: PDF, image, audio and video vars are not read by assay")


def check_count(prepared: list[Prepared], max_tests: int, at: At) -> int:
    """The number of tests the config expands to, refused past ``max_tests`` before anything is built."""
    total = sum(p.count for p in prepared)
    if total > max_tests:
        biggest = max(prepared, key=lambda p: p.count)
        raise at.error(
            f"the config expands to {total:,} tests (vars × tests × scenarios), more than the cap of {max_tests:,}; "
            f"the largest is {biggest.at} with {biggest.count:,} combinations of "
            f"{', '.join(f'{k} ({len(v)})' for k, v in biggest.values.items() if len(v) > 1)}. Raise the cap with "
            "assay run --max-tests N, load_promptfoo(..., max_tests=N) or ASSAY_PROMPTFOO_MAX_TESTS=N"
        )
    return total


def expand(p: Prepared, files: Files) -> list[TestCase]:
    """One TestCase per combination of the test's var values (the first var varies slowest, as promptfoo's); the
    combinations of one test share its (plain) assertions, options and metadata."""
    m = p.merged
    names = list(p.values)
    loaded: dict[str, Any] = {}
    columns = []
    for name in names:  # each var's values, file:// ones read once
        column = []
        for value in p.values[name]:
            if isinstance(value, str) and value.startswith(FILE):
                if value not in loaded:
                    loaded[value] = _var_file(value, files, p.at)
                value = loaded[value]
            column.append(plain(value))
        columns.append(column)
    resolve = any(isinstance(v, str) and ("{{" in v or v.endswith("\n")) for column in columns for v in column)
    checks, options, metadata = (
        plain(m.get("assert") or []),
        plain(m.get("options") or {}),
        plain(m.get("metadata") or {}),
    )
    out = []
    for combo in itertools.product(*columns):
        values = dict(zip(names, combo, strict=True))
        out.append(
            TestCase(
                vars=resolve_vars(values) if resolve else values,
                checks=checks,
                description=m.get("description"),
                threshold=m.get("threshold"),
                options=options,
                metadata=metadata,
                prompts=m.get("prompts"),
                at=p.at,
            )
        )
    return out


def _var_file(ref: str, files: Files, at: At) -> str:
    """A ``file://`` var as promptfoo's renderPrompt reads it: YAML as its JSON text, else the text trimmed."""
    path = files.paths(ref, at)[0]
    text = files.text(path, at)
    if path.suffix.lower() in (".yaml", ".yml"):
        return json_dump(plain(load_yaml12(text, str(path))))
    return text.strip()


def js_string(value: Any) -> str:
    """JavaScript's String(value) for the values vars hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return str(value)


def resolve_vars(values: dict[str, Any]) -> dict[str, Any]:
    """promptfoo's renderPrompt on the vars: one trailing newline dropped, then a var whose text names another var
    (``{{ name }}``) gets that var's value, the first such name per pass, for at most five passes."""
    out = {k: v[:-1] if isinstance(v, str) and v.endswith("\n") else v for k, v in values.items()}
    for _ in range(5):
        done = True
        for key, value in out.items():
            if not isinstance(value, str):
                continue
            m = _VAR_REF.search(value)
            if m and m.group(1) in out:  # a null var is defined (JavaScript's null, not undefined)
                out[key] = value.replace(m.group(0), js_string(out[m.group(1)]), 1)
                done = False
        if done:
            break
    return out
