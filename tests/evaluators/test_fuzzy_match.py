"""fuzzy_match: every algorithm against hand-computed similarities, threshold, normalisation, batch = loop."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError

ALGORITHMS = ["ratio", "partial_ratio", "token_sort_ratio", "token_set_ratio", "levenshtein", "jaro_winkler"]


def fm(**options):
    return evaluators.get("fuzzy_match", **options)


@pytest.mark.parametrize(
    ("algorithm", "actual", "expected", "similarity"),
    [
        ("ratio", "kitten", "sitting", 8 / 13),  # Indel distance 5 over 13 characters
        ("ratio", "Pari", "Paris", 8 / 9),
        ("levenshtein", "kitten", "sitting", 1 - 3 / 7),  # 3 edits over the longer length 7
        ("levenshtein", "Pari", "Paris", 0.8),
        ("jaro_winkler", "MARTHA", "MARHTA", 0.9611111111111111),  # the textbook Jaro-Winkler examples
        ("jaro_winkler", "DIXON", "DICKSONX", 0.8133333333333332),
        ("partial_ratio", "The city of Paris", "Paris", 1.0),
        ("partial_ratio", "Paris", "The city of Paris", 1.0),
        ("token_sort_ratio", "Paris London", "London Paris", 1.0),
        ("ratio", "Paris London", "London Paris", 0.5),
        ("token_set_ratio", "Paris Paris London", "London Paris", 1.0),
        ("token_sort_ratio", "Paris Paris London", "London Paris", 0.8),
    ],
)
def test_known_similarities(algorithm, actual, expected, similarity):
    v = fm(algorithm=algorithm, threshold=0.0).evaluate(actual, expected)
    assert math.isclose(v.score, similarity, rel_tol=1e-12)
    assert v.details["similarity"] == v.score and v.details["algorithm"] == algorithm


def test_threshold_default_and_boundary():
    assert fm().options.threshold == 0.8
    at = fm(algorithm="levenshtein").evaluate("Pari", "Paris")  # exactly 0.8
    assert at.passed and at.score == 0.8 and at.reason is None and at.feedback is None
    below = fm(algorithm="levenshtein", threshold=0.81).evaluate("Pari", "Paris")
    assert not below.passed and below.score == 0.8  # the score is the similarity, pass or fail


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 1.5}, "option 'threshold'"),
        ({"threshold": -0.1}, "option 'threshold'"),
        ({"threshold": "high"}, "option 'threshold'"),
        ({"algorithm": "soundex"}, "option 'algorithm'"),
        ({"ignore_case": "sometimes"}, "option 'ignore_case'"),
        ({"regexes_to_ignore": ["("]}, "regexes_to_ignore"),
        ({"treshold": 0.5}, "unknown option 'treshold'"),
    ],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        fm(**options)


@pytest.mark.parametrize(
    ("option", "actual", "expected"),
    [
        ({"ignore_case": True}, "PARIS", "paris"),
        ({"ignore_punctuation": True}, "Paris!!", "Paris"),
        ({"ignore_numbers": True}, "Paris 75001", "Paris "),
        ({"ignore_whitespace": True}, "New   York", "New York"),
        ({"ignore_articles": True, "ignore_whitespace": True}, "The Louvre", "Louvre"),
        ({"strip": True}, "  Paris\n", "Paris"),
        ({"regexes_to_ignore": ["^Answer: "]}, "Answer: Paris", "Paris"),
    ],
)
def test_each_normalisation_option(option, actual, expected):
    assert fm(**option).evaluate(actual, expected).score == 1.0
    assert fm().evaluate(actual, expected).score < 1.0


def test_failure_reason_and_feedback_in_words():
    v = fm().evaluate("The city of Paris", "Paris")
    assert not v.passed and math.isclose(v.score, 10 / 22)
    assert "ratio similarity 0.455" in v.reason and "'Paris'" in v.reason and "threshold 0.8" in v.reason
    assert v.feedback == "Answer with 'Paris': the output adds 'The city of'."
    typo = fm(threshold=0.95).evaluate("Pariss", "Paris")
    assert typo.feedback == "Answer with 'Paris': the output says 'Pariss' instead."
    swap = fm(threshold=0.95, ignore_case=True).evaluate("The Lundon Eye", "the London Eye")
    assert swap.feedback == (
        "Answer with 'the London Eye': the output (compared after normalisation) says 'lundon' where the answer "
        "has 'london'."
    )
    short = fm(threshold=1.0).evaluate("Eiffel", "Eiffel Tower")
    assert short.feedback == "Answer with 'Eiffel Tower': the output leaves out 'Tower'."
    empty = fm().evaluate("", "Paris")
    assert empty.feedback == "The output is empty; answer with 'Paris'."
    spacing = fm(threshold=1.0).evaluate("New  York", "New York")
    assert "same words but differs in spacing" in spacing.feedback


def test_feedback_is_words_not_a_character_edit_script():
    # issue 10: the old feedback read "replace 'I' with 'L'; delete ' could not f'"
    v = fm().evaluate("I could not find it", "London")
    assert v.feedback == "Answer with 'London': the output says 'I could not find it' instead."
    assert "replace" not in v.feedback and "delete" not in v.feedback
    several = fm(threshold=1.0).evaluate("Paris is in Germany, near Berlin", "Paris is in France")
    assert (
        several.feedback
        == "Answer with 'Paris is in France': the output says 'Germany, near Berlin' where the answer has 'France'."
    )
    mixed = fm().evaluate("答えは 東京 です", "東京")
    assert mixed.feedback == "Answer with '東京': the output adds '答えは' and 'です'."
    many = fm(threshold=1.0).evaluate("a1 b c2 d e3 f g4 h i5", "a b c d e f g h i")
    assert many.feedback.endswith("differs in 2 more place(s).") and many.feedback.count("where the answer has") == 3


def test_multiple_answers_take_the_best():
    v = fm(ignore_case=True).evaluate("PARIS", ["Rome", "paris"])
    assert v.passed and v.score == 1.0 and v.details["matched"] == "paris"
    assert v.details["similarities"][1] == 1.0 and v.details["similarities"][0] < 0.5
    far = fm().evaluate("Lyon", ["Rome", "Paris"])
    assert not far.passed and "closest answer" in far.reason


def test_identical_strings_score_one_even_when_rapidfuzz_says_otherwise():
    # rapidfuzz's token_set_ratio gives 0 for two empty (or blank) strings; identical texts are fully similar
    for a in ["", "   "]:
        assert fm(algorithm="token_set_ratio").evaluate(a, a).score == 1.0
        assert fm(algorithm="token_set_ratio").evaluate_batch([a], [a]).scores[0] == 1.0


def test_empty_answer_list_and_bad_type_are_errors():
    assert fm().evaluate("x", []).is_error
    assert "expects text" in fm().evaluate(3.5, "x").error


def test_batch_is_columnar_and_rebuilds_verdicts():
    actuals = ["Paris", "Pari", "The city of Paris", ""]
    expected = ["Paris", "Paris", "Paris", "Paris"]
    batch = fm().evaluate_batch(actuals, expected)
    assert isinstance(batch.scores, np.ndarray) and list(batch.passed) == [True, True, False, False]
    assert batch[2].feedback == fm().evaluate(actuals[2], expected[2]).feedback
    mixed = fm().evaluate_batch(["Paris", None], [["Rome", "Paris"], "x"])  # lists and None: general path
    assert list(mixed.passed) == [True, False]


def test_batch_matches_scalar_over_lengths_and_scripts():
    rng = np.random.default_rng(7)
    alphabet = list("abcde fgé東京🚀")
    texts = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 150)))) for _ in range(400)]
    a, e = texts[:200], texts[200:]
    for algorithm in ALGORITHMS:
        ev = fm(algorithm=algorithm)
        assert list(ev.evaluate_batch(a, e).scores) == [ev.evaluate(x, y).score for x, y in zip(a, e, strict=True)]


texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30) | st.sampled_from(
    ["", " ", "Paris", "paris", "The Paris", "Paris!", "sirap"]
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALGORITHMS), texts, texts)
def test_scores_in_unit_interval(algorithm, a, b):
    v = fm(algorithm=algorithm).evaluate(a, b)
    assert 0.0 <= v.score <= 1.0 and v.passed == (v.score >= 0.8)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["ratio", "levenshtein", "jaro_winkler", "token_sort_ratio"]), texts, texts)
def test_symmetric_algorithms_are_symmetric(algorithm, a, b):
    ev = fm(algorithm=algorithm)
    assert ev.evaluate(a, b).score == ev.evaluate(b, a).score


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(ALGORITHMS), st.lists(st.tuples(texts, texts), max_size=15), st.booleans())
def test_batch_equals_loop(algorithm, pairs, ignore_case):
    ev = fm(algorithm=algorithm, ignore_case=ignore_case, ignore_punctuation=True)
    a = [p[0] for p in pairs]
    e = [p[1] for p in pairs]
    batch = ev.evaluate_batch(a, e)
    singles = [ev.evaluate(x, y) for x, y in pairs]
    assert list(batch.scores) == [v.score for v in singles]
    assert list(batch.passed) == [v.passed for v in singles]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(ALGORITHMS), texts | st.sampled_from(["\t", "  \n ", "é", "🚀🚀"]))
def test_identical_strings_score_one_in_batch(algorithm, text):
    # the batch relies on rapidfuzz giving identical strings exactly 1 for every algorithm but token_set_ratio
    ev = fm(algorithm=algorithm)
    assert ev.evaluate_batch([text, text], [text, text + "x"]).scores[0] == 1.0
