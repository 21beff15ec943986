"""Samples: dataset rows with their id, input, target and metadata (picked out by :mod:`assay.tasks.fields`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_MISSING: Any = object()  # get_path's default: raise KeyError
_ABSENT: Any = object()


@dataclass(frozen=True, slots=True, eq=True)
class Sample:
    """One dataset row ready to become a request.

    ``doc_id`` is the row's 0-based position in the dataset as loaded (before any limit or shuffle);
    ``id`` comes from the id field, else ``str(doc_id)``; ``target`` may be a list of acceptable answers.
    """

    doc_id: int
    id: str
    doc: dict[str, Any]
    input: Any = None
    target: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its fields: ten times faster than a slotted dataclass's default (shards sent to workers)."""
        return (Sample, (self.doc_id, self.id, self.doc, self.input, self.target, self.metadata))


def get_path(row: Any, path: str, default: Any = _MISSING) -> Any:
    """The value at a dotted ``path`` in a nested row (``a.b.0`` indexes lists); a literal key ``a.b`` wins."""
    if type(row) is dict:  # the usual row: a key looked up once (an ABC check costs more than the lookup)
        found = row.get(path, _ABSENT)
        if found is not _ABSENT:
            return found
    elif isinstance(row, Mapping) and path in row:
        return row[path]
    value = row
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list | tuple) and _is_index(part) and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            if default is _MISSING:
                raise KeyError(path)
            return default
    return value


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


def has_path(row: Any, path: str) -> bool:
    """True when :func:`get_path` finds ``path`` in ``row``."""
    return get_path(row, path, _ABSENT) is not _ABSENT
