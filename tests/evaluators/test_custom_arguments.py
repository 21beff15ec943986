"""custom: the function is given text, the model's Response only when it asks for it by name (``response``), and
the parameters named expected, options and context wherever they stand."""

from __future__ import annotations

import pytest

from assay import evaluators
from assay.errors import ConfigError
from assay.models.base import Response, ToolCall

RESPONSE = Response(text="Paris", tool_calls=[ToolCall(name="search", arguments={"q": "capital of France"})])


def custom(fn, **options):
    return evaluators.get("custom", fn=fn, **options)


def seen_by(fn, actual=RESPONSE, expected="Paris", **options):
    """What ``fn`` returned in its verdict's details."""
    verdict = custom(fn, **options).evaluate(actual, expected, context={"input": "q"})
    assert not verdict.is_error, verdict.error
    return verdict.details


def test_an_unfiltered_response_is_given_as_its_text():
    details = seen_by(lambda output, expected: {"score": 1.0, "details": {"output": output, "expected": expected}})
    assert details == {"output": "Paris", "expected": "Paris"}
    assert seen_by(lambda output: {"score": 1.0, "details": {"output": output}}) == {"output": "Paris"}
    no_text = Response(text=None, tool_calls=[ToolCall(name="search")])
    assert seen_by(lambda output: {"score": 1.0, "details": {"output": output}}, no_text) == {"output": ""}


def test_a_filtered_value_is_given_as_it_is():
    assert seen_by(lambda output: {"score": 1.0, "details": {"output": output}}, "12") == {"output": "12"}
    assert seen_by(lambda output: {"score": 1.0, "details": {"output": output}}, {"a": 1}) == {"output": {"a": 1}}


def calls_of(output, expected, response):
    return {"score": 1.0, "details": {"output": output, "calls": [c.name for c in response.tool_calls]}}


def response_first(response, expected):
    return {"score": 1.0, "details": {"text": response.text, "expected": expected}}


def only_response(response):
    return {"score": 1.0, "details": {"finish": response.finish_reason, "text": response.text}}


def context_first(context, output, expected=None):
    return {"score": 1.0, "details": {"input": context["input"], "output": output, "expected": expected}}


def keyword_response(output, *, response=None, options):
    return {"score": 1.0, "details": {"output": output, "has": response is not None, "options": options}}


def test_the_response_is_given_when_asked_for_by_name():
    assert seen_by(calls_of) == {"output": "Paris", "calls": ["search"]}
    assert seen_by(response_first) == {"text": "Paris", "expected": "Paris"}
    assert seen_by(only_response) == {"finish": None, "text": "Paris"}
    assert seen_by(keyword_response, kwargs={"k": 1}) == {"output": "Paris", "has": True, "options": {"k": 1}}


def test_named_parameters_are_filled_wherever_they_stand():
    assert seen_by(context_first) == {"input": "q", "output": "Paris", "expected": "Paris"}

    def late_expected(output, scale=2, expected=None):
        return {"score": 1.0, "details": {"output": output, "scale": scale, "expected": expected}}

    assert seen_by(late_expected) == {"output": "Paris", "scale": 2, "expected": "Paris"}


def test_after_a_filter_the_response_parameter_is_none():
    # the value judged is what the filter made (text): there is no Response of it to give
    verdict = custom(keyword_response, kwargs={"k": 1}).evaluate("Paris", "Paris")
    assert verdict.details["has"] is False


def test_reading_a_response_field_off_the_text_says_how_to_get_it():
    verdict = custom(lambda output, expected: output.tool_calls).evaluate(RESPONSE, "x")
    assert verdict.is_error and "take a parameter named 'response'" in verdict.error


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (lambda response, a, b, c: True, r"requires 3 positional parameters \(a, b, c\)"),
        (lambda context: True, "takes no positional parameter for the output"),
    ],
)
def test_functions_that_cannot_be_called_so_are_config_errors(fn, message):
    with pytest.raises(ConfigError, match=message):
        custom(fn)
