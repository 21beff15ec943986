"""The tau-bench-style example (examples/environments/shop) end to end: an order database made per sample from
its row, its four methods the agent's tools, a simulated user asking for two changes over two turns, and
``state_match`` scoring the database's final state against the row's expected state, with feedback naming the
fields that differ (worked out by hand)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import assay
from assay.tasks import Task
from assay.testing.scripted import Conversation
from assay.testing.server import OpenAITestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "environments" / "shop"
ORDERS = json.loads((EXAMPLE / "shop.jsonl").read_text().splitlines()[0])["orders"]


def _task(base_url: str) -> Task:
    """The example task, its simulated user played by the test server (model user-sim), its first row only."""
    config = yaml.safe_load((EXAMPLE / "task.yaml").read_text())
    config["user"]["model"] = {"provider": "openai", "model": "user-sim", "base_url": base_url}
    return Task.from_config(config, base_dir=EXAMPLE)


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def right_agent(conv: Conversation) -> Any:
    done = len(conv.tool_results)
    if "cancel" in conv.user:
        steps = [_call("get_order", order_id="O1"), _call("cancel_order", order_id="O1", reason="no longer needed")]
        return steps[done] if done < len(steps) else "Order O1 is cancelled. Anything else?"
    if "refund" in conv.user:
        return _call("refund", order_id="O2", amount=20.0) if not done else "I refunded 20.00 on O2."
    return "Goodbye."


def wrong_agent(conv: Conversation) -> Any:
    """Cancels the wrong order (O3) and refunds the whole price of O2."""
    done = len(conv.tool_results)
    if "cancel" in conv.user:
        step = _call("cancel_order", order_id="O3", reason="ordered by mistake")
        return step if not done else "Order cancelled. Anything else?"
    if "refund" in conv.user:
        return _call("refund", order_id="O2", amount=50.0) if not done else "I refunded O2."
    return "Goodbye."


def _replies(agent: Any) -> Any:
    """The agent under test, and the simulated user (model user-sim): it asks for the refund once the
    cancellation is confirmed, and stops once the refund is."""

    def reply(request: dict[str, Any]) -> Any:
        if request.get("model") == "user-sim":
            last = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
            return "DONE" if "refunded" in last else "Thanks. Also, please refund 20.00 on order O2."
        return agent(Conversation.of(request))

    return reply


def _run(tmp_path: Path, agent: Any) -> Any:
    with OpenAITestServer(_replies(agent)) as server:
        model = {"provider": "openai", "model": "assay-test", "base_url": server.base_url}
        return assay.run(
            _task(server.base_url), model, output_dir=tmp_path / "runs", progress=False, cache=False, limit=1
        )


def test_right_trajectory_reaches_the_expected_state(tmp_path: Path) -> None:
    run = _run(tmp_path, right_agent)
    (record,) = run.records
    verdict = record.filters["none"].verdicts["state_match"][0]
    assert verdict["error"] is None and verdict["passed"] and verdict["score"] == 1.0, verdict["reason"]
    response = record.responses[0]
    assert [c.name for c in response.tool_calls] == ["get_order", "cancel_order", "refund"]
    assert response.stop_reason == "user_done"  # the simulated user ended it, over two user turns
    state = next(iter(response.metadata["environment"]["observations"].values()))["state"]
    assert state["orders"]["O2"]["refunded"] == 20.0 and state["orders"]["O1"]["status"] == "cancelled"
    assert "diff" not in response.metadata["environment"]  # a pure world has no workspace
    assert response.metadata["environment"]["kind"] == "world"  # and is made without a sandbox


def test_wrong_trajectory_scores_by_hand_and_names_the_wrong_fields(tmp_path: Path) -> None:
    run = _run(tmp_path, wrong_agent)
    (record,) = run.records
    verdict = record.filters["none"].verdicts["state_match"][0]
    # 6 expected fields: O1.status and O1.cancel_reason (O1 untouched), O2.refunded (50, not 20), O3.status
    # (cancelled) differ; O2.status and O3.address match: 2 of 6
    assert verdict["error"] is None and verdict["passed"] is False
    assert verdict["score"] == pytest.approx(2 / 6)
    feedback = verdict["feedback"]
    for path in ("orders.O1.status", "orders.O1.cancel_reason", "orders.O2.refunded", "orders.O3.status"):
        assert path in feedback
    assert "orders.O2.status" not in feedback and "orders.O3.address" not in feedback
    assert "expected 'cancelled'" in feedback and "'pending'" in feedback
    assert run.results["results"]["shop"]["state_match,none"] == pytest.approx(2 / 6)


def test_a_world_refusal_reaches_the_model_as_text(tmp_path: Path) -> None:
    """Refunding a pending order is refused by the world's rule; the model hears why and the state is unchanged."""

    def agent(conv: Conversation) -> Any:
        if "cancel" in conv.user and not conv.tool_results:
            return _call("refund", order_id="O1", amount=5.0)
        return "Sorry, I could not." if "cancel" in conv.user else "Goodbye."

    run = _run(tmp_path, agent)
    (record,) = run.records
    call = record.responses[0].tool_calls[0]
    assert call.error is not None and "only delivered orders are refunded" in call.error
    state = next(iter(record.responses[0].metadata["environment"]["observations"].values()))["state"]
    assert state["orders"]["O1"] == {**ORDERS[0]}


def test_bad_environment_keys_are_refused_naming_the_key(tmp_path: Path) -> None:
    from assay.errors import ConfigError

    base = {"name": "t", "dataset": [{"id": "a", "input": "x", "target": "y"}], "template": "{{ input }}"}
    cases = [
        ({"python": "no_such_module:World"}, "environment.python", "cannot import"),
        ({"python": "order_world"}, "environment", "module:factory"),
        ({"filez": {}}, "environment", "filez"),
        ({"limits": {"memory_mb": 1}}, "environment", "memory_mb"),
    ]
    for environment, where, what in cases:
        with pytest.raises(ConfigError) as caught:
            Task.from_config({**base, "environment": environment}, base_dir=EXAMPLE)
        assert where in str(caught.value) and what in str(caught.value), str(caught.value)
