"""Canonical JSON and sha256: the same value hashes the same across processes, platforms and dict key order."""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import orjson


def _default(value: Any) -> Any:
    """JSON form of values json cannot write; chosen to be stable (never a repr with a memory address)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, set | frozenset):
        return sorted(canonical_json(v) for v in value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and getattr(value, "ndim", None) == 0:
        return item()
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return tolist()
    model_dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(model_dump):
        return model_dump(mode="json")
    if isinstance(value, Mapping):
        return dict(value)
    return {"__type__": f"{type(value).__module__}.{type(value).__qualname__}", "value": str(value)}


# json.dumps with options builds this encoder on every call; hashing a dataset calls it once a row
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default).encode


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys; equal values give equal text regardless of dict order."""
    return _ENCODE(value)


def canonical_bytes(value: Any) -> bytes:
    """:func:`canonical_json` as UTF-8, written by orjson where its text is the same: values made only of dicts,
    lists, strings, integers, booleans and None (orjson writes floats otherwise, and refuses what does not fit it:
    an integer past 64 bits, a key that is not a string, a lone surrogate, deep nesting); else by json, as before."""
    if _plain(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # orjson.JSONEncodeError: json decides (and raises, if it must, its own error)
            pass
    return canonical_json(value).encode("utf-8")


_LEAVES = frozenset({str, int, bool, type(None)})


def _plain(value: Any, most: int = 10_000) -> bool:
    """True for a value of dicts, lists and :data:`_LEAVES` alone (exact types: no subclasses, floats, tuples),
    with at most ``most`` dicts and lists (a value that holds itself is never plain)."""
    stack = [value]
    leaves = _LEAVES
    while stack:
        most -= 1
        if most < 0:
            return False
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for v in item.values():
                if type(v) not in leaves:
                    stack.append(v)
        elif kind is list:
            for v in item:
                if type(v) not in leaves:
                    stack.append(v)
        elif kind not in leaves:
            return False
    return True


def sha256_hex(value: Any) -> str:
    """sha256 (hex) of the canonical JSON of ``value``; a str is hashed as its UTF-8 bytes directly."""
    text = value if isinstance(value, str) else canonical_json(value)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rows_hash(rows: Iterable[Any]) -> str:
    """sha256 over a sequence of rows, one canonical JSON line each (streamed: no giant string)."""
    h = hashlib.sha256()
    for row in rows:
        h.update(canonical_bytes(row))
        h.update(b"\n")
    return h.hexdigest()
