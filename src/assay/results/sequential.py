"""Anytime-valid decisions: a confidence sequence for the mean of values in [0, 1], valid at every sample.

A fixed-sample interval looked at after every sample, stopping "when it looks decided", errs far more often than
its level says. A confidence sequence does not: with probability at least ``1 - alpha`` it holds the true mean at
*every* sample at once, so a run may stop the moment it excludes the threshold (Waudby-Smith and Ramdas, 2024,
"Estimating means of bounded random variables by betting", JRSS-B).

For each candidate mean ``m`` two gamblers bet against it, one that the mean is higher, one lower; their wealth
``prod(1 + lam_i (x_i - m))`` and ``prod(1 - lam_i (x_i - m))`` is a non-negative martingale when the mean is ``m``,
so by Ville's inequality it reaches ``2 / alpha`` with probability at most ``alpha / 2``. The sequence is the ``m``
where neither gambler has won, intersected over time. Bets follow the paper's predictable plug-in: ``lam_t =
sqrt(2 log(2 / alpha) / (var_{t-1} t log(1 + t)))``, capped at ``0.5 / m`` (or ``0.5 / (1 - m)``), from the
values before ``x_t`` only. Samples must come in a random order (the runner shuffles them) and be independent.

The claim ``mean >= threshold`` is decided *true* once the sequence lies above the threshold, *false* once below;
each wrong decision has probability at most ``alpha / 2``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GRID = 1001  # candidate means the sequence is tracked on (steps of 0.001)
CAP = 0.5  # the largest fraction of the gambler's wealth a bet may risk


@dataclass(frozen=True)
class Decision:
    """Where a claim ``mean >= threshold`` stands after ``n`` values."""

    state: str  # "holds" | "fails" | "undecided"
    n: int
    mean: float | None
    lower: float
    upper: float


class BettingSequence:
    """A running (1 - alpha) confidence sequence for the mean of values in [0, 1], and a threshold's decision."""

    def __init__(self, threshold: float, alpha: float = 0.05) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.threshold = threshold
        self.alpha = alpha
        self.log_barrier = math.log(2.0 / alpha)
        # the grid and the threshold itself, so the decision is exact rather than a grid point's
        self.m = np.append(np.linspace(0.0, 1.0, GRID), threshold)
        self._cap_up = CAP / np.maximum(self.m, 1e-12)  # a bet may risk at most CAP of the wealth at any value
        self._cap_down = CAP / np.maximum(1.0 - self.m, 1e-12)
        self._step = np.empty(self.m.size)
        self.log_up = np.zeros(self.m.size)  # the gambler betting the mean is above m
        self.log_down = np.zeros(self.m.size)  # ... below m
        self.lower, self.upper = 0.0, 1.0
        self.n = 0
        self.total = 0.0
        self.sq = 0.0  # sum of squared deviations from the running mean before each value (plug-in variance)

    def _bet_size(self) -> float:
        t = self.n + 1
        var = (0.25 + self.sq) / t
        return math.sqrt(2.0 * self.log_barrier / (var * t * math.log(1.0 + t)))

    def update(self, x: float) -> None:
        """Take one value in [0, 1]."""
        if not 0.0 <= x <= 1.0 or math.isnan(x):
            raise ValueError(f"a value must be in [0, 1], got {x}")
        lam = self._bet_size()
        step = self._step
        np.subtract(x, self.m, out=step)  # x - m
        self.log_up += np.log1p(np.minimum(lam, self._cap_up) * step)
        self.log_down += np.log1p(-np.minimum(lam, self._cap_down) * step)
        mean_before = (0.5 + self.total) / (self.n + 1)
        self.sq += (x - mean_before) ** 2
        self.total += x
        self.n += 1
        alive = np.flatnonzero((self.log_up[:-1] < self.log_barrier) & (self.log_down[:-1] < self.log_barrier))
        if alive.size:  # the bounds lie between a rejected grid point and an alive one: take the rejected one
            self.lower = max(self.lower, float(self.m[max(alive[0] - 1, 0)]))
            self.upper = min(self.upper, float(self.m[min(alive[-1] + 1, GRID - 1)]))
        else:  # every grid point rejected: the sequence is narrower than a step; keep the mean within the bounds
            mid = min(max(self.total / self.n, self.lower), self.upper)
            self.lower = self.upper = mid

    def decision(self) -> Decision:
        """Holds once the gambler betting above the threshold has won (or the sequence lies above it); fails once
        the one betting below has."""
        up_won = self.log_up[-1] >= self.log_barrier or self.lower > self.threshold
        down_won = self.log_down[-1] >= self.log_barrier or self.upper < self.threshold
        state = "holds" if up_won and not down_won else "fails" if down_won and not up_won else "undecided"
        mean = self.total / self.n if self.n else None
        return Decision(state, self.n, mean, self.lower, self.upper)
