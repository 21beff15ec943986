"""The accumulators of a results scan: per (filter, metric) and per task, numbers appended one record at a time
into arrays, merged in order when several processes scanned consecutive ranges, and finished into columns in doc_id
order (:class:`TaskColumns`). See :mod:`assay.results.columns` for the scan that feeds them."""

from __future__ import annotations

import hashlib
import heapq
import json
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.record import TaskInfo
from assay.results.aggregate import (
    MAX_DISTINCT_ERRORS,
    MAX_ERROR_EXAMPLES,
    OTHER_ERRORS,
    SampleValues,
    count_error,
)

Int64Array = npt.NDArray[np.int64]
EXAMPLES_KEPT = max(MAX_ERROR_EXAMPLES, 5)  # first errors (by doc_id) kept per column, for messages


def hash64(text: str) -> int:
    """A 64-bit hash of a string (blake2b), stable across processes."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def all_distinct(keys: Int64Array) -> bool:
    """Whether no two of ``keys`` are equal: sorted and compared with their neighbours. ``np.unique`` (numpy 2.4
    hashes) took 0.63 s over a million distinct 64-bit hashes; this takes 0.01 s."""
    ordered = np.sort(keys)
    return not bool(np.any(ordered[1:] == ordered[:-1]))


_DOC_JSON = json.JSONEncoder(ensure_ascii=False, default=str).encode


def doc_hash64(doc: Any) -> int:
    """A 64-bit hash of a doc's JSON text (equal docs, equal hashes: what pairs two runs' samples by input). The
    compact text json's C encoder writes, not lm-eval's indented one: Python's indenting encoder costs 3x as much."""
    text = _DOC_JSON(doc)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little", signed=True)


class MetricAcc:
    """One (filter, metric) column while scanning (file order)."""

    __slots__ = ("attempts", "counts", "examples", "frac", "merged", "n_err", "n_model", "n_na", "passed", "values")

    def __init__(self) -> None:
        self.values = array("d")
        self.frac = array("d")
        self.attempts = array("q")
        self.passed = array("q")
        self.n_err = 0
        self.n_model = 0
        self.n_na = 0  # samples the metric is not applicable to (no value, no error)
        self.examples: list[tuple[int, int, str]] = []  # max-heap (negated) of the first errors by (doc_id, seq)
        self.counts: dict[str, int] = {}
        self.merged: list[MetricAcc] = []  # columns of later records merged in, joined once when finished

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
        elif value != value:  # no value and no error: not applicable
            self.n_na += 1
        if first is not None:
            item = (-doc_id, -seq, first)
            if len(self.examples) < EXAMPLES_KEPT:
                heapq.heappush(self.examples, item)
            elif item > self.examples[0]:
                heapq.heapreplace(self.examples, item)

    def merge(self, later: MetricAcc, seq_offset: int) -> bool:
        """Append the column ``later`` built from the records after this one's (their scan order numbers start
        at ``seq_offset``); False when its error counts were capped (a merge would not count them exactly)."""
        if OTHER_ERRORS in later.counts:
            return False
        # kept, not appended: extending the growing arrays at each of hundreds of merges copies them each time
        self.merged += [later, *later.merged]
        later.merged = []
        self.n_err += later.n_err
        self.n_model += later.n_model
        self.n_na += later.n_na
        for message, n in later.counts.items():
            if message in self.counts or len(self.counts) < MAX_DISTINCT_ERRORS:
                self.counts[message] = self.counts.get(message, 0) + n
            else:
                self.counts[OTHER_ERRORS] = self.counts.get(OTHER_ERRORS, 0) + n
        for neg_doc, neg_seq, message in later.examples:
            item = (neg_doc, neg_seq - seq_offset, message)
            if len(self.examples) < EXAMPLES_KEPT:
                heapq.heappush(self.examples, item)
            elif item > self.examples[0]:
                heapq.heapreplace(self.examples, item)
        return True

    def finish(self, order: Int64Array, doc_ids: Int64Array) -> SampleValues:
        parts = [self, *self.merged]

        def col(name: str, dtype: Any) -> Any:
            return joined([getattr(part, name) for part in parts], dtype)[order]

        errors = [(-d, msg) for d, _, msg in sorted(self.examples, reverse=True)]
        return SampleValues(
            doc_ids,
            col("values", np.float64),
            col("frac", np.float64),
            col("attempts", np.int64),
            col("passed", np.int64),
            self.n_err,
            errors,
            self.n_model,
            self.counts,
            self.n_na,
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
class TaskAcc:
    info: TaskInfo | None
    keys: list[tuple[str, str]]
    with_ids: bool
    cluster_key: str | None
    positions: array[int] = field(default_factory=lambda: array("q"))
    doc_ids: array[int] = field(default_factory=lambda: array("q"))
    metrics: dict[tuple[str, str], MetricAcc] = field(default_factory=dict)
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
    plan: list[tuple[str, list[tuple[str, MetricAcc]]]] | None = None
    # positions, doc_ids and cluster codes of later records merged in, joined once when finished
    merged: list[tuple[Int64Array, Int64Array, Int64Array | None]] = field(default_factory=list)
    n_merged: int = 0

    def n_records(self) -> int:
        """Records taken in: scanned, and merged."""
        return len(self.doc_ids) + self.n_merged

    def merge(self, later: TaskAcc, seq_offset: int, pos_offset: int) -> bool:
        """Append what ``later`` gathered from the records after this one's (scan order numbers from
        ``seq_offset``, source positions from ``pos_offset``); False when that cannot be done exactly."""
        if later.keys != self.keys or later.with_ids != self.with_ids or later.cluster_key != self.cluster_key:
            return False
        if later.merged:  # a merged partial merged again: its own parts must be shifted too (not made today)
            return False
        for key in self.keys:
            if not self.metrics[key].merge(later.metrics[key], seq_offset):
                return False
        before = self.n_records()
        clusters = None
        self.n_model_errors += later.n_model_errors
        if later.model_error_example is not None:
            doc_id, seq, message = later.model_error_example
            item = (doc_id, seq + seq_offset, message)
            if self.model_error_example is None or item < self.model_error_example:
                self.model_error_example = item
        if self.cluster_key:  # codes by first appearance, as one scan numbers them; -1 - n: the n-th sample alone
            names = list(later.cluster_index)
            codes = [self.cluster_index.setdefault(name, len(self.cluster_index)) for name in names]
            clusters = np.fromiter(
                (codes[c] if c >= 0 else c - before for c in later.cluster_codes), np.int64, len(later.cluster_codes)
            )
        # kept, not appended: extending the growing arrays at each of hundreds of merges copies them each time
        self.merged.append((ints(later.positions) + pos_offset, ints(later.doc_ids), clusters))
        self.n_merged += len(later.doc_ids)
        if self.with_ids:
            self.id_hashes.extend(later.id_hashes)
            self.doc_hashes.extend(later.doc_hashes)
            self.id_ends.extend(e + len(self.ids) for e in later.id_ends)
            self.ids += later.ids
        return True


def ints(a: array[int]) -> Int64Array:
    return np.frombuffer(a, dtype=np.int64).copy() if len(a) else np.zeros(0, dtype=np.int64)


def joined(parts: Sequence[Any], dtype: Any) -> Any:
    """Arrays (array.array or numpy) of one dtype as one new numpy array, in order."""
    arrays = [np.frombuffer(a, dtype=dtype) if isinstance(a, array) else a for a in parts if len(a)]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)


def finish_task(acc: TaskAcc) -> TaskColumns:
    doc_ids_file = joined([acc.doc_ids, *(d for _, d, _ in acc.merged)], np.int64)
    order = np.argsort(doc_ids_file, kind="stable")
    doc_ids = doc_ids_file[order]
    cols = TaskColumns(
        name=acc.info.name if acc.info else "",
        positions=joined([acc.positions, *(p for p, _, _ in acc.merged)], np.int64)[order],
        doc_ids=doc_ids,
        keys=list(acc.keys),
        values={k: acc.metrics[k].finish(order, doc_ids) for k in acc.keys},
        n_model_errors=acc.n_model_errors,
        model_error_example=acc.model_error_example[2] if acc.model_error_example else None,
    )
    if acc.cluster_key:
        cols.clusters = joined([acc.cluster_codes, *(c for _, _, c in acc.merged if c is not None)], np.int64)[order]
    if acc.with_ids:
        cols.id_hashes = ints(acc.id_hashes)[order]
        cols.doc_hashes = ints(acc.doc_hashes)[order]
        cols.sample_ids = StringColumn(bytes(acc.ids), ints(acc.id_ends)).take(order)
    return cols
