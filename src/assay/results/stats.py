"""Statistics for eval scores: stderr, t and bootstrap intervals, clustered stderr, pass@k, paired tests.

Everything is numpy and seeded; nothing needs scipy. The bootstrap is vectorised and, wherever that stays
within about half a second, exact (resampling with replacement): when the scores take few distinct values
(pass/fail, graded rubrics) a resample is a multinomial draw of counts over those values, which costs
O(distinct values) instead of O(n); otherwise index matrices are drawn in chunks. Only many-valued scores
too numerous for that (e.g. 100,000 continuous scores × 10,000 resamples) use the binned scheme of
:func:`_binned_bootstrap_means`, whose resample means have exactly the bootstrap's mean and variance; which
scheme a figure used is recorded beside it (``bootstrap_method``, see :func:`bootstrap_method`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_CHUNK_ELEMENTS = 4_000_000  # bounds memory of one chunk of resamples (~32 MB of float64 / int64)
_EXACT_SIGN_FLIP_MAX = 16  # enumerate all 2**m sign patterns up to this many non-zero differences


# --- Student's t distribution -------------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def _t_pdf(t: float, df: float) -> float:
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (e.g. ``t_quantile(0.975, 9) == 2.262157...``), to ~1e-12.

    Newton's method on :func:`t_cdf` from the normal quantile, kept inside a bisection bracket.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile probability must be in (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    z = NormalDist().inv_cdf(p)
    if math.isinf(df) or df > 1e7:
        return z
    lo, hi = 0.0, max(2.0 * z, 1.0)
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    x = min(max(z, lo), hi)
    for _ in range(200):
        f = t_cdf(x, df) - p
        if f > 0:
            hi = x
        else:
            lo = x
        step = f / max(_t_pdf(x, df), 1e-300)
        nxt = x - step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2.0
        if abs(nxt - x) <= 1e-13 * max(1.0, abs(x)):
            return nxt
        x = nxt
    return x


# --- point estimates and intervals ----------------------------------------------------------------------------


def as_array(values: Sequence[float] | FloatArray) -> FloatArray:
    """A float64 array from a sequence of numbers."""
    return np.asarray(values, dtype=np.float64)


def mean(values: Sequence[float] | FloatArray) -> float | None:
    """The mean, or None for no values."""
    x = as_array(values)
    if x.size and x[0] == x[-1] and np.all(x == x[0]):
        return float(x[0])  # exact, without summation rounding
    return float(x.mean()) if x.size else None


def stderr(values: Sequence[float] | FloatArray) -> float | None:
    """The sample standard error of the mean, ``std(ddof=1) / sqrt(n)``; None below two values."""
    x = as_array(values)
    if x.size < 2:
        return None
    if np.all(x == x[0]):
        return 0.0
    return float(x.std(ddof=1) / math.sqrt(x.size))


def t_interval(
    center: float | None, se: float | None, df: float, confidence: float = 0.95
) -> tuple[float, float] | None:
    """``center ± t(1 - alpha/2, df) * se``; None when the mean or stderr is undefined."""
    if center is None or se is None or df <= 0:
        return None
    half = t_quantile(0.5 + confidence / 2.0, df) * se
    return (center - half, center + half)


def resample_chunks(total: int, per_row: int) -> list[int]:
    """Row counts of resample chunks that keep one chunk within about 32 MB."""
    rows = max(1, _CHUNK_ELEMENTS // max(per_row, 1))
    return [min(rows, total - start) for start in range(0, total, rows)]


def bootstrap_ratios(
    num: Sequence[float] | FloatArray,
    den: Sequence[float] | FloatArray | None,
    iters: int,
    rng: np.random.Generator,
) -> FloatArray:
    """Bootstrap distribution of ``sum(num) / sum(den)`` over units resampled with replacement.

    With ``den`` None this is the plain mean of ``num``; with cluster sums and sizes it is the
    cluster bootstrap of the mean. Units with identical (num, den) are pooled, and when there are
    few distinct units each resample is one multinomial draw of counts over them (exact, and
    O(distinct) per resample); otherwise resample indices are drawn in chunks (O(n) per resample).
    Plain means whose exact resampling would exceed :data:`EXACT_BOOTSTRAP_DRAWS` are binned instead
    (:func:`bootstrap_method` says which); cluster bootstraps are always exact.
    """
    x = as_array(num)
    n = x.size
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if iters < 1:
        raise ValueError(f"bootstrap iterations must be at least 1, got {iters}")
    d = None if den is None else as_array(den)
    if d is None:
        uniq_x, counts = np.unique(x, return_counts=True)
        uniq_d = None
    else:
        pairs, counts = np.unique(np.stack([x, d], axis=1), axis=0, return_counts=True)
        uniq_x, uniq_d = pairs[:, 0], pairs[:, 1]
    k = uniq_x.size
    if uniq_d is None and bootstrap_method(n, k, iters) == "binned":
        return _binned_bootstrap_means(x, iters, rng)
    out = np.empty(iters, dtype=np.float64)
    pos = 0
    if _counts_are_cheaper(n, k):
        pvals = counts / n
        for rows in resample_chunks(iters, k):
            draws = rng.multinomial(n, pvals, size=rows).astype(np.float64)
            sums = draws @ uniq_x
            out[pos : pos + rows] = sums / (n if uniq_d is None else draws @ uniq_d)
            pos += rows
    else:
        dtype = np.uint32 if n < 2**32 else np.int64
        for rows in resample_chunks(iters, n):
            idx = rng.integers(0, n, size=(rows, n), dtype=dtype)
            sums = x[idx].sum(axis=1)
            out[pos : pos + rows] = sums / (n if d is None else d[idx].sum(axis=1))
            pos += rows
    return out


# Exact resampling costs about 5 ns per drawn index, or about as much as COUNT_DRAW_COST index draws per
# distinct value per resample for the multinomial draw; past EXACT_BOOTSTRAP_DRAWS index draws (about half
# a second) many-valued scores are binned instead.
EXACT_BOOTSTRAP_DRAWS = 100_000_000
COUNT_DRAW_COST = 20
BOOTSTRAP_BINS = 64


def _counts_are_cheaper(n: int, distinct: int) -> bool:
    """Whether a multinomial draw over the distinct values costs less than drawing n indices."""
    return COUNT_DRAW_COST * distinct < n


def bootstrap_method(n: int, distinct: int, iters: int) -> str:
    """How :func:`bootstrap_means` resamples n scores with this many distinct values: ``"exact"`` or ``"binned"``.

    Exact (multinomial counts over the distinct values, or index draws, whichever is cheaper) whenever that
    stays within :data:`EXACT_BOOTSTRAP_DRAWS` index draws (about half a second); otherwise the binned scheme
    of :func:`_binned_bootstrap_means`. Pass/fail and graded scores (few distinct values) stay exact at any
    usual number of resamples.
    """
    cheapest = min(n, COUNT_DRAW_COST * distinct)
    return "exact" if cheapest * iters <= EXACT_BOOTSTRAP_DRAWS else "binned"


def _binned_bootstrap_means(x: FloatArray, iters: int, rng: np.random.Generator) -> FloatArray:
    """Bootstrap means of many-valued scores, O(bins) per resample instead of O(n).

    The sorted scores are cut into equal-count bins. A resample's count in each bin is drawn exactly
    (multinomial); the sum of those c draws from a bin is then drawn as c·mean + sqrt(c)·sd·Z, which has the
    exact conditional mean and variance (the bins are narrow and hold n/bins scores each, so the CLT is very
    accurate). The bootstrap mean's mean and variance are therefore exact; only the within-bin shape beyond
    the second moment is approximated.
    """
    n = x.size
    bins = np.array_split(np.sort(x), min(BOOTSTRAP_BINS, n))
    sizes = np.array([b.size for b in bins], dtype=np.float64)
    means = np.array([b.mean() for b in bins])
    sds = np.array([b.std() for b in bins])
    out = np.empty(iters, dtype=np.float64)
    pos = 0
    for rows in resample_chunks(iters, sizes.size):
        counts = rng.multinomial(n, sizes / n, size=rows).astype(np.float64)
        noise = rng.standard_normal(counts.shape)
        out[pos : pos + rows] = (counts @ means + (np.sqrt(counts) * noise) @ sds) / n
        pos += rows
    return out


def bootstrap_means(values: Sequence[float] | FloatArray, iters: int, rng: np.random.Generator) -> FloatArray:
    """``iters`` bootstrap resample means of ``values`` (see :func:`bootstrap_ratios`)."""
    return bootstrap_ratios(values, None, iters, rng)


def percentile_interval(dist: FloatArray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution."""
    alpha = 1.0 - confidence
    lo, hi = np.quantile(dist, [alpha / 2.0, 1.0 - alpha / 2.0])
    return (float(lo), float(hi))


def bootstrap_ci(
    values: Sequence[float] | FloatArray,
    iters: int = 10_000,
    seed: int | np.random.Generator = 1234,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean (seeded); None below two values."""
    x = as_array(values)
    if x.size < 2:
        return None
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return percentile_interval(bootstrap_means(x, iters, rng), confidence)


def cluster_sums(values: Sequence[float] | FloatArray, clusters: Sequence[object]) -> tuple[FloatArray, FloatArray]:
    """Per-cluster sums of values and per-cluster sizes (clusters in first-seen order)."""
    x = as_array(values)
    if len(clusters) != x.size:
        raise ValueError(f"{x.size} values but {len(clusters)} cluster labels")
    index: dict[object, int] = {}
    ids = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=x.size)
    sums = np.bincount(ids, weights=x, minlength=len(index)).astype(np.float64)
    sizes = np.bincount(ids, minlength=len(index)).astype(np.float64)
    return sums, sizes


def clustered_stderr(values: Sequence[float] | FloatArray, clusters: Sequence[object]) -> tuple[float | None, int]:
    """Cluster-robust standard error of the mean and the number of clusters.

    ``sqrt(G / (G - 1) * sum_g (sum_{i in g} (x_i - mean))**2) / n``: with one sample per cluster
    it equals the ordinary stderr (ddof = 1). None when there are fewer than two clusters.
    """
    x = as_array(values)
    sums, sizes = cluster_sums(x, clusters)
    g = sums.size
    if g < 2:
        return None, g
    m = x.mean()
    resid = sums - sizes * m
    var = g / (g - 1) * float(np.sum(resid**2)) / x.size**2
    return math.sqrt(var), g


# --- repeats: pass@k and pass^k --------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k of the n attempts (c correct) passes.

    ``1 - C(n - c, k) / C(n, k)``, computed as the stable product ``1 - prod_{i=n-c+1}^{n} (1 - k / i)``.
    """
    _check_nck(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all of k of the n attempts (c correct) pass, ``C(c, k) / C(n, k)``."""
    _check_nck(n, c, k)
    if c < k:
        return 0.0
    i = np.arange(k, dtype=np.float64)
    return float(np.prod((c - i) / (n - i)))


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


# --- combining tasks -------------------------------------------------------------------------------------------


def group_weights(sizes: Sequence[float] | FloatArray, weighting: str = "size") -> FloatArray:
    """Normalised weights of subtasks: by size (``"size"``) or equal (``"equal"``)."""
    s = as_array(sizes)
    if weighting == "size":
        return s / s.sum()
    if weighting == "equal":
        return np.full(s.size, 1.0 / s.size)
    raise ValueError(f"unknown group weighting {weighting!r}; known: size, equal")


def pooled_stderr(stderrs: Sequence[float] | FloatArray, weights: Sequence[float] | FloatArray) -> float:
    """Stderr of a weighted mean of independent subtask means: ``sqrt(sum w_i**2 se_i**2)``.

    With size weights and equal within-task variances this equals lm-eval's pooled-variance stderr.
    """
    se, w = as_array(stderrs), as_array(weights)
    return float(math.sqrt(float(np.sum(w**2 * se**2))))


# --- paired tests ------------------------------------------------------------------------------------------------


def binom_cdf_half(x: int, n: int) -> float:
    """P(X <= x) for X ~ Binomial(n, 1/2): exact integer arithmetic up to n = 5000, log-space beyond."""
    if x < 0:
        return 0.0
    if x >= n:
        return 1.0
    if n <= 5000:
        total, term = 0, 1
        for i in range(x + 1):
            total += term
            term = term * (n - i) // (i + 1)
        return total / 2**n
    terms = [math.lgamma(v + 1) + math.lgamma(n - v + 1) for v in range(x + 1)]
    logs = math.lgamma(n + 1) - np.asarray(terms, dtype=np.float64) - n * math.log(2)
    top = float(logs.max())
    return float(math.exp(top + math.log(float(np.exp(logs - top).sum()))))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts b (A only) and c (B only)."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * binom_cdf_half(min(b, c), n))


def paired_bootstrap(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    iters: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float] | None, float]:
    """Mean of ``b - a``, its paired-bootstrap percentile interval and a two-sided bootstrap p-value.

    The differences are resampled by :func:`bootstrap_means` (binned only for very many distinct differences).
    """
    d = as_array(b) - as_array(a)
    if d.size == 0:
        raise ValueError("no paired samples")
    diff = float(d.mean())
    if d.size < 2:
        return diff, None, 1.0
    dist = bootstrap_means(d, iters, rng)
    below = float(np.count_nonzero(dist <= 0.0)) + 1.0
    above = float(np.count_nonzero(dist >= 0.0)) + 1.0
    p = min(1.0, 2.0 * min(below, above) / (iters + 1.0))
    return diff, percentile_interval(dist, confidence), p


def sign_flip_test(d: Sequence[float] | FloatArray, iters: int, rng: np.random.Generator) -> tuple[float, bool]:
    """Two-sided paired sign-flip permutation p-value for mean(d) = 0, and whether it was exact.

    Exact enumeration of all sign patterns up to 16 non-zero differences; otherwise ``iters`` random
    flips, with p = (1 + extreme) / (1 + iters). Distinct |d| values are flipped as binomial counts.
    """
    x = as_array(d)
    x = x[x != 0.0]
    m = x.size
    if m == 0:
        return 1.0, True
    observed = abs(float(x.sum()))
    tol = 1e-9 * max(1.0, float(np.abs(x).sum()))
    if m <= _EXACT_SIGN_FLIP_MAX:
        patterns = ((np.arange(2**m)[:, None] >> np.arange(m)) & 1).astype(np.float64) * 2.0 - 1.0
        stats = np.abs(patterns @ x)
        return float(np.count_nonzero(stats >= observed - tol) / patterns.shape[0]), True
    mags, counts = np.unique(np.abs(x), return_counts=True)
    extreme = 0
    if mags.size * 4 <= m or mags.size <= 64:
        for rows in resample_chunks(iters, mags.size):
            plus = rng.binomial(counts, 0.5, size=(rows, mags.size)).astype(np.float64)
            stats = np.abs((2.0 * plus - counts) @ mags)
            extreme += int(np.count_nonzero(stats >= observed - tol))
    else:
        absx = np.abs(x)
        total = float(absx.sum())
        for rows in resample_chunks(iters, m):
            nbytes = (rows * m + 7) // 8
            bits = np.unpackbits(np.frombuffer(rng.bytes(nbytes), dtype=np.uint8))[: rows * m].reshape(rows, m)
            stats = np.abs(2.0 * (bits @ absx) - total)
            extreme += int(np.count_nonzero(stats >= observed - tol))
    return (1.0 + extreme) / (1.0 + iters), False
