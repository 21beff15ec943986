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
    """A running (1 - alpha) confidence sequence for the mean of values in [0, 1], and a threshold's decision.

    The decision is the two gamblers' wealth at the threshold itself; ``bounds=False`` skips the grid that the
    sequence's bounds need (the decision is the same, at a fraction of the cost: simulations use it)."""

    def __init__(self, threshold: float, alpha: float = 0.05, *, bounds: bool = True) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold}")
        self.threshold = threshold
        self.alpha = alpha
        self.log_barrier = math.log(2.0 / alpha)
        self.cap_up = CAP / max(threshold, 1e-12)  # a bet may risk at most CAP of the wealth, whatever the value
        self.cap_down = CAP / max(1.0 - threshold, 1e-12)
        self.wealth_up = 0.0  # log wealth of the gambler betting the mean is above the threshold
        self.wealth_down = 0.0  # ... below it
        self.grid = np.linspace(0.0, 1.0, GRID) if bounds else None
        if self.grid is not None:
            self._grid_cap_up = CAP / np.maximum(self.grid, 1e-12)
            self._grid_cap_down = CAP / np.maximum(1.0 - self.grid, 1e-12)
            self._step = np.empty(GRID)
            self._grid_up = np.zeros(GRID)
            self._grid_down = np.zeros(GRID)
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
        step = x - self.threshold
        self.wealth_up += math.log1p(min(lam, self.cap_up) * step)
        self.wealth_down += math.log1p(-min(lam, self.cap_down) * step)
        mean_before = (0.5 + self.total) / (self.n + 1)
        self.sq += (x - mean_before) ** 2
        self.total += x
        self.n += 1
        if self.grid is not None:
            self._update_bounds(x, lam)

    def _update_bounds(self, x: float, lam: float) -> None:
        assert self.grid is not None
        step = self._step
        np.subtract(x, self.grid, out=step)  # x - m
        self._grid_up += np.log1p(np.minimum(lam, self._grid_cap_up) * step)
        self._grid_down += np.log1p(-np.minimum(lam, self._grid_cap_down) * step)
        alive = np.flatnonzero((self._grid_up < self.log_barrier) & (self._grid_down < self.log_barrier))
        if alive.size:  # the bounds lie between a rejected grid point and an alive one: take the rejected one
            self.lower = max(self.lower, float(self.grid[max(alive[0] - 1, 0)]))
            self.upper = min(self.upper, float(self.grid[min(alive[-1] + 1, GRID - 1)]))
        else:  # every grid point rejected: the sequence is narrower than a step; keep the mean within the bounds
            mid = min(max(self.total / self.n, self.lower), self.upper)
            self.lower = self.upper = mid

    def decision(self) -> Decision:
        """Holds once the gambler betting the mean is above the threshold has won, fails once the one betting below
        has (each wins against a true claim with probability at most alpha / 2, by Ville's inequality)."""
        up_won = self.wealth_up >= self.log_barrier
        down_won = self.wealth_down >= self.log_barrier
        state = "holds" if up_won and not down_won else "fails" if down_won and not up_won else "undecided"
        mean = self.total / self.n if self.n else None
        return Decision(state, self.n, mean, self.lower, self.upper)
