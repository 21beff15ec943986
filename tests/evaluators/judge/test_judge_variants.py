import pytest

from assay.evaluators.judge.variants import combine, combine_orders, order_outcome, outcome_of, spread


def test_mean():
    c = combine([1.0, 0.5, 0.0], 0.5, "mean")
    assert c.score == 0.5 and c.passed


def test_majority_score_agrees_with_the_decision():
    c = combine([1.0, 0.75, 0.0], 0.5, "majority")
    assert c.passed and c.score == pytest.approx(0.875) and c.details["votes"] == {"pass": 2, "fail": 1}
    c = combine([1.0, 0.25, 0.0], 0.5, "majority")
    assert not c.passed and c.score == pytest.approx(0.125)


def test_majority_tie_fails():
    c = combine([1.0, 0.0], 0.5, "majority")
    assert not c.passed and c.score == 0.0


def test_single_judge():
    assert combine([0.25], 0.5, "majority").details == {"method": "single"}


def test_spread():
    s = spread([0.0, 0.5, 1.0])
    assert s["mean"] == 0.5 and s["min"] == 0.0 and s["max"] == 1.0 and s["n"] == 3
    assert s["stdev"] == pytest.approx(0.408248, rel=1e-5)


def test_position_bias_cancels():
    # a judge that always picks the first response: the output wins shown first, loses shown second
    assert combine_orders(order_outcome("A", "A"), order_outcome("A", "B")) == "tie"
    assert combine_orders(order_outcome("A", "A"), order_outcome("B", "B")) == "win"
    assert combine_orders(order_outcome("tie", "A"), order_outcome("B", "B")) == "win"
    assert combine_orders(order_outcome("B", "A"), order_outcome("tie", "B")) == "loss"
    assert [outcome_of(s) for s in (1.0, 0.5, 0.25)] == ["win", "tie", "loss"]
