"""Canonical JSON: the building block of task and dataset hashes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
from pydantic import BaseModel

from assay.tasks.hashing import canonical_json, rows_hash, sha256_hex


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
