"""Statistics against closed forms, worked examples and a seeded coverage simulation."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from assay.results import stats


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 9, 2.262157163),
        (0.975, 1, 12.70620474),
        (0.975, 2, 4.302652730),
        (0.975, 30, 2.042272456),
        (0.995, 5, 4.032142984),
        (0.95, 20, 1.724718243),
        (0.999, 1, 318.3088389),
        (0.975, 1e9, 1.959963985),
    ],
)
def test_t_quantile_known_values(p, df, expected):
    assert stats.t_quantile(p, df) == pytest.approx(expected, rel=1e-8)
    assert stats.t_quantile(1 - p, df) == pytest.approx(-expected, rel=1e-8)


def test_t_cdf_inverts_quantile_and_rejects_bad_input():
    for df in (1, 3.5, 17, 250):
        for p in (0.6, 0.9, 0.99):
            assert stats.t_cdf(stats.t_quantile(p, df), df) == pytest.approx(p, abs=1e-11)
    with pytest.raises(ValueError, match="degrees of freedom"):
        stats.t_quantile(0.9, 0)
    with pytest.raises(ValueError, match="quantile probability"):
        stats.t_quantile(1.0, 5)


@pytest.mark.parametrize(("k", "n"), [(3, 10), (50, 200), (1, 2), (7, 7)])
def test_bernoulli_stderr_closed_form(k, n):
    x = [1.0] * k + [0.0] * (n - k)
    p = k / n
    # sample variance with ddof=1 is n/(n-1) p(1-p), so the stderr is sqrt(p(1-p)/(n-1))
    assert stats.stderr(x) == pytest.approx(math.sqrt(p * (1 - p) / (n - 1)), abs=1e-15)
    assert stats.mean(x) == pytest.approx(p)


def test_stderr_and_intervals_undefined_below_two_values():
    assert stats.stderr([1.0]) is None
    assert stats.mean([]) is None
    assert stats.t_interval(0.5, None, 0) is None
    assert stats.bootstrap_ci([0.3], iters=100) is None


def test_t_interval_is_mean_plus_minus_t_times_stderr():
    x = [0.2, 0.4, 0.9, 0.5, 0.7, 0.1, 0.3, 0.8, 0.6, 0.55]
    m, se = stats.mean(x), stats.stderr(x)
    lo, hi = stats.t_interval(m, se, len(x) - 1)
    assert (hi - lo) / 2 == pytest.approx(2.262157163 * se, rel=1e-8)
    assert (lo + hi) / 2 == pytest.approx(m)


@pytest.mark.parametrize("kind", ["binary", "graded", "continuous"])
def test_bootstrap_distribution_matches_theory_and_is_seeded(kind):
    rng = np.random.default_rng(0)
    n = 2000
    x = {
        "binary": (rng.random(n) < 0.3).astype(float),  # 2 distinct values: multinomial counts
        "graded": rng.integers(0, 5, n) / 4.0,  # 5 distinct values: multinomial counts
        "continuous": rng.random(n),  # all distinct: index resampling
    }[kind]
    dist = stats.bootstrap_means(x, 4000, np.random.default_rng(42))
    # the bootstrap distribution of the mean has mean ~ x.mean() and sd ~ sqrt(var_pop / n)
    expected_sd = x.std(ddof=0) / math.sqrt(n)
    assert dist.mean() == pytest.approx(x.mean(), abs=4 * expected_sd / math.sqrt(4000) + 1e-12)
    assert dist.std() == pytest.approx(expected_sd, rel=0.06)
    again = stats.bootstrap_means(x, 4000, np.random.default_rng(42))
    other = stats.bootstrap_means(x, 4000, np.random.default_rng(43))
    assert np.array_equal(dist, again)
    assert not np.array_equal(dist, other)


def test_bootstrap_ci_brackets_the_mean():
    x = np.r_[np.ones(60), np.zeros(40)]
    lo, hi = stats.bootstrap_ci(x, iters=5000, seed=1)
    assert lo < 0.6 < hi
    assert hi - lo == pytest.approx(2 * 1.96 * math.sqrt(0.24 / 100), rel=0.1)


def test_cluster_bootstrap_is_a_ratio_of_resampled_sums():
    # two clusters of very different size: resampling clusters gives only three possible ratios
    sums, sizes = np.array([3.0, 1.0]), np.array([3.0, 5.0])
    dist = stats.bootstrap_ratios(sums, sizes, 2000, np.random.default_rng(3))
    assert set(np.round(np.unique(dist), 12)) == {1.0, 0.2, 0.5}


def test_clustered_stderr_equals_plain_stderr_with_singletons():
    x = np.random.default_rng(5).random(40)
    se, g = stats.clustered_stderr(x, list(range(40)))
    assert g == 40
    assert se == pytest.approx(stats.stderr(x), rel=1e-12)


def test_clustered_stderr_hand_computed():
    x = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    clusters = ["a", "a", "b", "b", "c", "c"]
    m = 0.5
    resid = [(1 + 1) - 2 * m, (0 + 0) - 2 * m, (1 + 0) - 2 * m]  # 1, -1, 0
    expected = math.sqrt(3 / 2 * sum(r * r for r in resid) / 36)
    se, g = stats.clustered_stderr(x, clusters)
    assert g == 3
    assert se == pytest.approx(expected)


def test_clustered_stderr_grows_when_clusters_are_homogeneous():
    x = np.repeat([1.0, 0.0, 1.0, 0.0, 1.0], 10)  # 5 clusters of 10 identical outcomes
    labels = np.repeat(np.arange(5), 10).tolist()
    se_c, g = stats.clustered_stderr(x, labels)
    assert g == 5 and se_c > 2.5 * stats.stderr(x)


def test_pass_at_k_matches_combinatorial_formula():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert stats.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12), (n, c, k)
                assert stats.pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


def test_pass_at_k_is_stable_for_large_n():
    # C(1000, 500) overflows a float; the product form does not
    value = stats.pass_at_k(1000, 10, 500)
    assert 0.99 < value <= 1.0
    assert stats.pass_at_k(200, 0, 5) == 0.0
    with pytest.raises(ValueError):
        stats.pass_at_k(5, 6, 1)


def test_mcnemar_worked_example():
    # 1 discordant pair one way, 9 the other: p = 2 * P(X <= 1), X ~ Bin(10, 1/2) = 2 * 11 / 1024
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024, abs=1e-15)
    assert stats.mcnemar_exact(9, 1) == stats.mcnemar_exact(1, 9)
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(5, 5) == 1.0
    assert stats.mcnemar_exact(0, 6) == pytest.approx(2 / 64)


def test_binomial_tail_in_log_space_matches_exact_integers():
    n, x = 6001, 2900
    total, term = 0, 1
    for i in range(x + 1):  # C(n, i) by the recurrence, in exact integers
        total, term = total + term, term * (n - i) // (i + 1)
    exact = total / 2**n
    assert stats.binom_cdf_half(x, n) == pytest.approx(exact, rel=1e-9)


def test_pooled_stderr_of_weighted_means():
    se = [0.02, 0.05]
    w = stats.group_weights([300, 100], "size")
    assert list(w) == [0.75, 0.25]
    assert stats.pooled_stderr(se, w) == pytest.approx(math.sqrt(0.75**2 * 0.02**2 + 0.25**2 * 0.05**2))
    assert list(stats.group_weights([300, 100], "equal")) == [0.5, 0.5]
    # with equal within-task variance, size weighting matches lm-eval's pooled-variance formula
    sizes, s = [50, 150], 0.4
    ses = [s / math.sqrt(n) for n in sizes]
    lm_eval = math.sqrt(
        sum((n - 1) * e**2 * n for n, e in zip(sizes, ses, strict=True)) / (sum(sizes) - 2) / sum(sizes)
    )
    assert stats.pooled_stderr(ses, stats.group_weights(sizes)) == pytest.approx(lm_eval, rel=1e-12)


def test_sign_flip_exact_enumeration():
    # |±1 ±2 ±3| over 8 patterns: 6, 4, 2, 0, 0, 2, 4, 6 -> P(|T| >= 6) = 2/8
    p, exact = stats.sign_flip_test([1.0, 2.0, 3.0, 0.0], 1000, np.random.default_rng(0))
    assert exact and p == pytest.approx(0.25)
    p_all, _ = stats.sign_flip_test([0.0, 0.0], 1000, np.random.default_rng(0))
    assert p_all == 1.0


@pytest.mark.parametrize("distinct", [True, False])
def test_sign_flip_monte_carlo_is_near_exact_normal_p(distinct):
    rng = np.random.default_rng(9)
    m = 400
    d = rng.normal(0.08, 1.0, m) if distinct else rng.choice([-1.0, 1.0, 0.5], m)
    p, exact = stats.sign_flip_test(d, 20000, np.random.default_rng(1))
    assert not exact
    # under sign flips, T has mean 0 and variance sum d_i^2: the normal approximation is close for m = 400
    z = abs(d.sum()) / math.sqrt(float(np.sum(d * d)))
    p_normal = 2 * (1 - NormalDist().cdf(z))
    assert p == pytest.approx(p_normal, abs=0.02)


def test_paired_bootstrap_difference_and_interval():
    a = np.r_[np.ones(50), np.zeros(50)]
    b = np.r_[np.ones(50), np.ones(20), np.zeros(30)]
    diff, ci, p = stats.paired_bootstrap(a, b, 5000, np.random.default_rng(0))
    assert diff == pytest.approx(0.2)
    assert ci[0] > 0 and ci[0] < 0.2 < ci[1]
    assert p < 0.01


def test_coverage_of_95_percent_intervals():
    """Seeded simulation: t and bootstrap intervals cover the true mean about 95% of the time."""
    rng = np.random.default_rng(2024)
    trials, n = 2000, 200
    t_hits = boot_hits = 0
    normal_hits = 0
    for i in range(trials):
        x = (rng.random(n) < 0.4).astype(float)
        lo, hi = stats.t_interval(stats.mean(x), stats.stderr(x), n - 1)
        t_hits += lo <= 0.4 <= hi
        blo, bhi = stats.bootstrap_ci(x, iters=2000, seed=i)
        boot_hits += blo <= 0.4 <= bhi
        y = rng.normal(3.0, 2.0, 15)
        nlo, nhi = stats.t_interval(stats.mean(y), stats.stderr(y), 14)
        normal_hits += nlo <= 3.0 <= nhi
    print(f"coverage: t {t_hits / trials:.3f}, bootstrap {boot_hits / trials:.3f}, t normal {normal_hits / trials:.3f}")
    for hits in (t_hits, boot_hits, normal_hits):
        assert 0.93 <= hits / trials <= 0.97, (t_hits, boot_hits, normal_hits)


def test_bootstrap_method_exact_when_cheap_binned_when_many_valued_and_large():
    assert stats.bootstrap_method(100_000, 2, 10_000) == "exact"  # pass/fail: counts over 2 values
    assert stats.bootstrap_method(1_000, 1_000, 10_000) == "exact"  # 1e7 index draws
    assert stats.bootstrap_method(100_000, 100_000, 10_000) == "binned"  # 1e9 index draws


def test_binned_bootstrap_agrees_with_exact_resampling(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.beta(0.5, 0.5, 20_000)  # bimodal, many distinct values
    monkeypatch.setattr(stats, "EXACT_BOOTSTRAP_DRAWS", 10**12)
    exact = stats.bootstrap_means(x, 4_000, np.random.default_rng(1))
    monkeypatch.setattr(stats, "EXACT_BOOTSTRAP_DRAWS", 0)
    binned = stats.bootstrap_means(x, 4_000, np.random.default_rng(2))
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert abs(binned.mean() - x.mean()) < 0.1 * se
    assert abs(binned.std() - exact.std()) < 0.05 * se
    for a, b in zip(stats.percentile_interval(exact), stats.percentile_interval(binned), strict=True):
        assert abs(a - b) < 0.2 * se  # within Monte Carlo noise of 4,000 resamples
