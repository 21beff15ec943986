"""Agreement statistics between a judge and people, in numpy: accuracy, Cohen's κ (unweighted, linear, quadratic),
the confusion matrix, Spearman's ρ and Krippendorff's α (nominal, ordinal, interval), and a percentile bootstrap.

Each equals its reference implementation on the same data (scikit-learn's ``cohen_kappa_score`` and
``confusion_matrix``, scipy's ``spearmanr``, the ``krippendorff`` package's ``alpha``; see
tests/evaluators/judge/calibration/), so the product needs none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]


def label_order(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any] | None = None) -> list[Any]:
    """The categories of a confusion matrix: ``labels`` when given, else the sorted union (as scikit-learn)."""
    if labels is not None:
        return list(labels)
    return sorted(set(a) | set(b), key=lambda v: (isinstance(v, str), v))


def confusion(truth: Sequence[Any], judged: Sequence[Any], labels: Sequence[Any] | None = None) -> np.ndarray:
    """Counts: rows are the people's labels, columns the judge's, in ``label_order``."""
    order = label_order(truth, judged, labels)
    index = {v: i for i, v in enumerate(order)}
    out = np.zeros((len(order), len(order)), dtype=np.int64)
    for t, j in zip(truth, judged, strict=True):
        if t in index and j in index:
            out[index[t], index[j]] += 1
    return out


def kappa_from_matrix(matrix: np.ndarray, weights: Weights = None) -> float:
    """Cohen's κ of a confusion matrix; ``weights`` linear or quadratic on the categories' positions."""
    m = np.asarray(matrix, dtype=float)
    k = m.shape[0]
    n = m.sum()
    if n == 0:
        return float("nan")
    expected = np.outer(m.sum(axis=1), m.sum(axis=0)) / n
    idx = np.arange(k)
    if weights is None:
        w = 1.0 - np.eye(k)
    elif weights == "linear":
        w = np.abs(idx[:, None] - idx[None, :]).astype(float)
    else:
        w = ((idx[:, None] - idx[None, :]) ** 2).astype(float)
    denom = float((w * expected).sum())
    if denom == 0:
        return float("nan")
    return float(1.0 - (w * m).sum() / denom)


def cohen_kappa(
    truth: Sequence[Any], judged: Sequence[Any], weights: Weights = None, labels: Sequence[Any] | None = None
) -> float:
    """Cohen's κ between two raters (NaN when chance agreement is total, as when one category is all there is)."""
    return kappa_from_matrix(confusion(truth, judged, labels), weights)


def accuracy(truth: Sequence[Any], judged: Sequence[Any]) -> float:
    """Share of items on which both agree."""
    if not truth:
        return float("nan")
    return float(np.mean([t == j for t, j in zip(truth, judged, strict=True)]))


def base_rate(truth: Sequence[Any]) -> float:
    """The accuracy of always answering the people's most common label: what accuracy must beat."""
    if not truth:
        return float("nan")
    _, counts = np.unique(np.asarray([str(t) for t in truth]), return_counts=True)
    return float(counts.max() / len(truth))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=float)
    ranks[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return np.asarray(sums[inverse] / counts[inverse], dtype=float)


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Spearman's ρ (Pearson's r of the average ranks); NaN when either side is constant."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2:
        return float("nan")
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / denom) if denom else float("nan")


def krippendorff_alpha(data: Sequence[Sequence[float]] | np.ndarray, level: Level = "nominal") -> float:
    """Krippendorff's α of a raters × units matrix (NaN where a rater gave no value); values are numbers
    (category codes for nominal data). Units with fewer than two values are not pairable and count for nothing."""
    x = np.asarray(data, dtype=float)
    values = np.unique(x[~np.isnan(x)])
    if len(values) == 0:
        return float("nan")
    n_uv = np.stack([(x == v).sum(axis=0) for v in values], axis=1).astype(float)  # units × values
    m_u = n_uv.sum(axis=1)
    keep = m_u >= 2
    n_uv, m_u = n_uv[keep], m_u[keep]
    if len(m_u) == 0:
        return float("nan")
    coincidence = np.einsum("uc,uk->ck", n_uv / (m_u - 1)[:, None], n_uv) - np.diag((n_uv / (m_u - 1)[:, None]).sum(0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(len(values))
    elif level == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        between = cum[None, :] - cum[:, None] + n_c[:, None]  # sum of n_g for g from c to k (c <= k)
        between = np.where(np.arange(len(values))[None, :] >= np.arange(len(values))[:, None], between, between.T)
        delta = (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1) * (coincidence * delta).sum() / expected)


def bootstrap(
    n: int, stat: Callable[[np.ndarray], Any], *, iters: int = 2000, seed: int = 1234, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray] | None:
    """Percentile interval of ``stat(indices)`` over ``iters`` resamples of ``n`` items (NaN draws dropped):
    (low, high) with the shape of ``stat``'s value, or None with fewer than 2 items or no finite draw."""
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    draws = np.asarray([stat(rng.integers(0, n, n)) for _ in range(iters)], dtype=float)
    finite = draws[np.all(np.isfinite(draws.reshape(iters, -1)), axis=1)]
    if len(finite) == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    return np.percentile(finite, tail, axis=0), np.percentile(finite, 100.0 - tail, axis=0)
