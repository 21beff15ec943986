"""Every failing verdict of every deterministic evaluator, on every failure path, has a reason and feedback."""

import pytest

from assay import evaluators

CALLS = [{"name": "delete", "arguments": {"id": 1}}, {"name": "answer", "arguments": {}}]
SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}

FAILURES = [
    ("exact_match", {}, "Milan", "Rome"),
    ("exact_match", {}, "The capital is Rome.", "Rome"),
    ("exact_match", {}, "", "Rome"),
    ("exact_match", {}, "Milan", ["Rome", "Roma"]),
    ("fuzzy_match", {}, "Milan", "Rome"),
    ("fuzzy_match", {}, "", "Rome"),
    ("fuzzy_match", {}, "x" * 20_000, "Rome"),
    ("contains", {"substrings": ["Rome", "Italy"]}, "Milan", None),
    ("contains", {"substrings": ["Rome", "Roma"], "mode": "any"}, "Milan", None),
    ("contains", {"substrings": ["Milan"], "mode": "none"}, "Milan", None),
    ("contains", {"substrings": [r"\bM\w+"], "mode": "none", "regex": True}, "Milan", None),
    ("contains", {}, "Milan", ["Rome"]),
    ("regex", {"pattern": r"\d+"}, "no digits", None),
    ("regex", {"pattern": r"\d+"}, "", None),
    ("regex", {"pattern": r"\d+", "mode": "fullmatch"}, "42 apples", None),
    ("regex", {"pattern": r"\d+", "mode": "fullmatch"}, "apples", None),
    ("regex", {"pattern": r"answer: (\w+)", "group": 1}, "answer: Milan", "Rome"),
    ("regex", {"pattern": r"answer: (\w+)|(none)", "group": 1}, "none", "Rome"),
    ("token_f1", {}, "Milan", "Rome"),
    ("token_f1", {}, "the", "Rome"),
    ("numeric", {}, "no number", 42),
    ("numeric", {}, "41", 42),
    ("numeric", {}, "42 then 41", 42),
    ("json_match", {}, "not json", {"city": "Rome"}),
    ("json_match", {}, '{"city": "Milan"}', {"city": "Rome"}),
    ("json_match", {}, "{}", {"city": "Rome"}),
    ("json_match", {"penalize_extra": True}, '{"city": "Rome", "x": 1}', {"city": "Rome"}),
    ("schema", {"json_schema": SCHEMA}, "not json", None),
    ("schema", {"json_schema": SCHEMA}, "{}", None),
    ("schema", {"json_schema": SCHEMA}, '{"city": 3}', None),
    ("tool_usage", {"required": ["search"]}, CALLS, None),
    ("tool_usage", {"forbidden": ["delete"]}, CALLS, None),
    ("tool_usage", {"min_calls": 3}, CALLS, None),
    ("tool_usage", {"max_calls": 1}, CALLS, None),
    ("tool_usage", {"args": {"delete": {"id": 2}}}, CALLS, None),
    ("tool_usage", {"args": {"search": {"q": "x"}}}, CALLS, None),
    ("tool_usage", {"order": "subsequence", "expected_sequence": ["answer", "delete"]}, CALLS, None),
    ("tool_usage", {"order": "exact", "expected_sequence": ["delete"]}, CALLS, None),
    ("tool_usage", {"required": ["answer"], "penalize_extra": True}, CALLS, None),
    ("tool_usage", {"output_contains": ["Rome"]}, {"tool_calls": CALLS, "text": "Milan"}, None),
    ("tool_usage", {"output_contains": ["Rome"]}, CALLS, None),
    ("custom", {"fn": "tests.evaluators.test_feedback_contract:never"}, "x", None),
    ("custom", {"fn": "tests.evaluators.test_feedback_contract:low"}, "x", None),
]


def never(actual):
    """The output is never good enough."""
    return False


def low(actual):
    return {"score": 0.1, "reason": "too vague"}


@pytest.mark.parametrize(("name", "options", "actual", "expected"), FAILURES)
def test_failing_verdict_has_reason_and_feedback(name, options, actual, expected):
    verdict = evaluators.get(name, **options).evaluate(actual, expected)
    assert not verdict.is_error, verdict.error
    assert not verdict.passed
    assert verdict.reason and verdict.reason.strip()
    assert verdict.feedback and len(verdict.feedback.strip()) > 10
