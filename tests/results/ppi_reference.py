"""The reference implementation the PPI figures are checked against: ppi_py's ``ppi_mean_pointestimate`` and
``ppi_mean_ci`` (github.com/aangelopoulos/ppi_py, version 0.2.3, MIT licence, Angelopoulos, Duchi and Zrnic),
reduced to one dimension and no weights, line for line otherwise.

Copied rather than installed: the ppi-python wheel ships a top-level package named ``tests``, which shadows this
project's own ``tests`` package in some import orders.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def _calc_lam(grads: np.ndarray, grads_hat: np.ndarray, grads_hat_unlabeled: np.ndarray) -> float:
    n = grads.shape[0]
    big_n = grads_hat_unlabeled.shape[0]
    grads_cent = grads - grads.mean(axis=0)
    grad_hat_cent = grads_hat - grads_hat.mean(axis=0)
    cov_grads = (1 / n) * (grads_cent @ grad_hat_cent + grad_hat_cent @ grads_cent)
    var_grads_hat = np.cov(np.concatenate([grads_hat, grads_hat_unlabeled], axis=0))
    lam = cov_grads / (2 * (1 + (n / big_n)) * var_grads_hat)
    return float(np.clip(lam, 0, 1))


def ppi_mean_pointestimate(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, lam: float | None = None
) -> float:
    if lam is None:
        est = yhat_unlabeled.mean() + (y - yhat).mean()
        lam = _calc_lam(y - est, yhat - est, yhat_unlabeled - est)
        return ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=lam)
    return float((lam * yhat_unlabeled).mean() + (y - lam * yhat).mean())


def ppi_mean_ci(
    y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray, alpha: float = 0.1, lam: float | None = None
) -> tuple[float, float]:
    n, big_n = y.shape[0], yhat_unlabeled.shape[0]
    if lam is None:
        est = ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=1)
        lam = _calc_lam(y - est, yhat - est, yhat_unlabeled - est)
        return ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=alpha, lam=lam)
    est = ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=lam)
    imputed_std = (lam * yhat_unlabeled).std() / np.sqrt(big_n)
    rectifier_std = (y - lam * yhat).std() / np.sqrt(n)
    half = norm.ppf(1 - alpha / 2) * np.sqrt(imputed_std**2 + rectifier_std**2)
    return est - half, est + half
