"""custom: calling conventions, return normalisation, errors, async support, dotted paths and configs."""

import asyncio
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators._custom import dotted_path, import_object
from assay.evaluators.registry import from_config
from assay.verdict import SCORE_TOLERANCE, Verdict


def custom(fn, **options):
    return evaluators.get("custom", fn=fn, **options)


# Module-level callables, importable by dotted path from this module.


def same_length(actual, expected):
    return len(actual) == len(expected)


def is_upper(actual):
    return actual.isupper()


def overlap(actual, expected, options):
    """Share of expected words present, scaled by options['scale'] (a 'kwargs' option)."""
    words = set(expected.split())
    return min(1.0, options.get("scale", 1.0) * len(words & set(actual.split())) / len(words))


def with_context(actual, expected, *, context):
    return {"score": 1.0, "details": {"seen": dict(context)}}


async def async_equal(actual, expected):
    await asyncio.sleep(0)
    return actual == expected


class Scorer:
    """A class whose static method is a valid custom function."""

    @staticmethod
    def score(actual, expected):
        return 0.25


# ------------------------------------------------------------------------------------------- calling conventions


def test_two_argument_function():
    ev = custom(same_length)
    assert ev.evaluate("abc", "xyz").passed
    v = ev.evaluate("abc", "xy")
    assert not v.passed and v.score == 0.0 and v.reason.endswith("same_length returned False")


def test_one_argument_function_gets_only_the_output():
    ev = custom(is_upper)
    assert ev.evaluate("ABC", "ignored").passed
    assert not ev.evaluate("abc").passed


def test_lambda_and_varargs():
    assert custom(lambda a, e: a == e).evaluate("x", "x").passed
    assert custom(lambda *args: len(args) == 2).evaluate("x", "y").passed
    assert custom(lambda a, e=None, extra=3: extra == 3).evaluate("x", "y").passed


def test_kwargs_option_is_passed_as_options():
    assert custom(overlap).evaluate("a b", "a b c d").score == 0.5
    v = custom(overlap, kwargs={"scale": 2.0}).evaluate("a b", "a b c d")
    assert v.score == 1.0 and v.passed
    seen = {}

    def record(actual, expected, **kw):
        seen.update(kw)
        return True

    custom(record, kwargs={"k": 1}).evaluate("a", "b")
    assert seen == {"options": {"k": 1}}


def test_options_passed_are_a_copy():
    def mutate(actual, options):
        options["k"] = "changed"
        return True

    ev = custom(mutate, kwargs={"k": "original"})
    ev.evaluate("a")
    assert ev.options.kwargs == {"k": "original"}


def test_context_is_passed_when_asked_for():
    v = custom(with_context).evaluate("a", "b", context={"input": "question"})
    assert v.details == {"seen": {"input": "question"}}
    assert custom(with_context).evaluate("a", "b").details == {"seen": {}}


@pytest.mark.parametrize(
    ("fn", "options", "named"),
    [
        (lambda: True, {}, "takes no positional parameter"),
        (lambda a, b, c: True, {}, "requires 3 positional parameters"),
        (lambda a, *, flag: True, {}, r"required keyword-only parameters \['flag'\]"),
        (same_length, {"kwargs": {"x": 1}}, "option 'kwargs'"),
        ("", {}, "option 'fn': must be a callable or a dotted path"),
        ("json", {}, "not a dotted path"),
        ("no_such_module_xyz:f", {}, "cannot import module"),
        ("json:no_such_function", {}, "has no attribute"),
        ("json:__doc__", {}, "not callable"),
        (42, {}, "option 'fn': must be a callable or a dotted path"),
        (same_length, {"threshold": 1.5}, "threshold"),
        (same_length, {"kwargs": "x=1"}, "kwargs"),
        (same_length, {"function": same_length}, "unknown option 'function'"),
    ],
)
def test_config_errors_name_the_option(fn, options, named):
    with pytest.raises(ConfigError, match=named):
        custom(fn, **options)


# ------------------------------------------------------------------------------------------- return values


@pytest.mark.parametrize(
    ("result", "score", "passed"),
    [
        (True, 1.0, True),
        (False, 0.0, False),
        (np.bool_(True), 1.0, True),
        (1, 1.0, True),
        (0, 0.0, False),
        (0.5, 0.5, True),
        (0.49, 0.49, False),
        (np.float32(0.75), 0.75, True),
        (Fraction(1, 4), 0.25, False),
        ({"score": 0.9}, 0.9, True),
        ({"score": 0.2}, 0.2, False),
        ({"score": 0.2, "passed": True}, 0.2, True),
        ({"score": 0.9, "passed": False}, 0.9, False),
    ],
)
def test_return_values_are_normalised(result, score, passed):
    v = custom(lambda a, e: result).evaluate("x", "y")
    assert not v.is_error
    assert v.score == pytest.approx(score) and v.passed is passed
    assert (v.reason is None) == passed


def test_threshold_for_numbers():
    ev = custom(lambda a, e: 0.6, threshold=0.7)
    v = ev.evaluate("x", "y")
    assert not v.passed and v.reason.endswith("scored 0.6, below the threshold 0.7")
    assert custom(lambda a, e: 0.6, threshold=0.6).evaluate("x", "y").passed
    assert custom(lambda a, e: {"score": 0.65}, threshold=0.6).evaluate("x", "y").passed
    v = custom(lambda a, e: {"score": 0.65}, threshold=0.7).evaluate("x", "y")
    assert not v.passed and v.reason.endswith("scored 0.65, below the threshold 0.7")


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 1))
def test_any_float_is_a_score_or_an_error(value, threshold):
    v = custom(lambda a, e: value, threshold=threshold).evaluate("x", "y")
    if 0.0 <= value <= 1.0:
        assert v.score == value and v.passed == (value >= threshold)
    elif -SCORE_TOLERANCE <= value <= 1 + SCORE_TOLERANCE:  # float rounding just outside: clipped
        clipped = min(1.0, max(0.0, value))
        assert v.score == clipped and v.passed == (clipped >= threshold)
    else:
        assert v.is_error and "outside [0, 1]" in v.error


def test_dict_reason_feedback_details():
    result = {"score": 0.1, "reason": "too short", "feedback": "Write at least 3 words.", "details": {"words": 1}}
    v = custom(lambda a, e: result).evaluate("x", "y")
    assert (v.score, v.passed, v.reason, v.feedback, v.details) == (
        0.1,
        False,
        "too short",
        "Write at least 3 words.",
        {"words": 1},
    )
    passing = {"score": 1.0, "reason": "ignored", "feedback": "ignored", "details": {"k": 1}}
    v = custom(lambda a, e: passing).evaluate("x", "y")
    assert v.passed and v.reason is None and v.feedback is None and v.details == {"k": 1}


def test_verdict_returned_as_is():
    verdict = Verdict.fail("custom reason", score=0.3, feedback="do better")
    assert custom(lambda a, e: verdict).evaluate("x", "y") is verdict


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (None, "returned NoneType; expected a bool, a number in [0, 1]"),
        ("yes", "returned str"),
        ([1.0], "returned list"),
        (1.5, "the score 1.5, outside [0, 1]"),
        (-0.1, "the score -0.1, outside [0, 1]"),
        (float("nan"), "the score nan, outside [0, 1]"),
        (float("inf"), "outside [0, 1]"),
        ({"passed": True}, "without a 'score' key"),
        ({"score": 2}, "the score 2.0, outside [0, 1]"),
        ({"score": "high"}, "a score of type str"),
        ({"score": 1, "reasons": "x"}, "unknown key(s) ['reasons']"),
        ({"score": 1, "passed": "yes"}, "'passed' of type str"),
        ({"score": 0, "reason": 3}, "'reason' of type int"),
        ({"score": 0, "details": [1]}, "'details' of type list"),
    ],
)
def test_wrong_results_are_error_verdicts(result, message):
    v = custom(lambda a, e: result).evaluate("x", "y")
    assert v.is_error and math.isnan(v.score) and message in v.error


def test_exception_becomes_error_with_type_and_message():
    v = custom(lambda a, e: 1 / 0).evaluate("x", "y")
    assert v.is_error and "raised ZeroDivisionError: division by zero" in v.error
    v = custom("json:loads").evaluate("{bad")
    assert v.is_error and "custom function json:loads raised JSONDecodeError" in v.error


def test_bad_inputs_reach_the_function_and_its_errors_are_contained():
    ev = custom(same_length)
    assert ev.evaluate("", "").passed
    assert ev.evaluate("é" * 100_000, "x" * 100_000).passed
    v = ev.evaluate(None, "x")
    assert v.is_error and "TypeError" in v.error


# ------------------------------------------------------------------------------------------- async


def test_async_function_through_evaluate_without_a_loop():
    ev = custom(async_equal)
    assert ev.evaluate("x", "x").passed
    assert not ev.evaluate("x", "y").passed


async def test_async_function_through_aevaluate():
    ev = custom(async_equal)
    assert (await ev.aevaluate("x", "x")).passed
    assert not (await ev.aevaluate("x", "y")).passed


async def test_sync_evaluate_inside_a_running_loop_uses_a_worker_thread():
    ev = custom(async_equal)
    assert ev.evaluate("x", "x").passed  # would fail with "asyncio.run() cannot be called from a running loop"


async def test_async_exception_becomes_error():
    async def boom(actual, expected):
        raise ValueError("bad output")

    v = await custom(boom).aevaluate("x", "y")
    assert v.is_error and "raised ValueError: bad output" in v.error
    assert "raised ValueError: bad output" in custom(boom).evaluate("x", "y").error


async def test_aevaluate_with_sync_function_and_context():
    v = await custom(with_context).aevaluate("a", "b", context={"doc": {"id": 1}})
    assert v.details == {"seen": {"doc": {"id": 1}}}


# ------------------------------------------------------------------------------------------- dotted paths, config


def test_dotted_path_helpers():
    assert import_object("json:dumps") is json.dumps
    assert import_object("json.dumps") is json.dumps
    assert import_object("os.path:join").__name__ == "join"
    assert dotted_path(same_length) == f"{__name__}:same_length"
    assert dotted_path(Scorer.score) == f"{__name__}:Scorer.score"
    with pytest.raises(ValueError, match="no importable dotted path"):
        dotted_path(lambda a: a)


@pytest.mark.parametrize(
    ("fn", "options", "path"),
    [
        (same_length, {}, f"{__name__}:same_length"),
        (overlap, {"kwargs": {"scale": 2.0}, "threshold": 0.8}, f"{__name__}:overlap"),
        (Scorer.score, {}, f"{__name__}:Scorer.score"),
        ("operator:eq", {"threshold": 0.3}, "operator:eq"),
        (async_equal, {}, f"{__name__}:async_equal"),
    ],
)
def test_config_round_trip(fn, options, path):
    ev = custom(fn, **options)
    config = json.loads(json.dumps(ev.to_config()))
    assert config == {"name": "custom", "fn": path, **options}
    rebuilt = from_config(config)
    assert rebuilt == ev
    assert rebuilt.evaluate("a b", "a b") == ev.evaluate("a b", "a b")


def test_unimportable_callable_cannot_be_saved_but_still_works():
    ev = custom(lambda a, e: True)
    assert ev.evaluate("x", "y").passed
    with pytest.raises(ConfigError, match=r"option 'fn' cannot be saved.*lambda"):
        ev.to_config()
    assert "Custom(fn=" in repr(ev)  # repr does not need a config
    assert ev == ev and ev != custom(lambda a, e: True)


def test_callable_instance_cannot_be_saved():
    class Judge:
        def __call__(self, actual, expected):
            return True

    ev = custom(Judge())
    assert ev.evaluate("x", "y").passed
    with pytest.raises(ConfigError, match="cannot be saved"):
        ev.to_config()


def test_kwargs_that_are_not_json_cannot_be_saved():
    ev = custom(overlap, kwargs={"scale": {1, 2}})
    with pytest.raises(ConfigError, match="option 'kwargs' cannot be saved"):
        ev.to_config()


def test_batch_uses_the_function():
    batch = custom(same_length).evaluate_batch(["ab", "abc", None], ["xy", "x", "y"])
    assert list(batch.passed) == [True, False, False] and bool(batch.errored[2])


def documented_check(actual, expected):
    """The answer names the expected city.

    More text that feedback leaves out.
    """
    return expected in actual


@pytest.mark.parametrize(
    ("fn", "reason", "feedback"),
    [
        (
            documented_check,
            "test_custom:documented_check returned False",
            "test_custom:documented_check (The answer names the expected city).",
        ),
        (lambda a, e: 0.2, "<lambda> scored 0.2, below the threshold 0.5", "passes the check <lambda>."),
        (lambda a, e: {"score": 0.0, "reason": "too short"}, "too short", "passes the check <lambda>: too short."),
        (lambda a, e: Verdict(0.0, False), "returned a failing verdict without a reason", "check <lambda>."),
    ],
)
def test_every_failure_has_a_reason_and_feedback(fn, reason, feedback):
    v = custom(fn).evaluate("Lyon", "Paris")
    assert not v.passed and not v.is_error
    assert reason in v.reason
    assert v.feedback.startswith("Change the output so that it passes the check") and v.feedback.endswith(feedback)


def test_the_functions_own_feedback_is_kept():
    v = custom(lambda a, e: {"score": 0.0, "feedback": "Name the city."}).evaluate("Lyon", "Paris")
    assert v.feedback == "Name the city." and "scored 0" in v.reason
