"""The anytime-valid confidence sequence: it holds the true mean at every sample at once (peeking after every sample
at a fixed-sample interval does not), decides a clear case early, and errs on a close one at most alpha / 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.results.sequential import BettingSequence


def _stream(rng: np.random.Generator, p: float, n: int) -> np.ndarray:
    return (rng.random(n) < p).astype(float)


def test_the_sequence_holds_the_true_mean_at_every_sample_where_peeking_at_an_interval_does_not():
    rng = np.random.default_rng(5)
    p, n, runs = 0.7, 300, 150
    missed = peeked_missed = 0
    for _ in range(runs):
        xs = _stream(rng, p, n)
        cs = BettingSequence(threshold=p, alpha=0.05)
        ever_out = False
        for x in xs:
            cs.update(float(x))
            ever_out |= not cs.lower <= p <= cs.upper
        missed += ever_out
        means = np.cumsum(xs) / np.arange(1, n + 1)
        k = np.arange(1, n + 1)
        half = 1.96 * np.sqrt(np.maximum(means * (1 - means), 1e-12) / k)
        peeked_missed += bool(np.any(np.abs(means[19:] - p) > half[19:]))  # peeking from the 20th sample on
    assert missed / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)  # alpha, within the simulation's noise
    assert peeked_missed / runs > 0.2  # the fixed-sample interval, looked at after every sample, misses far more


def test_a_clear_case_is_decided_early_either_way():
    rng = np.random.default_rng(3)
    for p, expected in ((0.97, "holds"), (0.55, "fails")):
        cs = BettingSequence(threshold=0.8, alpha=0.05)
        for x in _stream(rng, p, 2_000):
            cs.update(float(x))
            if cs.decision().state != "undecided":
                break
        decision = cs.decision()
        assert decision.state == expected and decision.n < 200, decision
        assert decision.lower <= decision.mean <= decision.upper


def test_a_close_case_is_wrongly_decided_at_most_alpha_over_two():
    rng = np.random.default_rng(8)
    wrong, runs = 0, 150
    for _ in range(runs):
        cs = BettingSequence(threshold=0.8, alpha=0.10)
        for x in _stream(rng, 0.78, 600):  # the claim mean >= 0.8 is false by 2 points
            cs.update(float(x))
            if cs.decision().state != "undecided":
                break
        wrong += cs.decision().state == "holds"
    assert wrong / runs <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)


def test_graded_values_and_bad_input():
    cs = BettingSequence(threshold=0.5)
    rng = np.random.default_rng(1)
    for x in rng.beta(8, 2, 300):  # mean 0.8
        cs.update(float(x))
    assert cs.decision().state == "holds" and cs.lower > 0.5
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cs.update(1.5)
    with pytest.raises(ValueError, match="threshold"):
        BettingSequence(threshold=2.0)


def _sequential(rng: np.random.Generator, p: float, runs: int, n_max: int, threshold: float = 0.7):
    """Each run stops at its decision or at n_max: (states, samples used)."""
    states, used = [], []
    for row in _stream(rng, p, runs * n_max).reshape(runs, n_max):
        cs = BettingSequence(threshold, alpha=0.05, bounds=False)  # the decision alone (the same as with bounds)
        for x in row:
            cs.update(float(x))
            if cs.decision().state != "undecided":
                break
        states.append(cs.decision().state)
        used.append(cs.n)
    return np.array(states), np.array(used)


@pytest.mark.parametrize("p", [0.6, 0.65, 0.7, 0.75, 0.8])
def test_wrong_decisions_stay_at_or_below_alpha_under_optional_stopping(p: float):
    """The claim mean >= 0.7, checked after every sample: wrong decisions at most alpha (each side alpha / 2),
    exactly at the threshold too (where "fails" is the wrong decision)."""
    states, _ = _sequential(np.random.default_rng(int(p * 100)), p, runs=400, n_max=1_500)
    wrong = np.mean(states == ("holds" if p < 0.7 else "fails"))
    assert wrong <= 0.05 / 2 + 2 * math.sqrt(0.025 * 0.975 / 400)


def test_samples_used_against_a_fixed_n_test_of_the_same_power():
    """A 10-point effect: the gate decides it in every run, with fewer samples on average than a fixed-n test needs
    for the same power (a z test at the same alpha / 2 per side)."""
    from statistics import NormalDist

    for p in (0.6, 0.8):
        states, used = _sequential(np.random.default_rng(9), p, runs=400, n_max=1_500)
        power = float(np.mean(states == ("fails" if p < 0.7 else "holds")))
        z = NormalDist().inv_cdf
        fixed_n = ((z(1 - 0.025) + z(min(power, 0.99))) * math.sqrt(p * (1 - p)) / 0.1) ** 2
        print(
            f"p={p}: power {power:.3f}, mean samples used {used.mean():.0f}, fixed-n test at that power {fixed_n:.0f}"
        )
        assert power >= 0.98
        assert used.mean() < fixed_n
