"""YAML as promptfoo reads it (YAML 1.2 core schema, js-yaml's rules): ``Yes``, ``on``, ``no`` are strings, only
true/false are booleans, dates stay strings, a key given twice in one mapping is an error. Built on PyYAML's safe
loader with the 1.1-only implicit types taken out.

Every mapping and sequence remembers where it came from (:class:`LineDict`, :class:`LineList`: the file, its own
line and each key's or item's line), so the reader can name ``FILE:LINE`` in every error. Aliases are bounded: a
document whose aliases would expand past :data:`MAX_ALIAS_NODES` nodes (a "billion laughs" of nested anchors), or
an alias inside itself, is refused naming the file and the line of the alias."""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from assay.errors import ConfigError

MAX_ALIAS_NODES = 100_000  # nodes an alias may add to a document when expanded (each use counts as a copy)


class LineDict(dict[Any, Any]):
    """A mapping read from a file: ``source`` (the file), ``line`` (its first line, 1-based) and ``lines`` (each
    key's line)."""

    __slots__ = ("line", "lines", "source")

    def __init__(self, *args: Any, source: str = "", line: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.source, self.line = source, line
        self.lines: dict[Any, Any] = {}


class LineList(list[Any]):
    """A sequence read from a file: ``source``, ``line`` and ``lines`` (each item's line)."""

    __slots__ = ("line", "lines", "source")

    def __init__(self, *args: Any, source: str = "", line: int | None = None) -> None:
        super().__init__(*args)
        self.source, self.line = source, line
        self.lines: list[Any] = []


def place(container: Any, key: Any = None) -> tuple[str | None, int | None]:
    """(file, line) of ``key`` (a mapping key or a list index) in a container read from a file, else the
    container's own; a merged container's entry may name another file (``lines`` value ``(file, line)``)."""
    lines = getattr(container, "lines", None)
    found: Any = None
    if (isinstance(lines, dict) and key in lines) or (
        isinstance(lines, list) and isinstance(key, int) and 0 <= key < len(lines)
    ):
        found = lines[key]
    if isinstance(found, tuple):
        return found[0], found[1]
    if found is not None:
        return getattr(container, "source", None) or None, int(found)
    return getattr(container, "source", None) or None, getattr(container, "line", None)


def line_of(container: Any, key: Any = None) -> int | None:
    """The line of ``key`` in a container read from a file, else its own line."""
    return place(container, key)[1]


def plain(value: Any) -> Any:
    """``value`` with every LineDict/LineList made a plain dict/list (rows and task configs hold plain data)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML's SafeLoader with YAML 1.2 core-schema scalars, line-remembering containers, duplicate keys refused
    and aliases bounded."""

    def __init__(self, stream: Any, source: str = "") -> None:
        super().__init__(stream)
        self.source = source
        self.alias_uses: list[tuple[Node, int]] = []  # (the node an alias names, the alias's line)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            line = self.peek_event().start_mark.line + 1
            node = super().compose_node(parent, index)
            if node is not None:
                self.alias_uses.append((node, line))
            return node
        return super().compose_node(parent, index)


def _construct_map(loader: Yaml12Loader, node: MappingNode) -> Any:
    data = LineDict(source=loader.source, line=node.start_mark.line + 1)
    yield data
    explicit = {id(key) for key, _ in node.value}  # keys written here; a merged (<<) key may be overridden
    loader.flatten_mapping(node)
    written: dict[Any, int] = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        key = loader.construct_object(key_node, deep=False)
        try:
            hash(key)
        except TypeError:
            raise ConfigError(f"{loader.source}:{line}: a mapping key must be a scalar") from None
        if id(key_node) in explicit:
            if key in written:
                raise ConfigError(
                    f"{loader.source}:{line}: duplicated mapping key {key!r} (first on line {written[key]}); "
                    "promptfoo's YAML reader refuses it too"
                )
            written[key] = line
        data[key] = loader.construct_object(value_node, deep=False)
        data.lines[key] = line


def _construct_seq(loader: Yaml12Loader, node: SequenceNode) -> Any:
    data = LineList(source=loader.source, line=node.start_mark.line + 1)
    yield data
    data.extend(loader.construct_object(child, deep=False) for child in node.value)
    data.lines.extend(child.start_mark.line + 1 for child in node.value)


Yaml12Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
Yaml12Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)

_TIMESTAMP = "tag:yaml.org,2002:timestamp"  # not in the core schema: a date stays a string, as promptfoo reads it
_CORE = {  # YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    "tag:yaml.org,2002:int": (r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
}
Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _CORE and tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, (_pattern, _first) in _CORE.items():
    Yaml12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _check_aliases(loader: Yaml12Loader, limit: int) -> None:
    """Refuse a document whose aliases expand past ``limit`` nodes, or that holds an alias inside its own anchor."""
    if not loader.alias_uses:
        return
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: Node) -> int:  # the node's size with every alias expanded (memoised: shared nodes count once)
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise ConfigError(f"{loader.source}:{node.start_mark.line + 1}: a YAML alias refers to its own anchor")
        open_.add(key)
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_.discard(key)
        sizes[key] = total
        return total

    added = 0
    for node, line in loader.alias_uses:  # each use of an alias stands for a copy of the node it names
        added += size(node) - 1
        if added > limit:
            raise ConfigError(
                f"{loader.source}:{line}: YAML aliases expand this document by more than {limit:,} nodes (the "
                f"alias here names a value of {size(node):,} nodes); refused before anything is built"
            )


def load_yaml12(text: str, source: str, *, max_alias_nodes: int = MAX_ALIAS_NODES) -> Any:
    """Parse YAML 1.2 text into LineDict/LineList containers; a syntax error, a duplicated key or an alias bomb
    names the file and line."""
    loader = Yaml12Loader(text, source)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(loader, max_alias_nodes)
        return loader.construct_document(node)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(err, "problem", None) or str(err)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{source}: invalid YAML: nested too deeply") from None
    finally:
        loader.dispose()


__all__ = ["MAX_ALIAS_NODES", "LineDict", "LineList", "line_of", "load_yaml12", "place", "plain"]
