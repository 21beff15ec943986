"""regex: search / fullmatch, flags, groups compared to the expected answer with normalisation, messages."""

import pytest

from assay import evaluators
from assay.errors import ConfigError


def rx(**options):
    return evaluators.get("regex", **options)


def test_search_passes_anywhere_and_ignores_expected():
    ev = rx(pattern=r"\b[A-D]\b")
    v = ev.evaluate("I choose B.", "C")
    assert v.passed and v.reason is None and v.details == {"match": "B", "span": [9, 10]}
    assert ev.options.mode == "search"


def test_fullmatch_needs_the_whole_output():
    ev = rx(pattern=r"[A-D]", mode="fullmatch")
    assert ev.evaluate("B").passed
    v = ev.evaluate("The answer is B")
    assert not v.passed and "does not match /[A-D]/ as a whole; only 'B' at 14-15 does" in v.reason
    assert v.feedback == "Answer with only the part that matches, 'B', without the text around."
    none = ev.evaluate("no letter here")
    assert none.feedback == "The whole output must match the pattern /[A-D]/; the output was 'no letter here'."


def test_no_match_messages():
    v = rx(pattern=r"\d+").evaluate("no digits")
    assert not v.passed and v.score == 0.0
    assert v.reason == "output 'no digits' contains no match for /\\d+/"
    assert v.feedback == "The output must contain text matching the pattern /\\d+/; it was 'no digits'."
    assert "empty" in rx(pattern=r"\d+").evaluate("").feedback


def test_flags():
    assert not rx(pattern="answer").evaluate("ANSWER").passed
    assert rx(pattern="answer", ignore_case=True).evaluate("ANSWER").passed
    assert not rx(pattern=r"^B$").evaluate("A\nB\nC").passed
    assert rx(pattern=r"^B$", multiline=True).evaluate("A\nB\nC").passed
    assert not rx(pattern=r"start.*end").evaluate("start\nend").passed
    assert rx(pattern=r"start.*end", dotall=True).evaluate("start\nend").passed


def test_group_compared_to_expected():
    ev = rx(pattern=r"[Aa]nswer: (\w+)", group=1)
    v = ev.evaluate("Reasoning... Answer: B", "B")
    assert v.passed and v.details["captured"] == "B" and v.details["matched"] == "B"
    v = ev.evaluate("Reasoning... Answer: C", "B")
    assert not v.passed
    assert v.reason == "group 1 captured 'C', which does not equal expected 'B'"
    assert (
        v.feedback
        == "The pattern /[Aa]nswer: (\\w+)/ read the answer 'C' from 'Answer: C'; the answer there should be 'B'."
    )
    assert ev.evaluate("Answer: C", ["B", "C"]).passed


def test_named_and_whole_match_groups():
    assert rx(pattern=r"#### (?P<final>-?\d+)", group="final").evaluate("so #### 72", "72").passed
    assert rx(pattern=r"\d+", group=0).evaluate("it is 72", 72).passed
    assert not rx(pattern=r"\d+", group=0).evaluate("it is 71", 72).passed


def test_group_comparison_uses_normalisation_options():
    text = "Final answer: Paris!"
    assert not rx(pattern=r"answer: (.*)", group=1).evaluate(text, "paris").passed
    assert (
        rx(pattern=r"answer: (.*)", group=1, ignore_case=True, ignore_punctuation=True).evaluate(text, "paris").passed
    )
    assert rx(pattern=r"answer:(.*)", group=1, strip=True).evaluate("answer:  Paris ", "Paris").passed
    v = rx(pattern=r"answer: (.*)", group=1, ignore_punctuation=True).evaluate(text, "Rome")
    assert "(after normalisation: 'Paris' vs 'Rome')" in v.reason


def test_ignore_case_applies_to_pattern_and_comparison():
    ev = rx(pattern=r"answer: ([a-d])", group=1, ignore_case=True)
    assert ev.evaluate("ANSWER: B", "b").passed


def test_group_that_did_not_take_part():
    v = rx(pattern=r"(yes)|(no)", group=1).evaluate("no", "yes")
    assert not v.passed and "group 1 of /(yes)|(no)/ took no part in the match 'no'" in v.reason


def test_group_without_expected_is_an_error():
    v = rx(pattern=r"(\d+)", group=1).evaluate("42", None)
    assert v.is_error and "no expected answer" in v.error


def test_output_object_with_text():
    from assay.models.base import Response

    assert rx(pattern="Paris").evaluate(Response(text="Paris")).passed
    assert not rx(pattern="Paris").evaluate(Response(text=None)).passed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "option 'pattern'"),
        ({"pattern": "("}, "option 'pattern': invalid regular expression"),
        ({"pattern": r"(\d)", "group": 2}, "option 'group': the pattern .* has 1 group"),
        ({"pattern": r"(?P<x>\d)", "group": "y"}, "option 'group': .* no group named 'y' \\(named groups: 'x'\\)"),
        ({"pattern": "a", "group": -1}, "option 'group'"),
        ({"pattern": "a", "mode": "match"}, "option 'mode'"),
        ({"pattern": "a", "multiline": "often"}, "option 'multiline'"),
        ({"pattern": "a", "flags": ["I"]}, "unknown option 'flags'"),
    ],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        rx(**options)


@pytest.mark.parametrize(
    ("option", "captured_text", "expected"),
    [
        ({"ignore_case": True}, "PARIS", "paris"),
        ({"ignore_punctuation": True}, "Paris!!", "Paris"),
        ({"ignore_numbers": True}, "Paris75", "Paris"),
        ({"ignore_whitespace": True}, "New   York", "New York"),
        ({"ignore_articles": True, "ignore_whitespace": True}, "the Louvre", "Louvre"),
        ({"strip": True}, "  Paris ", "Paris"),
        ({"regexes_to_ignore": ["^city of "]}, "city of Paris", "Paris"),
    ],
)
def test_each_normalisation_option_on_the_capture(option, captured_text, expected):
    text = f"<answer>{captured_text}</answer>"
    assert rx(pattern=r"<answer>(.*)</answer>", group=1, **option).evaluate(text, expected).passed
    assert not rx(pattern=r"<answer>(.*)</answer>", group=1).evaluate(text, expected).passed
