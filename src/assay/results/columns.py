"""A run's per-sample figures as columns, built in one streamed pass over its records (memory flat in run size).

Results, statistics and comparisons need, per task and (filter, metric), only numbers per sample: the value,
pass share, attempts and passes (see :func:`assay.results.aggregate.record_value`), plus each sample's doc_id,
position in ``samples.jsonl``, cluster and, for comparisons, hashes of its sample id and input. A scan keeps
those in numpy arrays, never the records, so a run of ten million samples costs a few hundred bytes a sample.
Columns come out in doc_id order (ties in the order written), the order of the list-based computation.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.errors import AssayError
from assay.gcpause import gc_paused
from assay.record import RunManifest, TaskInfo
from assay.results.aggregate import MAX_ERROR_EXAMPLES, SampleValues, count_error, record_error, record_value
from assay.results.sources import (  # re-exported: the sources used to live here
    FileSource,
    ListSource,
    RecordDict,
    RecordSource,
    SampleLogSink,
    SamplesRewritten,
    StreamSource,
)

Int64Array = npt.NDArray[np.int64]
EXAMPLES_KEPT = max(MAX_ERROR_EXAMPLES, 5)  # first errors (by doc_id) kept per column, for messages


__all__ = [
    "FileSource",
    "ListSource",
    "RecordDict",
    "RecordSource",
    "SampleLogSink",
    "SamplesRewritten",
    "StreamSource",
]


def hash64(text: str) -> int:
    """A 64-bit hash of a string (blake2b), stable across processes."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def doc_hash64(doc: Any) -> int:
    """The first 8 bytes of lm-eval's ``doc_hash`` (sha256 of the doc as indented JSON) as an int64."""
    from assay.results.schema import indented_json

    text = indented_json(doc)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little", signed=True)


class _MetricAcc:
    """One (filter, metric) column while scanning (file order)."""

    __slots__ = ("attempts", "counts", "examples", "frac", "n_err", "n_model", "passed", "values")

    def __init__(self) -> None:
        self.values = array("d")
        self.frac = array("d")
        self.attempts = array("q")
        self.passed = array("q")
        self.n_err = 0
        self.n_model = 0
        self.examples: list[tuple[int, int, str]] = []  # max-heap (negated) of the first errors by (doc_id, seq)
        self.counts: dict[str, int] = {}

    def add(self, seq: int, doc_id: int, rv: tuple[Any, ...]) -> None:
        value, frac, att, npass, n_err, n_model, first, messages = rv
        self.values.append(value)
        self.frac.append(frac)
        self.attempts.append(att)
        self.passed.append(npass)
        if n_err:
            self.n_err += n_err
            self.n_model += n_model
            for message in messages:
                count_error(self.counts, message)
        if first is not None:
            item = (-doc_id, -seq, first)
            if len(self.examples) < EXAMPLES_KEPT:
                heapq.heappush(self.examples, item)
            elif item > self.examples[0]:
                heapq.heapreplace(self.examples, item)

    def finish(self, order: Int64Array, doc_ids: Int64Array) -> SampleValues:
        def col(a: array[Any], dtype: Any) -> Any:
            return np.frombuffer(a, dtype=dtype)[order] if len(a) else np.zeros(0, dtype=dtype)

        errors = [(-d, msg) for d, _, msg in sorted(self.examples, reverse=True)]
        return SampleValues(
            doc_ids,
            col(self.values, np.float64),
            col(self.frac, np.float64),
            col(self.attempts, np.int64),
            col(self.passed, np.int64),
            self.n_err,
            errors,
            self.n_model,
            self.counts,
        )


@dataclass
class TaskColumns:
    """One task's samples as columns in doc_id order."""

    name: str
    positions: Int64Array  # where each sample's record is in its source
    doc_ids: Int64Array
    keys: list[tuple[str, str]]  # (filter, metric) in the order results list them
    values: dict[tuple[str, str], SampleValues]
    n_model_errors: int = 0  # samples with a failed model request
    model_error_example: str | None = None
    clusters: Int64Array | None = None  # cluster code per sample (with a cluster key)
    id_hashes: Int64Array | None = None  # hash of the sample id (with ids)
    doc_hashes: Int64Array | None = None  # first 8 bytes of the doc hash (with ids)
    sample_ids: StringColumn | None = None

    def __len__(self) -> int:
        return int(self.doc_ids.size)


@dataclass
class StringColumn:
    """Many short strings in one UTF-8 buffer and an offsets array (no Python object per string)."""

    data: bytes
    ends: Int64Array

    def __getitem__(self, i: int) -> str:
        start = int(self.ends[i - 1]) if i > 0 else 0
        return self.data[start : int(self.ends[i])].decode("utf-8")

    def __len__(self) -> int:
        return int(self.ends.size)

    def take(self, order: Int64Array) -> StringColumn:
        """The strings at ``order`` as a new column."""
        parts = bytearray()
        ends = np.empty(order.size, dtype=np.int64)
        for j, i in enumerate(order):
            start = int(self.ends[i - 1]) if i > 0 else 0
            parts += self.data[start : int(self.ends[i])]
            ends[j] = len(parts)
        return StringColumn(bytes(parts), ends)


@dataclass
class _TaskAcc:
    info: TaskInfo | None
    keys: list[tuple[str, str]]
    with_ids: bool
    cluster_key: str | None
    positions: array[int] = field(default_factory=lambda: array("q"))
    doc_ids: array[int] = field(default_factory=lambda: array("q"))
    metrics: dict[tuple[str, str], _MetricAcc] = field(default_factory=dict)
    n_model_errors: int = 0
    model_error_example: tuple[int, int, str] | None = None
    cluster_codes: array[int] = field(default_factory=lambda: array("q"))
    cluster_index: dict[str, int] = field(default_factory=dict)
    id_hashes: array[int] = field(default_factory=lambda: array("q"))
    doc_hashes: array[int] = field(default_factory=lambda: array("q"))
    ids: bytearray = field(default_factory=bytearray)
    id_ends: array[int] = field(default_factory=lambda: array("q"))
    filter_names: set[str] = field(default_factory=set)  # of filters and metrics: known (names of the columns)
    metric_names: set[str] = field(default_factory=set)
    plan: list[tuple[str, list[tuple[str, _MetricAcc]]]] | None = None


def _declared_keys(info: TaskInfo) -> tuple[list[str], list[str]]:
    return list(info.filters), [m.name for m in info.metrics]


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
    accs: dict[str, _TaskAcc] = {}
    for info in manifest.tasks:
        keys = [(f, m) for f in filters[info.name] for m in metrics[info.name]]
        acc = accs[info.name] = _TaskAcc(info, keys, with_ids, cluster_key)
        acc.metrics = {k: _MetricAcc() for k in keys}
        acc.filter_names, acc.metric_names = set(filters[info.name]), set(metrics[info.name])
    state = _ScanState(error_policy == "as_zero", repeat_reduction, reductions, cluster_key, with_ids, sample_logs)
    with gc_paused():
        _feed(source, state, observers, accs, filters, metrics)
    if state.grown:
        return ScanResult({}, state.unknown), True
    out = {}
    for name, acc in accs.items():
        acc.keys = [(f, m) for f in filters[name] for m in metrics[name]]
        out[name] = _finish(acc)
    return ScanResult(out, state.unknown), False


def _feed(
    source: RecordSource,
    state: _ScanState,
    observers: Sequence[Callable[[RecordDict], None]],
    accs: dict[str, _TaskAcc],
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
        accs: dict[str, _TaskAcc],
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
                acc.metrics[k] = _MetricAcc()
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


def _ints(a: array[int]) -> Int64Array:
    return np.frombuffer(a, dtype=np.int64).copy() if len(a) else np.zeros(0, dtype=np.int64)


def _finish(acc: _TaskAcc) -> TaskColumns:
    doc_ids_file = _ints(acc.doc_ids)
    order = np.argsort(doc_ids_file, kind="stable")
    doc_ids = doc_ids_file[order]
    cols = TaskColumns(
        name=acc.info.name if acc.info else "",
        positions=_ints(acc.positions)[order],
        doc_ids=doc_ids,
        keys=list(acc.keys),
        values={k: acc.metrics[k].finish(order, doc_ids) for k in acc.keys},
        n_model_errors=acc.n_model_errors,
        model_error_example=acc.model_error_example[2] if acc.model_error_example else None,
    )
    if acc.cluster_key:
        cols.clusters = _ints(acc.cluster_codes)[order]
    if acc.with_ids:
        cols.id_hashes = _ints(acc.id_hashes)[order]
        cols.doc_hashes = _ints(acc.doc_hashes)[order]
        cols.sample_ids = StringColumn(bytes(acc.ids), _ints(acc.id_ends)).take(order)
    return cols


def finite_or_none(value: float) -> float | None:
    """A float for JSON: None when NaN or infinite."""
    return value if math.isfinite(value) else None
