"""tests.figures: fixtures' figures compare to a stated tolerance, everything else exactly."""

from __future__ import annotations

import pytest

from tests.figures import REL_TOL, assert_same_figures, differences


def test_floats_agree_to_the_tolerance_and_nothing_else_is_loosened() -> None:
    fixture = {"bleu": 0.045798081362059456, "n": 3, "name": "x", "ok": True, "none": None, "xs": [1.0, 0.0]}
    assert_same_figures({**fixture, "bleu": 0.045798081362059484, "xs": [1.0 + 1e-15, 1e-17]}, fixture)
    assert differences({**fixture, "bleu": 0.0457980813620595 * (1 + 100 * REL_TOL)}, fixture)
    assert differences({**fixture, "n": 3.0}, fixture)  # an int written as a float is a change
    assert differences({**fixture, "ok": 1}, fixture)
    assert differences({**fixture, "name": "y"}, fixture)
    assert differences({**fixture, "xs": [1.0]}, fixture)
    assert differences(dict(reversed(fixture.items())), fixture)  # key order is part of the document
    with pytest.raises(AssertionError, match=r"/bleu: 0\.5 != 0\.0457"):
        assert_same_figures({**fixture, "bleu": 0.5}, fixture)
