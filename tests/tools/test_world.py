"""Stateful tool worlds: a class's typed, documented methods are the tools (schemas as for Python tools), calls change
the sample's state object, a refusal reaches the model as text, and the final state is recorded as JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.agents.loop import AgentLoop
from assay.models.base import ToolCall
from assay.models.python import PythonModel
from assay.tools.base import SampleTools, ToolError, ToolSet
from assay.tools.world import WorldError, make_world, world_class, world_state, world_tools
from tests.environments.hostenv import HostEnvironment
from tests.tools import orders_world
from tests.tools.orders_world import Account, Ledger, Marked, Orders, Plain

ROW = {
    "orders": {
        "A1": {"status": "pending", "items": ["pen"]},
        "A2": {"status": "delivered", "items": ["ink"]},
    }
}


def by_name(tools: list[Any]) -> dict[str, Any]:
    return {t.name: t for t in tools}


def test_the_public_methods_are_the_tools_with_schemas_from_signatures_and_docstrings() -> None:
    tools = by_name(world_tools(Orders))
    assert list(tools) == ["get_order", "cancel_order", "add_item"]  # not _audit, not state
    cancel = tools["cancel_order"].schema()["function"]
    assert cancel["description"] == "Cancel a pending order."
    assert cancel["parameters"] == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "The order to cancel."},
            "reason": {
                "enum": ["no longer needed", "ordered by mistake"],
                "type": "string",
                "description": "Why the customer cancels.",
            },
        },
        "required": ["order_id", "reason"],
    }
    add = tools["add_item"].schema()["function"]["parameters"]
    assert add["required"] == ["order_id", "item"] and add["properties"]["quantity"]["type"] == "integer"


def test_a_function_factory_gives_its_class_by_its_return_annotation() -> None:
    assert world_class(orders_world.make) is Orders
    assert world_class("tests.tools.orders_world:make") is Orders
    assert [t.name for t in world_tools("tests.tools.orders_world:make")] == ["get_order", "cancel_order", "add_item"]
    with pytest.raises(WorldError, match="annotated with the class it returns"):
        world_tools(orders_world.make_unknown)
    with pytest.raises(WorldError, match="cannot import the world factory"):
        world_tools("tests.tools.orders_world:nothing_here")


def test_marked_methods_alone_are_tools_when_any_is_marked() -> None:
    assert [t.name for t in world_tools(Marked)] == ["bump"]
    assert [t.name for t in world_tools(Account)] == ["withdraw"]  # pydantic's own methods are not tools


def world_env(world: Any) -> tuple[HostEnvironment, SampleTools]:
    env = HostEnvironment()
    env.state = world
    return env, ToolSet([]).for_sample(environment=env)


async def test_calls_change_the_samples_state_and_refusals_reach_the_model_as_text() -> None:
    row = json.loads(json.dumps(ROW))
    world = make_world(orders_world.make, row)
    assert isinstance(world, Orders) and world.orders is not row["orders"]  # the row itself is never changed
    env, state = world_env(world)
    tools = by_name(world_tools(Orders))
    try:
        assert await tools["cancel_order"].call({"order_id": "A1", "reason": "no longer needed"}, state) == "cancelled"
        assert await tools["add_item"].call({"order_id": "A1", "item": "cap", "quantity": 2}, state) == (
            '["pen", "cap", "cap"]'
        )
        with pytest.raises(ToolError) as refused:
            await tools["cancel_order"].call({"order_id": "A2", "reason": "ordered by mistake"}, state)
        assert str(refused.value) == "order A2 is delivered, only pending orders can be cancelled"
        with pytest.raises(ToolError, match="bad arguments for cancel_order"):
            await tools["cancel_order"].call({"order_id": "A1", "reason": "bored"}, state)
        loop = AgentLoop(PythonModel(lambda request: "unused"), ToolSet(list(tools.values())))
        content, error = await loop._run_one(ToolCall(name="get_order", arguments={"order_id": "Z9"}), state)
        assert content == "Error: 'no order Z9'" and error == "'no order Z9'"
        assert world_state(world) == {
            "orders": {
                "A1": {"status": "cancelled", "items": ["pen", "cap", "cap"]},
                "A2": {"status": "delivered", "items": ["ink"]},
            },
            "log": ["cancel A1: no longer needed"],
        }
        assert row == ROW
    finally:
        await env.close()


async def test_a_world_tool_needs_the_world_it_was_made_for() -> None:
    bump = world_tools(Marked)[0]
    with pytest.raises(ToolError, match="needs an environment"):
        await bump.call({}, ToolSet([]).for_sample())
    env, state = world_env(Ledger())
    try:
        with pytest.raises(ToolError, match="bump acts on a Marked world, and this sample has a Ledger"):
            await bump.call({}, state)
    finally:
        await env.close()


async def test_dataclass_and_pydantic_worlds_and_their_states() -> None:
    ledger = Ledger()
    env, state = world_env(ledger)
    try:
        assert await world_tools(Ledger)[0].call({"amount": 5}, state) == "5"
    finally:
        await env.close()
    ledger.tags |= {"b", "a"}
    assert world_state(ledger) == {"balance": 5, "tags": ["a", "b"], "opened": "2026-01-02"}
    account = make_world(Account, {"owner": "ana", "balance": 3})
    env, state = world_env(account)
    try:
        with pytest.raises(ToolError, match="insufficient funds"):
            await world_tools(Account)[0].call({"amount": 9}, state)
    finally:
        await env.close()
    assert world_state(account) == {"owner": "ana", "balance": 3}


def test_a_plain_objects_state_is_its_public_plain_data() -> None:
    assert world_state(Plain()) == {"name": "x", "items": ["a", "b"]}
    json.dumps(world_state(Plain()))


def test_a_factory_must_make_the_world_it_declares() -> None:
    def wrong(row: dict[str, Any]) -> Orders:
        return Ledger()  # type: ignore[return-value]

    with pytest.raises(WorldError, match="returned a Ledger, not the Orders it declares"):
        make_world(wrong, ROW)
