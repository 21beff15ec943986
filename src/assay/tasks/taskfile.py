"""Task files: YAML parsed with the line of every key kept, and the context (file, key path, line) that every config
error names, so errors can say ``task.yaml:14: key: ...``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assay.errors import ConfigError

KeyPath = tuple[str | int, ...]


def format_path(path: Iterable[str | int]) -> str:
    """``("evaluators", 1, "threshold")`` -> ``evaluators[1].threshold``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a choice is close to ``word``, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass
class ConfigContext:
    """Where a task config came from, to name the file, the key path and the line in every error."""

    source: str  # a task file's display path, or "task 'name'" for a task built in Python
    lines: dict[KeyPath, int] = field(default_factory=dict)  # key path -> 1-based line of the key
    base_dir: Path | None = None  # relative dataset paths resolve against this (the task file's folder)
    renames: dict[str, str] = field(default_factory=dict)  # canonical top-level key -> key as written (metrics)

    def written(self, path: KeyPath) -> KeyPath:
        """``path`` with top-level keys spelled as in the file (``metrics`` where the file said so)."""
        if path and isinstance(path[0], str) and path[0] in self.renames:
            return (self.renames[path[0]], *path[1:])
        return path

    def line(self, path: KeyPath) -> int | None:
        """The line of ``path``, or of its nearest ancestor whose line is known."""
        path = self.written(path)
        for end in range(len(path), 0, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None

    def where(self, path: KeyPath = ()) -> str:
        """``task.yaml:14: evaluators[1].threshold`` (the line left out where unknown)."""
        line = self.line(path)
        head = f"{self.source}:{line}" if line is not None else self.source
        shown = format_path(self.written(path))
        return f"{head}: {shown}" if shown else head

    def error(self, path: KeyPath, message: str) -> ConfigError:
        """A ConfigError saying where (file, line, key path) and what."""
        return ConfigError(f"{self.where(path)}: {message}")

    def row_lines(self, path: KeyPath) -> list[int] | None:
        """Lines of the items of the list at ``path`` (inline dataset rows), where known."""
        path = self.written(path)
        lines: list[int] = []
        while (*path, len(lines)) in self.lines:
            lines.append(self.lines[(*path, len(lines))])
        return lines or None


def parse_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse YAML and return the data with the line of every mapping key and list item.

    Syntax errors and duplicate keys raise ConfigError with the file, line and column.
    """
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[KeyPath, int] = {}
        _record_lines(node, (), lines, source)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        context = err.context or ""
        if context and err.context_mark is not None and err.context_mark is not mark:
            context += f" (line {err.context_mark.line + 1})"
        problem = ": ".join(p for p in (context, err.problem) if p)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
    finally:
        loader.dispose()
    return data, lines


def _record_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                raise ConfigError(
                    f"{source}:{line}: {format_path((*path, key))}: duplicate key (first on line {seen[key]})"
                )
            seen[key] = line
            lines[(*path, key)] = line
            _record_lines(value_node, (*path, key), lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = item.start_mark.line + 1
            _record_lines(item, (*path, i), lines, source)


def read_task_file(path: str | Path) -> tuple[dict[str, Any], ConfigContext]:
    """The raw mapping of a YAML task file and its context (display name, key lines, folder)."""
    from assay.data.formats import display_path

    p = Path(path)
    source = display_path(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: task file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{source}: cannot read the task file: {err}") from None
    data, lines = parse_yaml(text, source)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"{source}: a task file is a mapping of keys (name, dataset, template, …), got {kind}")
    return data, ConfigContext(source, lines, p.resolve().parent)
