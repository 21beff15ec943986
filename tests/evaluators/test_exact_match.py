import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.registry import from_config


def test_lookup_by_name_with_options():
    ev = evaluators.get("exact_match", ignore_case=True)
    assert ev.evaluate("PARIS", "paris").passed
    assert ev.name == "exact_match"


def test_unknown_name_lists_known():
    with pytest.raises(ConfigError) as err:
        evaluators.get("exact_matc")
    assert "exact_match" in str(err.value) and "fuzzy_match" in str(err.value)


def test_unknown_and_invalid_option_named():
    with pytest.raises(ConfigError, match="unknown option 'ignore_kase'"):
        evaluators.get("exact_match", ignore_kase=True)
    with pytest.raises(ConfigError, match="regexes_to_ignore"):
        evaluators.get("exact_match", regexes_to_ignore=["("])


@pytest.mark.parametrize(
    ("options", "actual", "expected", "passed"),
    [
        ({}, "Paris", "Paris", True),
        ({}, "paris", "Paris", False),
        ({"ignore_case": True}, "paris", "Paris", True),
        ({"ignore_punctuation": True}, "Paris!", "Paris", True),
        ({"ignore_numbers": True}, "Paris 2024", "Paris ", True),
        ({"regexes_to_ignore": ["^the "]}, "the Paris", "Paris", True),
        ({"strip": True}, "  Paris\n", "Paris", True),
        ({"ignore_whitespace": True}, "New   York", "New York", True),
        ({"ignore_articles": True, "ignore_whitespace": True}, "The Eiffel Tower", "Eiffel Tower", True),
        ({}, "Rome", ["Paris", "Rome"], True),
        ({}, "", "", True),
        ({}, None, "", True),
    ],
)
def test_options(options, actual, expected, passed):
    assert evaluators.get("exact_match", **options).evaluate(actual, expected).passed is passed


def test_lm_eval_order_regex_before_case():
    # lm-eval applies regexes_to_ignore before lowering case, so an upper-case pattern still matches.
    ev = evaluators.get("exact_match", regexes_to_ignore=["ANSWER: "], ignore_case=True)
    assert ev.evaluate("ANSWER: yes", "yes").passed
    assert not ev.evaluate("answer: yes", "yes").passed


def test_failure_has_reason_and_concrete_feedback():
    v = evaluators.get("exact_match").evaluate("The capital is Paris.", "Paris")
    assert not v.passed and v.score == 0.0
    assert "'The capital is Paris.'" in v.reason and "'Paris'" in v.reason
    assert "'Paris' only" in v.feedback


def test_pass_has_no_reason():
    v = evaluators.get("exact_match").evaluate("x", "x")
    assert v.passed and v.reason is None and v.feedback is None


def test_bad_output_type_is_error_not_failure():
    v = evaluators.get("exact_match").evaluate({"a": 1}, "x")
    assert v.is_error and math.isnan(v.score) and "expects text" in v.error


def test_batch_matches_per_pair_and_builds_verdict_on_access():
    ev = evaluators.get("exact_match", ignore_case=True, ignore_punctuation=True)
    actuals = ["Paris!", "rome", "Berlin", "x\x00y", "ÉCOLE"]
    expected = ["paris", "Rome.", "Bonn", "x\x00y", "école"]
    batch = ev.evaluate_batch(actuals, expected)
    singles = [ev.evaluate(a, e) for a, e in zip(actuals, expected, strict=True)]
    assert list(batch.passed) == [v.passed for v in singles]
    assert batch[2].reason == singles[2].reason
    assert isinstance(batch.scores, np.ndarray) and len(batch) == 5


def test_batch_reduction_explains_itself():
    ev = evaluators.get("exact_match")
    batch = ev.evaluate_batch(["a", "b", "c", {"bad": 1}], ["a", "b", "x", "y"])
    agg = batch.reduce("sum")
    assert agg.value == 2.0 and agg.n_errored == 1
    assert agg.explanation == "summation of exact_match scores over 3 samples: 2 (1 errored sample excluded)"


def test_config_round_trip():
    ev = evaluators.get("exact_match", ignore_case=True, regexes_to_ignore=["x"])
    cfg = ev.to_config()
    assert cfg == {"name": "exact_match", "ignore_case": True, "regexes_to_ignore": ["x"]}
    assert from_config(cfg) == ev


@given(st.text())
def test_reflexive(text):
    assert evaluators.get("exact_match").evaluate(text, text).passed


@given(st.lists(st.tuples(st.text(max_size=20), st.text(max_size=20)), max_size=20))
def test_batch_equals_loop(pairs):
    ev = evaluators.get("exact_match", ignore_case=True, ignore_punctuation=True, ignore_whitespace=True)
    a = [p[0] for p in pairs]
    e = [p[1] for p in pairs]
    assert list(ev.evaluate_batch(a, e).passed) == [ev.evaluate(x, y).passed for x, y in pairs]


# ----------------------------------------------------------------- known answers: HF `evaluate` exact_match docs

HF_REFS = ["the cat", "theater", "YELLING", "agent007"]
HF_PREDS = ["cat?", "theater", "yelling", "agent"]


@pytest.mark.parametrize(
    ("options", "score"),
    [
        ({}, 0.25),
        ({"regexes_to_ignore": ["the ", "yell"], "ignore_case": True, "ignore_punctuation": True}, 0.5),
        ({"regexes_to_ignore": ["the ", "yell", "YELL"], "ignore_case": True, "ignore_punctuation": True}, 0.75),
        (
            {
                "regexes_to_ignore": ["the ", "yell", "YELL"],
                "ignore_case": True,
                "ignore_punctuation": True,
                "ignore_numbers": True,
            },
            1.0,
        ),
    ],
)
def test_hf_evaluate_documented_scores(options, score):
    ev = evaluators.get("exact_match", **options)
    assert ev.evaluate_batch(HF_PREDS, HF_REFS).reduce("mean").value == score
    singles = [ev.evaluate(p, r).score for p, r in zip(HF_PREDS, HF_REFS, strict=True)]
    assert sum(singles) / len(singles) == score


def test_hf_evaluate_documented_sentences():
    refs = ["The cat sat on the mat.", "Theaters are great.", "It's like comparing oranges and apples."]
    preds = ["The cat sat on the mat?", "Theaters are great.", "It's like comparing apples and oranges."]
    agg = evaluators.get("exact_match").evaluate_batch(preds, refs).reduce("mean")
    assert round(agg.value, 2) == 0.33


def test_empty_list_of_answers_is_a_clear_error():
    v = evaluators.get("exact_match").evaluate("Paris", [])
    assert v.is_error and "empty list" in v.error


@pytest.mark.parametrize("name", ["exact_match", "fuzzy_match"])
def test_ignore_articles_alone_drops_the_article_and_its_space(name):
    ev = evaluators.get(name, ignore_articles=True)
    assert ev.evaluate("the Eiffel Tower", "Eiffel Tower").score == 1.0
    assert ev.evaluate("Eiffel, the Tower", "Eiffel, Tower").score == 1.0
    assert ev.evaluate("A Tower", "tower").score < 1.0  # case still counts


def test_answer_inside_other_text_has_its_own_reason():
    inside = evaluators.get("exact_match").evaluate("The capital is Madrid.", "Madrid")
    assert inside.reason == "output 'The capital is Madrid.' contains the expected answer 'Madrid' but also other text"
    assert "'Madrid' only" in inside.feedback
    wrong = evaluators.get("exact_match").evaluate("Milan", "Rome")
    assert wrong.reason == "output 'Milan' does not equal expected 'Rome'"
    assert wrong.feedback == "Answer with exactly 'Rome'; the output was 'Milan'."


GSM8K_TARGET = "7+5=<<7+5=12>>12\n#### 12"
GSM8K = {"regexes_to_ignore": [r"(?s).*#### "], "strip": True}


def test_feedback_quotes_the_compared_answer_not_the_raw_target():
    """Issue 25: the feedback said Answer with exactly '7+5=<<7+5=12>>12\\n#### 12' where '12' was compared."""
    ev = evaluators.get("exact_match", **GSM8K)
    wrong = ev.evaluate("#### 13", GSM8K_TARGET)
    assert wrong.feedback == "Answer with exactly '12'; the output was '#### 13'."
    assert wrong.reason == "output '#### 13' does not equal expected '12' (after normalisation: '13' vs '12')"
    assert "<<" not in wrong.reason + wrong.feedback
    inside = ev.evaluate("so 12 apples", GSM8K_TARGET)
    assert "contains the expected answer '12'" in inside.reason and "answer with '12' only" in inside.feedback
    many = ev.evaluate("13", [GSM8K_TARGET, "x\n#### 12.0"])
    assert "(12, 12.0)" not in many.reason and "('12', '12.0')" in many.reason
    batch = ev.evaluate_batch(["#### 13", "so 12 apples", "#### 12"], [GSM8K_TARGET] * 3)  # the bulk dicts
    assert batch.to_dicts() == [ev.evaluate(a, GSM8K_TARGET).to_dict() for a in ["#### 13", "so 12 apples", "#### 12"]]


def test_an_answer_normalised_only_in_case_or_spacing_is_quoted_as_written():
    v = evaluators.get("exact_match", ignore_case=True, ignore_whitespace=True).evaluate("London", "  Paris ")
    assert v.feedback == "Answer with exactly '  Paris '; the output was 'London'."


def test_other_text_evaluators_quote_the_compared_answer():
    fuzzy = evaluators.get("fuzzy_match", **GSM8K).evaluate("#### 13", GSM8K_TARGET)
    assert "expected '12'" in fuzzy.reason and fuzzy.feedback.startswith("Answer with '12'")
    regex = evaluators.get("regex", pattern=r"answer: (\S+)", group=1, **GSM8K)
    v = regex.evaluate("answer: 13", GSM8K_TARGET)
    assert "does not equal expected '12'" in v.reason and v.feedback.endswith("should be '12'.")
    assert "<<" not in v.reason + v.feedback + fuzzy.reason + fuzzy.feedback
    v = evaluators.get("regex", pattern=r"answer: (\S+)?", group=1, **GSM8K).evaluate("answer: ", GSM8K_TARGET)
    assert v.feedback.startswith("State the answer '12'")
