"""assay.evaluators.judge.calibration.agreement equals scikit-learn, scipy and the krippendorff package on the same
data."""

from __future__ import annotations

import numpy as np
import pytest

from assay.evaluators.judge.calibration.agreement import cohen_kappa, confusion, krippendorff_alpha, spearman

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")
krippendorff = pytest.importorskip("krippendorff")


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 6, 60)
    return a, np.clip(a + rng.integers(-1, 2, 60), 1, 5)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_sklearn(weights: str | None) -> None:
    a, b = _data(1)
    assert cohen_kappa(list(a), list(b), weights) == pytest.approx(
        sklearn_metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12
    )


def test_confusion_and_spearman_equal_references() -> None:
    a, b = _data(2)
    assert (confusion(list(a), list(b)) == sklearn_metrics.confusion_matrix(a, b)).all()
    assert spearman(a, b) == pytest.approx(scipy_stats.spearmanr(a, b).statistic, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_krippendorff(level: str) -> None:
    a, b = _data(3)
    c = np.clip(a + np.random.default_rng(4).integers(-2, 2, 60), 1, 5)
    data = np.vstack([a, b, c]).astype(float)
    data[0, 3] = data[1, 5] = data[2, 5] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)  # type: ignore[arg-type]
