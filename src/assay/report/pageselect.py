"""Which samples an HTML page holds: all of a run up to a budget, else the ones worth reading first.

A page embeds its samples, and one of a million samples is near a gigabyte that Chromium cannot read. Past the budget a
run's page holds every errored sample first, then failing ones, then passing ones, each kind spread evenly over
the run (tasks in order, doc_id order) when it does not fit whole; the page says how many it holds, and every
sample stays in the run folder. The choice is read off the runs' columns: no record is read to make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.reductions import BoolArray
    from assay.results import Run
    from assay.results.accumulators import Int64Array

MAX_PAGE_SAMPLES = 20_000  # samples of one run a page holds (about 1 KB each in the page): about 20 MB


@dataclass
class PageSelection:
    """Per (run index, task): the indices (in the task's columns, doc_id order, ascending) of the samples the page
    holds, or None for all of them; and per run, how many it holds and has."""

    picks: dict[tuple[int, str], Int64Array | None] = field(default_factory=dict)
    shown: list[int] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)

    @property
    def capped(self) -> bool:
        """True when some run has samples the page leaves out."""
        return any(s < t for s, t in zip(self.shown, self.totals, strict=True))


def outcome_classes(run: Run, task: str) -> tuple[BoolArray, BoolArray]:
    """Per sample of the task (doc_id order): errored (a metric without a value: its verdicts errored, or the
    model request failed) and failing (a judged repeat of some metric did not pass)."""
    import numpy as np

    cols = run.columns[task]
    n = len(cols)
    errored = np.zeros(n, dtype=np.bool_)
    failing = np.zeros(n, dtype=np.bool_)
    for values in cols.values.values():
        errored |= np.isnan(values.values)
        failing |= np.asarray(values.n_passed) < np.asarray(values.n_attempts)
    return errored, failing & ~errored


def spread(members: Int64Array, k: int) -> Int64Array:
    """``k`` of ``members`` (ascending) spread evenly over them, first and order kept; all when they fit."""
    import numpy as np

    if members.size <= k:
        return members
    return members[(np.arange(k, dtype=np.int64) * members.size) // k]


def select_samples(runs: Sequence[Run], budget: int | None = MAX_PAGE_SAMPLES) -> PageSelection:
    """The samples a page of ``runs`` holds: each run's all when it has at most ``budget`` (None or 0: no
    budget), else ``budget`` of them: errored, then failing, then passing, each kind spread over the run."""
    import numpy as np

    selection = PageSelection()
    for r, run in enumerate(runs):
        tasks = [name for name in run.task_names if name in run.columns]
        sizes = [len(run.columns[name]) for name in tasks]
        total = int(sum(sizes))
        selection.totals.append(total)
        if not budget or total <= budget:
            selection.shown.append(total)
            selection.picks.update({(r, name): None for name in tasks})
            continue
        classes = [outcome_classes(run, name) for name in tasks]
        errored = np.concatenate([e for e, _ in classes])
        failing = np.concatenate([f for _, f in classes])
        left, chosen = budget, []
        for kind in (errored, failing, ~(errored | failing)):
            taken = spread(np.flatnonzero(kind), left)
            chosen.append(taken)
            left -= int(taken.size)
        picked = np.sort(np.concatenate(chosen))
        selection.shown.append(int(picked.size))
        starts = np.cumsum([0, *sizes])
        for name, start, stop in zip(tasks, starts[:-1], starts[1:], strict=True):
            lo, hi = np.searchsorted(picked, [start, stop])
            selection.picks[(r, name)] = picked[lo:hi] - start
    return selection
