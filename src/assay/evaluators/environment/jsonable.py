"""A stateful world's state as plain JSON (objects with string keys, lists, strings, numbers, booleans, null), so
the record keeps it and ``state_match`` compares it with a row's expected state however the world stores it:
its own ``state()`` or ``to_dict()`` method (the recorders ``assay.tools.world`` keeps out of the tools, which this
layer may not import), pydantic models, dataclasses, plain objects' public attributes, enums, dates, sets."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import enum
import inspect
import math
import uuid
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 64
RECORDERS = ("state", "to_dict")  # methods by which a world gives its own state (as assay.tools.world reads them)


def to_json(value: Any) -> Any:
    """``value`` as JSON data; a cycle becomes ``"<cycle>"``, an object with nothing to show its ``repr``."""
    return _convert(value, set(), 0)


def _convert(value: Any, active: set[int], depth: int) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return _convert(value.value, active, depth)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value) if value.is_finite() else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if depth >= MAX_DEPTH:
        return repr(value)
    if id(value) in active:
        return "<cycle>"
    active.add(id(value))
    try:
        return _container(value, active, depth + 1)
    finally:
        active.discard(id(value))


def _container(value: Any, active: set[int], depth: int) -> Any:
    if isinstance(value, Mapping):
        return {_key(k): _convert(v, active, depth) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_convert(v, active, depth) for v in value]
    if isinstance(value, set | frozenset):
        items = [_convert(v, active, depth) for v in value]
        return sorted(items, key=repr)
    for name in RECORDERS:
        method = getattr(value, name, None)
        if inspect.ismethod(method) and not _needs_arguments(method):
            return _convert(method(), active, depth)
    dump = getattr(value, "model_dump", None)  # pydantic v2
    if callable(dump) and not isinstance(value, type):
        return _convert(dump(mode="json"), active, depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _convert(getattr(value, f.name), active, depth) for f in dataclasses.fields(value)}
    fields = _public_attributes(value)
    if fields is not None:
        return {k: _convert(v, active, depth) for k, v in fields.items()}
    return repr(value)


def _needs_arguments(method: Any) -> bool:
    """Whether a method has a parameter without a default (a tool named ``state``, not a recorder)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _key(key: Any) -> str:
    """A mapping key as JSON's string key (an enum by its value, as JSON would write it)."""
    if isinstance(key, enum.Enum):
        key = key.value
    return key if isinstance(key, str) else str(key)


def _public_attributes(value: Any) -> dict[str, Any] | None:
    """A plain object's public attributes (``vars`` or ``__slots__``); None for one without any to show."""
    if isinstance(value, type) or callable(value):
        return None
    attrs: dict[str, Any] = {}
    with contextlib.suppress(TypeError):
        attrs.update(vars(value))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name):
                attrs.setdefault(name, getattr(value, name))
    public = {k: v for k, v in attrs.items() if not k.startswith("_") and not callable(v)}
    return public or None
