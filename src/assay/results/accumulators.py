"""The accumulators of a results scan: per (filter, metric) and per task, numbers appended one record at a time
into arrays, and finished into columns in doc_id order (:class:`TaskColumns`). See :mod:`assay.results.columns`
for the scan that feeds them."""

from __future__ import annotations

import hashlib
import heapq
import json
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from assay.record import TaskInfo
from assay.results.aggregate import (
    MAX_ERROR_EXAMPLES,
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

    __slots__ = ("attempts", "counts", "examples", "frac", "n_err", "n_model", "n_na", "passed", "values")

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

    def finish(self, order: Int64Array, doc_ids: Int64Array) -> SampleValues:
        def col(name: str, dtype: Any) -> Any:
            return column(getattr(self, name), dtype)[order]

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


def ints(a: array[int]) -> Int64Array:
    return np.frombuffer(a, dtype=np.int64).copy() if len(a) else np.zeros(0, dtype=np.int64)


def column(a: array[Any], dtype: Any) -> Any:
    """An array.array as a numpy array of ``dtype`` (sharing its memory: index it to copy)."""
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


def finish_task(acc: TaskAcc) -> TaskColumns:
    doc_ids_file = column(acc.doc_ids, np.int64)
    order = np.argsort(doc_ids_file, kind="stable")
    doc_ids = doc_ids_file[order]
    cols = TaskColumns(
        name=acc.info.name if acc.info else "",
        positions=column(acc.positions, np.int64)[order],
        doc_ids=doc_ids,
        keys=list(acc.keys),
        values={k: acc.metrics[k].finish(order, doc_ids) for k in acc.keys},
        n_model_errors=acc.n_model_errors,
        model_error_example=acc.model_error_example[2] if acc.model_error_example else None,
    )
    if acc.cluster_key:
        cols.clusters = column(acc.cluster_codes, np.int64)[order]
    if acc.with_ids:
        cols.id_hashes = ints(acc.id_hashes)[order]
        cols.doc_hashes = ints(acc.doc_hashes)[order]
        cols.sample_ids = StringColumn(bytes(acc.ids), ints(acc.id_ends)).take(order)
    return cols
