"""Every text evaluator and numeric on Unicode, empty strings, None, response objects and 1 MB outputs."""

import json

import pytest

import assay
from assay import evaluators
from assay.models.base import Response

NAMES = ["exact_match", "fuzzy_match", "contains", "regex", "token_f1", "numeric"]

# name -> (options, output, expected, passed): a passing and a failing case in non-Latin scripts
UNICODE = {
    "exact_match": [({"ignore_case": True}, "ÉCOLE Ὀδυσσεύς", "école ὀδυσσεύς", True), ({}, "東京", "京都", False)],
    "fuzzy_match": [({"threshold": 0.7}, "東京タワー", "東京タワ", True), ({}, "🚀🚀", "🌍", False)],
    "contains": [
        ({"substrings": ["東京"]}, "私は東京に住んでいます", None, True),
        ({"substrings": ["大阪"]}, "東京", None, False),
    ],
    "regex": [
        ({"pattern": r"答え: (\w+)", "group": 1}, "答え: 東京", "東京", True),
        ({"pattern": r"\d"}, "一二三", None, False),
    ],
    "token_f1": [({}, "Ὀδυσσεύς ἦλθε", "ὀδυσσεύς", True), ({}, "東京 タワー", "大阪", False)],
    "numeric": [({}, "答えは ٤٢ です", 42, True), ({}, "答えは四十二", 42, False)],
}


@pytest.mark.parametrize(
    ("name", "options", "actual", "expected", "passed"),
    [(name, *case) for name, cases in UNICODE.items() for case in cases],
)
def test_unicode(name, options, actual, expected, passed):
    v = evaluators.get(name, **options).evaluate(actual, expected)
    assert not v.is_error and v.passed is passed
    json.dumps(v.to_dict(), ensure_ascii=False)


# name -> (options, expected) for an empty or None output; the verdict must be a failure, never an error
EMPTY = {
    "exact_match": ({}, "Paris"),
    "fuzzy_match": ({}, "Paris"),
    "contains": ({"substrings": ["Paris"]}, None),
    "regex": ({"pattern": "Paris"}, None),
    "token_f1": ({}, "Paris"),
    "numeric": ({}, 42),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("output", ["", None, Response(text=None), Response(text="")])
def test_empty_and_none_outputs_fail_with_feedback(name, output):
    options, expected = EMPTY[name]
    v = evaluators.get(name, **options).evaluate(output, expected)
    assert not v.is_error and not v.passed and v.score == 0.0
    assert v.reason and v.feedback


def test_empty_against_empty():
    assert evaluators.get("exact_match").evaluate("", "").passed
    assert evaluators.get("fuzzy_match").evaluate("", "").score == 1.0
    assert evaluators.get("token_f1").evaluate(None, "").score == 1.0
    assert evaluators.get("regex", pattern="^$").evaluate("").passed
    assert evaluators.get("contains", mode="none", substrings=["x"]).evaluate("").passed


@pytest.mark.parametrize("name", NAMES)
def test_wrong_output_type_is_an_error_verdict(name):
    options, expected = EMPTY[name]
    v = evaluators.get(name, **options).evaluate({"not": "text"}, expected)
    assert v.is_error and "expects text" in v.error


MEGABYTE = ("lorem ipsum dolor sit amet " * 40_000)[:1_000_000]

# name -> (options, output, expected, passed) on a 1 MB output ending in the answer
HUGE = {
    "exact_match": ({"strip": True}, MEGABYTE + "Paris", "Paris", False),
    "fuzzy_match": ({"algorithm": "partial_ratio"}, MEGABYTE + "Paris", "Paris", True),
    "contains": ({"substrings": ["Paris", "lorem"]}, MEGABYTE + "Paris", None, True),
    "regex": ({"pattern": r"answer: (\w+)\s*$", "group": 1}, MEGABYTE + "answer: Paris", "Paris", True),
    "token_f1": ({}, MEGABYTE + "Paris", "Paris", False),
    "numeric": ({}, MEGABYTE + "so 42", 42, True),
}


@pytest.mark.parametrize("name", NAMES)
def test_one_megabyte_output(name):
    options, actual, expected, passed = HUGE[name]
    ev = evaluators.get(name, **options)
    v = ev.evaluate(actual, expected)
    assert not v.is_error and v.passed is passed
    record = json.dumps(v.to_dict())
    assert len(record) < 20_000  # reasons, feedback and details stay short however long the output
    if v.reason:
        assert len(v.reason) < 1_000 and len(v.feedback) < 1_000


def test_one_megabyte_on_both_sides():
    for name in ["exact_match", "fuzzy_match", "token_f1"]:
        assert evaluators.get(name).evaluate(MEGABYTE, MEGABYTE).score == 1.0
    assert evaluators.get("token_f1").evaluate_batch([MEGABYTE], [MEGABYTE + " x"]).scores[0] > 0.99


@pytest.mark.parametrize("name", NAMES)
def test_batch_with_unicode_empty_and_none(name):
    options, expected = EMPTY[name]
    ev = evaluators.get(name, **options)
    actuals = ["", None, "Paris 42", "ÉCOLE 東京 🚀", "x\x00y"]
    batch = ev.evaluate_batch(actuals, [expected] * len(actuals))
    singles = [ev.evaluate(a, expected) for a in actuals]
    assert list(batch.passed) == [v.passed for v in singles]
    assert [batch[i].reason for i in range(len(actuals))] == [v.reason for v in singles]


def test_registered_names_are_public_contract():
    for name in NAMES:
        assert evaluators.get_class(name).name == name
        assert isinstance(evaluators.get(name, **EMPTY[name][0]), assay.Evaluator)


def test_details_of_huge_texts_are_cut():
    big = "x" * 1_000_000
    for name, options, expected in [
        ("exact_match", {}, big + "y"),
        ("fuzzy_match", {"threshold": 1.0}, big + "y"),
        ("regex", {"pattern": "x+(y?)", "group": 1}, "z"),
        ("contains", {"mode": "none", "substrings": ["x+"], "regex": True}, None),
        ("numeric", {}, 5),
    ]:
        v = evaluators.get(name, **options).evaluate("1" * 1_000_000 if name == "numeric" else big, expected)
        assert not v.passed and not v.is_error
        assert len(json.dumps(v.to_dict())) < 5_000, name
