"""state_match on a small order world, worked by hand: field diffs as dotted paths, partial credit, key fields,
tolerance, ignored paths, extras, and the world's state made JSON however it is stored."""

from __future__ import annotations

import datetime
import enum
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from assay import evaluators
from assay.evaluators.environment.jsonable import to_json
from assay.verdict import Verdict
from tests.environments.hostenv import HostEnvironment


class Status(enum.Enum):
    PENDING = "pending"
    CANCELLED = "cancelled"


@dataclass
class Order:
    id: str
    status: Status
    total: float
    items: list[str] = field(default_factory=list)


class Customer(BaseModel):
    name: str
    since: datetime.date


class Shop:
    def __init__(self) -> None:
        self.orders = [Order("O1", Status.PENDING, 10.0, ["pen"]), Order("O2", Status.PENDING, 25.5, ["ink", "pad"])]
        self.customers = {"C1": Customer(name="Ada", since=datetime.date(2024, 1, 2))}
        self.tags = {"b", "a"}
        self._secret = "not state"

    def cancel(self, order_id: str) -> None:
        """A tool: its bound method is not state."""


def _score(state: Any, expected: Any, **options: Any) -> Verdict:
    ev = evaluators.get("state_match", **options)
    context = {"doc": {"expected_state": expected}, "environment": {"observations": {ev.observation_key(): state}}}
    return ev.evaluate("done", None, context=context)


async def _observe(tmp_path: Path, state: Any) -> Any:
    return await evaluators.get("state_match").observe(HostEnvironment(tmp_path, {}, state=state), {})


def test_the_world_is_made_json() -> None:
    assert to_json(Shop()) == {
        "orders": [
            {"id": "O1", "status": "pending", "total": 10.0, "items": ["pen"]},
            {"id": "O2", "status": "pending", "total": 25.5, "items": ["ink", "pad"]},
        ],
        "customers": {"C1": {"name": "Ada", "since": "2024-01-02"}},
        "tags": ["a", "b"],
    }

    class Recorded(Shop):
        def to_dict(self) -> dict[str, Any]:
            return {"orders": len(self.orders)}

    assert to_json(Recorded()) == {"orders": 2}  # a world's own recorder, as assay.tools.world reads it
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    assert to_json(loop) == {"a": 1, "self": "<cycle>"}
    assert to_json({1: math.inf, (2, 3): None}) == {"1": "inf", "(2, 3)": None}


async def test_observe_records_the_state_and_a_world_less_environment_is_an_error(tmp_path: Path) -> None:
    obs = await _observe(tmp_path / "a", Shop())
    assert obs["state"]["orders"][1]["status"] == "pending"
    none = await _observe(tmp_path / "b", None)
    assert "no stateful world" in none["error"]
    assert _score(none, {"a": 1}).is_error


def test_right_state_passes_and_wrong_fields_are_named() -> None:
    state = {"state": to_json(Shop())}
    right = {"orders": [{"id": "O1", "status": "pending"}, {"id": "O2", "total": 25.5}], "customers": {"C1": {}}}
    assert _score(state, right, key_fields=["id"]).passed
    assert not _score(state, right, key_fields=["id"], allow_extra=False).passed  # C1 is not an empty object
    wrong = {
        "orders": [{"id": "O2", "status": "cancelled", "total": 25.5}, {"id": "O1", "status": "pending"}],
        "customers": {"C1": {"name": "Bob"}},
    }
    v = _score(state, wrong, key_fields=["id"])
    # leaves: O2.id, O2.status, O2.total, O1.id, O1.status, C1.name = 6; O2.status and C1.name differ
    assert v.score == pytest.approx(4 / 6) and not v.passed
    assert v.reason == "2 of 6 fields differ: orders.O2.status, customers.C1.name"
    assert "orders.O2.status: expected 'cancelled', got 'pending'" in (v.feedback or "")
    assert "customers.C1.name: expected 'Bob', got 'Ada'" in (v.feedback or "")
    assert v.details["matched"] == 4 and v.details["total"] == 6
    assert v.details["differences"][0] == {"path": "orders.O2.status", "expected": "cancelled", "actual": "pending"}


def test_lists_by_position_count_length_and_missing_items() -> None:
    state = {"state": {"cart": ["pen", "ink", "pad"], "orders": [{"id": "O1"}]}}
    v = _score(state, {"cart": ["pen", "ink"], "orders": [{"id": "O1"}, {"id": "O9", "status": "new"}]})
    # leaves: cart.0, cart.1, orders.0.id, orders.1 (missing: its 2 leaves) = 5, 2 differ; cart.2 unexpected
    assert v.details["total"] == 5 and v.details["matched"] == 3 and v.details["extras"] == 1
    assert v.score == pytest.approx(3 / 6)
    assert "cart.2: not expected, got 'pad'" in (v.feedback or "")
    assert "orders.1: expected {'id': 'O9', 'status': 'new'}, got nothing (missing)" in (v.feedback or "")


def test_key_fields_name_items_and_flag_unexpected_ones() -> None:
    state = {"state": {"orders": [{"id": "O1", "s": 1}, {"id": "O3", "s": 2}]}}
    v = _score(state, {"orders": [{"id": "O1", "s": 1}]}, key_fields=["sku", "id"])
    assert v.score == pytest.approx(2 / 3) and "orders.O3: not expected" in (v.feedback or "")


def test_tolerance_ignore_and_extra_keys() -> None:
    state = {"state": {"total": 10.004, "updated": {"at": "now"}, "log": [1, 2], "n": 1, "flag": True}}
    assert not _score(state, {"total": 10.0}).passed
    assert _score(state, {"total": 10.0}, tolerance=0.01).passed
    assert _score(state, {"total": 10, "updated": {"at": "then"}}, tolerance=0.01, ignore=["updated.*"]).passed
    assert not _score(state, {"flag": 1}).passed and not _score(state, {"n": True}).passed  # bools are not numbers
    strict = _score(state, {"total": 10.004, "n": 1}, allow_extra=False)
    assert strict.details["extras"] == 3 and strict.score == pytest.approx(2 / 5)
    assert _score(state, {"total": 10.004, "n": 1}, allow_extra=False, ignore=["updated", "log", "flag"]).passed


def test_a_container_where_a_value_was_expected_counts_each_leaf() -> None:
    v = _score({"state": {"orders": "none"}}, {"orders": {"O1": {"a": 1, "b": 2}}, "x": 1})
    assert v.details["total"] == 3 and v.details["matched"] == 0
    assert v.feedback and "orders: expected {'O1': {'a': 1, 'b': 2}}, got 'none'" in v.feedback


def test_empty_expected_or_missing_row_key_is_an_error() -> None:
    assert _score({"state": {"a": 1}}, {}).is_error
    ev = evaluators.get("state_match")
    context = {"doc": {}, "environment": {"observations": {"state_match": {"state": {}}}}}
    assert "has no 'expected_state'" in (ev.evaluate(None, None, context=context).error or "")
