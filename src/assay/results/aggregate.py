"""From verdicts to per-sample values to per-metric figures, with errors counted and never silently zero."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import ConfigError
from assay.record import SampleRecord
from assay.results import stats
from assay.results.intervals import clip_interval, headline_interval, score_bounds

ERROR_POLICIES = ("exclude", "as_zero", "fail")
REPEAT_REDUCTIONS = ("mean", "max", "min", "majority")
GROUP_WEIGHTINGS = ("size", "equal")
MAX_ERROR_EXAMPLES = 3


def check_choice(key: str, value: str, choices: Sequence[str]) -> str:
    """Validate a setting against its choices; the error names the setting and the known values."""
    if value not in choices:
        raise ConfigError(f"{key}: unknown value {value!r}; known: {', '.join(choices)}")
    return value


@dataclass
class SampleValues:
    """One metric under one filter of one task, per sample: the reduced value, its repeats and errors.

    ``values`` is NaN where the sample counts as errored (every verdict errored under ``exclude``);
    ``n_attempts``/``n_passed`` count the repeats that were judged (all repeats under ``as_zero``).
    Errored verdicts are counted by cause: ``n_model_errors`` had no response to judge (the model request
    failed), the rest (``n_eval_errors``) failed in the evaluator or filter. ``errors`` lists the first errors
    (all of them from :func:`sample_values`, the first few from a streamed scan); ``error_counts`` counts each
    distinct error message (capped at MAX_DISTINCT_ERRORS messages, the rest under ``OTHER_ERRORS``).
    A sample the metric is not applicable to has value NaN and no error (see :func:`is_not_applicable`).
    """

    doc_ids: list[int] | npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]
    passed_frac: npt.NDArray[np.float64]
    n_attempts: npt.NDArray[np.int64]
    n_passed: npt.NDArray[np.int64]
    n_errored_verdicts: int
    errors: list[tuple[int, str]] = field(default_factory=list)  # (doc_id, first error) of samples with any error
    n_model_errors: int = 0
    error_counts: dict[str, int] = field(default_factory=dict)
    n_not_applicable: int = 0  # samples the metric had nothing to check (no verdicts): neither scored nor errored

    @property
    def n_eval_errors(self) -> int:
        """Errored verdicts the evaluator (or its filter) caused, not a failed model request."""
        return self.n_errored_verdicts - self.n_model_errors

    @property
    def scored(self) -> npt.NDArray[np.bool_]:
        """Mask of samples that have a value."""
        return ~np.isnan(self.values)

    def as_dict(self) -> dict[int, float | None]:
        """doc_id -> value (None where errored)."""
        return {int(d): (None if math.isnan(v) else float(v)) for d, v in zip(self.doc_ids, self.values, strict=True)}

    def main_error(self) -> tuple[str, int] | None:
        """The most frequent error message and its count (ties: the first seen), or None without errors."""
        if not self.error_counts:
            return None
        return max(self.error_counts.items(), key=lambda kv: kv[1])


MAX_DISTINCT_ERRORS = 1000
OTHER_ERRORS = "(other errors)"


def count_error(counts: dict[str, int], message: str) -> None:
    """Count one error message, keeping at most MAX_DISTINCT_ERRORS distinct ones (memory stays bounded)."""
    if message in counts or len(counts) < MAX_DISTINCT_ERRORS:
        counts[message] = counts.get(message, 0) + 1
    else:
        counts[OTHER_ERRORS] = counts.get(OTHER_ERRORS, 0) + 1


def _reduce(scores: list[float], passes: list[bool], reduction: str) -> float:
    if reduction == "mean":
        return math.fsum(scores) / len(scores)
    if reduction == "max":
        return max(scores)
    if reduction == "min":
        return min(scores)
    return 1.0 if sum(passes) * 2 > len(passes) else 0.0  # majority of repeats passed


def record_error(rec: Mapping[str, Any]) -> str | None:
    """The first model error of a record dict (``SampleRecord.error``): the first failed repeat's message."""
    errors = rec.get("response_errors")
    return next((e for e in errors if e), None) if errors and any(errors) else None


def as_record_dict(rec: SampleRecord | Mapping[str, Any]) -> Mapping[str, Any]:
    """A record as the dict its ``samples.jsonl`` line parses to (what the streamed results code reads)."""
    return rec.model_dump() if isinstance(rec, SampleRecord) else rec


def _model_failed(rec: Mapping[str, Any], error: str | None, repeat: int, n_verdicts: int) -> bool:
    """Whether an errored verdict had no response to judge: its repeat's model request failed (or, after a
    filter that reduces the repeats to one value, every repeat's did)."""
    responses = rec.get("responses") or []
    n = max(len(responses), len(rec.get("response_errors") or ()))
    if not error or n == 0:
        return False
    if n_verdicts == n:
        return repeat >= len(responses) or responses[repeat] is None
    return all(r is None for r in responses) or len(responses) == 0


# (value or NaN, passed share or NaN, attempts, passed, errored verdicts, of them model errors, first error,
#  every error message of the record's verdicts)
RecordValue = tuple[float, float, int, int, int, int, str | None, list[str]]
_NO_MESSAGES: list[str] = []
NOT_APPLICABLE: RecordValue = (math.nan, math.nan, 0, 0, 0, 0, None, _NO_MESSAGES)


def is_not_applicable(rv: RecordValue) -> bool:
    """True for a sample the metric had nothing to check: no value and no error (every other NaN has one)."""
    return rv[4] == 0 and rv[0] != rv[0]


def record_value(
    rec: Mapping[str, Any] | SampleRecord, filter_name: str, metric: str, *, as_zero: bool, repeat_reduction: str
) -> RecordValue:
    """One sample's value of one metric: its verdicts reduced over repeats, errors excluded or scored 0.

    ``rec`` is a record's dict (a parsed ``samples.jsonl`` line) or a SampleRecord. A verdict with ``error`` set
    (score None) is an error; so is a sample with no verdicts for the metric (its model call failed, or its filter
    record is missing). Under ``as_zero`` each errored repeat scores 0 and fails; otherwise a sample with no judged
    repeat is errored (value NaN). An empty verdict list is a metric *not applicable* to the sample
    (:data:`NOT_APPLICABLE`: no value, no error, under every error policy).
    """
    rec = as_record_dict(rec)
    fr = (rec.get("filters") or {}).get(filter_name)
    verdicts = (fr.get("verdicts") or {}).get(metric) if fr is not None else None
    if verdicts and len(verdicts) == 1:  # the common case, one judged repeat: no lists to build
        v = verdicts[0]
        score = v.get("score")
        if score is not None and v.get("error") is None:
            value = float(score)
            ok = bool(v.get("passed", False))
            if repeat_reduction == "majority":
                value = 1.0 if ok else 0.0
            return value, 1.0 if ok else 0.0, 1, int(ok), 0, 0, None, _NO_MESSAGES
    if verdicts is not None and not verdicts:  # the row gave the metric nothing to check
        return NOT_APPLICABLE
    scores: list[float] = []
    passes: list[bool] = []
    messages: list[str] = []
    n_err = n_model = 0
    error = record_error(rec)
    if verdicts:
        for repeat, v in enumerate(verdicts):
            score, err = v.get("score"), v.get("error")
            if err is not None or score is None:
                n_err += 1
                n_model += _model_failed(rec, error, repeat, len(verdicts))
                messages.append(str(err or "verdict has no score"))
                if as_zero:
                    scores.append(0.0)
                    passes.append(False)
            else:
                scores.append(float(score))
                passes.append(bool(v.get("passed", False)))
    elif fr is not None and (fr.get("scores") or {}).get(metric) is not None:  # no per-repeat verdicts: the summary
        scores.append(float(fr["scores"][metric]))
        passes.append(bool((fr.get("passed") or {}).get(metric)))
    else:
        n_err = 1
        if error:
            n_model = 1
            messages.append(f"model error: {error}")
        elif fr is None:
            messages.append(f"no record for filter {filter_name!r}")
        else:
            messages.append(f"no verdict for metric {metric!r}")
        if as_zero:
            scores.append(0.0)
            passes.append(False)
    first = messages[0] if messages else None
    if not scores:
        return math.nan, math.nan, 0, 0, n_err, n_model, first, messages
    n_passed = sum(passes)
    value = _reduce(scores, passes, repeat_reduction)
    return value, n_passed / len(scores), len(scores), n_passed, n_err, n_model, first, messages


def sample_values(
    records: Sequence[SampleRecord],
    filter_name: str,
    metric: str,
    *,
    error_policy: str = "exclude",
    repeat_reduction: str = "mean",
) -> SampleValues:
    """Per-sample values of one metric over a list of records (see :func:`record_value`); a run folder of any size
    is scanned column by column instead (:mod:`assay.results.columns`)."""
    n = len(records)
    values = np.full(n, np.nan)
    passed_frac = np.full(n, np.nan)
    n_attempts = np.zeros(n, dtype=np.int64)
    n_passed = np.zeros(n, dtype=np.int64)
    errors: list[tuple[int, str]] = []
    counts: dict[str, int] = {}
    n_errored_verdicts = n_model = n_na = 0
    as_zero = error_policy == "as_zero"
    for i, rec in enumerate(records):
        rv = record_value(as_record_dict(rec), filter_name, metric, as_zero=as_zero, repeat_reduction=repeat_reduction)
        value, frac, att, npass, n_err, n_mod, first, messages = rv
        n_na += is_not_applicable(rv)
        values[i], passed_frac[i], n_attempts[i], n_passed[i] = value, frac, att, npass
        n_errored_verdicts += n_err
        n_model += n_mod
        for message in messages:
            count_error(counts, message)
        if first is not None:
            errors.append((rec.doc_id, first))
    return SampleValues(
        [r.doc_id for r in records],
        values,
        passed_frac,
        n_attempts,
        n_passed,
        n_errored_verdicts,
        errors,
        n_model,
        counts,
        n_na,
    )


def task_rng(seed: int, task: str, stream: int = 0) -> np.random.Generator:
    """The seeded generator of one task's resamples (independent across tasks, reproducible)."""
    return np.random.default_rng([seed, zlib.crc32(task.encode("utf-8")), stream])


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def k_values(repeats: int) -> list[int]:
    """The k reported for pass@k / pass^k: every k up to 16 repeats, beyond that powers of two and ``repeats``."""
    if repeats <= 16:
        return list(range(1, repeats + 1))
    ks = {1 << i for i in range(repeats.bit_length()) if 1 << i <= repeats}
    return sorted(ks | {repeats})


def _per_sample(estimator: Any, n: npt.NDArray[np.int64], c: npt.NDArray[np.int64], k: int) -> npt.NDArray[np.float64]:
    """``estimator(n_i, c_i, k)`` for every sample, computed once per distinct (n, c) (a million samples have a
    handful), in sample order."""
    if not n.size:
        return np.zeros(0, dtype=np.float64)
    pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    table = np.array([estimator(int(a), int(b), k) for a, b in pairs], dtype=np.float64)
    return table[inverse.reshape(-1)]


def _pass_k_figures(sv: SampleValues, repeats: int, error_policy: str) -> tuple[dict[str, Any], dict[str, Any]]:
    at_k: dict[str, Any] = {}
    hat_k: dict[str, Any] = {}
    attempts = sv.n_attempts
    if error_policy == "as_zero":  # every repeat counts; one that left no verdict at all (a lost sample) failed
        attempts = np.where(attempts > 0, np.maximum(attempts, repeats), 0)
    for k in k_values(repeats):
        ok = attempts >= k
        at = _per_sample(stats.pass_at_k, attempts[ok], sv.n_passed[ok], k)
        hat = _per_sample(stats.pass_hat_k, attempts[ok], sv.n_passed[ok], k)
        excluded = int(attempts.size - at.size)
        at_k[str(k)] = {"value": stats.mean(at), "stderr": stats.stderr(at), "n": int(at.size), "n_excluded": excluded}
        hat_k[str(k)] = {
            "value": stats.mean(hat),
            "stderr": stats.stderr(hat),
            "n": int(hat.size),
            "n_excluded": excluded,
        }
    return at_k, hat_k


def unscorable_reason(sv: SampleValues) -> str | None:
    """Why a metric has no value (no scored sample), e.g. ``all 300 verdicts errored: judge unreachable``;
    None when it has one."""
    if bool(np.any(sv.scored)):
        return None
    if not sv.values.size:
        return "no sample of this task was evaluated"
    if sv.n_not_applicable == sv.values.size:
        return f"not applicable to any of the {sv.values.size} samples (no row gave it anything to check)"
    main = sv.main_error()
    total = sv.n_errored_verdicts
    what = f"all {total} verdict{'s' if total != 1 else ''} errored"
    if main is None:
        return what
    message, count = main
    return f"{what}: {message}" if count == total else f"{what}; most often ({count}): {message}"


@dataclass
class MetricSummary:
    """Figures for one (task, filter, metric), plus what groups combine: the headline stderr (the clustered one
    when a cluster key is set), its degrees of freedom and the matching bootstrap distribution."""

    entry: dict[str, Any]
    scored_values: npt.NDArray[np.float64]
    bootstrap: npt.NDArray[np.float64] | None
    stderr: float | None = None
    df: int = 0


def summarize_metric(
    sv: SampleValues,
    *,
    task: str,
    filter_name: str,
    metric: str,
    higher_is_better: bool,
    error_policy: str,
    repeat_reduction: str,
    repeats: int,
    bootstrap_iters: int,
    seed: int,
    confidence: float = 0.95,
    clusters: Sequence[Any] | npt.NDArray[np.int64] | None = None,
    cluster_key: str | None = None,
) -> MetricSummary:
    """Mean, stderr (ddof=1), t and bootstrap intervals, counts, pass rate, pass@k and clustered stderr."""
    mask = sv.scored
    x = sv.values[mask]
    n_scored = int(x.size)
    m = stats.mean(x)
    se = stats.stderr(x)
    use_bootstrap = bootstrap_iters > 0 and n_scored >= 2
    dist = stats.bootstrap_means(x, bootstrap_iters, task_rng(seed, task)) if use_bootstrap else None
    binary = bool(n_scored > 0 and np.all((x == 0.0) | (x == 1.0)))
    bounds = score_bounds(x)
    ci, ci_method = headline_interval(  # the BCa headline reuses ``dist``: no second set of resamples
        x, binary=binary, iters=bootstrap_iters, rng=task_rng(seed, task), confidence=confidence, dist=dist
    )
    entry: dict[str, Any] = {
        "metric": metric,
        "filter": filter_name,
        "higher_is_better": higher_is_better,
        "mean": m,
        "stderr": se,
        "confidence": confidence,
        "ci": _interval(ci),
        "ci_method": ci_method,
        "ci_t": _interval(clip_interval(stats.t_interval(m, se, n_scored - 1, confidence), bounds)),
        "ci_bootstrap": _interval(
            None if dist is None else clip_interval(stats.percentile_interval(dist, confidence), bounds)
        ),
        "bootstrap_iters": bootstrap_iters,
        "bootstrap_method": (
            stats.bootstrap_method(n_scored, int(np.unique(x).size), bootstrap_iters) if use_bootstrap else None
        ),
        "seed": seed,
        "n_total": int(sv.values.size),
        "n_scored": n_scored,
        "n_errored": int(sv.values.size - n_scored - sv.n_not_applicable),
        "n_errored_verdicts": sv.n_errored_verdicts,
        "n_model_errors": sv.n_model_errors,
        "n_eval_errors": sv.n_eval_errors,
        "unscorable": unscorable_reason(sv),
        "error_policy": error_policy,
        "pass_rate": stats.mean(sv.passed_frac[mask]),
        "n_passed": int(np.count_nonzero(sv.passed_frac[mask] == 1.0)),
        "binary": binary,
        "repeats": repeats,
        "repeat_reduction": repeat_reduction,
        "error_examples": [{"doc_id": d, "error": e} for d, e in sv.errors[:MAX_ERROR_EXAMPLES]],
    }
    if sv.n_not_applicable:  # only where some row had nothing to check: results of other runs keep their bytes
        entry["n_not_applicable"] = sv.n_not_applicable
    if repeats > 1:
        entry["pass_at_k"], entry["pass_hat_k"] = _pass_k_figures(sv, repeats, error_policy)
    if clusters is None:
        return MetricSummary(entry, x, dist, se, n_scored - 1)
    labels: Any = (
        clusters[mask] if isinstance(clusters, np.ndarray) else [c for c, ok in zip(clusters, mask, strict=True) if ok]
    )
    entry["clustered"], cluster_dist = clustered_figures(
        x, labels, cluster_key, bootstrap_iters, task_rng(seed, task, 1), confidence
    )
    # with a cluster key the clustered figures are the headline ones (undefined below two clusters: never
    # the iid stderr in their place, which would understate the uncertainty the key says is there)
    return MetricSummary(entry, x, cluster_dist, entry["clustered"]["stderr"], entry["clustered"]["n_clusters"] - 1)


def clustered_figures(
    x: npt.NDArray[np.float64],
    labels: Sequence[Any],
    key: str | None,
    iters: int,
    rng: np.random.Generator,
    confidence: float,
) -> tuple[dict[str, Any], npt.NDArray[np.float64] | None]:
    """Cluster-robust stderr with its t interval (df = clusters - 1) and a cluster bootstrap interval; and the
    cluster bootstrap distribution of the mean (None when it is not computed)."""
    se, g = stats.clustered_stderr(x, labels) if x.size else (None, 0)
    m = stats.mean(x)
    dist = None
    if g >= 2 and iters > 0:
        sums, sizes = stats.cluster_sums(x, labels)
        dist = stats.bootstrap_ratios(sums, sizes, iters, rng)
    bounds = score_bounds(x)
    ci_t = clip_interval(stats.t_interval(m, se, g - 1, confidence), bounds)
    ci_boot = None if dist is None else clip_interval(stats.percentile_interval(dist, confidence), bounds)
    figures = {
        "key": key,
        "n_clusters": g,
        "stderr": se,
        "ci": _interval(ci_boot or ci_t),
        "ci_method": "cluster_bootstrap" if ci_boot else "cluster_t" if ci_t else None,
        "ci_t": _interval(ci_t),
        "ci_bootstrap": _interval(ci_boot),
    }
    return figures, dist


def cluster_labels(records: Sequence[SampleRecord], key: str) -> list[Any]:
    """Each sample's cluster: ``metadata[key]``, else ``doc[key]``, else its own singleton cluster."""
    labels: list[Any] = []
    for rec in records:
        value = rec.metadata.get(key, rec.doc.get(key, None))
        labels.append(("__sample__", rec.doc_id) if value is None else ("v", repr(value)))
    return labels


def combine_group(
    members: list[tuple[str, MetricSummary]],
    *,
    weighting: str,
    confidence: float,
) -> dict[str, Any]:
    """A group's figure for one metric: weighted mean of subtask means, pooled stderr, stratified bootstrap.

    Each subtask contributes its headline stderr and bootstrap distribution (the clustered ones under a
    cluster key), so a group is never more certain than the tasks it is made of.
    """
    usable = [(t, s) for t, s in members if s.entry["mean"] is not None]
    entry: dict[str, Any] = {
        "weighting": weighting,
        "subtasks": [t for t, _ in members],
        "n_total": sum(s.entry["n_total"] for _, s in members),
        "n_scored": sum(s.entry["n_scored"] for _, s in members),
        "n_errored": sum(s.entry["n_errored"] for _, s in members),
        "mean": None,
        "stderr": None,
        "ci": None,
        "ci_method": None,
        "ci_t": None,
        "ci_bootstrap": None,
        "weights": {},
        "higher_is_better": members[0][1].entry["higher_is_better"],
    }
    if not usable:
        return entry
    w = stats.group_weights([s.entry["n_scored"] for _, s in usable], weighting)
    means = np.array([s.entry["mean"] for _, s in usable])
    entry["weights"] = {t: float(wi) for (t, _), wi in zip(usable, w, strict=True)}
    entry["mean"] = float(np.dot(w, means))
    if all(s.stderr is not None for _, s in usable):
        se = stats.pooled_stderr([s.stderr for _, s in usable if s.stderr is not None], w)
        entry["stderr"] = se
        df = sum(s.df for _, s in usable)
        entry["ci_t"] = _interval(stats.t_interval(entry["mean"], se, df, confidence))
    dists = [s.bootstrap for _, s in usable]
    if all(d is not None for d in dists):
        combined = np.sum([wi * d for wi, d in zip(w, dists, strict=True) if d is not None], axis=0)
        entry["ci_bootstrap"] = _interval(stats.percentile_interval(combined, confidence))
    if entry["ci_bootstrap"] is not None or entry["ci_t"] is not None:  # the stratified bootstrap leads when there
        bounded = all(0.0 <= s.entry["mean"] <= 1.0 for _, s in usable)
        for name in ("ci_t", "ci_bootstrap"):
            if entry[name] is not None and bounded:
                entry[name] = _interval(clip_interval((entry[name][0], entry[name][1])))
        entry["ci"] = entry["ci_bootstrap"] or entry["ci_t"]
        entry["ci_method"] = "stratified_bootstrap" if entry["ci_bootstrap"] else "pooled_t"
    return entry
