"""The HTML report's comparison section: per metric the change and its paired test, and the samples that
regressed or improved (paired by sample id, from :func:`assay.results.compare_runs`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.report.fmt import fmt_int, fmt_interval, fmt_value, raw, sample_href
from assay.report.samples import RUN_CSS

if TYPE_CHECKING:
    from assay.results import Run

MAX_CHANGES_LISTED = 500  # regressed / improved samples listed per comparison


@dataclass
class ChangeView:
    """A sample that regressed or improved between two runs."""

    task: str
    sample_id: str
    metric: str
    a_s: str
    b_s: str
    href: str


@dataclass
class DeltaView:
    """One metric's change between two runs, with its paired test."""

    task: str
    metric: str
    filter: str
    a_s: str
    b_s: str
    delta_raw: str
    delta_s: str
    direction: str  # "up" (better), "down" (worse) or "" (no significant change)
    ci_s: str
    test: str
    p_s: str
    significant: bool
    n_paired: str
    n_regressed: int
    n_improved: int


@dataclass
class CompareView:
    """Two runs side by side: metric deltas and the samples that changed."""

    a_index: int
    b_index: int
    a_label: str
    b_label: str
    a_css: str
    b_css: str
    alpha: float
    confidence_label: str
    n_shared_label: str
    rows: list[DeltaView]
    regressed: list[ChangeView]
    improved: list[ChangeView]
    regressed_total: int
    improved_total: int
    notes: list[str]
    ci_method_label: str = ""  # how the interval of each Δ was computed, from what the comparison recorded

    @property
    def regressed_more(self) -> bool:
        """True when the list was cut at MAX_CHANGES_LISTED."""
        return self.regressed_total > len(self.regressed)

    @property
    def improved_more(self) -> bool:
        """True when the list was cut at MAX_CHANGES_LISTED."""
        return self.improved_total > len(self.improved)


_TEST_NAMES = {"mcnemar": "McNemar, exact", "sign_flip": "sign-flip permutation", "none": "—"}


def fmt_p(p: float | None) -> str:
    """A p-value: four decimals, or ``< 0.0001``."""
    if p is None or not math.isfinite(p):
        return "—"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def fmt_delta(d: float | None) -> str:
    """A signed difference with four decimals."""
    if d is None or not math.isfinite(d):
        return "—"
    return f"{d:+.4f}"


def compare_view(comparison: Any, runs: Sequence[Run], a: int, b: int, labels: Sequence[str]) -> CompareView:
    """The comparison section for run ``b`` against baseline ``a`` from a :class:`assay.results.Comparison`."""
    rows: list[DeltaView] = []
    regressed: list[ChangeView] = []
    improved: list[ChangeView] = []
    totals = {"regressed": 0, "improved": 0}
    for m in comparison.metrics:
        test = _TEST_NAMES.get(m.test, m.test)
        if m.test == "sign_flip":
            test += ", exact" if m.exact else f", {comparison.iters:,} resamples"
        direction = "up" if m.better else "down" if m.worse else ""
        rows.append(
            DeltaView(
                task=m.task,
                metric=m.metric,
                filter=m.filter,
                a_s=fmt_value(m.mean_a),
                b_s=fmt_value(m.mean_b),
                delta_raw=raw(m.diff),
                delta_s=fmt_delta(m.diff),
                direction=direction,
                ci_s=fmt_interval(m.ci),
                test=test,
                p_s=fmt_p(m.p_value),
                significant=bool(m.significant),
                n_paired=fmt_int(m.n_shared),
                n_regressed=len(m.regressed),
                n_improved=len(m.improved),
            )
        )
        if not (m.regressed or m.improved):
            continue
        label = m.metric if m.filter == "none" else f"{m.metric} · {m.filter}"
        for kind, ids, pairs, out in (
            ("regressed", m.regressed_ids, m.regressed_values, regressed),
            ("improved", m.improved_ids, m.improved_values, improved),
        ):
            totals[kind] += len(ids)
            for sid, (va, vb) in zip(ids, pairs, strict=True):
                if len(out) >= MAX_CHANGES_LISTED:
                    break
                out.append(
                    ChangeView(
                        task=m.task,
                        sample_id=sid,
                        metric=label,
                        a_s=fmt_value(va),
                        b_s=fmt_value(vb),
                        href=sample_href(m.task, sid, b),
                    )
                )
    return CompareView(
        a_index=a,
        b_index=b,
        a_label=labels[a],
        b_label=labels[b],
        a_css=RUN_CSS[a % len(RUN_CSS)],
        b_css=RUN_CSS[b % len(RUN_CSS)],
        alpha=comparison.alpha,
        confidence_label=f"{100 * comparison.confidence:g}%",
        n_shared_label=_paired_on(comparison),
        rows=rows,
        regressed=regressed,
        improved=improved,
        regressed_total=totals["regressed"],
        improved_total=totals["improved"],
        notes=[*_corrected_notes(comparison), *(str(w) for w in comparison.warnings)],
        ci_method_label=_delta_ci_label(comparison),
    )


def _paired_on(comparison: Any) -> str:
    """Which outcomes A, B, Δ and the test are of: the comparison's rule for errors (see assay.results.compare)."""
    paired = "paired by sample id where the input is the same"
    if comparison.errors == "as_failure":
        return f"every sample of both runs, {paired}; an errored sample counts as a failure (score 0) on its side"
    return (
        f"the samples both runs scored, {paired}; A, B and Δ are means over those pairs, and a sample either run "
        "errored on is left out of both and counted apart"
    )


def _delta_ci_label(comparison: Any) -> str:
    """The method of the Δ intervals, from the ``ci_method`` each metric recorded."""
    from assay.report.methods import MethodUses

    uses = MethodUses()
    uses.add_settings(comparison.iters, comparison.seed)
    for m in comparison.metrics:
        if m.ci is not None:
            uses.add(m.ci_method, m.metric)
    return uses.label()


def _corrected_notes(comparison: Any) -> list[str]:
    """Judge metrics' differences corrected by the people's labels of both runs."""
    from assay.results.judgecorrected import difference_note

    return [n for m in comparison.metrics if (n := difference_note(m.key, m.judge_corrected))]
