"""numeric's batch reads every text's answer with one scan of the texts joined by NUL and parses plain digits
with float: the values and verdicts equal the per-pair ones, at text boundaries and with NUL in a text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay import evaluators

# neighbours that would read as one number, or change the reading, if the scan ran across a text boundary
BOUNDARY_TEXTS = [
    "12", "34", "1,234", ",567", "1 234", " 567", "v1.2", ".3", "GPT-", "4", "x", "2.5", "e3", "10", "^5", "3 ×",
    " 10^4", "45", "%", "$", "7", "-", "8", "12\x0034", "\x009", "a\x00", "", "١٢٣", "٤.٥", "0.5", "007", "1e400",
    "1.5e-3", "−2", "3,5", "1.234,5", "10⁵", "no number", "50 %", "€ 3", "3 €", " ", "99.", ".99",
]  # fmt: skip
OPTIONS = [
    {},
    {"policy": "first"},
    {"decimal": ","},
    {"decimal": ",", "policy": "first"},
    {"percent_as_fraction": True},
    {"percent": "as_number"},
    {"percent": "as_fraction", "policy": "first"},
    {"times_ten": False, "space_groups": False},
    {"abs_tol": 0.5},
]


def _agree(options: dict[str, Any], actuals: list[str], expecteds: list[Any]) -> None:
    ev = evaluators.get("numeric", **options)
    batch = ev.evaluate_batch(actuals, expecteds)
    singles = [ev.evaluate(a, e) for a, e in zip(actuals, expecteds, strict=True)]
    assert np.array_equal(batch.scores, [v.score for v in singles], equal_nan=True)
    assert batch.passed.tolist() == [v.passed for v in singles]
    assert [d["details"] for d in batch.to_dicts()] == [v.details for v in singles]


def _read(options: dict[str, Any], texts: list[str], fraction: bool = False) -> list[float]:
    """Each text's answer as evaluate() reads it (NaN: none), or its second reading as a fraction (NaN: none)."""
    ev = evaluators.get("numeric", **options)
    out = []
    for text in texts:
        found = ev.candidates(text)
        chosen = (found[-1] if options.get("policy", "last") == "last" else found[0]) if found else None
        value = None if chosen is None else chosen.fraction if fraction else chosen.value
        out.append(float("nan") if value is None else value)
    return out


def _answers(options: dict[str, Any], texts: list[str]) -> list[float]:
    """The answers as expected values (NaN is not a valid one)."""
    return [x if x == x else 1.0 for x in _read(options, texts)]


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("shift", [0, 1, 2])
def test_neighbouring_texts_do_not_change_the_answer(options: dict[str, Any], shift: int) -> None:
    texts = BOUNDARY_TEXTS[shift:] + BOUNDARY_TEXTS[:shift]
    _agree(options, texts, _answers(options, texts))
    _agree(options, texts, [7.0] * len(texts))  # failing pairs too


def test_the_answer_is_each_texts_own() -> None:
    ev = evaluators.get("numeric")
    batch = ev.evaluate_batch(["12", "34", "1,234", ",567", "5\x006"], [12, 34, 1234, 567, 6])
    assert batch.passed.tolist() == [True, True, True, True, True]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(OPTIONS),
    st.lists(st.lists(st.sampled_from(BOUNDARY_TEXTS), max_size=4).map("".join), min_size=1, max_size=12),
)
def test_joined_scan_equals_per_pair(options: dict[str, Any], texts: list[str]) -> None:
    ev = evaluators.get("numeric", **options)
    read, fractions = ev._answers(texts, "\x00".join(texts))  # type: ignore[attr-defined]
    assert np.array_equal(read, _read(options, texts), equal_nan=True)  # the very same floats
    want = _read(options, texts, fraction=True)
    if fractions is None:
        assert np.isnan(want).all()
    else:
        assert np.array_equal(fractions, want, equal_nan=True)
    _agree(options, texts, _answers(options, texts))
    _agree(options, texts, [a / 100 for a in _answers(options, texts)])  # percentages pass these under 'either'
