"""tool_usage match modes, per-argument comparators, partial credit and the feedback that names each problem."""

from __future__ import annotations

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.models.base import Response, ToolCall


def tu(**options):
    return evaluators.get("tool_usage", **options)


def made(*calls, stop=None, text="done"):
    """A Response that executed ``calls`` (name or (name, arguments)) in order."""
    out = []
    for c in calls:
        name, args = (c, {}) if isinstance(c, str) else c
        out.append(ToolCall(name=name, arguments=args, result="ok"))
    return Response(text=text, tool_calls=out, stop_reason=stop)


ADD = {"name": "add", "arguments": {"x": 1, "y": 2}}
MUL = {"name": "mul", "arguments": {"x": 3, "y": 4}}
ADD_CALL = ("add", {"x": 1, "y": 2})
MUL_CALL = ("mul", {"x": 3, "y": 4})


@pytest.mark.parametrize(
    ("mode", "calls", "passed", "score"),
    [
        ("strict", [ADD_CALL, MUL_CALL], True, 1.0),
        ("strict", [MUL_CALL, ADD_CALL], False, 0.5),
        ("strict", [ADD_CALL, MUL_CALL, "search"], False, 2 / 3),
        ("strict", [ADD_CALL], False, 0.5),
        ("unordered", [MUL_CALL, ADD_CALL], True, 1.0),
        ("unordered", [MUL_CALL, ADD_CALL, "search"], False, 2 / 3),
        ("unordered", [MUL_CALL], False, 0.5),
        ("subset", [ADD_CALL], True, 1.0),
        ("subset", [], True, 1.0),
        ("subset", [ADD_CALL, "search"], False, 0.5),
        ("superset", [ADD_CALL, "search", MUL_CALL], True, 1.0),
        ("superset", [MUL_CALL, ADD_CALL], True, 1.0),
        ("superset", ["search", MUL_CALL], False, 0.5),
        ("in_order", ["search", ADD_CALL, "search", MUL_CALL], True, 1.0),
        ("in_order", [MUL_CALL, ADD_CALL], False, 0.5),
    ],
)
def test_modes_and_partial_credit(mode, calls, passed, score):
    v = tu(expected_calls=[ADD, MUL], match=mode).evaluate(made(*calls))
    assert v.passed is passed, v.reason
    assert v.score == pytest.approx(score)
    assert v.details["match"]["mode"] == mode
    if passed:
        assert v.reason is None and v.feedback is None
    else:
        assert v.reason and v.reason.startswith("1 of 1 check failed: match:" + mode)


def test_feedback_names_missing_extra_and_the_argument_that_differed():
    v = tu(expected_calls=[ADD, MUL], match="strict").evaluate(made(("add", {"x": 1, "y": 5}), "search"))
    assert not v.passed and v.score == 0.0
    m = v.details["match"]
    assert m["arguments"] == ["call 0 'add': y is 5, expected 2"]
    assert m["missing"] == ["expected call 1 mul(x=3, y=4) was not made"]
    assert m["extra"] == ["call 1 search() was not expected"]
    assert "y is 5, expected 2" in v.reason and "mul(x=3, y=4) was not made" in v.reason
    assert v.feedback == "Fix the tool use: call add(x=1, y=2); call mul(x=3, y=4); do not call search()."


def test_out_of_order_call_is_named():
    v = tu(expected_calls=[ADD, MUL, {"name": "done"}], match="in_order").evaluate(made(MUL_CALL, ADD_CALL, "done"))
    assert not v.passed and v.score == pytest.approx(2 / 3)
    assert v.details["match"]["out_of_order"] == [
        "call 0 mul(x=3, y=4) is out of order: expected call 1 should come after call 1 ('add')"
    ]
    assert "call 'mul' after call 1 ('add')" in v.feedback
    assert v.details["match"]["missing"] == [] and v.details["match"]["extra"] == []


def test_superset_and_in_order_ignore_extras_subset_ignores_missing():
    extras = made("search", ADD_CALL, MUL_CALL, "log")
    for mode in ("superset", "in_order"):
        assert tu(expected_calls=[ADD, MUL], match=mode).evaluate(extras).details["match"]["extra"] == []
    v = tu(expected_calls=[ADD, MUL], match="subset").evaluate(made(MUL_CALL))
    assert v.passed and v.details["match"]["missing"] == []


def test_repeated_calls_pair_one_to_one():
    # two identical expected calls need two calls; a greedy first match would not prove it
    twice = [{"name": "add", "arguments": {"x": 1}}, {"name": "add"}]
    v = tu(expected_calls=twice, match="unordered").evaluate(made(("add", {"x": 9}), ("add", {"x": 1})))
    assert v.passed, v.reason
    v = tu(expected_calls=twice, match="unordered").evaluate(made(("add", {"x": 1})))
    assert not v.passed and v.score == 0.5


@pytest.mark.parametrize(
    ("compare", "actual", "passed", "why"),
    [
        ({"add": {"x": {"tolerance": 0.01}}}, {"x": 1.004, "y": 2}, True, None),
        ({"add": {"x": {"tolerance": 0.001}}}, {"x": 1.004, "y": 2}, False, "x is 1.004, expected 1 within 0.001"),
        ({"add": {"x": {"rel_tolerance": 0.1}}}, {"x": "1.05", "y": 2}, True, None),
        ({"add": {"x": "numeric"}}, {"x": "one", "y": 2}, False, "x is 'one', not a number (expected 1)"),
        ({"*": {"y": "ignore"}}, {"x": 1, "y": 99}, True, None),
        ({"add": {"y": "ignore"}}, {"x": 1}, True, None),
        ({"add": {"x": {"regex": "^[0-9]$"}}}, {"x": 7, "y": 2}, True, None),
        ({"add": {"x": {"regex": "^1$"}}}, {"x": 7, "y": 2}, False, "x is 7, which does not match /^1$/"),
        ({}, {"x": 1.0, "y": 2}, True, None),  # exact: JSON equality, 1 == 1.0
        ({}, {"x": True, "y": 2}, False, "x is true, expected 1"),  # a boolean is no number
        (
            {"add": {"x": {"function": "tests.agent_scoring.comparators:same_parity"}}},
            {"x": 3, "y": 2},
            True,
            None,
        ),
        (
            {"add": {"x": {"function": "tests.agent_scoring.comparators:same_parity"}}},
            {"x": 4, "y": 2},
            False,
            "x is 4, which tests.agent_scoring.comparators:same_parity rejects for 1",
        ),
    ],
)
def test_comparators(compare, actual, passed, why):
    v = tu(expected_calls=[ADD], match="strict", compare=compare).evaluate(made(("add", actual)))
    assert v.passed is passed, v.reason
    if why:
        assert why in v.reason


def test_regex_comparator_reads_the_pattern_from_the_expected_value_and_applies_to_args_checks():
    row = [{"name": "search", "arguments": {"q": "(?i)weather.*paris"}}]
    e = tu(match="strict", compare={"search": {"q": "regex"}})
    assert e.evaluate(made(("search", {"q": "Weather in Paris today"})), row).passed
    assert "does not match" in e.evaluate(made(("search", {"q": "rome"})), row).reason
    # the legacy args check uses the same comparators
    v = tu(args={"add": {"x": 1}}, compare={"add": {"x": {"tolerance": 0.5}}}).evaluate(made(("add", {"x": 1.3})))
    assert v.passed, v.reason


def test_nested_argument_paths():
    want = [{"name": "book", "arguments": {"when": {"date": "2026-01-01", "id": "r1"}}}]
    e = tu(expected_calls=want, match="strict", compare={"book": {"when.id": "ignore"}})
    assert e.evaluate(made(("book", {"when": {"date": "2026-01-01", "id": "zzz"}}))).passed
    v = e.evaluate(made(("book", {"when": {"date": "2026-02-01", "id": "r1"}})))
    assert "when.date is '2026-02-01', expected '2026-01-01'" in v.reason


def test_per_sample_expected_calls_under_a_match_mode():
    e = tu(match="unordered")
    row = [ADD, MUL]
    assert e.evaluate(made(MUL_CALL, ADD_CALL), row).passed
    assert e.evaluate(made(MUL_CALL), {"tool_calls": row, "match": "subset"}).passed  # the row's mode wins
    v = e.evaluate(made(MUL_CALL), "Paris")  # an answer, not calls: nothing to match against
    assert v.is_error and "no expected calls" in v.error


def test_submit_call_of_a_trajectory_is_not_a_tool_call_unless_asked():
    sub = made(ADD_CALL, ("submit", {"answer": "3"}), stop="submit")
    assert tu(expected_calls=[ADD], match="strict").evaluate(sub).passed
    v = tu(expected_calls=[ADD], match="strict", count_submit=True).evaluate(sub)
    assert not v.passed and "submit(answer='3') was not expected" in v.reason


def test_errored_tool_calls_are_listed():
    r = Response(tool_calls=[ToolCall(name="add", arguments={"x": 1, "y": 2}, result="Error: boom", error="boom")])
    v = tu(expected_calls=[ADD], match="strict").evaluate(r)
    assert v.passed and v.details["tool_errors"] == [0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"compare": {"add": {"x": "fuzzy"}}}, "unknown comparator 'fuzzy'"),
        ({"compare": {"add": {"x": {"regex": "("}}}}, "does not compile"),
        ({"compare": {"add": {"x": {"tolerance": -1}}}}, "tolerance must be a finite number >= 0"),
        ({"compare": {"add": {"x": {"function": "no_such_module_x:f"}}}}, "cannot import module"),
        ({"compare": {"add": {"x": {"tolerance": 1, "regex": "a"}}}}, "got keys ['regex', 'tolerance']"),
        ({"match": "sorted"}, "option 'match'"),
    ],
)
def test_bad_options_are_config_errors(options, message):
    with pytest.raises(ConfigError, match="tool_usage") as err:
        tu(expected_calls=[ADD], **options)
    assert message in str(err.value)


def test_batch_equals_per_sample_and_config_round_trips():
    e = tu(expected_calls=[ADD, MUL], match="in_order", compare={"*": {"y": "ignore"}})
    outputs = [made(ADD_CALL, MUL_CALL), made(MUL_CALL), made(), made(("add", {"x": 2, "y": 2}), MUL_CALL)]
    batch = e.evaluate_batch(outputs)
    assert [v.to_dict() for v in batch] == [e.evaluate(o).to_dict() for o in outputs]
    from assay.evaluators.registry import from_config

    again = from_config(e.to_config())
    assert again == e and [again.evaluate(o).to_dict() for o in outputs] == [v.to_dict() for v in batch]


def test_weights_mix_match_credit_with_other_checks():
    e = tu(expected_calls=[ADD, MUL], match="strict", forbidden=["rm"], weights={"match": 3, "forbidden": 1})
    v = e.evaluate(made(ADD_CALL))
    assert v.score == pytest.approx((3 * 0.5 + 1) / 4)
