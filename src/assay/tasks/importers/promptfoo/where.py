"""Where a value of a promptfoo config came from, so every refusal reads ``FILE:LINE: key.path: message``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.yaml12 import place


@dataclass(frozen=True)
class At:
    """A place in a config: the file, the line (None when the file has no lines, e.g. a JSON file PyYAML cannot
    read) and the key path (``tests[3].assert[0].type``)."""

    file: str
    line: int | None
    path: str = ""

    @classmethod
    def of(cls, node: Any, path: str, fallback: At | None = None) -> At:
        """The place of a container read from a file (its own file and line), else ``fallback``'s file and line."""
        source = getattr(node, "source", None)
        if source:
            return cls(source, getattr(node, "line", None), path)
        return cls(fallback.file, fallback.line, path) if fallback else cls("?", None, path)

    def key(self, container: Any, key: Any) -> At:
        """The place of ``container[key]`` (a mapping key or a list index), ``container`` being at this place."""
        source, line = place(container, key)
        source = source or self.file
        sub = f"[{key}]" if isinstance(key, int) else (f".{key}" if self.path else str(key))
        return At(source, line if line is not None else self.line, self.path + sub)

    def named(self, path: str) -> At:
        """The same file and line under another key path."""
        return At(self.file, self.line, path)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.path}" if self.path and where else self.path or where

    def error(self, message: str) -> ConfigError:
        """A ConfigError naming this place: ``FILE:LINE: key.path: message``."""
        return ConfigError(f"{self}: {message}")


def listing(names: list[str] | tuple[str, ...] | set[str], limit: int = 20) -> str:
    """Names for a message: sorted, comma separated, the first ``limit`` of them."""
    items = sorted(map(str, names))
    more = f", … ({len(items) - limit} more)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more if items else "none"
