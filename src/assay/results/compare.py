"""Compare two runs sample by sample: paired tests on the samples both scored, and what regressed or improved.

Samples are paired by sample id, never by position, and only where the sample's input is the same in both runs
(lm-eval's ``doc_hash`` of the dataset row): a sample whose row changed is not the same test. A sample's value is
its repeats reduced as in its run's results, so repeats of one sample are never taken for independent samples.
Per task, the comparison counts the samples only in A, only in B and with a changed input; when fewer than
``min_paired`` (default 50 %) of the smaller run's samples can be paired, the runs are not comparable and
:class:`UnpairedRunsError` says why (the CLI exits 2) rather than testing a sliver of them.

Pass/fail metrics use the exact McNemar test on the discordant pairs; continuous ones a sign-flip
permutation test (exact up to 16 differing samples). Either way the interval is a paired bootstrap
percentile interval of the mean difference ``B - A``. "Worse" follows each metric's direction.

The two means, their difference and the test are always of the same outcomes (:func:`paired_figures`), so the
difference shown is the difference of the means shown. Which outcomes is the ``errors`` rule, recorded beside them
(``errors``, and the sentence ``outcomes``):

- ``"exclude"`` (``assay compare``, the HTML report): the paired samples both runs scored. An error is never a
  zero: a sample either run errored on is left out of both means and the test, and counted per side
  (``n_errored_a`` / ``n_errored_b``; ``unscored_in_a`` / ``unscored_in_b`` list those the other run scored) and
  named in the warnings. Each run's own mean over all its scored samples is kept as ``run_mean_a`` / ``run_mean_b``.
- ``"as_failure"`` (``assay optimize``, which ranks candidates so): every paired sample, an errored one counting as
  a failure (score 0, or 1 where lower is better) on its side, so a candidate cannot gain by erroring where it
  would fail.

Under a run's ``error_policy: as_zero`` its errored samples already score 0 and are compared as such.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import AssayError
from assay.results import stats
from assay.results.accumulators import TaskColumns, all_distinct
from assay.results.aggregate import task_rng
from assay.results.loader import Run, load_run, read_columns

MIN_PAIRED = 0.5  # share of the smaller run's samples that must pair for a comparison to mean anything
ERROR_RULES = ("exclude", "as_failure")
PAIRED_CI_METHOD = "paired_bootstrap"  # percentile interval of the resampled mean differences
Index = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class UnpairedRunsError(AssayError):
    """Too few samples of a task pair up (same id, same input) for a paired comparison of the two runs."""


@dataclass
class Pairing:
    """How one task's samples pair up: by sample id, where the input (doc hash) is the same."""

    task: str
    n_a: int
    n_b: int
    paired: int
    only_in_a: int
    only_in_b: int
    changed_input: int
    share: float  # paired / samples of the smaller run
    changed_examples: list[str] = field(default_factory=list)  # sample ids whose input changed (first few)
    only_a_examples: list[str] = field(default_factory=list)
    only_b_examples: list[str] = field(default_factory=list)


@dataclass
class MetricComparison:
    """One (task, filter, metric) compared across two runs on their paired, scored samples."""

    task: str
    filter: str
    metric: str
    higher_is_better: bool
    mean_a: float | None  # A's mean over the compared outcomes (the n_shared pairs the test is of)
    mean_b: float | None
    n_a: int  # scored samples of run A (all of them, paired or not)
    n_b: int
    n_shared: int  # pairs compared: scored in both runs ("exclude"), or every paired sample ("as_failure")
    diff: float | None  # mean_b - mean_a, of the same outcomes
    ci: list[float] | None
    test: str  # "mcnemar" | "sign_flip" | "none"
    p_value: float | None
    exact: bool
    errors: str = "exclude"  # the rule deciding the compared outcomes (see the module docstring)
    outcomes: str = ""  # that rule as a sentence, with the counts, for whoever reads the figures
    n_errored_a: int = 0  # paired samples run A has no score for (its errors; both runs' errors count on each side)
    n_errored_b: int = 0
    run_mean_a: float | None = None  # run A's own mean over every sample it scored (as in its results)
    run_mean_b: float | None = None
    ci_method: str | None = None  # "paired_bootstrap" (percentile) when there is an interval
    bootstrap_method: str | None = None  # "exact" | "binned" (stats.bootstrap_method) of the paired bootstrap
    regressed: list[int] = field(default_factory=list)  # B's doc_ids where B is worse than A
    improved: list[int] = field(default_factory=list)
    regressed_ids: list[str] = field(default_factory=list)  # the same samples by sample id (what people search for)
    improved_ids: list[str] = field(default_factory=list)
    regressed_values: list[list[float]] = field(default_factory=list)  # [A, B] of each regressed sample
    improved_values: list[list[float]] = field(default_factory=list)
    unscored_in_b: list[int] = field(default_factory=list)  # A's doc_ids of paired samples A scored and B did not
    unscored_in_a: list[int] = field(default_factory=list)  # B's doc_ids of paired samples B scored and A did not
    significant: bool = False
    worse: bool = False  # significantly worse
    better: bool = False  # significantly better
    # a judge metric both runs' people labelled: the difference on the people's scale (results.judgecorrected)
    judge_corrected: dict[str, Any] | None = None

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
    pairing: dict[str, Pairing] = field(default_factory=dict)
    min_paired: float = MIN_PAIRED
    errors: str = "exclude"  # the rule deciding the compared outcomes of every metric

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


EXAMPLES = 5


def _match_ids(ca: TaskColumns, cb: TaskColumns) -> tuple[Index, Index]:
    """Positions (in A, in B) of the samples with the same id, from 64-bit id hashes checked against the ids."""
    assert ca.id_hashes is not None and cb.id_hashes is not None and ca.sample_ids and cb.sample_ids is not None
    ha, hb = ca.id_hashes, cb.id_hashes
    unique = all_distinct(ha) and all_distinct(hb)
    if unique:
        _, ia, ib = np.intersect1d(ha, hb, assume_unique=True, return_indices=True)
        if all(ca.sample_ids[int(i)] == cb.sample_ids[int(j)] for i, j in zip(ia, ib, strict=True)):
            return ia.astype(np.int64), ib.astype(np.int64)
    # two ids share a hash (about once in 10^12 pairs): match the ids themselves
    where_a = {ca.sample_ids[i]: i for i in range(len(ca.sample_ids))}
    pairs = [(where_a[cb.sample_ids[j]], j) for j in range(len(cb.sample_ids)) if cb.sample_ids[j] in where_a]
    ia_list = [p[0] for p in pairs]
    ib_list = [p[1] for p in pairs]
    return np.asarray(ia_list, dtype=np.int64), np.asarray(ib_list, dtype=np.int64)


def _unmatched(n: int, matched: Index) -> Index:
    """The positions below ``n`` not in ``matched``, ascending (``np.setdiff1d`` hashes them: 1.3 s at 1M)."""
    left = np.ones(n, dtype=np.bool_)
    left[matched] = False
    return np.flatnonzero(left).astype(np.int64)


def pair_samples(task: str, ca: TaskColumns, cb: TaskColumns) -> tuple[Pairing, Index, Index]:
    """How a task's samples pair up, and the paired positions in A's and B's columns, in B's doc_id order."""
    assert ca.doc_hashes is not None and cb.doc_hashes is not None and ca.sample_ids and cb.sample_ids is not None
    ia, ib = _match_ids(ca, cb)
    same = ca.doc_hashes[ia] == cb.doc_hashes[ib]
    changed = np.flatnonzero(~same)
    only_a, only_b = _unmatched(len(ca), ia), _unmatched(len(cb), ib)
    changed_b = np.sort(ib[changed])
    ia, ib = ia[same], ib[same]
    order = np.argsort(ib, kind="stable")
    ia, ib = ia[order], ib[order]
    smaller = min(len(ca), len(cb))
    pairing = Pairing(
        task=task,
        n_a=len(ca),
        n_b=len(cb),
        paired=int(ia.size),
        only_in_a=int(only_a.size),
        only_in_b=int(only_b.size),
        changed_input=int(changed.size),
        share=(ia.size / smaller) if smaller else 0.0,
        changed_examples=[cb.sample_ids[int(j)] for j in changed_b[:EXAMPLES]],
        only_a_examples=[ca.sample_ids[int(i)] for i in only_a[:EXAMPLES]],
        only_b_examples=[cb.sample_ids[int(j)] for j in only_b[:EXAMPLES]],
    )
    return pairing, ia, ib


@dataclass
class PairedFigures:
    """Two runs' outcomes on the same samples, compared: both means, their difference, its interval and the test,
    every figure of the same values (``diff == mean_b - mean_a``)."""

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci: list[float] | None
    ci_method: str | None
    bootstrap_method: str | None
    test: str  # "mcnemar" | "sign_flip" | "none" (no pairs)
    p_value: float | None
    exact: bool
    significant: bool
    worse: bool  # significantly worse, in the metric's direction
    better: bool
    worse_mask: npt.NDArray[np.bool_]  # per pair: B worse than A
    better_mask: npt.NDArray[np.bool_]


def paired_figures(
    a: FloatArray,
    b: FloatArray,
    *,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    iters: int = 10_000,
    rng: np.random.Generator,
    confidence: float = 0.95,
) -> PairedFigures:
    """Compare paired outcomes ``a[i]``, ``b[i]`` (no NaN: decide what an error counts as first, see
    :data:`ERROR_RULES`): exact McNemar for pass/fail values, else a sign-flip permutation test; a paired bootstrap
    percentile interval of the mean difference ``B - A``. The statistics of ``assay compare``; ``assay optimize``
    uses them too."""
    a, b = stats.as_array(a), stats.as_array(b)
    if a.shape != b.shape or np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("paired outcomes must be two arrays of one length without NaN (errors decided first)")
    sign = 1.0 if higher_is_better else -1.0
    worse_mask, better_mask = sign * (b - a) < 0, sign * (b - a) > 0
    out = PairedFigures(int(a.size), None, None, None, None, None, None, "none", None, False, False, False, False,
                        worse_mask, better_mask)  # fmt: skip
    if not a.size:
        return out
    out.mean_a, out.mean_b = stats.mean(a), stats.mean(b)
    assert out.mean_a is not None and out.mean_b is not None
    diff = out.diff = out.mean_b - out.mean_a  # the difference of the means shown, exactly
    _, ci, _ = stats.paired_bootstrap(a, b, iters, rng, confidence)
    if ci is not None:
        out.ci, out.ci_method = [ci[0], ci[1]], PAIRED_CI_METHOD
        out.bootstrap_method = stats.bootstrap_method(a.size, int(np.unique(b - a).size), iters)
    if bool(np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0)))):
        out.test, out.exact = "mcnemar", True
        out.p_value = stats.mcnemar_exact(int(worse_mask.sum()), int(better_mask.sum()))
    else:
        out.test = "sign_flip"
        out.p_value, out.exact = stats.sign_flip_test(b - a, iters, rng)
    out.significant = out.p_value < alpha and diff != 0.0
    out.worse = out.significant and sign * diff < 0
    out.better = out.significant and sign * diff > 0
    return out


def failure_score(higher_is_better: bool, scored: npt.NDArray[np.float64] | None = None) -> float:
    """What an errored sample scores under ``"as_failure"``: the worst a verdict's score can be, 0 or 1; for a
    metric on its own scale (``scored`` holds values outside [0, 1]) the worst value either run gave."""
    if scored is not None and scored.size and (float(scored.min()) < 0.0 or float(scored.max()) > 1.0):
        return float(scored.min()) if higher_is_better else float(scored.max())
    return 0.0 if higher_is_better else 1.0


def _outcomes(errors: str, n: int, paired: int, errored_a: int, errored_b: int, fail: float) -> str:
    """The compared outcomes as a sentence, with the counts."""
    counts = f"errored: {errored_a} in A, {errored_b} in B"
    if errors == "as_failure":
        return (
            f"means, difference and test over all {paired} paired samples, an errored sample counting as a failure "
            f"(score {fail:g}); {counts}"
        )
    return (
        f"means, difference and test over the {n} of {paired} paired samples both runs scored; a sample either run "
        f"errored on is left out of both means and the test; {counts}"
    )


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
    pairs: tuple[Index, Index] | None = None,
    errors: str = "exclude",
) -> MetricComparison:
    """Compare one metric on the paired samples (pairs from :func:`pair_samples` when not given), their outcomes
    decided by the ``errors`` rule (see the module docstring)."""
    if errors not in ERROR_RULES:
        raise ValueError(f"errors: unknown rule {errors!r}; known: {', '.join(ERROR_RULES)}")
    ca, cb = run_a.columns[task], run_b.columns[task]
    if pairs is None:
        _, ia, ib = pair_samples(task, ca, cb)
    else:
        ia, ib = pairs
    sva, svb = run_a.sample_values(task, filter_name, metric), run_b.sample_values(task, filter_name, metric)
    va, vb = sva.values[ia], svb.values[ib]
    ok_a, ok_b = ~np.isnan(va), ~np.isnan(vb)
    all_a, all_b = sva.values[sva.scored], svb.values[svb.scored]
    fail = failure_score(higher_is_better, np.concatenate([all_a, all_b]))
    if errors == "as_failure":
        keep = np.ones(va.size, dtype=np.bool_)
        a, b = np.where(ok_a, va, fail), np.where(ok_b, vb, fail)
    else:
        keep = ok_a & ok_b
        a, b = va[keep], vb[keep]
    fig = paired_figures(
        a, b, higher_is_better=higher_is_better, alpha=alpha, iters=iters, rng=task_rng(seed, task, 2),
        confidence=confidence,
    )  # fmt: skip
    worse_mask, better_mask = fig.worse_mask, fig.better_mask
    kept_b = ib[keep]
    n_err_a, n_err_b = int(np.count_nonzero(~ok_a)), int(np.count_nonzero(~ok_b))
    assert cb.sample_ids is not None
    return MetricComparison(
        task=task,
        filter=filter_name,
        metric=metric,
        higher_is_better=higher_is_better,
        mean_a=fig.mean_a,
        mean_b=fig.mean_b,
        n_a=int(all_a.size),
        n_b=int(all_b.size),
        n_shared=fig.n,
        diff=fig.diff,
        ci=fig.ci,
        test=fig.test,
        p_value=fig.p_value,
        exact=fig.exact,
        errors=errors,
        outcomes=_outcomes(errors, fig.n, int(va.size), n_err_a, n_err_b, fail),
        n_errored_a=n_err_a,
        n_errored_b=n_err_b,
        run_mean_a=stats.mean(all_a),
        run_mean_b=stats.mean(all_b),
        ci_method=fig.ci_method,
        bootstrap_method=fig.bootstrap_method,
        regressed=[int(d) for d in cb.doc_ids[kept_b[worse_mask]]],
        improved=[int(d) for d in cb.doc_ids[kept_b[better_mask]]],
        regressed_ids=[cb.sample_ids[int(j)] for j in kept_b[worse_mask]],
        improved_ids=[cb.sample_ids[int(j)] for j in kept_b[better_mask]],
        regressed_values=[[float(x), float(y)] for x, y in zip(a[worse_mask], b[worse_mask], strict=True)],
        improved_values=[[float(x), float(y)] for x, y in zip(a[better_mask], b[better_mask], strict=True)],
        unscored_in_b=sorted(int(d) for d in ca.doc_ids[ia[ok_a & ~ok_b]]),
        unscored_in_a=sorted(int(d) for d in cb.doc_ids[ib[ok_b & ~ok_a]]),
        significant=fig.significant,
        worse=fig.worse,
        better=fig.better,
    )


def _pairing_warnings(p: Pairing, name_a: str, name_b: str) -> list[str]:
    out = []
    if p.changed_input:
        out.append(
            f"task {p.task!r}: {p.changed_input} sample(s) have a different input in {name_b} than in {name_a} "
            f"(doc hash; e.g. {', '.join(p.changed_examples)}): not paired"
        )
    if p.only_in_a:
        out.append(
            f"task {p.task!r}: {p.only_in_a} sample(s) only in {name_a} (A) (e.g. {', '.join(p.only_a_examples)})"
        )
    if p.only_in_b:
        out.append(
            f"task {p.task!r}: {p.only_in_b} sample(s) only in {name_b} (B) (e.g. {', '.join(p.only_b_examples)})"
        )
    return out


def _correct_judges(
    ra: Run, rb: Run, metrics: list[MetricComparison], paired_ids: dict[str, list[str]], confidence: float
) -> None:
    """Give each judge metric that people labelled in both runs its difference corrected by the labels."""
    from assay.results.judgecorrected import corrected_paired_difference, judged_samples

    judged_a = judged_samples(ra.manifest, ra.path)
    judged_b = judged_samples(rb.manifest, rb.path) if judged_a else {}
    done: set[tuple[str, str]] = set()
    for comp in metrics:
        key = (comp.task, comp.metric)
        if key in done or key not in judged_a or key not in judged_b:
            continue
        done.add(key)  # the first filter of the metric, as its judge figures are
        a, b = judged_a[key], judged_b[key]
        if isinstance(a, str) or isinstance(b, str):
            comp.judge_corrected = {"refused": f"the difference is not corrected: {a if isinstance(a, str) else b}"}
        else:
            comp.judge_corrected = corrected_paired_difference(a, b, paired_ids[comp.task], confidence=confidence)


def compare_runs(
    run_a: Run | str | os.PathLike[str],
    run_b: Run | str | os.PathLike[str],
    *,
    alpha: float = 0.05,
    iters: int = 10_000,
    seed: int = 1234,
    confidence: float = 0.95,
    min_paired: float = MIN_PAIRED,
    errors: str = "exclude",
) -> Comparison:
    """Compare every metric of the tasks both runs share; B is the candidate, A the baseline. ``errors``: what a
    paired sample that a run errored on counts as (:data:`ERROR_RULES`, see the module docstring).

    Raises :class:`UnpairedRunsError` when, for a shared task, fewer than ``min_paired`` of the smaller run's
    samples pair up (same sample id, same input)."""
    if errors not in ERROR_RULES:
        raise ValueError(f"errors: unknown rule {errors!r}; known: {', '.join(ERROR_RULES)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0.0 <= min_paired <= 1.0:
        raise ValueError(f"min_paired must be in [0, 1], got {min_paired}")
    ra = run_a if isinstance(run_a, Run) else load_run(run_a)
    rb = run_b if isinstance(run_b, Run) else load_run(run_b)
    read_columns([ra, rb])  # B's read by a forked child meanwhile, where it can be
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
    pairings: dict[str, Pairing] = {}
    paired_ids: dict[str, list[str]] = {}  # per task, the sample ids that pair (for judge figures by labels)
    for name in (t for t in tasks_b if t in tasks_a):
        if tasks_a[name].task_hash != tasks_b[name].task_hash:
            warnings.append(
                f"task {name!r} differs between the runs (task hash); samples are paired by sample id where "
                "their input is unchanged"
            )
        if tasks_a[name].repeats != tasks_b[name].repeats:
            warnings.append(
                f"task {name!r}: {tasks_a[name].repeats} repeat(s) in A, {tasks_b[name].repeats} in B; each sample's "
                "repeats are reduced first, so samples still pair one to one"
            )
        pairing, ia, ib = pair_samples(name, ra.columns[name], rb.columns[name])
        pairings[name] = pairing
        ids_b = rb.columns[name].sample_ids
        paired_ids[name] = [ids_b[int(i)] for i in ib] if ids_b is not None else []
        warnings.extend(_pairing_warnings(pairing, ra.name, rb.name))
        if min(pairing.n_a, pairing.n_b) and pairing.share < min_paired:
            raise UnpairedRunsError(
                f"task {name!r}: only {pairing.paired} of {min(pairing.n_a, pairing.n_b)} samples "
                f"({100 * pairing.share:.0f}%, below the {100 * min_paired:.0f}% needed) pair up by sample id with "
                f"the same input ({pairing.only_in_a} only in A, {pairing.only_in_b} only in B, "
                f"{pairing.changed_input} with a changed input): the runs did not evaluate the same samples. "
                "Give the dataset an id field (fields.id) that stays with each row, or compare runs of one dataset"
            )
        keys_a = {(f, m) for f, m, _ in _metric_keys(ra, name)}
        for filter_name, metric, hib in _metric_keys(rb, name):
            if (filter_name, metric) not in keys_a:
                warnings.append(f"{name}/{metric},{filter_name} is only in {rb.name} (B); not compared")
                continue
            comp = compare_metric(
                ra,
                rb,
                name,
                filter_name,
                metric,
                hib,
                alpha=alpha,
                iters=iters,
                seed=seed,
                confidence=confidence,
                pairs=(ia, ib),
                errors=errors,
            )
            metrics.append(comp)
            fate = (
                "and count as failures in the paired test"
                if errors == "as_failure"
                else "and are left out of both means and the paired test"
            )
            for ids, scored, lost in ((comp.unscored_in_b, ra.name, rb.name), (comp.unscored_in_a, rb.name, ra.name)):
                if ids:
                    warnings.append(f"{comp.key}: {len(ids)} sample(s) scored in {scored} have no score in {lost} "
                                    f"(errored) {fate}")  # fmt: skip
    _correct_judges(ra, rb, metrics, paired_ids, confidence)
    label_a, label_b = ra.name, rb.name  # the runs' names (--name), else their folders
    if label_a == label_b and ra.path.name != rb.path.name:  # two runs of one name: tell them apart by folder
        label_a, label_b = f"{label_a} ({ra.path.name})", f"{label_b} ({rb.path.name})"
    return Comparison(label_a, label_b, alpha, confidence, iters, seed, metrics, warnings, pairings, min_paired, errors)
