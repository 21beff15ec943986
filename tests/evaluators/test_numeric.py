"""numeric: reading numbers out of text (every notation and option), tolerance, policy, messages, errors."""

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError


def nm(**options):
    return evaluators.get("numeric", **options)


def values(text, **options):
    return [c.value for c in nm(**options).candidates(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", [42]),
        ("-17 and +3 and −5", [-17, 3, -5]),  # hyphen-minus, plus, Unicode minus sign
        ("1,234,567 people", [1234567]),
        ("1 234 567 people", [1234567]),
        ("1\u202f234\u202f567", [1234567]),  # narrow no-break spaces
        ("1\u202f234\u00a0567", [1234, 567]),  # a number uses one kind of separator
        ("1,234.5", [1234.5]),
        ("3.14159", [3.14159]),
        (".5 of it", [0.5]),
        ("$1,250.00", [1250]),
        ("-$5 or $-6", [-5, -6]),
        ("costs 12 € or 12€, £3, ¥100", [12, 12, 3, 100]),
        ("45% of 200", [45, 200]),
        ("1.5e-3 and 2E5", [0.0015, 200000]),
        ("GPT-4 scored 3-4", [4, 3, 4]),  # a dash glued to a word or number is not a sign
        ("10 - 5 = 5", [10, 5, 5]),
        ("H2O v1.2.3", []),  # digits glued to letters, version numbers
        ("1,2,3", [1, 2, 3]),
        ("1,2345", [1, 2345]),  # not a thousands group
        ("١٢٣ and ４２", [123, 42]),  # Arabic-Indic and full-width digits
        ("no numbers here", []),
        ("", []),
    ],
)
def test_extraction(text, expected):
    assert values(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.1×10^5", [210000]),
        ("2.1 x 10^5", [210000]),
        ("3 * 10**8 m/s", [300000000]),
        ("6.02×10²³", [6.02e23]),
        ("4×10⁻²", [0.04]),
        ("1.6 × 10^(-19) C", [1.6e-19]),
        ("10^6 users", [1e6]),
        ("10^{-3}", [0.001]),
    ],
)
def test_times_ten_notation(text, expected):
    assert values(text) == pytest.approx(expected, rel=1e-12)
    assert len(values(text, times_ten=False)) > 1  # read as separate numbers when switched off


def test_decimal_comma():
    assert values("1.234,5 €", decimal=",") == [1234.5]
    assert values("3,14 und 1 234,5", decimal=",") == [3.14, 1234.5]
    assert values("1,5e3", decimal=",") == [1500]
    assert values("1.234,5", decimal=".") == [1.234, 5]
    assert nm(decimal=",").evaluate("Es sind 1.234,50 €", "1234,5").passed


def test_percent_as_fraction():
    assert values("45% and 12.5 %") == [45, 12.5]
    assert values("45% and 12.5 %", percent_as_fraction=True) == [0.45, 0.125]
    assert values("45 and 12.5", percent_as_fraction=True) == [45, 12.5]
    assert nm(percent_as_fraction=True).evaluate("It rose by 45%.", 0.45).passed
    assert nm(percent_as_fraction=True).evaluate("It rose by 45%.", "45%").passed
    assert nm().evaluate("It rose by 45%.", "45%").passed


@pytest.mark.parametrize(
    ("text", "expected", "as_number", "as_fraction", "either"),
    [
        ("about 12%", 0.12, False, True, True),  # issue 25: the percentage of an expected fraction
        ("about 12%", 12, True, False, True),  # a percentage task with expected 12: passed before, still passes
        ("about 12%", "12%", True, True, True),
        ("about 12", "12%", True, False, True),  # an expected percentage reads 12 (and 0.12 under 'either')
        ("about 0.12", "12%", False, True, True),
        ("about 12%", 0.5, False, False, False),
        ("12 apples", 0.12, False, False, False),  # no percent sign: one reading
        ("200%", 2, False, True, True),
    ],
)
def test_percent_rules(text, expected, as_number, as_fraction, either):
    for rule, passes in (("as_number", as_number), ("as_fraction", as_fraction), ("either", either)):
        ev = nm(percent=rule)
        assert ev.evaluate(text, expected).passed is passes, rule
        assert ev.evaluate_batch([text] * 3, [expected] * 3).passed.tolist() == [passes] * 3, rule
    assert nm().evaluate(text, expected).passed is either  # the default
    assert nm(percent_as_fraction=True).evaluate(text, expected).passed is as_fraction  # its older spelling


def test_either_keeps_every_as_number_pass():
    """The default must not turn a pass of the rule before it (as_number) into a failure."""
    texts = ["12%", "about 12 %", "12", "0.12", "x 45% y 3%", "50％", "1e2%", "-5%", "none", "12.5 %"]
    expecteds = [12, 0.12, "12%", 0.5, 3, 0.03, 100, -0.05, 5, "12.5%"]
    old, new = nm(percent="as_number"), nm()
    for text in texts:
        for expected in expecteds:
            if old.evaluate(text, expected).passed:
                assert new.evaluate(text, expected).passed, (text, expected)


def test_a_percent_match_says_which_reading_matched():
    v = nm().evaluate("The rate is about 12%.", 0.12)
    assert v.passed and v.details["extracted"] == 0.12 and v.details["percent"] == "fraction"
    assert v.details["extracted_text"] == "12%" and v.details["candidates"][0]["fraction"] == 0.12
    v = nm().evaluate("The rate is about 12%.", 13)
    assert not v.passed and "12 (from '12%')" in v.reason and v.details["percent"] == "number"
    assert nm().to_config() == {"name": "numeric"}  # the default stays out of configs (task hashes unchanged)
    with pytest.raises(ConfigError, match="contradicts"):
        nm(percent_as_fraction=True, percent="as_number")


def test_policy_last_and_first():
    text = "First 3, then 4, finally 7."
    assert nm().evaluate(text, 7).passed and nm().options.policy == "last"
    assert nm(policy="first").evaluate(text, 3).passed
    assert not nm(policy="first").evaluate(text, 7).passed


def test_tolerances_follow_math_isclose():
    assert nm().options.rel_tol == 1e-9 and nm().options.abs_tol == 0.0
    assert nm().evaluate("0.30000000000000004", 0.3).passed  # within the default rel_tol
    assert not nm().evaluate("3.14", math.pi).passed
    assert nm(abs_tol=0.01).evaluate("3.14", math.pi).passed
    assert not nm(abs_tol=0.001).evaluate("3.14", math.pi).passed
    assert nm(rel_tol=0.01).evaluate("99", 100).passed  # |99-100| <= 0.01 * max(|99|, |100|)
    assert not nm(rel_tol=0.009).evaluate("99", 100).passed
    assert not nm(rel_tol=0.5).evaluate("0.000001", 0).passed  # relative tolerance never reaches 0
    assert nm(abs_tol=1e-5).evaluate("0.000001", 0).passed


def test_expected_forms():
    ev = nm()
    assert ev.evaluate("It costs $1,234.", "$1,234").passed
    assert ev.evaluate("It costs 1234.", " 1,234 ").passed
    assert ev.evaluate("2.5", Decimal("2.5")).passed
    assert ev.evaluate("2.5", Fraction(5, 2)).passed
    assert ev.evaluate("7", np.int64(7)).passed
    assert ev.evaluate("about 8", [7, 8]).passed
    assert ev.evaluate("1e999", float("inf")).passed


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ("seven", "expected 'seven' is not a number"),
        ("7 or 8", "expected '7 or 8' is not a number"),
        ("", "is not a number"),
        (None, "expected must be a number or numeric string, got None"),
        (True, "got True"),
        ({"x": 1}, "got {'x': 1}"),
        (float("nan"), "NaN"),
        ([], "empty list"),
        ([7, "x"], "'x' is not a number"),
    ],
)
def test_non_numeric_expected_is_an_error(expected, message):
    v = nm().evaluate("7", expected)
    assert v.is_error and math.isnan(v.score) and message in v.error


def test_numeric_outputs_are_taken_as_they_are():
    assert nm().evaluate(7, 7).passed
    assert nm().evaluate(2.5, "2.5").passed
    assert nm().evaluate(True, 1).is_error


def test_no_number_is_a_failure_asking_for_a_number():
    v = nm().evaluate("I am not sure.", 5)
    assert not v.passed and not v.is_error and v.score == 0.0
    assert v.reason == "no number found in output 'I am not sure.'"
    assert "State the answer as a number" in v.feedback
    assert v.details["n_candidates"] == 0 and v.details["candidates"] == []
    assert not nm().evaluate(None, 5).passed and not nm().evaluate("", 5).passed


def test_details_and_mismatch_messages():
    v = nm().evaluate("We have 3 apples and 4 pears, so 71.", 72)
    assert not v.passed
    assert v.details["extracted"] == 71 and v.details["extracted_text"] == "71" and v.details["difference"] == 1
    assert [c["value"] for c in v.details["candidates"]] == [3, 4, 71]
    assert v.details["candidates"][2] == {"value": 71.0, "text": "71", "start": 33}
    assert (
        v.reason
        == "the last number in the output, 71 (from '71'), differs from expected 72 by 1 (abs_tol 0, rel_tol 1e-09)"
    )
    assert "recheck the calculation and state 72 as the last number" in v.feedback
    v = nm().evaluate("The total is 72, or 73 with tax.", 72)
    assert "The output mentions '72' but its last number is '73'" in v.feedback
    only = nm().evaluate("about 71", 72)
    assert only.reason.startswith("the only number in the output, 71")


def test_space_groups():
    assert values("scores 100 200 300") == [100200300]
    assert values("scores 100 200 300", space_groups=False) == [100, 200, 300]
    assert values("1\u2009234\u2009567", space_groups=False) == [1234567]  # thin spaces still group
    assert values("1,234 567") == [1234, 567]


def test_candidates_in_details_are_capped_but_counted():
    v = nm().evaluate(", ".join(str(i) for i in range(500)), 499)
    assert v.passed and v.details["n_candidates"] == 500 and len(v.details["candidates"]) == 100
    assert v.details["extracted"] == 499


def test_overflow_is_infinite_and_json_safe():
    import json

    v = nm().evaluate("1e999", 5)
    assert not v.passed and v.details["extracted"] == "inf"
    json.dumps(v.to_dict(), allow_nan=False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"abs_tol": -1}, "option 'abs_tol'"),
        ({"rel_tol": "tiny"}, "option 'rel_tol'"),
        ({"rel_tol": float("inf")}, "option 'rel_tol'"),
        ({"policy": "middle"}, "option 'policy'"),
        ({"decimal": ";"}, "option 'decimal'"),
        ({"percent_as_fraction": "maybe"}, "option 'percent_as_fraction'"),
        ({"percent": "fraction"}, "option 'percent'"),
        ({"times_ten": "no way"}, "option 'times_ten'"),
        ({"space_groups": 3}, "option 'space_groups'"),
        ({"tolerance": 1}, "unknown option 'tolerance'"),
    ],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        nm(**options)


def test_difference_in_the_reason_has_no_float_noise():
    v = evaluators.get("numeric").evaluate("0.1 + 0.2 is 0.2", 0.3)
    assert "differs from expected 0.3 by 0.1 (" in v.reason


floats_any = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [0.0, -0.0, 1e308, 5e-324, 1.0, 1.0 + 1e-9]
)
