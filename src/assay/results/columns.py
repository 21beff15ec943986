"""A run's per-sample figures as columns, built in one streamed pass over its records (memory flat in run size).

Results, statistics and comparisons need, per task and (filter, metric), only numbers per sample: the value,
pass share, attempts and passes (see :func:`assay.results.aggregate.record_value`), plus each sample's doc_id,
position in ``samples.jsonl``, cluster and, for comparisons, hashes of its sample id and input. A scan keeps
those in numpy arrays, never the records, so a run of ten million samples costs a few hundred bytes a sample.
Columns come out in doc_id order (ties in the order written), the order of the list-based computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assay.errors import AssayError
from assay.gcpause import gc_paused
from assay.record import RunManifest, TaskInfo
from assay.results.accumulators import MetricAcc, TaskAcc, TaskColumns, doc_hash64, finish_task, hash64
from assay.results.aggregate import record_error, record_value
from assay.results.sources import RecordDict, RecordSource, SampleLogSink


def _declared_keys(info: TaskInfo) -> tuple[list[str], list[str]]:
    return list(info.filters), [m.name for m in info.metrics]


def _new_accs(
    manifest: RunManifest,
    filters: dict[str, list[str]],
    metrics: dict[str, list[str]],
    with_ids: bool,
    cluster_key: str | None,
) -> dict[str, TaskAcc]:
    """Empty accumulators for every task of the manifest, a column per (filter, metric) known so far."""
    accs: dict[str, TaskAcc] = {}
    for info in manifest.tasks:
        keys = [(f, m) for f in filters[info.name] for m in metrics[info.name]]
        acc = accs[info.name] = TaskAcc(info, keys, with_ids, cluster_key)
        acc.metrics = {k: MetricAcc() for k in keys}
        acc.filter_names, acc.metric_names = set(filters[info.name]), set(metrics[info.name])
    return accs


@dataclass
class ScanResult:
    """Every task's columns, and how many records named a task the manifest does not have."""

    tasks: dict[str, TaskColumns]
    unknown: dict[str, int]


def scan(
    manifest: RunManifest,
    source: RecordSource,
    *,
    error_policy: str,
    repeat_reduction: str = "mean",
    reductions: dict[str, str] | None = None,
    cluster_key: str | None = None,
    with_ids: bool = False,
    observers: Sequence[Callable[[RecordDict], None]] = (),
    sample_logs: SampleLogSink | None = None,
) -> ScanResult:
    """One pass over the records (two when a record has a filter or metric no earlier record of its task had).

    ``observers`` see every record dict (of any task) once; ``sample_logs`` gets every record of a known task with
    its values per filter (reset before a second pass)."""
    filters: dict[str, list[str]] = {}
    metrics: dict[str, list[str]] = {}
    for info in manifest.tasks:
        filters[info.name], metrics[info.name] = _declared_keys(info)
    while True:
        if sample_logs is not None:
            sample_logs.reset()
        result, grown = _scan_once(
            manifest,
            source,
            filters,
            metrics,
            error_policy=error_policy,
            repeat_reduction=repeat_reduction,
            reductions=reductions or {},
            cluster_key=cluster_key,
            with_ids=with_ids,
            observers=observers,
            sample_logs=sample_logs,
        )
        if not grown:
            return result
        observers = ()  # they saw every record in the first pass


def _scan_once(
    manifest: RunManifest,
    source: RecordSource,
    filters: dict[str, list[str]],
    metrics: dict[str, list[str]],
    *,
    error_policy: str,
    repeat_reduction: str,
    reductions: dict[str, str],
    cluster_key: str | None,
    with_ids: bool,
    observers: Sequence[Callable[[RecordDict], None]],
    sample_logs: SampleLogSink | None,
) -> tuple[ScanResult, bool]:
    accs = _new_accs(manifest, filters, metrics, with_ids, cluster_key)
    state = _ScanState(error_policy == "as_zero", repeat_reduction, reductions, cluster_key, with_ids, sample_logs)
    with gc_paused():
        _feed(source, state, observers, accs, filters, metrics)
    if state.grown:
        return ScanResult({}, state.unknown), True
    out = {}
    for name, acc in accs.items():
        acc.keys = [(f, m) for f in filters[name] for m in metrics[name]]
        out[name] = finish_task(acc)
    return ScanResult(out, state.unknown), False


@dataclass
class ScanPartial:
    """What a pass over some of the records gathered, columns not yet finished: partials of consecutive runs of
    records merge, in order, into what one pass over them all builds (:func:`merge_partials`)."""

    accs: dict[str, TaskAcc]
    unknown: dict[str, int]
    seq: int  # records of known tasks passed
    declared: bool  # every filter and metric found was declared in run.json (else the partial cannot merge)


def scan_partial(
    manifest: RunManifest,
    source: RecordSource,
    *,
    error_policy: str,
    repeat_reduction: str = "mean",
    reductions: dict[str, str] | None = None,
    cluster_key: str | None = None,
    observers: Sequence[Callable[[RecordDict], None]] = (),
    sample_logs: SampleLogSink | None = None,
) -> ScanPartial:
    """One pass over some records (e.g. a range of ``samples.jsonl``, in another process) as :func:`scan` makes it."""
    filters = {info.name: _declared_keys(info)[0] for info in manifest.tasks}
    metrics = {info.name: _declared_keys(info)[1] for info in manifest.tasks}
    accs = _new_accs(manifest, filters, metrics, False, cluster_key)
    state = _ScanState(error_policy == "as_zero", repeat_reduction, reductions or {}, cluster_key, False, sample_logs)
    with gc_paused():
        _feed(source, state, observers, accs, filters, metrics)
    declared = not state.grown and all((filters[i.name], metrics[i.name]) == _declared_keys(i) for i in manifest.tasks)
    for acc in accs.values():
        acc.plan = None  # refers to the columns: not needed past the pass
    return ScanPartial(accs, state.unknown, state.seq, declared)


def merge_partials(partials: Sequence[ScanPartial], positions: Sequence[int]) -> ScanResult | None:
    """The columns one pass over the partials' records, in order, would build; ``positions[i]``: how many
    positions the sources before partial ``i`` yielded. None when a partial cannot be merged exactly (a metric
    run.json does not declare, more distinct error messages than are counted one by one): scan serially."""
    if not partials or not all(p.declared for p in partials):
        return None
    first = partials[0]
    unknown = dict(first.unknown)
    seq = first.seq
    for partial, pos_offset in zip(partials[1:], positions[1:], strict=True):
        for name, acc in first.accs.items():
            if not acc.merge(partial.accs[name], seq, pos_offset):
                return None
        for task, n in partial.unknown.items():
            unknown[task] = unknown.get(task, 0) + n
        seq += partial.seq
        partial.accs = {}  # merged: its arrays can go (the merge holds about one copy of the columns, not two)
    return ScanResult({name: finish_task(acc) for name, acc in first.accs.items()}, unknown)


def _feed(
    source: RecordSource,
    state: _ScanState,
    observers: Sequence[Callable[[RecordDict], None]],
    accs: dict[str, TaskAcc],
    filters: dict[str, list[str]],
    metrics: dict[str, list[str]],
) -> None:
    for pos, rec in source.scan():
        try:
            for observe in observers:
                observe(rec)
            state.add(pos, rec, accs, filters, metrics)
        except AssayError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, IndexError):
            source.explain(pos)  # a malformed record: the error names file, line and key
            raise


class _ScanState:
    """What one pass carries from record to record."""

    def __init__(
        self,
        as_zero: bool,
        repeat_reduction: str,
        reductions: dict[str, str],
        cluster_key: str | None,
        with_ids: bool,
        sample_logs: SampleLogSink | None,
    ) -> None:
        self.as_zero = as_zero
        self.repeat_reduction = repeat_reduction
        self.reductions = reductions
        self.cluster_key = cluster_key
        self.with_ids = with_ids
        self.sample_logs = sample_logs
        self.unknown: dict[str, int] = {}
        self.grown = False
        self.seq = 0

    def add(
        self,
        pos: int,
        rec: RecordDict,
        accs: dict[str, TaskAcc],
        filters: dict[str, list[str]],
        metrics: dict[str, list[str]],
    ) -> None:
        task = rec["task"]
        acc = accs.get(task)
        if acc is None:
            self.unknown[task] = self.unknown.get(task, 0) + 1
            return
        task_filters, task_metrics = filters[task], metrics[task]
        rec_filters = rec.get("filters") or {}
        known = rec_filters.keys() <= acc.filter_names  # set operations in C: the names of most records are known
        if known:
            for fr in rec_filters.values():
                if not (fr.get("verdicts") or {}).keys() <= acc.metric_names:
                    known = False
                    break
        if not known:  # a filter or metric run.json does not declare: found in records
            added = False
            for fname, fr in rec_filters.items():
                if fname not in task_filters:
                    task_filters.append(fname)
                    added = True
                for mname in fr.get("verdicts") or ():
                    if mname not in task_metrics:
                        task_metrics.append(mname)
                        added = True
            acc.filter_names, acc.metric_names = set(task_filters), set(task_metrics)
            if added:
                self.grown = self.grown or bool(len(acc.positions))
                acc.plan = None
        if self.grown:  # columns of earlier records would miss the new key: finish reading names, then scan again
            return
        plan = acc.plan
        if plan is None:  # each filter with its metrics' columns, in the order of the columns and sample logs
            for k in [(f, m) for f in task_filters for m in task_metrics if (f, m) not in acc.metrics]:
                acc.keys.append(k)
                acc.metrics[k] = MetricAcc()
            plan = acc.plan = [(f, [(m, acc.metrics[(f, m)]) for m in task_metrics]) for f in task_filters]
        doc_id = int(rec["doc_id"])
        acc.positions.append(pos)
        acc.doc_ids.append(doc_id)
        reduction = self.reductions.get(task, self.repeat_reduction)
        seq, as_zero = self.seq, self.as_zero
        logs = self.sample_logs
        per_filter: list[tuple[str, list[tuple[str, float]]]] = []
        majority = reduction == "majority"
        for fname, columns in plan:
            present: list[tuple[str, float]] = []
            fr = rec_filters.get(fname)
            by_metric = (fr.get("verdicts") or {}) if fr is not None else {}
            for mname, col in columns:
                verdicts = by_metric.get(mname)
                if verdicts and len(verdicts) == 1:  # one judged repeat (most records): record_value's result, inline
                    v = verdicts[0]
                    score = v.get("score")
                    if score is not None and v.get("error") is None:
                        ok = bool(v.get("passed", False))
                        value = (1.0 if ok else 0.0) if majority else float(score)
                        col.values.append(value)
                        col.frac.append(1.0 if ok else 0.0)
                        col.attempts.append(1)
                        col.passed.append(ok)
                        if logs is not None:
                            present.append((mname, value))
                        continue
                rv = record_value(rec, fname, mname, as_zero=as_zero, repeat_reduction=reduction)
                col.add(seq, doc_id, rv)
                if logs is not None and rv[0] == rv[0]:  # not NaN: the metric has a value in the sample log
                    present.append((mname, rv[0]))
            per_filter.append((fname, present))
        if logs is not None:
            logs.add(task, rec, per_filter)
        error = record_error(rec)
        if error:
            acc.n_model_errors += 1
            item = (doc_id, seq, f"{rec['sample_id']}: {error}")
            if acc.model_error_example is None or item < acc.model_error_example:
                acc.model_error_example = item
        if self.cluster_key:
            cluster_key = self.cluster_key
            value = (rec.get("metadata") or {}).get(cluster_key, rec["doc"].get(cluster_key, None))
            if value is None:
                acc.cluster_codes.append(-1 - len(acc.cluster_codes))  # its own cluster
            else:
                acc.cluster_codes.append(acc.cluster_index.setdefault(repr(value), len(acc.cluster_index)))
        if self.with_ids:
            sample_id = rec["sample_id"]
            acc.id_hashes.append(hash64(sample_id))
            acc.doc_hashes.append(doc_hash64(rec["doc"]))
            acc.ids += sample_id.encode("utf-8")
            acc.id_ends.append(len(acc.ids))
        self.seq = seq + 1


def finite_or_none(value: float) -> float | None:
    """A float for JSON: None when NaN or infinite."""
    return value if math.isfinite(value) else None
