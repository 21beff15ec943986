"""Batch paths on real text: every script, emoji, lone surrogates, NUL, chunk boundaries: batch == one at a time."""

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import evaluators
from assay.errors import ConfigError
from assay.evaluators.normalize import NormalizeOptions, Normalizer, lower_joined
from assay.evaluators.text import common

# words that each stress one rule: final sigma, dotted I (lower() is longer), Kelvin sign, titlecase, ligature,
# German sharp s, RTL scripts, CJK, emoji with modifiers, Unicode spaces and punctuation, a lone surrogate
WORDS = [
    "Café",
    "ΣΑΣ",
    "ὈΔΥΣΣΕΎΣ",
    "İstanbul",
    "\u212a",
    "ǅemal",
    "ﬁle",
    "Straße",
    "القاهرة",
    "ירושלים",
    "東京",
    "서울",
    "👍🏽",
    "🇯🇵",
    "a\u00a0b",
    "x\u3000y",
    "«the»",
    "the–end",
    "an—a",
    "¿Qué?",
    "。",
    "\udcff",
    "The",
    "a",
    "Paris!",
    "  Rome ",
    "42",
    "",
]
mixed_text = st.lists(st.sampled_from(WORDS) | st.text(max_size=6), max_size=5).map(" ".join) | st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12
)
ascii_text = st.text(alphabet=string.printable, max_size=12)
flags = st.fixed_dictionaries(
    {
        k: st.booleans()
        for k in [
            "ignore_case",
            "ignore_punctuation",
            "ignore_numbers",
            "ignore_whitespace",
            "ignore_articles",
            "strip",
        ]
    }
)


@st.composite
def mostly_ascii(draw):
    """Many ASCII texts and one to three non-ASCII ones: the path that lower-cases only those texts as str."""
    texts = draw(st.lists(ascii_text, min_size=30, max_size=60))
    for _ in range(draw(st.integers(1, 3))):
        texts.insert(draw(st.integers(0, len(texts))), draw(st.sampled_from(WORDS[:22])))
    return texts


@settings(max_examples=150, deadline=None)
@given(flags, st.lists(st.sampled_from(["^the ", r"\d", "ANSWER: "]), max_size=1), st.lists(mixed_text, max_size=8))
def test_normalizer_batch_and_keys_equal_one_at_a_time_on_every_script(options, regexes, texts):
    norm = Normalizer.from_options(NormalizeOptions(**options, regexes_to_ignore=regexes))
    one_at_a_time = [norm(t) for t in texts]
    assert norm.batch(texts) == one_at_a_time
    keys = norm.batch_keys(texts)
    assert keys is not None and len(keys) == len(texts)
    for i in range(len(texts)):  # keys are equal exactly when the normalised texts are
        for j in range(len(texts)):
            assert (keys[i] == keys[j]) == (one_at_a_time[i] == one_at_a_time[j])


@settings(max_examples=80, deadline=None)
@given(mostly_ascii())
def test_lower_joined_redoes_only_the_non_ascii_texts_and_equals_str_lower(texts):
    joined = "\x00".join(texts)
    assert lower_joined(texts, joined) == joined.lower().encode("utf-8", "surrogatepass")
    norm = Normalizer(ignore_case=True, ignore_punctuation=True)
    assert norm.batch(texts) == [norm(t) for t in texts]


def test_few_non_ascii_texts_take_the_bytes_path():
    texts = ["Paris"] * 100 + ["ΣΑΣ İ"] + ["Rome"] * 100
    joined = "\x00".join(texts)
    assert lower_joined(texts, joined).split(b"\x00")[100] == "σας i̇".encode()
    assert lower_joined(texts, joined) == joined.lower().encode()


@pytest.mark.parametrize(
    "bad", [None, 3, b"bytes", ["a", "list"], ("a",)], ids=["None", "int", "bytes", "list", "tuple"]
)
@pytest.mark.parametrize(
    "options",
    [{}, {"ignore_case": True}, {"strip": True}, {"ignore_punctuation": True}, {"regexes_to_ignore": ["x"]}],
    ids=["identity", "case", "strip", "punctuation", "regex"],
)
def test_batch_is_none_when_a_text_is_not_a_str(options, bad):
    norm = Normalizer.from_options(NormalizeOptions(**options))
    assert norm.batch(["ok", bad]) is None
    assert norm.batch_keys(["ok", bad]) is None


def test_text_holding_nul_is_normalised_on_its_own():
    norm = Normalizer(ignore_case=True, ignore_punctuation=True)
    texts = ["A\x00B!", "Café!", "x"]
    assert norm.batch(texts) == ["a\x00b", "café", "x"]
    assert norm.batch_keys(texts) == [b"a\x00b", "café".encode(), b"x"]


PAIR_EVALUATORS = [
    ("exact_match", {"ignore_case": True, "ignore_punctuation": True}),
    ("exact_match", {"ignore_whitespace": True, "ignore_articles": True, "strip": True}),
    ("exact_match", {"strip": True, "ignore_numbers": True}),
    ("exact_match", {}),
    ("fuzzy_match", {"ignore_case": True}),
    ("fuzzy_match", {"algorithm": "token_set_ratio", "ignore_punctuation": True}),
    ("fuzzy_match", {"algorithm": "jaro_winkler"}),
    ("fuzzy_match", {"workers": 2}),
    ("token_f1", {}),
]


def _agree(name, options, actuals, expecteds):
    ev = evaluators.get(name, **options)
    batch = ev.evaluate_batch(actuals, expecteds)
    singles = [ev.evaluate(a, e) for a, e in zip(actuals, expecteds, strict=True)]
    assert np.array_equal(batch.scores, [v.score for v in singles], equal_nan=True)
    assert batch.passed.tolist() == [v.passed for v in singles]
    assert batch.errored.tolist() == [v.is_error for v in singles]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(PAIR_EVALUATORS), st.lists(st.tuples(mixed_text, mixed_text), max_size=12))
def test_batch_equals_per_sample_on_mixed_scripts(evaluator, pairs):
    name, options = evaluator
    _agree(name, options, [p[0] for p in pairs], [p[1] for p in pairs])


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(PAIR_EVALUATORS), mostly_ascii(), st.randoms(use_true_random=False))
def test_batch_equals_per_sample_when_few_texts_are_non_ascii(evaluator, texts, rng):
    name, options = evaluator
    others = list(texts)
    rng.shuffle(others)
    _agree(name, options, texts, [t if rng.random() < 0.4 else o for t, o in zip(texts, others, strict=True)])


@pytest.mark.parametrize(("name", "options"), PAIR_EVALUATORS)
def test_chunks_that_cannot_be_vectorised_go_pair_by_pair_and_the_rest_stay_vectorised(monkeypatch, name, options):
    monkeypatch.setattr(common, "BATCH_CHUNK", 4)
    actuals = ["Paris", "Café!", "東京", "Rome", None, "Lyon", "the Hague", "ΣΑΣ", "x", "Oslo"]
    expecteds = ["paris", "café", "東京都", ["Roma", "Rome"], "x", "Lyon", "Hague", "σας", "y", 3]
    _agree(name, options, actuals, expecteds)
    ev = evaluators.get(name, **options)
    batch = ev.evaluate_batch(actuals, expecteds)
    assert len(batch) == 10 and batch[4].is_error is False  # None is an empty output, judged like evaluate()
    assert batch[3].score == ev.evaluate("Rome", ["Roma", "Rome"]).score


def test_large_batch_spans_many_chunks():
    rng = np.random.default_rng(3)
    words = np.array(WORDS[:-1])
    actuals = [" ".join(rng.choice(words, size=int(rng.integers(1, 4)))) for _ in range(20_000)]
    expecteds = [a if rng.random() < 0.5 else str(rng.choice(words)) for a in actuals]
    for name, options in PAIR_EVALUATORS[:5] + PAIR_EVALUATORS[-1:]:
        ev = evaluators.get(name, **options)
        batch = ev.evaluate_batch(actuals, expecteds)
        sample = rng.choice(len(actuals), size=500, replace=False)
        assert [batch.scores[i] for i in sample] == [ev.evaluate(actuals[i], expecteds[i]).score for i in sample]


@pytest.mark.parametrize("workers", [0, -2])
def test_fuzzy_workers_must_be_a_thread_count(workers):
    with pytest.raises(ConfigError, match="option 'workers'"):
        evaluators.get("fuzzy_match", workers=workers)


OTHER_EVALUATORS = [
    ("contains", {"substrings": ["the", "東京", "é", "Σ"]}),
    ("contains", {"substrings": ["the", "ΣΑΣ", "straße"], "mode": "any", "ignore_case": True}),
    ("contains", {"substrings": ["a", "👍🏽"], "mode": "none"}),
    ("contains", {"substrings": [r"\d+", "(?i)paris", r"\bthe\b"], "regex": True, "mode": "any"}),
    ("contains", {"substrings": [r"\w+"], "regex": True, "ignore_case": True}),
    ("contains", {}),
    ("contains", {"ignore_case": True}),
    ("regex", {"pattern": r"\w+"}),
    ("regex", {"pattern": r"[^\W\d_]+", "mode": "fullmatch", "ignore_case": True}),
    ("regex", {"pattern": r"(\w+)", "group": 1, "ignore_case": True}),
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(OTHER_EVALUATORS), st.lists(st.tuples(mixed_text, mixed_text), max_size=12))
def test_contains_and_regex_batches_equal_per_sample_on_mixed_scripts(evaluator, pairs):
    name, options = evaluator
    _agree(name, options, [p[0] for p in pairs], [p[1] for p in pairs])


numbers = st.integers(-5000, 5000) | st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3))
numeric_output = st.tuples(mixed_text, numbers, mixed_text, numbers).map(lambda t: f"{t[0]} {t[1]}{t[2]} {t[3]}")


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([{}, {"policy": "first"}, {"abs_tol": 0.5}, {"decimal": ","}, {"percent_as_fraction": True}]),
    st.lists(st.tuples(numeric_output | mixed_text, numbers | numbers.map(str)), max_size=12),
)
def test_numeric_batch_equals_per_sample(options, pairs):
    _agree("numeric", options, [p[0] for p in pairs], [p[1] for p in pairs])


def test_numeric_batch_sends_what_it_cannot_vectorise_pair_by_pair():
    actuals = ["it is 42", "7 or 8", 3.0, "x", "12"]
    expecteds = [42, 8, 3, "not a number", [12, 13]]
    _agree("numeric", {}, actuals, expecteds)
    batch = evaluators.get("numeric").evaluate_batch(actuals, expecteds)
    assert batch.passed.tolist() == [True, True, True, False, True]
    assert batch.errored.tolist() == [False, False, False, True, False]


def test_contains_batch_scores_are_the_share_of_items():
    ev = evaluators.get("contains", substrings=["Paris", "France", "Seine"], ignore_case=True)
    batch = ev.evaluate_batch(["PARIS, france", "nothing", "Seine in Paris, France"])
    assert batch.scores.tolist() == [2 / 3, 0.0, 1.0] and batch.passed.tolist() == [False, False, True]
    none = evaluators.get("contains", substrings=["Paris", "France"], mode="none").evaluate_batch(["Paris", "Rome"])
    assert none.scores.tolist() == [0.5, 1.0] and none.passed.tolist() == [False, True]


@pytest.mark.parametrize(
    ("name", "options"),
    PAIR_EVALUATORS,
    ids=lambda x: x if isinstance(x, str) else ",".join(map(str, x)),
)
def test_text_chunks_take_the_vectorised_path(name, options):
    # the batch must not reach its results through the per-pair fallback on plain text
    ev = evaluators.get(name, **options)
    actuals = ["Café 3", "東京 the 42", "ΣΑΣ"]
    expecteds = ["3", "42", "7"] if name == "numeric" else ["café", "京都", "σας"]
    got = ev._vector(actuals, expecteds)
    assert got is not None
    scores, passed = got[:2]  # token_f1 adds the columns its passing verdicts are built from
    assert scores.tolist() == [v.score for v in map(ev.evaluate, actuals, expecteds)]
    assert passed.dtype == np.bool_ and len(passed) == 3
