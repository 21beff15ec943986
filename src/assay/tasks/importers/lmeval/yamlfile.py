"""An lm-eval task YAML read as lm-eval reads it: ``!function module.name`` tags kept as references to the task's
own folder and ``include:`` merged (the including file wins), with the file and line of every key kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from assay.errors import ConfigError

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class FunctionRef:
    """A ``!function utils.process_docs`` tag: ``utils.py`` in ``folder``, attribute ``process_docs``."""

    dotted: str
    folder: Path
    where: str  # file:line of the tag


@dataclass
class TaskFile:
    """A task file's merged mapping and where each key (path) was written."""

    path: Path
    data: dict[str, Any]
    lines: dict[KeyPath, str] = field(default_factory=dict)  # key path -> "file:line"

    def where(self, *path: str | int) -> str:
        """``file:line: key.path`` of the nearest written ancestor of ``path``."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(path[:end])
            if found is not None:
                return f"{found}: {_shown(path)}"
        return f"{_display(self.path)}: {_shown(path)}" if path else _display(self.path)

    def error(self, path: KeyPath, message: str) -> ConfigError:
        """A ConfigError naming the file, line and key."""
        return ConfigError(f"{self.where(*path)}: {message}")


def _shown(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _display(path: Path) -> str:
    from assay.data.readers import display_path

    return display_path(path)


def _loader_for(path: Path) -> type[yaml.SafeLoader]:
    source = _display(path)

    class Loader(yaml.SafeLoader):
        pass

    def function(loader: yaml.SafeLoader, node: yaml.Node) -> FunctionRef:
        value = loader.construct_scalar(node)  # type: ignore[arg-type]
        return FunctionRef(str(value), path.parent, f"{source}:{node.start_mark.line + 1}")

    Loader.add_constructor("!function", function)
    return Loader


def read_task_file(path: str | Path, _seen: tuple[Path, ...] = ()) -> TaskFile:
    """Parse ``path`` and merge its ``include:`` chain (relative includes resolve against the including file)."""
    p = Path(path).resolve()
    source = _display(Path(path))
    if p in _seen:
        chain = " -> ".join(_display(s) for s in (*_seen, p))
        raise ConfigError(f"{source}: include cycle: {chain}")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{source}: task file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{source}: cannot read the task file: {err}") from None
    loader = _loader_for(p)(text)
    lines: dict[KeyPath, str] = {}
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
        if node is not None:
            _record(node, (), lines, source)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        raise ConfigError(f"{where}: invalid YAML: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML: {err}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: an lm-eval task file is a mapping of keys (task, dataset_path, …)")
    include = data.pop("include", None)
    if include is None:
        return TaskFile(p, data, lines)
    if not isinstance(include, str):
        raise ConfigError(f"{lines.get(('include',), source)}: include: a file name, got {include!r}")
    target = Path(include)
    if not target.is_absolute():
        target = p.parent / target
    if not target.is_file():
        raise ConfigError(f"{lines.get(('include',), source)}: include: file not found: {target}")
    base = read_task_file(target, (*_seen, p))
    merged = {**base.data, **data}
    merged_lines = {k: v for k, v in base.lines.items() if k[0] not in data}
    merged_lines.update(lines)
    return TaskFile(p, merged, merged_lines)


def _record(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, str], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = (*path, key_node.value)
                lines[key] = f"{source}:{key_node.start_mark.line + 1}"
                _record(value_node, key, lines, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*path, i)] = f"{source}:{item.start_mark.line + 1}"
            _record(item, (*path, i), lines, source)
