"""Normalisation: the many-at-once paths equal one-at-a-time, for every combination of options."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.evaluators.normalize import (
    _NOT_WORD_OR_SPACE,
    NormalizeOptions,
    Normalizer,
    _has_non_word_token_char,
    squad_normalize,
)

texts = st.text(max_size=20) | st.sampled_from(["The  Cat!", "a\tb\n", " ΣΑΣ ", "İstanbul", "x\x00y", "the–end", ""])
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


@settings(max_examples=150, deadline=None)
@given(flags, st.lists(st.sampled_from(["^the ", r"\d", "ANSWER: "]), max_size=2), st.lists(texts, max_size=8))
def test_many_equals_one_at_a_time(options, regexes, items):
    norm = Normalizer.from_options(NormalizeOptions(**options, regexes_to_ignore=regexes))
    assert norm.many(items) == [norm(t) for t in items]


def test_squad_normalize():
    assert squad_normalize("The  Eiffel-Tower, in PARIS!") == "eiffeltower in paris"
    assert squad_normalize("An apple a day") == "apple day"
    assert squad_normalize("Theatre anthem") == "theatre anthem"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30) | st.text(alphabet=st.characters(max_codepoint=127), max_size=30))
def test_ascii_fast_check_equals_the_regex(text):
    assert _has_non_word_token_char(text) == bool(_NOT_WORD_OR_SPACE.search(text))


def test_ascii_fast_check_covers_every_ascii_character():
    for c in map(chr, range(128)):
        assert _has_non_word_token_char(c) == bool(re.match(r"[^\w\s\x00]", c)), repr(c)
