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


@pytest.mark.parametrize("seed", range(6))
def test_the_figures_equal_the_reference_implementation_ppi_py(seed: int):
    from tests.results import ppi_reference

    rng = np.random.default_rng(seed)
    n, big_n = int(rng.integers(20, 300)), int(rng.integers(100, 3_000))
    graded = seed % 2 == 1
    y = rng.integers(1, 6, n + big_n).astype(float) if graded else (rng.random(n + big_n) < 0.7).astype(float)
    f = np.clip(y + rng.normal(0.5, 0.8, y.size), 1, 5) if graded else np.where(rng.random(y.size) < 0.15, 1 - y, y)
    for tuned in (True, False):
        fig = corrected_mean(y[:n], f[:n], f[n:], tuned=tuned)
        lam = None if tuned else 1.0
        low, high = ppi_reference.ppi_mean_ci(y[:n], f[:n], f[n:], alpha=0.05, lam=lam)
        estimate = ppi_reference.ppi_mean_pointestimate(y[:n], f[:n], f[n:], lam=lam)
        assert fig.estimate == pytest.approx(estimate, abs=1e-12)
        assert fig.ci == pytest.approx((low, high), abs=1e-12)


def _population(rng: np.random.Generator, size: int, error: float, graded: bool) -> tuple[np.ndarray, np.ndarray]:
    """People's values and a judge's, wrong on about ``error`` of the samples, and wrong one way more than the other
    (so its own figure is biased): pass/fail, or grades 1-5."""
    if graded:
        y = rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], size, p=[0.1, 0.2, 0.3, 0.25, 0.15])
        off = rng.random(size) < error
        return y, np.where(off, np.clip(y + rng.choice([1.0, 2.0, -1.0], size, p=[0.6, 0.2, 0.2]), 1, 5), y)
    y = (rng.random(size) < 0.6).astype(float)
    flip = rng.random(size) < np.where(y == 1, error / 2, error * 1.5)
    return y, np.where(flip, 1 - y, y)


def test_coverage_over_judges_and_label_fractions_beside_the_judges_own():
    """95 % intervals over judges wrong on 5-30 % of samples and 5-50 % of 2,000 samples labelled, pass/fail and
    1-5: the corrected interval covers the people's mean about 95 % of the time in every case (2,000 studies
    each), the judge's own interval rarely."""
    rng = np.random.default_rng(2026)
    truth = {False: 0.6, True: 1 * 0.1 + 2 * 0.2 + 3 * 0.3 + 4 * 0.25 + 5 * 0.15}
    size, studies, pooled, table = 2_000, 2_000, [], []
    for graded in (False, True):
        for error in (0.05, 0.15, 0.30):
            for fraction in (0.05, 0.2, 0.5):
                n = int(size * fraction)
                covered = naive = 0
                for _ in range(studies):
                    y, f = _population(rng, size, error, graded)
                    fig = corrected_mean(y[:n], f[:n], f[n:])
                    covered += fig.ci[0] <= truth[graded] <= fig.ci[1]
                    naive += abs(f.mean() - truth[graded]) <= 1.96 * f.std(ddof=1) / np.sqrt(size)
                table.append((graded, error, fraction, covered / studies, naive / studies))
                pooled.append(covered / studies)
    for graded, error, fraction, cov, naive in table:
        scale = "1-5" if graded else "pass/fail"
        print(f"{scale} error {error:.2f} labelled {fraction:.2f}: {cov:.3f} (judge {naive:.3f})")
        assert 0.93 <= cov <= 0.97, (graded, error, fraction, cov)  # 95 %, within the simulation's noise
    assert 0.94 <= float(np.mean(pooled)) <= 0.96
    assert max(naive for *_, naive in table if _[1] >= 0.15) < 0.5  # a judge wrong on 15 %+ misses most of the time
