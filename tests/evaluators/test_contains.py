"""contains: modes all/any/none, substrings from options or expected, regex items, case folding, messages."""

import pytest

from assay import evaluators
from assay.errors import ConfigError


def ct(**options):
    return evaluators.get("contains", **options)


TEXT = "Paris is the capital of France."


@pytest.mark.parametrize(
    ("mode", "substrings", "passed", "score", "matched", "missing"),
    [
        ("all", ["Paris", "France"], True, 1.0, ["Paris", "France"], []),
        ("all", ["Paris", "Germany", "Berlin"], False, 1 / 3, ["Paris"], ["Germany", "Berlin"]),
        ("any", ["Berlin", "France", "Rome"], True, 1.0, ["France"], ["Berlin", "Rome"]),  # one found: a full pass
        ("any", ["Berlin", "Rome"], False, 0.0, [], ["Berlin", "Rome"]),
        ("none", ["Berlin", "Rome"], True, 1.0, [], ["Berlin", "Rome"]),
        ("none", ["Berlin", "capital", "Rome", "France"], False, 0.5, ["capital", "France"], ["Berlin", "Rome"]),
    ],
)
def test_modes(mode, substrings, passed, score, matched, missing):
    v = ct(mode=mode, substrings=substrings).evaluate(TEXT)
    assert v.passed is passed and v.score == score
    assert v.details["matched"] == matched and v.details["missing"] == missing
    assert v.details["total"] == len(substrings) and v.details["mode"] == mode
    assert (v.reason is None) is passed and (v.feedback is None) is passed


@pytest.mark.parametrize("options", [{}, {"regex": True}, {"ignore_case": True}])
def test_any_with_one_of_two_found_is_a_full_pass_on_every_path(options):
    """Issue 25: 'any' with 1 of 2 substrings scored 0.5; found is found, whichever item it was."""
    ev = ct(mode="any", substrings=["France", "Berlin"], **options)
    texts = [TEXT, "Berlin and France", "Rome", "", TEXT.upper()]
    want = [1.0, 1.0, 0.0, 0.0, 1.0 if options.get("ignore_case") else 0.0]
    singles = [ev.evaluate(t) for t in texts]
    assert [v.score for v in singles] == want and [v.passed for v in singles] == [w == 1.0 for w in want]
    batch = ev.evaluate_batch(texts * 3)  # the vectorised path
    assert batch.scores.tolist() == want * 3 and batch.passed.tolist() == [w == 1.0 for w in want] * 3
    assert batch.to_dicts() == [v.to_dict() for v in singles] * 3
    from_expected = ct(mode="any", **options)  # the items from each sample's expected answers: pair by pair
    assert from_expected.evaluate(TEXT, ["France", "Berlin"]).score == 1.0
    assert from_expected.evaluate_batch([TEXT], [["France", "Berlin"]]).scores.tolist() == [1.0]


def test_default_mode_is_all_and_case_sensitive():
    assert not ct(substrings=["paris"]).evaluate(TEXT).passed
    assert ct(substrings=["Paris"]).evaluate(TEXT).passed


def test_messages_are_specific():
    v = ct(substrings=["Paris", "Germany", "Berlin"]).evaluate(TEXT)
    assert "lacks 2 of 3 required substrings: 'Germany' and 'Berlin'" in v.reason
    assert v.feedback == "Include 'Germany' and 'Berlin' in the answer."
    v = ct(mode="any", substrings=["Berlin", "Rome"]).evaluate(TEXT)
    assert "contains none of the 2 substrings 'Berlin' or 'Rome'" in v.reason
    assert v.feedback == "Include at least one of 'Berlin' or 'Rome' in the answer."
    v = ct(mode="none", substrings=["capital"]).evaluate(TEXT)
    assert "contains 1 forbidden substring: 'capital'" in v.reason
    assert v.feedback == "Remove 'capital' from the answer."


def test_long_lists_are_cut_in_messages():
    items = [f"w{i}" for i in range(12)]
    v = ct(substrings=items).evaluate("nothing")
    assert "'w0', 'w1', 'w2', 'w3', 'w4' and 7 more" in v.reason
    assert len(v.details["missing"]) == 12


def test_ignore_case_uses_unicode_case_folding():
    assert ct(substrings=["PARIS", "france"], ignore_case=True).evaluate(TEXT).passed
    assert ct(substrings=["straße"], ignore_case=True).evaluate("STRASSE 12").passed  # ß folds to ss
    assert not ct(substrings=["straße"]).evaluate("STRASSE 12").passed


def test_regex_items():
    ev = ct(substrings=[r"\bcapital\b", r"Fr[a-z]+ce"], regex=True)
    assert ev.evaluate(TEXT).passed
    v = ct(substrings=[r"\d{4}"], regex=True).evaluate(TEXT)
    assert not v.passed and v.feedback == r"Include text matching /\d{4}/ in the answer."
    assert "required patterns" in v.reason
    assert ct(substrings=["paris"], regex=True, ignore_case=True).evaluate(TEXT).passed
    assert not ct(substrings=["paris"], regex=True).evaluate(TEXT).passed


def test_regex_none_mode_shows_what_matched():
    v = ct(mode="none", substrings=[r"as an ai\b", r"sorry"], regex=True, ignore_case=True).evaluate(
        "Sorry, as an AI I cannot."
    )
    assert not v.passed and v.score == 0.0
    assert v.details["found_text"] == {r"as an ai\b": "as an AI", "sorry": "Sorry"}
    assert "'as an AI' (matching /as an ai\\b/)" in v.feedback


def test_plain_items_are_not_regexes():
    assert ct(substrings=["a.b"]).evaluate("a.b").passed
    assert not ct(substrings=["a.b"]).evaluate("axb").passed


def test_substrings_from_expected():
    ev = ct()
    assert ev.evaluate(TEXT, "France").passed
    assert ev.evaluate(TEXT, ["Paris", "France"]).passed
    v = ev.evaluate(TEXT, ["Paris", "Spain"])
    assert not v.passed and v.details["missing"] == ["Spain"]
    assert ev.evaluate("It is 42.", 42).passed  # numbers become their text
    assert ct(regex=True).evaluate("It is 42.", r"\d+").passed


def test_options_take_precedence_over_expected():
    assert ct(substrings=["Paris"]).evaluate(TEXT, "Spain").passed


def test_missing_items_and_bad_expected_regex_are_errors():
    v = ct().evaluate(TEXT, None)
    assert v.is_error and "'substrings'" in v.error
    assert ct().evaluate(TEXT, []).is_error
    v = ct(regex=True).evaluate(TEXT, "(")
    assert v.is_error and "not a valid regular expression" in v.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"substrings": []}, "option 'substrings': give at least one"),
        ({"substrings": ["ok", ""]}, "option 'substrings': item 1 is empty"),
        ({"substrings": ["ok", "("], "regex": True}, "option 'substrings': item 1 is an invalid regular expression"),
        ({"substrings": 5}, "option 'substrings'"),
        ({"mode": "some"}, "option 'mode'"),
        ({"regex": "perhaps"}, "option 'regex'"),
        ({"ignore_case": [1]}, "option 'ignore_case'"),
        ({"substring": ["x"]}, "unknown option 'substring'"),
    ],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        ct(**options)


def test_invalid_regex_is_accepted_as_plain_text():
    assert ct(substrings=["("]).evaluate("f(x)").passed


def test_repeated_items_count_each_time():
    v = ct(substrings=["Paris", "Paris", "Rome"]).evaluate(TEXT)
    assert v.score == 2 / 3 and v.details["matched"] == ["Paris", "Paris"] and v.details["missing"] == ["Rome"]
