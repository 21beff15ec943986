"""Where a results scan reads records from: a list in memory, a run folder's ``samples.jsonl`` through its index
or as a stream indexed while parsed; and what takes each scanned record for the sample logs. Re-exported by
:mod:`assay.results.columns`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from assay.record import SampleRecord

Int64Array = npt.NDArray[np.int64]

RecordDict = dict[str, Any]  # a record as its samples.jsonl line parses to (the fields of SampleRecord)


class RecordSource(Protocol):
    """Records that can be read again: all of them in a stable order, or some by position."""

    def scan(self) -> Iterator[tuple[int, RecordDict]]:
        """(position, record dict) for every record, in a stable order."""
        ...

    def fetch(self, positions: Int64Array) -> Iterator[tuple[int, SampleRecord]]:
        """(position, record) for the records at ``positions``, in that order."""
        ...

    def explain(self, position: int) -> None:
        """Raise a DataError naming what is wrong with the record at ``position`` (nothing when it is valid)."""
        ...


class ListSource:
    """Records already in memory (the Python API's ``build_results``)."""

    def __init__(self, records: Iterable[SampleRecord]) -> None:
        self.records = records if isinstance(records, list) else list(records)

    def scan(self) -> Iterator[tuple[int, RecordDict]]:
        return ((i, rec.model_dump()) for i, rec in enumerate(self.records))

    def fetch(self, positions: Int64Array) -> Iterator[tuple[int, SampleRecord]]:
        return ((int(i), self.records[int(i)]) for i in positions)

    def explain(self, position: int) -> None:
        return None  # validated models


class FileSource:
    """A run folder's ``samples.jsonl`` through its index: lines are parsed to dicts as they are read, then
    dropped (no SampleRecord is built: a scan reads only the fields it needs)."""

    def __init__(self, index: Any) -> None:
        self.index = index  # assay.store.sampleindex.SampleIndex

    def scan(self) -> Iterator[tuple[int, RecordDict]]:
        from assay.store.sampleindex import iter_dicts

        return iter_dicts(self.index)

    def fetch(self, positions: Int64Array) -> Iterator[tuple[int, SampleRecord]]:
        from assay.store.sampleindex import iter_indexed

        return iter_indexed(self.index, positions)

    def explain(self, position: int) -> None:
        from assay.store.sampleindex import iter_indexed

        for _ in iter_indexed(self.index, np.asarray([position], dtype=np.int64)):
            pass  # parsing the line as a SampleRecord raises the DataError that names file, line and key


class SamplesRewritten(Exception):
    """A :class:`StreamSource` scan read a sample written twice: its figures would count both copies."""


class StreamSource:
    """A run folder's ``samples.jsonl`` read without an index made beforehand: each scan indexes the lines as it
    parses them (:class:`assay.store.sampleindex.SampleStream`); valid as a source when no sample was written twice
    (``stream.rewritten`` after a scan), else read through ``FileSource(stream.index())``."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream  # assay.store.sampleindex.SampleStream

    def scan(self) -> Iterator[tuple[int, RecordDict]]:
        yield from self.stream
        if self.stream.rewritten:
            raise SamplesRewritten(f"{self.stream.path}: a sample was written twice")

    def fetch(self, positions: Int64Array) -> Iterator[tuple[int, SampleRecord]]:
        from assay.store.sampleindex import iter_indexed

        return iter_indexed(self.stream.index(), positions)

    def explain(self, position: int) -> None:
        self.stream.explain(position)


class SampleLogSink(Protocol):
    """Takes each scanned record with its metric values per filter (the sample logs are written from these)."""

    def reset(self) -> None:
        """Forget everything added: the scan starts again."""
        ...

    def add(self, task: str, rec: RecordDict, per_filter: list[tuple[str, list[tuple[str, float]]]]) -> None:
        """One record of ``task`` (in scan order) and, per filter of the task, its metrics that have a value."""
        ...
