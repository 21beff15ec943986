"""The assertion types that read the response rather than its text (tool calls, latency, cost, logprobs, finish
reason), similar, transforms and errors, each with promptfoo 0.123.1's meaning (its handlers' code: the messages
are its own); the numbers of the text metrics are checked against real promptfoo in test_promptfoo_reference."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.models.base import Response, ToolCall, Usage
from assay.tasks.checks.engine import context_transform
from assay.tasks.checks.params import Row
from assay.tasks.rowchecks import RowChecks, promptfoo_output

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def judge(checks: list[Any], actual: Any, doc: dict[str, Any] | None = None, **options: Any) -> Any:
    evaluator = RowChecks(options_field="__options", vars_exclude_prefix="__", **options)
    doc = doc or {"topic": "weather"}
    return evaluator.evaluate(actual, checks, context={"doc": doc, "prompt": "What is the weather?"})


def checks_of(verdict: Any) -> list[tuple[bool, float, str]]:
    assert not verdict.is_error, verdict.error
    return [(c["pass"], c["score"], c["reason"]) for c in verdict.details["checks"]]


def test_tool_calls_are_the_output_promptfoos_openai_provider_gives() -> None:
    call = ToolCall(name="get_weather", arguments={"city": "Paris"}, id="c1")
    alone = promptfoo_output(Response(text=None, tool_calls=[call]))
    assert alone == [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]
    both = promptfoo_output(Response(text="Let me look.", tool_calls=[call]))
    assert both == {"role": "assistant", "content": "Let me look.", "tool_calls": alone}
    assert promptfoo_output(Response(text="plain")) == "plain"


def test_tools_call_checks_arguments_against_the_providers_tools() -> None:
    good = Response(tool_calls=[ToolCall(name="get_weather", arguments={"city": "Paris"})])
    bad = Response(tool_calls=[ToolCall(name="get_weather", arguments={"town": "Paris"})])
    unknown = Response(tool_calls=[ToolCall(name="get_time", arguments={})])
    check = [{"type": "is-valid-openai-tools-call"}]
    assert checks_of(judge(check, good, tools=[WEATHER])) == [(True, 1.0, "Assertion passed")]
    ((passed, _, why),) = checks_of(judge(check, bad, tools=[WEATHER]))
    assert not passed and why.startswith('Call to "get_weather" does not match schema:')
    assert (
        checks_of(judge(check, unknown, tools=[WEATHER]))[0][2]
        == 'Called "get_time", but there is no function with that name'
    )
    assert checks_of(judge(check, good))[0][2] == "No tools configured in provider, but output contains tool calls"
    assert checks_of(judge(check, Response(text="no call"), tools=[WEATHER]))[0][2] == (
        'OpenAI did not return a valid-looking tools response: "no call"'
    )


def test_tool_call_f1_scores_the_called_names() -> None:
    calls = Response(tool_calls=[ToolCall(name="get_weather"), ToolCall(name="get_news")])
    verdict = judge([{"type": "tool-call-f1", "value": "get_weather, get_time", "threshold": 0.5}], calls)
    ((passed, score, why),) = checks_of(verdict)
    assert (passed, score) == (True, 0.5)  # precision 1/2, recall 1/2
    assert why == (
        "Tool Call F1: 0.500 (precision=0.500, recall=0.500). Expected: [get_time, get_weather], "
        "Called: [get_news, get_weather]"
    )
    text = 'I will call:\n{"tool_calls": [{"function": {"name": "get_time", "arguments": "{}"}}]}'
    assert checks_of(judge([{"type": "tool-call-f1", "value": ["get_time"]}], text))[0][:2] == (True, 1.0)


def test_latency_cost_finish_reason_and_guardrails_read_the_response() -> None:
    response = Response(
        text="hi", latency_s=0.25, finish_reason="length", model="m", usage=Usage(input_tokens=1000, output_tokens=500)
    )
    prices = {"m": {"input": 2.0, "output": 10.0}}  # USD per 1M tokens: 0.002 + 0.005 = 0.007
    checks = [
        {"type": "latency", "threshold": 300},
        {"type": "not-latency", "threshold": 300},
        {"type": "cost", "threshold": 0.01},
        {"type": "cost", "threshold": 0.005},
        {"type": "finish-reason", "value": "stop"},
        {"type": "finish-reason", "value": "LENGTH"},
        {"type": "guardrails"},
    ]
    assert checks_of(judge(checks, response, prices=prices)) == [
        (True, 1.0, "Assertion passed"),
        (False, 0.0, "Latency 250ms is less than or equal to threshold 300ms"),
        (True, 1.0, "Assertion passed"),
        (False, 0.0, "Cost 0.007 is greater than threshold 0.005"),
        (False, 0.0, 'Expected finish reason "stop" but got "length"'),
        (True, 1.0, "Assertion passed"),
        (True, 1.0, "Content passed safety checks"),
    ]
    filtered = Response(text="", finish_reason="content_filter")
    assert checks_of(judge([{"type": "not-guardrails"}], filtered))[0][:2] == (True, 1.0)


def test_what_promptfoo_refuses_to_measure_is_an_error_naming_it() -> None:
    cached = Response(text="hi", latency_s=0.1, cached=True)
    assert "does not support cached results" in str(judge([{"type": "latency", "threshold": 5}], cached).error)
    assert "must have a threshold" in str(judge([{"type": "latency"}], Response(text="x")).error)
    unpriced = judge([{"type": "cost", "threshold": 1}], Response(text="x", model="m"))
    assert "no price for model 'm'" in str(unpriced.error)
    gpt4 = Response(text="x", model="gpt-4", usage=Usage(input_tokens=30, output_tokens=5))  # promptfoo's table
    assert checks_of(judge([{"type": "cost", "threshold": 0.0013}], gpt4))[0][:2] == (True, 1.0)  # 0.0009 + 0.0003
    ((passed, _, why),) = checks_of(judge([{"type": "cost", "threshold": 0.001}], gpt4))
    assert not passed and why == "Cost 0.0012 is greater than threshold 0.001"
    own = judge([{"type": "cost", "threshold": 0.001}], gpt4, prices={"gpt-4": {"input": 1, "output": 1}})
    assert checks_of(own)[0][0] is True  # the provider config's price comes before promptfoo's table
    assert "do not return logProbs" in str(judge([{"type": "perplexity"}], Response(text="x")).error)


def test_perplexity_from_recorded_logprobs() -> None:
    response = Response(text="a b", metadata={"logprobs": [-0.5, -1.5]})
    checks = [{"type": "perplexity", "threshold": 3}, {"type": "perplexity-score", "threshold": 0.5}]
    (ppl, score) = checks_of(judge(checks, response))
    assert ppl == (True, 1.0, "Assertion passed")  # exp(1) = 2.718... <= 3
    assert score[0] is False and score[1] == pytest.approx(1 / (1 + np.e))  # 0.269 < 0.5


VECS = {"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [0.0, 1.0]}  # unit vectors: similar's arithmetic without a server


def test_similar_cosine_dot_and_euclidean(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.evaluators.judge.client import CallRecord
    from assay.tasks.checks.graded_client import Graders

    asked: list[tuple[str, str]] = []

    async def embed(self: Graders, grader: Any, text: str, repeat: int = 0) -> Any:
        asked.append((grader.name, text))
        return VECS[text], CallRecord(model=grader.name, purpose="embedding", prompt=[])

    monkeypatch.setattr(Graders, "embed", embed)
    checks = [
        {"type": "similar", "value": "b"},  # cosine 0.6 < 0.75
        {"type": "similar:dot", "value": "b", "threshold": 0.5},
        {"type": "similar:euclidean", "value": "b", "threshold": 1},  # distance sqrt(0.16 + 0.64) = 0.894
        {"type": "not-similar", "value": "c"},  # cosine 0: passes, score 1
        {"type": "similar", "value": ["c", "b"], "threshold": 0.5},  # the first passing value
    ]
    verdict = judge(checks, "a")
    got = checks_of(verdict)
    assert got[0] == (False, pytest.approx(0.6), "Similarity 0.60 is less than threshold 0.75")
    assert got[1][:2] == (True, pytest.approx(0.6))
    assert got[2] == (True, pytest.approx(1 / (1 + 0.8**0.5)), "Distance 0.89 is less than or equal to threshold 1")
    assert got[3][:2] == (True, 1.0)
    assert got[4][:2] == (True, pytest.approx(0.6))
    # promptfoo's default embedding provider; each value embedded beside the output, as matchesSimilarity calls it
    assert {name for name, _ in asked} == {"text-embedding-3-large"} and len(asked) == 12
    assert len(verdict.details["judges"]) == 12  # counted with the row's judge usage


def test_similar_embeds_with_promptfoos_embedding_provider_over_http() -> None:
    """The check's provider, else the test's options.provider (its ``embedding``), else promptfoo's default at
    OPENAI_BASE_URL; cosine of the server's embeddings, as promptfoo computes it (not unit vectors)."""
    from tests.rowchecks.test_graded_server import GradingServer, cosine, letter_vector

    with GradingServer("unused") as server:
        own = {"id": "openai:embedding:mine", "config": {"apiBaseUrl": server.base_url}}
        by_test = {"embedding": {"id": "openai:embedding:theirs", "config": {"apiBaseUrl": server.base_url}}}
        check = {"type": "similar", "value": "Paris, France", "threshold": 0.5}
        doc = {"__options": {"provider": by_test}}
        mine = judge([{**check, "provider": own}], "Paris", doc=doc)
        theirs = judge([check], "Paris", doc=doc)
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("OPENAI_BASE_URL", server.base_url)
            mp.setenv("OPENAI_API_KEY", "x")
            default = judge([check], "Paris")
        models = [r["model"] for r in server.embedding_requests]
    want = cosine(letter_vector("Paris, France"), letter_vector("Paris"))
    for verdict in (mine, theirs, default):
        assert checks_of(verdict)[0] == (True, pytest.approx(want), f"Similarity {want:.2f} is greater than or "
                                         "equal to threshold 0.5")  # fmt: skip
    assert models == ["mine"] * 2 + ["theirs"] * 2 + ["text-embedding-3-large"] * 2
    assert [j["model"] for j in default.details["judges"]] == ["text-embedding-3-large"] * 2
    chat = judge([{**check, "provider": "openai:gpt-4"}], "Paris")
    assert chat.is_error and "is not a valid embedding provider for 'similarity check'" in str(chat.error)


def test_a_transform_that_fails_or_returns_nothing_errors_the_row(tmp_path: Path) -> None:
    bad = judge([{"type": "equals", "value": "x"}], "hi", doc={"__options": {"transform": "output.nope.deeper"}})
    assert bad.is_error and "Transform failed ([inline transform]: output.nope.deeper)" in str(bad.error)
    block = judge([{"type": "equals", "value": "x"}], "hi", doc={"__options": {"transform": "output.length\n"}})
    assert "Transform function did not return a value" in str(block.error)  # a line break makes it a function body
    missing = judge([{"type": "python", "value": "file://nope.py"}], "hi", base_dir=str(tmp_path))
    assert not missing.passed and "cannot read" in checks_of(missing)[0][2]  # promptfoo: a failing check


def test_vars_render_in_values_and_an_undefined_var_is_empty() -> None:
    doc = {"topic": "weather", "__options": {}}
    checks = [
        {"type": "equals", "value": "the {{ topic }}{{ nothing }}"},
        {"type": "contains-all", "value": ["{{topic}}"]},
    ]
    assert checks_of(judge(checks, "the weather", doc=doc))[0][0] is True
    assert judge(checks, "the weather", doc=doc).passed


def test_a_test_without_assertions_passes_and_weight_zero_only_reports() -> None:
    empty = judge([], "anything")
    assert (empty.passed, empty.score, empty.details["reason"]) == (True, 1.0, "No assertions")
    zero = judge([{"type": "equals", "value": "no", "weight": 0}], "yes")
    assert zero.passed and zero.score == 0.0  # promptfoo: weight 0 forces pass; no weight at all scores 0


def test_context_transform_makes_the_checks_context(tmp_path: Path) -> None:
    evaluator = RowChecks(base_dir=str(tmp_path))
    row = Row(None, {"q": 1}, "p", {}, evaluator.code, evaluator, {"raw_output": '{"docs": ["a", "b"]}'})

    async def run(code: str) -> Any:
        try:
            return await context_transform(code, row)
        finally:
            await evaluator.code.aclose()

    assert asyncio.run(run("JSON.parse(output).docs")) == ["a", "b"]
    with pytest.raises(Exception, match="contextTransform must return a string or array of strings"):
        asyncio.run(run("JSON.parse(output)"))


def test_one_node_process_serves_a_whole_run() -> None:
    evaluator = RowChecks(options_field="__options", vars_exclude_prefix="__")
    checks = [
        {"type": "javascript", "value": "output.n >= 0"},
        {"type": "equals", "value": "{{n}}", "transform": "String(output.n)"},
    ]

    async def run() -> list[Any]:
        try:
            return await asyncio.gather(
                *(
                    evaluator.aevaluate(
                        json.dumps({"n": i}),
                        checks,
                        context={"doc": {"n": i, "__options": {"transform": "JSON.parse(output)"}}},
                    )
                    for i in range(50)
                )
            )
        finally:
            await evaluator.aclose()

    verdicts = asyncio.run(run())
    assert all(v.passed for v in verdicts), [v.error or v.reason for v in verdicts if not v.passed][:3]
    assert evaluator.code.node.started == 1  # 150 JavaScript calls, one Node.js process


def test_regex_keeps_javascripts_meaning() -> None:
    checks = [
        {"type": "regex", "value": r"c$"},  # JavaScript's $ is the very end: not before a final line break
        {"type": "regex", "value": r"^\w+$"},  # \w is ASCII in JavaScript
        {"type": "regex", "value": r"(?<w>ab)\k<w>"},  # named groups, JavaScript's spelling
        {"type": "regex", "value": r"[\d.]+"},
        {"type": "regex", "value": "(unclosed"},
    ]
    got = checks_of(judge(checks, "abc\n"))
    assert [g[0] for g in got] == [False, False, False, False, False]
    assert got[4][2].startswith("Invalid regex pattern:")
    assert [g[0] for g in checks_of(judge(checks[2:4], "x abab 3.1"))] == [True, True]
    assert checks_of(judge(checks[1:2], "é"))[0][0] is False


def test_a_copy_for_another_worker_starts_its_own_node() -> None:
    import pickle

    evaluator = RowChecks()
    check = [{"type": "javascript", "value": "output === 'x'"}]
    assert evaluator.evaluate("x", check).passed
    copy = pickle.loads(pickle.dumps(evaluator))  # as a Ray worker gets it
    assert copy == evaluator and copy.code is not evaluator.code
    assert copy.evaluate("x", check).passed


def test_a_graders_score_outside_0_1_stays_promptfoos_in_the_assertion_and_the_mean() -> None:
    """promptfoo's runJsonGradingPrompt keeps the grader's score as it is (score = parsed.score): a custom rubric's
    points (2, 3) are the assertion's score and go into the test's weighted mean unclipped; only the row Verdict's
    score is clipped to [0, 1], the raw mean kept in details.promptfoo_score."""
    from tests.rowchecks.test_graded_server import GradingServer

    def reply(body: dict[str, Any]) -> str:
        text = json.dumps(body["messages"])
        score, passed = (3, False) if "clarify" in text else (2, True)
        return json.dumps({"pass": passed, "score": score, "reason": f"{score} points"})

    with GradingServer(reply) as server:
        grader = {"provider": "openai", "model": "grader", "base_url": server.base_url}
        rubric = {"type": "llm-rubric", "value": "mentions the Fed"}
        two = judge([rubric, {"type": "equals", "value": "no"}], "the Fed", judge=grader)
        held = judge([rubric], "the Fed", doc={"topic": "x", "threshold": 0}, judge=grader)
        three = judge([rubric], "the Fed; could you clarify?", judge=grader)
    assert checks_of(two)[0][:2] == (True, 2.0)
    assert two.details["promptfoo_score"] == 1.0 and two.score == 1.0 and not two.passed  # (2 + 0) / 2
    assert held.passed and held.details["promptfoo_score"] == 2.0 and held.score == 1.0
    assert checks_of(three)[0][:2] == (False, 3.0)
    assert not three.passed and three.details["promptfoo_score"] == 3.0 and three.score == 1.0


def test_a_legacy_function_call_is_the_output_promptfoos_chat_provider_gives() -> None:
    """promptfoo's OpenAI chat provider: output = message.function_call || message.tool_calls when there is no
    content, the whole message when there is content besides; assay's client keeps the call as sent in
    metadata["function_call"] (not as a tool call, so tool-calling agents see nothing new)."""
    from assay.models.openai_compat import OpenAIModel

    raw = {"name": "get_current_weather", "arguments": '{"location": "Boston, MA"}'}
    reply = {"model": "m", "choices": [{"message": {"role": "assistant", "content": None, "function_call": raw}}]}
    response = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", api_key="x")._response(reply, 0.1)
    assert response.tool_calls == [] and response.text is None
    assert response.metadata["function_call"] == raw
    assert promptfoo_output(response) == raw  # the arguments stay the string the model wrote
    said = response.model_copy(update={"text": "Let me look."})
    assert promptfoo_output(said) == {"role": "assistant", "content": "Let me look.", "function_call": raw}
    checks = [
        {"type": "is-json"},
        {"type": "is-valid-openai-function-call"},
        {"type": "javascript", "value": "JSON.parse(output.arguments).location === 'Boston, MA'"},
    ]
    functions = [{"name": "get_current_weather", "parameters": {"type": "object", "properties": {"location": {}}}}]
    assert [c[0] for c in checks_of(judge(checks, response, functions=functions))] == [True, True, True]
    transformed = judge(
        [{"type": "equals", "value": "Boston, MA"}],
        response,
        doc={"__options": {"transform": "JSON.parse(output.arguments).location"}},
    )
    assert checks_of(transformed)[0][0] is True
