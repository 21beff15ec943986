"""How reports name the interval methods figures record (``ci_method``), so every page and table says how each
figure it shows was computed, from the figures themselves rather than a fixed sentence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

# ci_method as results.json and compare record it -> how a reader is told
CI_METHODS = {
    "wilson": "Wilson score interval",
    "wilson_bounded": "Wilson interval at the mean (scores with no spread)",
    "bca_expanded": "BCa bootstrap, small-sample expanded",
    "bootstrap_t": "studentized bootstrap (bootstrap-t)",
    "t": "Student's t",
    "bootstrap": "percentile bootstrap",
    "cluster_bootstrap": "cluster bootstrap (percentile)",
    "cluster_t": "clustered Student's t",
    "stratified_bootstrap": "stratified bootstrap over subtasks (percentile)",
    "pooled_t": "Student's t on the pooled stderr",
    "corpus_bootstrap": "bootstrap of the corpus statistic (percentile)",
    "paired_bootstrap": "paired percentile bootstrap of the mean difference",
}
BOOTSTRAP_METHODS = {m for m in CI_METHODS if "bootstrap" in m or m == "bca_expanded"}
MAX_NAMED = 4  # metrics named per method before "and N more"


def method_name(method: str | None) -> str:
    """A recorded ``ci_method`` as words (an unknown one as recorded; none as an em dash)."""
    if not method:
        return "—"
    return CI_METHODS.get(method, method)


def _names(metrics: Iterable[str]) -> str:
    shown = sorted(set(metrics))
    more = f" and {len(shown) - MAX_NAMED} more" if len(shown) > MAX_NAMED else ""
    return ", ".join(shown[:MAX_NAMED]) + more


def methods_label(
    uses: Mapping[str, Iterable[str]],
    *,
    iters: set[int] | None = None,
    seeds: set[int] | None = None,
    binned: Iterable[str] = (),
) -> str:
    """The methods behind a page's or table's intervals: ``uses`` maps each recorded ``ci_method`` to the figures
    (metric names) that use it, e.g. ``Wilson score interval (exact_match); BCa bootstrap, small-sample expanded
    (judge) — 10,000 resamples, seed 1234``. ``binned``: figures whose resamples were binned (very many values)."""
    parts = [f"{method_name(m)} ({_names(names)})" for m, names in sorted(uses.items()) if m]
    if not parts:
        return "none computed"
    text = "; ".join(parts)
    if any(m in BOOTSTRAP_METHODS for m in uses):
        how = []
        if iters and len(iters) == 1:
            how.append(f"{next(iter(iters)):,} resamples")
        if seeds and len(seeds) == 1:
            how.append(f"seed {next(iter(seeds))}")
        binned_names = list(binned)
        if binned_names:
            how.append(f"binned resampling for {_names(binned_names)}")
        if how:
            text += " — " + ", ".join(how)
    return text


@dataclass
class MethodUses:
    """Which figures use which interval method, gathered while a page or table is built, then said by :meth:`label`."""

    methods: dict[str, set[str]] = field(default_factory=dict)
    binned: set[str] = field(default_factory=set)
    iters: set[int] = field(default_factory=set)
    seeds: set[int] = field(default_factory=set)

    def add(self, method: str | None, figure: str, *, binned: bool = False) -> None:
        """Record that ``figure`` (a metric name) has an interval made by ``method``."""
        if not method:
            return
        self.methods.setdefault(method, set()).add(figure)
        if binned:
            self.binned.add(figure)

    def add_settings(self, iters: object, seed: object) -> None:
        """The resampling settings of a run or comparison whose figures were added."""
        if isinstance(iters, int) and iters > 0:
            self.iters.add(iters)
        if isinstance(seed, int):
            self.seeds.add(seed)

    def label(self) -> str:
        """See :func:`methods_label`."""
        return methods_label(self.methods, iters=self.iters, seeds=self.seeds, binned=self.binned)
