"""Canonical JSON: the building block of task and dataset hashes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel

from assay.hashing import canonical_bytes, canonical_json, rows_hash, sha256_hex


class Point(BaseModel):
    x: int
    y: int


class Opaque:
    def __str__(self) -> str:
        return "opaque"


def test_key_order_and_whitespace_do_not_matter():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'
    assert sha256_hex({"a": 1, "b": 2}) == sha256_hex({"b": 2, "a": 1})


def test_non_json_values_have_stable_forms():
    assert canonical_json(b"\x00\xff") == '{"__bytes__":"AP8="}'
    assert canonical_json({3, 1, 2}) == canonical_json({2, 3, 1}) == '["1","2","3"]'
    assert canonical_json((1, 2)) == "[1,2]"
    assert canonical_json(dt.date(2024, 1, 2)) == '"2024-01-02"'
    assert canonical_json(Decimal("1.10")) == '"1.10"'
    assert canonical_json(np.int64(3)) == "3" and canonical_json(np.array([[1, 2]])) == "[[1,2]]"
    assert canonical_json(Point(x=1, y=2)) == '{"x":1,"y":2}'
    assert canonical_json(Opaque()) == canonical_json(Opaque())  # never a repr with a memory address
    assert "opaque" in canonical_json(Opaque())
    assert canonical_json("é") == '"é"'


def test_rows_hash_streams_rows_in_order():
    rows = [{"a": 1}, {"a": 2}]
    assert rows_hash(rows) == rows_hash(iter([{"a": 1}, {"a": 2}]))
    assert rows_hash(rows) != rows_hash(rows[::-1])
    assert rows_hash([{"a": "1\n"}]) != rows_hash([{"a": "1"}, {}])  # rows cannot run into each other
    assert sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


class Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"id": "q1", "q": 'Zürich «東京» \u2028 \x00\x1f\x7f "\\ \n\t', "n": -(2**63), "ok": True, "none": None},
        {"b": [1, {"z": [], "a": {}}, "x"], "a": 2**64 - 1, "é": 1, "e": 2, "\U0001f600": 3, "\uffff": 4},
        {"f": 1e-05, "g": 1e16, "h": 0.1, "nan": float("nan"), "inf": float("-inf")},  # floats: json writes them
        {"big": 2**64, "neg": -(2**63) - 1},  # past orjson's integers
        {2: "a", 1: "b"},  # keys that are not strings
        {"t": (1, "a"), "s": Text("x"), "d": Decimal("1.5"), "b": b"\x00"},
        [[[[[[["deep"]]]]]]],
        "plain text",
        [],
    ],
)
def test_canonical_bytes_are_canonical_json_in_utf8(value: Any):
    assert canonical_bytes(value) == canonical_json(value).encode("utf-8")


def test_canonical_bytes_raise_as_canonical_json_does():
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped
    with pytest.raises(ValueError, match="Circular"):
        canonical_bytes(looped)
    with pytest.raises(UnicodeEncodeError):
        canonical_bytes({"a": "\ud800"})
    nested: Any = "x"
    for _ in range(300):  # past orjson's nesting limit
        nested = [nested]
    assert canonical_bytes(nested) == canonical_json(nested).encode("utf-8")
