"""tool_usage: reading calls, every check and option, per-sample expectations, weights, threshold, configs."""

import json
import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.registry import from_config
from assay.models.base import Response, ToolCall


def tu(**options):
    return evaluators.get("tool_usage", **options)


def calls(*names, text=None, **arguments):
    """A Response calling ``names`` in order; ``arguments[name]`` gives that tool's arguments."""
    return Response(text=text, tool_calls=[ToolCall(name=n, arguments=arguments.get(n, {})) for n in names])


def check(verdict, name):
    return next(c for c in verdict.details["checks"] if c["name"] == name)


# ------------------------------------------------------------------------------------------- reading calls


@pytest.mark.parametrize(
    "actual",
    [
        calls("search", "book", search={"q": "Paris"}),
        SimpleNamespace(
            tool_calls=[ToolCall(name="search", arguments={"q": "Paris"}), ToolCall(name="book")], text=None
        ),
        {"tool_calls": [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]},
        [{"name": "search", "arguments": '{"q": "Paris"}'}, {"name": "book", "arguments": ""}],
        [{"name": "search", "args": {"q": "Paris"}}, {"name": "book", "arguments": None}],
        [{"name": "search", "input": {"q": "Paris"}}, {"name": "book"}],  # Anthropic tool_use blocks
        [  # OpenAI message tool_calls
            {"id": "1", "type": "function", "function": {"name": "search", "arguments": '{"q": "Paris"}'}},
            {"id": "2", "type": "function", "function": {"name": "book", "arguments": "{}"}},
        ],
        (ToolCall(name="search", arguments={"q": "Paris"}), ToolCall(name="book")),
        json.dumps({"tool_calls": [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]}),
    ],
)
def test_output_forms(actual):
    v = tu(required=["search", "book"], args={"search": {"q": "Paris"}}, order="exact").evaluate(actual)
    assert v.passed, v.reason
    assert v.details["calls"] == ["search", "book"]


@pytest.mark.parametrize(
    ("actual", "message"),
    [
        (None, "expects tool calls"),
        (42, "expects tool calls"),
        ("not json", "not JSON"),
        ('"a json string"', "JSON string"),
        ({"text": "hi"}, "'tool_calls' key"),
        ({"tool_calls": "search"}, "must be a list"),
        ([{"arguments": {}}], "tool call 0 has no name"),
        ([{"name": ""}], "tool call 0 has no name"),
        ([42], "tool call 0 is int"),
    ],
)
def test_unreadable_outputs_are_errors(actual, message):
    v = tu(required=["search"]).evaluate(actual)
    assert v.is_error and math.isnan(v.score) and message in v.error


def test_null_tool_calls_means_none():
    v = tu(max_calls=0).evaluate({"tool_calls": None, "text": "hello"})
    assert v.passed


def test_unparseable_arguments_fail_the_args_check_only():
    actual = [{"name": "search", "arguments": '{"q": "Par'}]
    v = tu(required=["search"], args={"search": {"q": "Paris"}}).evaluate(actual)
    assert not v.is_error and not v.passed and v.score == 0.5
    assert check(v, "required:search")["passed"]
    assert "arguments are not valid JSON" in check(v, "args:search")["detail"]
    v = tu(args={"search": {}}).evaluate([{"name": "search", "arguments": "[1, 2]"}])
    assert "not a JSON object" in check(v, "args:search")["detail"]


# ------------------------------------------------------------------------------------------- checks


def test_required():
    ev = tu(required=["search", "book"])
    v = ev.evaluate(calls("search"))
    assert not v.passed and v.score == 0.5
    assert check(v, "required:search") == {
        "name": "required:search",
        "passed": True,
        "detail": "called 1 time",
        "weight": 1.0,
    }
    assert check(v, "required:book")["detail"] == "never called (calls made: 'search')"
    assert v.reason == "1 of 2 checks failed: required:book: never called (calls made: 'search')"
    assert v.feedback == "Fix the tool use: call the tool 'book'."
    assert ev.evaluate(calls("book", "search", "search")).passed
    assert check(ev.evaluate(calls()), "required:book")["detail"] == "never called (no tool calls were made)"


def test_forbidden():
    ev = tu(forbidden=["delete"])
    assert ev.evaluate(calls("search")).passed
    v = ev.evaluate(calls("search", "delete", "delete"))
    assert not v.passed and check(v, "forbidden:delete")["detail"] == "called 2 times (call 1, 2)"
    assert "do not call 'delete'" in v.feedback


def test_min_and_max_calls():
    assert not tu(min_calls=2).evaluate(calls("a")).passed
    assert tu(min_calls=2).evaluate(calls("a", "b")).passed
    assert tu(max_calls=2).evaluate(calls("a", "b")).passed
    v = tu(max_calls=2).evaluate(calls("a", "b", "c"))
    assert not v.passed and "3 calls made, at most 2 allowed" in v.reason
    assert "make at most 2 tool calls (made 3)" in v.feedback
    assert tu(max_calls=0).evaluate(calls()).passed
    v = tu(min_calls=1).evaluate(calls())
    assert "make at least 1 tool call (made 0)" in v.feedback


def test_args_subset_and_exact():
    actual = calls("search", search={"q": "Paris", "limit": 5, "filters": {"lang": "fr", "safe": True}})
    assert tu(args={"search": {"q": "Paris"}}).evaluate(actual).passed
    assert tu(args={"search": {"filters": {"lang": "fr"}}}).evaluate(actual).passed  # nested subset
    v = tu(args={"search": {"q": "Paris"}}, args_match="exact").evaluate(actual)
    assert not v.passed and "unexpected argument limit" in v.reason and "unexpected argument filters" in v.reason
    exact = {"q": "Paris", "limit": 5, "filters": {"lang": "fr", "safe": True}}
    assert tu(args={"search": exact}, args_match="exact").evaluate(actual).passed
    v = tu(args={"search": {**exact, "filters": {"lang": "fr"}}}, args_match="exact").evaluate(actual)
    assert "unexpected argument filters.safe" in v.reason


def test_args_differences_are_named():
    v = tu(args={"search": {"q": "Paris", "limit": 5, "lang": "fr"}}).evaluate(
        calls("search", search={"q": "paris", "limit": 5.0})
    )
    detail = check(v, "args:search")["detail"]
    assert "closest call 0: q is 'paris', expected 'Paris'; lang missing" in detail
    assert """call 'search' with arguments {"q": "Paris", "limit": 5, "lang": "fr"}""" in v.feedback


def test_args_types_are_json_types():
    assert not tu(args={"f": {"x": 1}}).evaluate(calls("f", f={"x": True})).passed
    assert not tu(args={"f": {"x": 1}}).evaluate(calls("f", f={"x": "1"})).passed
    assert tu(args={"f": {"x": [1, {"y": None}]}}).evaluate(calls("f", f={"x": [1.0, {"y": None}]})).passed
    assert not tu(args={"f": {"x": [1, 2]}}).evaluate(calls("f", f={"x": [2, 1]})).passed


def test_args_for_a_tool_never_called():
    v = tu(args={"search": {"q": "x"}}).evaluate(calls("book"))
    assert check(v, "args:search")["detail"] == "'search' was never called"


def test_args_list_needs_one_distinct_call_each():
    ev = tu(args={"search": [{"q": "a"}, {"q": "b"}]})
    actual = [{"name": "search", "arguments": {"q": "b"}}, {"name": "search", "arguments": {"q": "a"}}]
    v = ev.evaluate(actual)
    assert v.passed and check(v, "args:search")["detail"] == "matched by call 1, 0"
    v = ev.evaluate([{"name": "search", "arguments": {"q": "a"}}])
    assert not v.passed and "another call" in check(v, "args:search")["detail"]
    assert (
        not tu(args={"search": [{"q": "a"}, {"q": "a"}]}).evaluate([{"name": "search", "arguments": {"q": "a"}}]).passed
    )


def test_order_any_adds_no_check():
    v = tu(required=["a", "b"], order="any").evaluate(calls("b", "a"))
    assert v.passed and [c["name"] for c in v.details["checks"]] == ["required:a", "required:b"]


def test_order_subsequence():
    ev = tu(expected_sequence=["search", "book"], order="subsequence")
    assert ev.evaluate(calls("login", "search", "lookup", "book")).passed
    v = ev.evaluate(calls("book", "search"))
    assert not v.passed
    assert check(v, "order")["detail"].startswith("'book' not called after 'search'")
    assert "call these tools in this order: search → book" in v.feedback
    v = ev.evaluate(calls("lookup"))
    assert check(v, "order")["detail"].startswith("'search' not called (")


def test_order_exact():
    ev = tu(expected_sequence=["search", "book"], order="exact")
    assert ev.evaluate(calls("search", "book")).passed
    assert check(ev.evaluate(calls("search", "lookup")), "order")["detail"].startswith(
        "call 1 was 'lookup', expected 'book'"
    )
    assert check(ev.evaluate(calls("search")), "order")["detail"].startswith(
        "1 call made, 2 expected; next expected 'book'"
    )
    assert check(ev.evaluate(calls("search", "book", "book")), "order")["detail"].startswith("1 extra call from call 2")
    v = ev.evaluate(calls("login", "search", "book"))
    assert not v.passed and "call exactly these tools in this order: search → book" in v.feedback


def test_order_uses_required_when_no_sequence_is_given():
    ev = tu(required=["search", "book"], order="exact")
    assert ev.evaluate(calls("search", "book")).passed
    v = ev.evaluate(calls("book", "search"))
    assert not check(v, "order")["passed"] and check(v, "required:book")["passed"]


def test_order_with_nothing_to_order_is_an_error():
    v = tu(order="exact", max_calls=3).evaluate(calls("a"))
    assert v.is_error and "option 'order'" in v.error
    assert tu(order="exact", expected_sequence=[]).evaluate(calls()).passed  # explicitly: no calls at all


def test_penalize_extra():
    ev = tu(required=["search"], expected_sequence=["search", "book"], args={"pay": {}}, penalize_extra=True)
    assert ev.evaluate(calls("search", "book", "pay")).passed
    v = ev.evaluate(calls("search", "weather", "book", "weather"))
    assert (
        not v.passed
        and check(v, "extra")["detail"] == "calls to tools not expected: 'weather' (call 1), 'weather' (call 3)"
    )
    assert "do not call 'weather'" in v.feedback
    assert "extra" not in [c["name"] for c in tu(required=["search"]).evaluate(calls("search", "x")).details["checks"]]


def test_output_contains():
    ev = tu(output_contains=["Paris", "booked"])
    assert ev.evaluate(calls(text="Booked: Paris, booked.")).passed
    v = ev.evaluate(calls(text="Done in Paris"))
    assert not v.passed and v.score == 0.5
    assert check(v, "output_contains:booked")["detail"] == "not in the final text 'Done in Paris'"
    assert "say 'booked' in the final answer" in v.feedback
    v = ev.evaluate([{"name": "x"}])
    assert check(v, "output_contains:Paris")["detail"] == "the output has no final text"
    assert ev.evaluate({"tool_calls": [], "content": "Paris booked"}).passed


def test_unicode_and_long_traces():
    actual = [{"name": "recherche_météo", "arguments": {"ville": "Zürich 🌧"}}] + [{"name": "noop"}] * 10_000
    ev = tu(required=["recherche_météo"], args={"recherche_météo": {"ville": "Zürich 🌧"}}, max_calls=100)
    v = ev.evaluate(actual)
    assert not v.passed and v.score == pytest.approx(2 / 3)
    assert check(v, "max_calls")["detail"] == "10001 calls made, at most 100 allowed"
    assert tu(output_contains=["日本"]).evaluate({"tool_calls": [], "text": "東京は日本の首都"}).passed
    assert tu(output_contains=["x"]).evaluate({"tool_calls": [], "text": ""}).score == 0.0


def test_nothing_to_check_is_an_error():
    v = tu().evaluate(calls("a"))
    assert v.is_error and "nothing to check" in v.error


# ------------------------------------------------------------------------------------------- score, weights, threshold


def test_weights_by_kind_and_by_name():
    actual = calls("search", "delete")
    assert tu(required=["search", "book"], forbidden=["delete"]).evaluate(actual).score == pytest.approx(1 / 3)
    v = tu(required=["search", "book"], forbidden=["delete"], weights={"required": 3}).evaluate(actual)
    assert v.score == pytest.approx(3 / 7)
    assert check(v, "required:book")["weight"] == 3 and check(v, "forbidden:delete")["weight"] == 1
    v = tu(required=["search", "book"], forbidden=["delete"], weights={"required": 3, "required:book": 0}).evaluate(
        actual
    )
    assert v.score == pytest.approx(3 / 4)
    assert not v.passed  # a zero-weight check still has to pass


def test_all_zero_weights():
    ev = tu(required=["a"], weights={"required": 0})
    assert ev.evaluate(calls("a")).score == 1.0
    assert ev.evaluate(calls("b")).score == 0.0


def test_threshold():
    ev = tu(required=["a", "b", "c", "d"], threshold=0.75)
    v = ev.evaluate(calls("a", "b", "c"))
    assert v.passed and v.score == 0.75 and v.reason is None and v.feedback is None
    assert not check(v, "required:d")["passed"]
    assert not ev.evaluate(calls("a", "b")).passed


# ------------------------------------------------------------------------------------------- per-sample expected


def test_expected_dict_overrides_options():
    ev = tu(required=["search"], max_calls=5)
    v = ev.evaluate(calls("book"), {"required": ["book"]})
    assert v.passed and [c["name"] for c in v.details["checks"]] == ["required:book", "max_calls"]
    assert not ev.evaluate(calls("book", "book"), {"max_calls": 1}).passed
    assert ev.evaluate(calls("book"), json.dumps({"required": ["book"]})).passed


def test_expected_list_means_required_args_and_exact_order():
    expected = [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]
    ev = tu()
    assert ev.evaluate(calls("search", "book", search={"q": "Paris", "limit": 3}), expected).passed
    v = ev.evaluate(calls("book", "search", search={"q": "Paris"}), expected)
    assert not v.passed and [c["name"] for c in v.details["checks"] if not c["passed"]] == ["order"]
    v = ev.evaluate(calls("search", "book", search={"q": "Lyon"}), expected)
    assert [c["name"] for c in v.details["checks"] if not c["passed"]] == ["args:search"]
    assert ev.evaluate(calls("search", "book", search={"q": "Paris"}), {"tool_calls": expected}).passed
    typed = [ToolCall(name="search", arguments={"q": "Paris"}), ToolCall(name="book")]
    assert ev.evaluate(calls("search", "book", search={"q": "Paris"}), typed).passed
    reference = Response(text="ok", tool_calls=typed)  # a reference trajectory
    assert ev.evaluate(calls("search", "book", search={"q": "Paris"}), reference).passed
    assert not ev.evaluate(calls("book", "search", search={"q": "Paris"}), reference).passed


def test_expected_recorded_response_dict_with_options():
    recorded = {"text": "ok", "tool_calls": [{"name": "search"}], "usage": {}, "max_calls": 1}
    v = tu().evaluate(calls("search", "search"), recorded)
    assert [c["name"] for c in v.details["checks"] if not c["passed"]] == ["max_calls", "order"]


def test_expected_list_keeps_other_options():
    ev = tu(output_contains=["done"], args_match="exact")
    expected = [{"name": "search", "arguments": {"q": "Paris"}}]
    v = ev.evaluate(calls("search", text="done", search={"q": "Paris", "limit": 3}), expected)
    assert [c["name"] for c in v.details["checks"] if not c["passed"]] == ["args:search"]
    assert ev.evaluate(calls("search", text="done", search={"q": "Paris"}), expected).passed


def test_expected_list_repeated_tool():
    expected = [{"name": "search", "arguments": {"q": "a"}}, {"name": "search", "arguments": {"q": "b"}}]
    actual = [{"name": "search", "arguments": {"q": "a"}}, {"name": "search", "arguments": {"q": "b"}}]
    assert tu().evaluate(actual, expected).passed
    assert not tu().evaluate(actual[:1], expected).passed


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"required": ["a"], "requird": ["a"]}, "requird"),
        ({"max_calls": -1}, "max_calls"),
        ([{"arguments": {}}], "has no name"),
        ([{"name": "a"}, "b"], "tool call 1 is str"),
        ([{"name": "a", "arguments": "{bad"}], "expected tool call 0"),
    ],
)
def test_bad_expected_is_an_error_naming_the_key(expected, message):
    v = tu(required=["a"]).evaluate(calls("a"), expected)
    assert v.is_error and message in v.error


@pytest.mark.parametrize("target", ["Paris", ["Paris", "paris"], 12, "12", {"city": "Paris"}, "[1, 2]"])
def test_a_tasks_answer_as_target_is_not_read_as_tool_calls(target):
    """Issue 25: a QA agent task's target (its answer) errored every sample ("tool call 0 is str")."""
    ev = tu(required=["search"], forbidden=["calculator"])
    v = ev.evaluate(calls("search", text="Paris"), target)
    assert not v.is_error and v.passed and "is not a tool-call expectation" in v.details["expected_not_used"]
    v = ev.evaluate(calls("calculator"), target)
    assert not v.is_error and not v.passed and "forbidden:calculator" in v.reason
    assert "expected_not_used" not in ev.evaluate(calls("search"), None).details


def test_nothing_to_check_says_the_target_was_not_tool_calls():
    v = tu().evaluate(calls("search"), "Paris")
    assert v.is_error and "the expected value (the text 'Paris') is not tool calls" in v.error
    assert "expected_calls" in v.error and "expected: doc.<field>" in v.error


def test_expected_calls_option():
    expected_calls = [{"name": "search", "arguments": {"q": "Paris"}}, {"name": "book"}]
    ev = tu(expected_calls=expected_calls)
    assert ev.evaluate(calls("search", "book", search={"q": "Paris"}), "Paris").passed  # the target is the answer
    v = ev.evaluate(calls("book", "search", search={"q": "Paris"}))
    assert [c["name"] for c in v.details["checks"] if not c["passed"]] == ["order"]
    loose = tu(expected_calls=expected_calls, order="subsequence")  # an option set beside it wins
    assert loose.evaluate(calls("search", "weather", "book", search={"q": "Paris"})).passed
    per_sample = [{"name": "weather"}]  # a per-sample list of calls is more specific than the option
    assert ev.evaluate(calls("weather"), per_sample).passed
    assert from_config(ev.to_config()) == ev and ev.to_config()["expected_calls"] == expected_calls
    with pytest.raises(ConfigError, match="option 'expected_calls': tool call 0 has no name"):
        tu(expected_calls=[{"arguments": {}}])


def test_an_empty_list_of_calls_expects_no_calls():
    assert tu().evaluate(calls(text="Paris"), []).passed
    v = tu().evaluate(calls("search"), [])
    assert not v.passed and "order" in v.reason
    assert tu(expected_calls=[]).evaluate(calls(text="4")).passed


# ------------------------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"required": "search"}, "required"),
        ({"required": [""]}, "required"),
        ({"min_calls": -1}, "min_calls"),
        ({"max_calls": "many"}, "max_calls"),
        ({"min_calls": 3, "max_calls": 2}, "min_calls"),
        ({"args": {"search": "q=Paris"}}, "args"),
        ({"args_match": "superset"}, "args_match"),
        ({"order": "sorted"}, "order"),
        ({"weights": {"requird": 2}}, "unknown check 'requird'"),
        ({"weights": {"required": -1}}, "weights"),
        ({"threshold": 2}, "threshold"),
        ({"required": ["a"], "forbidden": ["a"]}, "both forbidden and in 'required'"),
        ({"expected_sequence": ["a"], "forbidden": ["a"]}, "expected_sequence"),
        ({"penalise_extra": True}, "unknown option 'penalise_extra'"),
    ],
)
def test_invalid_options(options, named):
    with pytest.raises(ConfigError, match=named):
        tu(**options)


@pytest.mark.parametrize(
    "options",
    [
        {"required": ["search"]},
        {
            "required": ["search", "book"],
            "forbidden": ["delete"],
            "min_calls": 1,
            "max_calls": 4,
            "args": {"search": {"q": "Paris"}, "book": [{"id": 1}, {"id": 2}]},
            "args_match": "exact",
            "order": "subsequence",
            "expected_sequence": ["search", "book"],
            "penalize_extra": True,
            "output_contains": ["booked"],
            "weights": {"required": 2, "args:search": 0.5},
            "threshold": 0.5,
        },
    ],
)
def test_config_round_trip(options):
    ev = tu(**options)
    config = json.loads(json.dumps(ev.to_config()))
    assert config == {"name": "tool_usage", **options}
    rebuilt = from_config(config)
    assert rebuilt == ev
    sample = calls("search", "book", text="booked", search={"q": "Paris"})
    assert rebuilt.evaluate(sample) == ev.evaluate(sample)


# ------------------------------------------------------------------------------------------- properties

names = st.sampled_from(["a", "b", "c", "d"])
call_lists = st.lists(
    st.builds(lambda n, x: {"name": n, "arguments": {"x": x}}, names, st.integers(0, 2)),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(
    call_lists,
    st.lists(names, max_size=3, unique=True),
    st.sampled_from(["any", "subsequence", "exact"]),
    st.booleans(),
    st.dictionaries(st.sampled_from(["required", "order", "args", "max_calls"]), st.floats(0, 5), max_size=3),
)
def test_score_in_unit_interval_and_pass_means_all_checks(actual, required, order, extra, weights):
    ev = tu(
        required=required,
        order=order if required else "any",
        penalize_extra=extra,
        max_calls=4,
        args={"a": {"x": 1}},
        weights=weights,
    )
    v = ev.evaluate(actual)
    assert 0.0 <= v.score <= 1.0
    assert v.passed == all(c["passed"] for c in v.details["checks"])
    assert (v.reason is None) == v.passed


def test_reasons_differing_only_in_the_calls_made_share_a_theme():
    from assay.feedback.themes import reason_pattern

    ev = tu(required=["search"], order="exact", expected_sequence=["search", "answer"])
    first = ev.evaluate(calls("lookup", "answer"))
    second = ev.evaluate(calls("fetch", "summarise", "answer"))
    assert "calls made: 'lookup → answer'" in first.reason
    assert reason_pattern(first.reason) == reason_pattern(second.reason)
    assert first.feedback == (
        "Fix the tool use: call the tool 'search'; call exactly these tools in this order: search → answer."
    )


def test_expected_calls_that_contradict_the_options_are_a_config_error():
    with pytest.raises(ConfigError, match=r"option 'expected_calls': .*both forbidden and in 'required'"):
        tu(expected_calls=[{"name": "search"}], forbidden=["search"])
