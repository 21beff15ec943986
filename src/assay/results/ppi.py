"""Judge figures corrected by human labels: prediction-powered inference (PPI, and its power-tuned PPI++).

A judge scores every sample; people label a subset. The judge's mean is biased by its errors, and its interval
ignores them. PPI estimates the mean on the people's scale from both sets (Angelopoulos et al., 2023; PPI++,
Angelopoulos, Duchi and Zrnic, 2024)::

    theta = lam * mean(f over the unlabelled) + mean(y - lam * f over the labelled)

where ``f`` is the judge's score and ``y`` the person's. With ``lam = 1`` (PPI) the judge's bias is measured on the
labelled samples and removed; PPI++ picks the ``lam`` in [0, 1] that minimises the variance,
``cov(y, f) / ((1 + n / N) var(f))``, so a poor judge costs no more than ignoring it (``lam = 0`` is the labels
alone). The interval is normal: ``theta +- z * sqrt(lam^2 var(f_unlabelled) / N + var(y - lam f) / n)``; it covers
for any judge, good or bad, as long as the labelled samples are a random subset.

The paired difference of two runs judged by the same judge is the same estimator on per-sample differences
(``y_b - y_a`` and ``f_b - f_a``), from samples both runs scored, labelled in both where labelled.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import AssayError

MIN_LABELS = 20  # fewer and the labelled variance (and the interval) cannot be trusted
FloatArray = npt.NDArray[np.float64]


class CorrectionRefused(AssayError):
    """The labels cannot correct this judge figure (too few, or a judge that disagrees with people)."""


@dataclass(frozen=True)
class CorrectedMean:
    """A judge figure on the people's scale, with an interval that accounts for labelled and unlabelled samples."""

    estimate: float
    ci: tuple[float, float]
    se: float
    judge_mean: float  # the uncorrected figure: the judge's mean over every sample
    label_mean: float  # the people's mean over the labelled samples alone
    lam: float  # weight of the judge (1: PPI; tuned: PPI++)
    n_labelled: int
    n_unlabelled: int
    correlation: float | None  # between people and judge on the labelled samples
    confidence: float
    method: str  # "ppi++" | "ppi"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, as results.json records it."""
        out = asdict(self)
        out["ci"] = list(self.ci)
        return out


def _array(values: Any, name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(arr).all():
        raise ValueError(f"{name}: every value must be a finite number")
    return arr


def corrected_mean(
    labels: Any,
    judged_labelled: Any,
    judged_unlabelled: Any,
    *,
    confidence: float = 0.95,
    tuned: bool = True,
    min_labels: int = MIN_LABELS,
) -> CorrectedMean:
    """The people-scale mean from human ``labels`` and the judge's scores of the same samples
    (``judged_labelled``, aligned) and of the samples nobody labelled (``judged_unlabelled``).

    Raises :class:`CorrectionRefused` with fewer than ``min_labels`` labels, no unlabelled sample, or a judge
    whose scores go against the people's (a correlation on the labelled samples below zero beyond chance)."""
    y = _array(labels, "labels")
    f = _array(judged_labelled, "judged_labelled")
    g = _array(judged_unlabelled, "judged_unlabelled")
    if y.size != f.size:
        raise ValueError(f"labels and judged_labelled must align: {y.size} against {f.size}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n, big_n = int(y.size), int(g.size)
    if n < min_labels:
        raise CorrectionRefused(f"{n} labelled sample(s), fewer than the {min_labels} a corrected figure needs")
    if big_n == 0:
        raise CorrectionRefused("every sample is labelled: the people's own mean is the figure, no judge needed")
    corr = None
    if f.std() > 0 and y.std() > 0:
        corr = float(np.corrcoef(y, f)[0, 1])
        if corr < -1.96 / math.sqrt(n):  # against the people beyond chance (near 0, PPI++ weighs the judge at 0)
            raise CorrectionRefused(
                f"the judge goes against the people on the labelled samples (correlation {corr:.2f}): its scores "
                "cannot correct anything; fix the judge"
            )
    # the conventions of the reference implementation (ppi_py's ppi_mean_ci), so the figures agree with it: the
    # covariance over n, the judge's variance over every sample with n - 1, the standard errors over n
    var_f = float(np.var(np.concatenate([f, g]), ddof=1))
    if tuned:
        cov = float(np.mean((y - y.mean()) * (f - f.mean())))
        lam = 0.0 if var_f == 0 else cov / ((1 + n / big_n) * var_f)
        lam = min(max(lam, 0.0), 1.0)
    else:
        lam = 1.0
    rect = y - lam * f
    estimate = lam * float(g.mean()) + float(rect.mean())
    se = math.sqrt(float(np.var(lam * g)) / big_n + float(np.var(rect)) / n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return CorrectedMean(
        estimate=estimate,
        ci=(estimate - z * se, estimate + z * se),
        se=se,
        judge_mean=float(np.concatenate([f, g]).mean()),
        label_mean=float(y.mean()),
        lam=lam,
        n_labelled=n,
        n_unlabelled=big_n,
        correlation=corr,
        confidence=confidence,
        method="ppi++" if tuned else "ppi",
    )


def corrected_difference(
    labels_a: Any,
    labels_b: Any,
    judged_a_labelled: Any,
    judged_b_labelled: Any,
    judged_a_unlabelled: Any,
    judged_b_unlabelled: Any,
    **options: Any,
) -> CorrectedMean:
    """The people-scale mean difference ``B - A`` of two runs on paired samples, judged by one judge: the
    corrected mean of per-sample differences (labels of both runs where labelled, judge scores everywhere)."""
    y = _array(labels_b, "labels_b") - _array(labels_a, "labels_a")
    f = _array(judged_b_labelled, "judged_b_labelled") - _array(judged_a_labelled, "judged_a_labelled")
    g = _array(judged_b_unlabelled, "judged_b_unlabelled") - _array(judged_a_unlabelled, "judged_a_unlabelled")
    return corrected_mean(y, f, g, **options)
