"""Compare two runs sample by sample: paired tests on the samples both scored, and what regressed or improved.

Pass/fail metrics use the exact McNemar test on the discordant pairs; continuous ones a sign-flip
permutation test (exact up to 16 differing samples). Either way the interval is a paired bootstrap
percentile interval of the mean difference ``B - A``. "Worse" follows each metric's direction.
Samples that only one run scored (the other errored on them or lacks them) cannot be paired: they are
counted and listed (``unscored_in_a`` / ``unscored_in_b``) and named in the warnings, never silently dropped.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from assay.results import stats
from assay.results.aggregate import task_rng
from assay.results.loader import Run, load_run


@dataclass
class MetricComparison:
    """One (task, filter, metric) compared across two runs on their shared, scored samples."""

    task: str
    filter: str
    metric: str
    higher_is_better: bool
    mean_a: float | None  # over every scored sample of run A (as in its results)
    mean_b: float | None
    n_a: int
    n_b: int
    n_shared: int  # samples scored in both runs
    diff: float | None  # mean of B - A over the shared samples
    ci: list[float] | None
    test: str  # "mcnemar" | "sign_flip" | "none"
    p_value: float | None
    exact: bool
    regressed: list[int] = field(default_factory=list)  # doc_ids where B is worse than A
    improved: list[int] = field(default_factory=list)
    regressed_ids: list[str] = field(default_factory=list)  # the same samples by sample id (what people search for)
    improved_ids: list[str] = field(default_factory=list)
    unscored_in_b: list[int] = field(default_factory=list)  # doc_ids A scored that B errored on or lacks
    unscored_in_a: list[int] = field(default_factory=list)  # doc_ids B scored that A errored on or lacks
    significant: bool = False
    worse: bool = False  # significantly worse
    better: bool = False  # significantly better

    @property
    def key(self) -> str:
        """``task/metric,filter``."""
        return f"{self.task}/{self.metric},{self.filter}"


@dataclass
class Comparison:
    """The comparison of run B (candidate) against run A (baseline)."""

    run_a: str
    run_b: str
    alpha: float
    confidence: float
    iters: int
    seed: int
    metrics: list[MetricComparison]
    warnings: list[str] = field(default_factory=list)

    @property
    def significantly_worse(self) -> list[MetricComparison]:
        """Metrics where B is worse than A with p < alpha."""
        return [m for m in self.metrics if m.worse]

    @property
    def significantly_better(self) -> list[MetricComparison]:
        """Metrics where B is better than A with p < alpha."""
        return [m for m in self.metrics if m.better]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        return asdict(self)


def _metric_keys(run: Run, task: str) -> list[tuple[str, str, bool]]:
    """(filter, metric, higher_is_better) of a task, from its results or, failing that, its records."""
    figures = ((run.settings.get("tasks") or {}).get(task) or {}).get("filters") or {}
    out = [(f, m, bool(e.get("higher_is_better", True))) for f, ms in figures.items() for m, e in ms.items()]
    if out:
        return out
    info = next(t for t in run.manifest.tasks if t.name == task)
    return [(f, m.name, m.higher_is_better) for f in info.filters for m in info.metrics]


def _sample_ids(run: Run, task: str) -> dict[int, str]:
    """doc_id -> sample id of a task's samples in a run."""
    return {rec.doc_id: rec.sample_id for rec in run.task_records(task)}


def compare_metric(
    run_a: Run,
    run_b: Run,
    task: str,
    filter_name: str,
    metric: str,
    higher_is_better: bool,
    *,
    alpha: float = 0.05,
    iters: int = 10_000,
    seed: int = 1234,
    confidence: float = 0.95,
) -> MetricComparison:
    """Compare one metric on the samples both runs scored (joined by doc_id)."""
    sa = run_a.sample_values(task, filter_name, metric).as_dict()
    sb = run_b.sample_values(task, filter_name, metric).as_dict()
    shared = sorted(d for d in sa.keys() & sb.keys() if sa[d] is not None and sb[d] is not None)
    a = np.array([sa[d] for d in shared], dtype=np.float64)
    b = np.array([sb[d] for d in shared], dtype=np.float64)
    all_a = [v for v in sa.values() if v is not None]
    all_b = [v for v in sb.values() if v is not None]
    sign = 1.0 if higher_is_better else -1.0
    worse_mask = sign * (b - a) < 0
    better_mask = sign * (b - a) > 0
    comp = MetricComparison(
        task=task,
        filter=filter_name,
        metric=metric,
        higher_is_better=higher_is_better,
        mean_a=stats.mean(all_a),
        mean_b=stats.mean(all_b),
        n_a=len(all_a),
        n_b=len(all_b),
        n_shared=len(shared),
        diff=None,
        ci=None,
        test="none",
        p_value=None,
        exact=False,
        regressed=[d for d, w in zip(shared, worse_mask, strict=True) if w],
        improved=[d for d, w in zip(shared, better_mask, strict=True) if w],
        unscored_in_b=sorted(d for d, v in sa.items() if v is not None and sb.get(d) is None),
        unscored_in_a=sorted(d for d, v in sb.items() if v is not None and sa.get(d) is None),
    )
    names = _sample_ids(run_b, task) | _sample_ids(run_a, task)
    comp.regressed_ids = [names.get(d, str(d)) for d in comp.regressed]
    comp.improved_ids = [names.get(d, str(d)) for d in comp.improved]
    if not shared:
        return comp
    rng = task_rng(seed, task, 2)
    diff, ci, _ = stats.paired_bootstrap(a, b, iters, rng, confidence)
    comp.diff, comp.ci = diff, (None if ci is None else [ci[0], ci[1]])
    binary = bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))))
    if binary:
        comp.test, comp.exact = "mcnemar", True
        comp.p_value = stats.mcnemar_exact(len(comp.regressed), len(comp.improved))
    else:
        comp.test = "sign_flip"
        comp.p_value, comp.exact = stats.sign_flip_test(b - a, iters, rng)
    comp.significant = comp.p_value < alpha and diff != 0.0
    comp.worse = comp.significant and sign * diff < 0
    comp.better = comp.significant and sign * diff > 0
    return comp


def compare_runs(
    run_a: Run | str | os.PathLike[str],
    run_b: Run | str | os.PathLike[str],
    *,
    alpha: float = 0.05,
    iters: int = 10_000,
    seed: int = 1234,
    confidence: float = 0.95,
) -> Comparison:
    """Compare every metric of the tasks both runs share; B is the candidate, A the baseline."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    ra = run_a if isinstance(run_a, Run) else load_run(run_a)
    rb = run_b if isinstance(run_b, Run) else load_run(run_b)
    warnings: list[str] = []
    if ra.path.resolve() == rb.path.resolve():
        warnings.append(f"A and B are the same run folder ({ra.path}): every difference is zero by construction")
    tasks_a = {t.name: t for t in ra.manifest.tasks}
    tasks_b = {t.name: t for t in rb.manifest.tasks}
    for name in tasks_a.keys() - tasks_b.keys():
        warnings.append(f"task {name!r} is only in {ra.name} (A); not compared")
    for name in tasks_b.keys() - tasks_a.keys():
        warnings.append(f"task {name!r} is only in {rb.name} (B); not compared")
    pol_a, pol_b = ra.settings.get("error_policy"), rb.settings.get("error_policy")
    if pol_a != pol_b:
        warnings.append(f"the runs used different error policies ({pol_a} vs {pol_b})")
    metrics: list[MetricComparison] = []
    for name in (t for t in tasks_b if t in tasks_a):
        if tasks_a[name].task_hash != tasks_b[name].task_hash:
            warnings.append(f"task {name!r} differs between the runs (task hash); samples are paired by doc_id")
        keys_a = {(f, m) for f, m, _ in _metric_keys(ra, name)}
        for filter_name, metric, hib in _metric_keys(rb, name):
            if (filter_name, metric) not in keys_a:
                warnings.append(f"{name}/{metric},{filter_name} is only in {rb.name} (B); not compared")
                continue
            comp = compare_metric(
                ra, rb, name, filter_name, metric, hib, alpha=alpha, iters=iters, seed=seed, confidence=confidence
            )
            metrics.append(comp)
            for ids, scored, lost in ((comp.unscored_in_b, ra.name, rb.name), (comp.unscored_in_a, rb.name, ra.name)):
                if ids:
                    warnings.append(
                        f"{comp.key}: {len(ids)} sample(s) scored in {scored} have no score in {lost} (errored or "
                        "missing) and are left out of the paired test"
                    )
    return Comparison(ra.name, rb.name, alpha, confidence, iters, seed, metrics, warnings)
