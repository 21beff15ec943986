"""token_f1: SQuAD v1.1 F1 known answers, precision/recall, threshold, feedback, batch = loop."""

import math
import re
import string
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.normalize import (
    hidden_articles,
    squad_normalize,
    squad_normalize_many,
    squad_prepare_many,
    squad_token_stream,
    squad_tokens_prepared,
)


def tf(**options):
    return evaluators.get("token_f1", **options)


def official_v11_f1(prediction: str, ground_truth: str) -> float:
    """The SQuAD v1.1 evaluation script's f1_score, restated: normalise, Counter overlap, harmonic mean."""

    def normalize(s: str) -> str:
        s = s.lower()
        s = "".join(ch for ch in s if ch not in set(string.punctuation))
        s = re.sub(r"\b(a|an|the)\b", " ", s)
        return " ".join(s.split())

    pred, gold = normalize(prediction).split(), normalize(ground_truth).split()
    num_same = sum((Counter(pred) & Counter(gold)).values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred)
    recall = 1.0 * num_same / len(gold)
    return (2 * precision * recall) / (precision + recall)


# (prediction, ground truth, F1 computed by hand, precision, recall)
KNOWN = [
    ("the Eiffel Tower", "Eiffel Tower", 1.0, 1.0, 1.0),
    ("Eiffel Tower in Paris", "Eiffel Tower", 2 / 3, 0.5, 1.0),  # 2 shared of 4 predicted, 2 of 2 gold
    ("Denver Broncos!", "denver broncos", 1.0, 1.0, 1.0),
    ("Paris", "Eiffel Tower", 0.0, 0.0, 0.0),
    ("tower tower tower", "tower", 0.5, 1 / 3, 1.0),  # multiset: one shared 'tower'
    ("x y", "x y z w", 2 / 3, 1.0, 0.5),
    ("Saint Bernadette Soubirous", "Bernadette Soubirous of Lourdes", 4 / 7, 2 / 3, 0.5),
    ("an apple a day", "the apple day", 1.0, 1.0, 1.0),  # articles dropped
    ("Theater", "the Theater", 1.0, 1.0, 1.0),  # 'the' inside a word stays
    ("1,000 km", "1000 kilometres", 0.5, 0.5, 0.5),  # punctuation removed inside numbers
]


@pytest.mark.parametrize(("pred", "gold", "f1", "precision", "recall"), KNOWN)
def test_known_answers(pred, gold, f1, precision, recall):
    v = tf(threshold=0.0).evaluate(pred, gold)
    assert math.isclose(v.score, f1, rel_tol=1e-12) and v.details["f1"] == v.score
    assert math.isclose(v.details["precision"], precision) and math.isclose(v.details["recall"], recall)
    assert v.score == official_v11_f1(pred, gold)  # the very same float as the official script


def test_batch_known_answers_equal_official():
    preds = [k[0] for k in KNOWN]
    golds = [k[1] for k in KNOWN]
    assert list(tf().evaluate_batch(preds, golds).scores) == [
        official_v11_f1(p, g) for p, g in zip(preds, golds, strict=True)
    ]


def test_empty_answers_follow_squad_v2():
    # v1.1 scores two empty answers 0; we follow SQuAD v2: both empty agree (1), one empty scores 0
    assert tf().evaluate("", "").score == 1.0
    assert tf().evaluate("the", "a").score == 1.0  # both normalise to nothing
    assert tf().evaluate("", "Paris").score == 0.0
    assert tf().evaluate("Paris", "").score == 0.0
    assert list(tf().evaluate_batch(["", "the", "", "Paris"], ["", "a", "Paris", ""]).scores) == [1, 1, 0, 0]


def test_max_over_references():
    v = tf().evaluate("Eiffel Tower in Paris", ["Paris", "Eiffel Tower"])
    assert math.isclose(v.score, 2 / 3) and v.details["matched"] == "Eiffel Tower"
    assert v.details["f1s"] == [official_v11_f1("Eiffel Tower in Paris", g) for g in ["Paris", "Eiffel Tower"]]


def test_threshold_default_half_and_boundary():
    assert tf().options.threshold == 0.5
    v = tf().evaluate("tower tower tower", "tower")  # F1 exactly 0.5
    assert v.passed and v.reason is None and v.feedback is None
    v = tf(threshold=0.75).evaluate("Eiffel Tower in Paris", "Eiffel Tower")
    assert not v.passed and math.isclose(v.score, 2 / 3)


def test_failure_reason_and_word_feedback():
    v = tf().evaluate("big famous tower", "Eiffel Tower")
    assert not v.passed and math.isclose(v.score, 0.4)
    assert "token F1 0.400 (precision 0.333, recall 0.500)" in v.reason and "threshold 0.5" in v.reason
    assert v.feedback == (
        "Answer with 'Eiffel Tower': include the missing word(s) 'eiffel' "
        "and drop the extra word(s) 'big' and 'famous'."
    )
    assert "no words" in tf().evaluate("?!", "Paris").feedback


@pytest.mark.parametrize(
    ("options", "message"),
    [({"threshold": 2}, "option 'threshold'"), ({"threshold": "x"}, "option 'threshold'"), ({"f1": 1}, "unknown")],
)
def test_invalid_options_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        tf(**options)


def test_batch_falls_back_for_nul_lists_and_non_text():
    ev = tf()
    a = ["a\x00b c", "Paris", None, "x"]
    e = ["b c", "Paris", "Paris", "x"]
    batch = ev.evaluate_batch(a, e)
    assert list(batch.scores) == [ev.evaluate(x, y).score for x, y in zip(a, e, strict=True)]
    nul = ev.evaluate_batch(["x\x00y z", "b"], ["z", "b"])
    assert list(nul.scores) == [ev.evaluate("x\x00y z", "z").score, 1.0]
    lists = ev.evaluate_batch(["Paris"], [["Rome", "Paris"]])
    assert lists.scores[0] == 1.0


def test_non_word_characters_take_the_regex_path():
    # an article glued to a non-word character is removed by SQuAD's regex ('the–end' -> '–end')
    preds = ["the–end", "x©the", "plain words", "ÉCOLE the"]
    golds = ["–end", "x©", "plain", "école"]
    batch = tf().evaluate_batch(preds, golds)
    assert list(batch.scores) == [official_v11_f1(p, g) for p, g in zip(preds, golds, strict=True)]
    assert list(batch.scores[:2]) == [1.0, 1.0]


words = st.sampled_from(["the", "a", "an", "Paris", "paris", "tower", "Tower!", "x", "1,000", "é", "–", "the–end", " "])
phrases = st.lists(words, max_size=8).map(" ".join) | st.text(max_size=25)


@settings(max_examples=80, deadline=None)
@given(phrases, phrases)
def test_equals_official_script_when_something_is_shared(pred, gold):
    v = tf().evaluate(pred, gold)
    if squad_normalize(pred) and squad_normalize(gold):
        assert v.score == official_v11_f1(pred, gold)
    assert 0.0 <= v.score <= 1.0


@settings(max_examples=60, deadline=None)
@given(phrases)
def test_identical_non_empty_strings_score_one(text):
    if squad_normalize(text):
        assert tf().evaluate(text, text).score == 1.0
        assert tf().evaluate_batch([text], [text]).scores[0] == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(phrases, phrases), max_size=20))
def test_batch_equals_loop(pairs):
    ev = tf()
    a = [p[0] for p in pairs]
    e = [p[1] for p in pairs]
    batch = ev.evaluate_batch(a, e)
    singles = [ev.evaluate(x, y) for x, y in pairs]
    assert list(batch.scores) == [v.score for v in singles]
    assert list(batch.passed) == [v.passed for v in singles]


@settings(max_examples=80, deadline=None)
@given(st.lists(phrases, max_size=10))
def test_many_helpers_equal_one_at_a_time(texts):
    assert squad_normalize_many(texts) == [squad_normalize(t) for t in texts]
    prepared = squad_prepare_many(texts)
    assert [squad_tokens_prepared(p) for p in prepared] == [squad_normalize(t).split() for t in texts]
    stream = squad_token_stream(prepared)
    if all("\x00" not in t for t in texts):
        assert stream is not None
        hidden = hidden_articles(list(dict.fromkeys(stream)))  # articles inside tokens, as in 'the–end'
        per_text, current = [], []
        for token in stream:
            if token == "\x00":
                per_text.append([t for t in current if t not in {"a", "an", "the"}])
                current = []
            else:
                current.extend(hidden.get(token, [token]))
        assert per_text == [squad_normalize(t).split() for t in texts]


def test_batch_on_many_pairs_equals_official():
    rng = np.random.default_rng(3)
    vocab = ["the", "a", "Paris", "tower", "Eiffel", "river", "Seine", "1889", "built", "in", "of", "!", ","]
    preds = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 7)))) for _ in range(2000)]
    golds = [" ".join(rng.choice(vocab, size=int(rng.integers(1, 5)))) for _ in range(2000)]
    scores = tf().evaluate_batch(preds, golds).scores
    expected = [
        official_v11_f1(p, g) if (squad_normalize(p) or squad_normalize(g)) else 1.0
        for p, g in zip(preds, golds, strict=True)
    ]
    assert list(scores) == expected


def test_excess_is_the_counter_difference_in_its_order() -> None:
    import random
    from collections import Counter

    from assay.evaluators.text.token_f1 import excess

    rnd = random.Random(1)
    words = ["a", "b", "c", "d", "é", "東京"]
    for _ in range(2000):
        a = [rnd.choice(words) for _ in range(rnd.randint(0, 8))]
        b = [rnd.choice(words) for _ in range(rnd.randint(0, 8))]
        assert excess(a, b) == list((Counter(a) - Counter(b)).elements()), (a, b)
    assert excess(["x", "y", "x", "z"], ["y"]) == ["x", "x", "z"]
