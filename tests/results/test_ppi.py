"""Judge figures corrected by human labels: the corrected interval covers the people's truth where the judge's own
misses it, PPI++ never does worse than the labels alone, and a judge that cannot correct anything is refused."""

from __future__ import annotations

import numpy as np
import pytest

from assay.results.ppi import CorrectionRefused, corrected_difference, corrected_mean

TRUE_RATE = 0.714  # the people's pass rate in the published simulation; the judge reports about 0.838


def _judged(rng: np.random.Generator, y: np.ndarray) -> np.ndarray:
    """A lenient judge: passes 97 % of what people pass and 50 % of what they fail."""
    return np.where(y == 1, rng.random(y.size) < 0.97, rng.random(y.size) < 0.5).astype(float)


def _study(rng: np.random.Generator, n_total: int = 2_000, n_labelled: int = 200, **options):
    y_all = (rng.random(n_total) < TRUE_RATE).astype(float)
    f_all = _judged(rng, y_all)
    pick = rng.permutation(n_total)
    lab, unl = pick[:n_labelled], pick[n_labelled:]
    return corrected_mean(y_all[lab], f_all[lab], f_all[unl], **options), f_all


@pytest.mark.parametrize("tuned", [True, False])
def test_the_corrected_interval_covers_the_people_truth_where_the_judges_own_does_not(tuned: bool):
    rng = np.random.default_rng(11)
    covered = naive_covered = 0
    runs = 600
    for _ in range(runs):
        fig, f_all = _study(rng, tuned=tuned)
        covered += fig.ci[0] <= TRUE_RATE <= fig.ci[1]
        half = 1.96 * f_all.std(ddof=1) / np.sqrt(f_all.size)
        naive_covered += abs(f_all.mean() - TRUE_RATE) <= half
    assert 0.92 <= covered / runs <= 0.975
    assert naive_covered == 0  # the judge's own interval is about 0.85 +- 0.016: never the truth
    assert fig.judge_mean == pytest.approx(0.85, abs=0.03)
    assert fig.method == ("ppi++" if tuned else "ppi")


def test_power_tuning_is_narrower_than_the_labels_alone_and_than_plain_ppi():
    rng = np.random.default_rng(5)
    tuned, plain, labels_only = [], [], []
    for _ in range(200):
        state = rng.bit_generator.state
        fig, _ = _study(rng)
        rng.bit_generator.state = state
        fig_plain, _ = _study(rng, tuned=False)
        tuned.append(fig.se)
        plain.append(fig_plain.se)
        labels_only.append(np.sqrt(TRUE_RATE * (1 - TRUE_RATE) / fig.n_labelled))
    assert np.mean(tuned) < np.mean(labels_only)
    assert np.mean(tuned) <= np.mean(plain) * 1.01


def test_the_paired_difference_of_two_runs_covers_the_true_difference():
    rng = np.random.default_rng(2)
    covered, runs = 0, 400
    for _ in range(runs):
        n, k = 1_500, 150
        ya = (rng.random(n) < 0.70).astype(float)
        yb = np.where(rng.random(n) < 0.8, ya, (rng.random(n) < 0.75).astype(float))  # paired: mostly the same
        fa, fb = _judged(rng, ya), _judged(rng, yb)
        lab, unl = np.arange(k), np.arange(k, n)
        fig = corrected_difference(ya[lab], yb[lab], fa[lab], fb[lab], fa[unl], fb[unl])
        true_diff = 0.2 * (0.75 - 0.70)
        covered += fig.ci[0] <= true_diff <= fig.ci[1]
    assert 0.92 <= covered / runs <= 0.98


def test_too_few_labels_or_an_anti_correlated_judge_is_refused_with_a_reason():
    rng = np.random.default_rng(1)
    y = (rng.random(100) < 0.5).astype(float)
    with pytest.raises(CorrectionRefused, match="5 labelled sample"):
        corrected_mean(y[:5], y[:5], y[5:])
    with pytest.raises(CorrectionRefused, match="goes against the people"):
        corrected_mean(y[:50], 1 - y[:50], rng.random(50))
    with pytest.raises(CorrectionRefused, match="every sample is labelled"):
        corrected_mean(y, y, [])
    with pytest.raises(ValueError, match="align"):
        corrected_mean(y[:30], y[:31], y)


def test_graded_scores_are_corrected_on_their_own_scale():
    rng = np.random.default_rng(4)
    truth = rng.integers(1, 6, 3_000).astype(float)  # people grade 1-5
    judge = np.clip(truth + 1 + rng.normal(0, 0.5, truth.size), 1, 5)  # the judge grades one point high
    fig = corrected_mean(truth[:300], judge[:300], judge[300:])
    assert fig.judge_mean > truth.mean() + 0.6
    assert fig.ci[0] <= truth.mean() <= fig.ci[1]
    assert fig.correlation is not None and fig.correlation > 0.8 and fig.lam > 0.5
