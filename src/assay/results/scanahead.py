"""The results scan of an offline run made while it scores: each chunk's records are scanned where they were scored,
still in memory (partial columns, run figures, sample-log spools), and the parts merge in the order written, so
that ``write_results`` need not read ``samples.jsonl`` back and parse every line again.

Exact, not close: a scan of the records as they are read back builds the same results, byte for byte (a test
proves it). A record holds what its line reads back as, except where a value is not made of JSON's own types (a
date, a tuple, a numpy number in a doc or an evaluator's details): such a record is scanned as parsed from its own
line. Whenever the parts do not make the whole run (a resume, a chunk scored elsewhere, a merge that cannot be
exact), :meth:`ScanAhead.result` gives None and the results scan the file as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pydantic_core

from assay.jsonfast import loads
from assay.record import RunManifest
from assay.results.accumulators import Int64Array, all_distinct, finish_task
from assay.results.columns import ScanPartial, ScanResult, scan_partial
from assay.results.runfigures import RunFigures
from assay.results.samplelog import SampleLogSpool, SpoolFiles
from assay.store.sampleindex import SAMPLES

_SCALARS = frozenset({str, int, float, bool, type(None)})
_STR = frozenset({str})


def plain(value: Any) -> bool:
    """Whether ``value`` is made of JSON's own types only (dicts with str keys, lists, str, int, float, bool,
    None): what its JSON reads back as itself. NaN and infinities read back too (samples.jsonl writes them).
    The types of a flat dict's keys and values are compared in C (``issuperset`` over ``map``)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        values = value.values()
        return _STR.issuperset(map(type, value)) and (_SCALARS.issuperset(map(type, values)) or all(map(plain, values)))
    if kind is list:
        return _SCALARS.issuperset(map(type, value)) or all(map(plain, value))
    return False


_DETAIL_KEYS = frozenset({"judges", "judge", "mode", "stats", "nrefs"})  # what a results scan reads in details


def reads_back(rec: dict[str, Any], plain_gen: Any = None) -> bool:
    """Whether the values of an offline record (as :func:`assay.runner.offline.score_records` makes it) that a
    results scan reads are what the record's line reads back as. The rest is made of exact types by construction
    (names, ids, the rendered prompt, timings, a Response's and a Verdict's fields) or not read (a response's
    metadata, details without judge calls, pairwise or corpus figures). ``plain_gen``: generation parameters
    known to be plain (a chunk's records share one dict)."""
    doc, target, metadata, gen = rec["doc"], rec["target"], rec["metadata"], rec["gen_kwargs"]
    if type(doc) is dict:  # the usual flat doc of strings and numbers: its types compared in C
        if not (_STR.issuperset(map(type, doc)) and _SCALARS.issuperset(map(type, doc.values()))) and not plain(doc):
            return False
    elif not plain(doc):
        return False
    if type(target) is not str and not plain(target):
        return False
    if (metadata and not plain(metadata)) or (gen is not plain_gen and not plain(gen)):
        return False
    if type(rec["sample_id"]) is not str:
        return False
    for response in rec["responses"]:
        if response is not None and type(response["text"]) is not str:
            return False
    for scored in rec["filters"].values():
        for value in scored["filtered"]:
            if type(value) is not str and not plain(value):
                return False
        for verdicts in scored["verdicts"].values():
            for verdict in verdicts:
                details = verdict["details"]
                if type(details) is not dict or (
                    details and not _DETAIL_KEYS.isdisjoint(details) and not plain(details)
                ):
                    return False
    return True


class _Encoding:
    """A chunk's records as a results scan reads them (positions from 0), each encoded to its samples.jsonl line
    just before it is scanned: one pass over a record's objects while they are in the CPU's caches, not two."""

    def __init__(self, records: Sequence[dict[str, Any]], encode: Callable[[dict[str, Any]], bytes]) -> None:
        self.records, self.encode = records, encode
        self.lines: list[bytes] = []

    def scan(self) -> Iterator[tuple[int, dict[str, Any]]]:
        records, encode, lines = self.records, self.encode, self.lines
        gen = records[0]["gen_kwargs"] if records else None
        plain_gen = gen if plain(gen) else None
        for i, rec in enumerate(records):
            line = encode(rec)
            lines.append(line)
            yield i, rec if reads_back(rec, plain_gen) else loads(line, pydantic_core.from_json)

    def fetch(self, positions: Int64Array) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError("a chunk scanned ahead is not read again")

    def explain(self, position: int) -> None:
        return None  # made by the scorer: a malformed one is a bug, raised as it is


@dataclass
class ChunkScan:
    """What the scan of one chunk gathered: partial columns, run figures, its sample-log spools (files in the run
    folder) and a hash of each record's task and sample id (what finds a sample written twice)."""

    partial: ScanPartial
    figures: RunFigures
    spools: dict[str, SpoolFiles]
    keys: Int64Array
    size: int  # bytes of the chunk's lines in samples.jsonl, newlines included

    def delete(self) -> None:
        """Remove the chunk's spools (it will not be merged)."""
        for files in self.spools.values():
            files.delete()


class ScanAhead:
    """A run's results scan, one chunk at a time as it is scored. :meth:`encode_and_scan` is what a worker (or the
    scorer itself) runs on a chunk's records; :meth:`add` merges the chunks in the order their records were
    written; :meth:`result` is the whole run's scan, when the parts make it exactly, and :attr:`logs` its sample
    logs, for the results writer to put in place."""

    def __init__(self, root: Path, manifest: RunManifest, options: dict[str, Any]) -> None:
        from assay.results.writer import scan_settings

        self.root, self.manifest, self.options = root, manifest, dict(options)
        self.scan_options, self.prices = scan_settings(manifest, self.options)
        self.logs = SampleLogSpool(root, [task.name for task in manifest.tasks])
        self.merged: ScanPartial | None = None
        self.figures: RunFigures | None = None
        self.records = 0
        self.size = 0  # bytes of the lines scanned: what samples.jsonl holds when they are all of it
        self.keys: list[Int64Array] = []
        self.broken = False  # a part was missing or could not be merged: the results scan the file
        self.handed_out: dict[str, int] = {}  # records of each task handed out to be scored so far

    def reserve(self, task: str, records: int) -> int:
        """Count the next chunk of ``task`` (``records`` long) as handed out to be scored; how many records of the
        task were handed out before it (chunks are written in the order handed out)."""
        before = self.handed_out.get(task, 0)
        self.handed_out[task] = before + records
        return before

    def encode_and_scan(
        self, records: Sequence[dict[str, Any]], encode: Callable[[dict[str, Any]], bytes], before: int
    ) -> tuple[list[bytes], ChunkScan | None]:
        """Each of a chunk's finished records encoded (``encode``: its samples.jsonl line) and scanned as a read of
        that line would scan it: a record whose values would not read back as themselves is scanned as its line
        parses. ``before``: the records of its task written before it (see :meth:`reserve`). The scan is None
        when it failed (then the results read the file)."""
        source = _Encoding(records, encode)
        part: ChunkScan | None
        try:
            part = self._scan(source, before)
        except Exception:
            part = None
        lines = source.lines
        if len(lines) != len(records):  # the scan stopped: the lines as ever (an error encoding one raises here)
            lines = [encode(rec) for rec in records]
        return lines, part

    def _scan(self, source: _Encoding, before: int) -> ChunkScan:
        tasks = {rec["task"] for rec in source.records}
        figures = RunFigures(self.manifest, self.prices, mergeable=True, before=dict.fromkeys(tasks, before))
        logs = SampleLogSpool(self.root, [task.name for task in self.manifest.tasks])
        try:
            partial = scan_partial(
                self.manifest, source, observers=(figures.observe,), sample_logs=logs, **self.scan_options
            )
            spools = logs.detach()
        except BaseException:
            logs.discard()
            raise
        lines = source.lines
        # hash() is the same in forked workers (they share the interpreter's seed) and costs a tenth of blake2b
        keys = np.fromiter((hash((rec["task"], rec["sample_id"])) for rec in source.records), np.int64, len(lines))
        return ChunkScan(partial, figures, spools, keys, sum(map(len, lines)) + len(lines))

    def add(self, part: ChunkScan | None) -> None:
        """Merge the scan of the next chunk of records written (None: a chunk was not scanned ahead)."""
        if part is None or self.broken or not self._merge(part):
            self.broken = True
            if part is not None:
                part.delete()
            self.logs.reset()
            return
        self.records += len(part.keys)
        self.size += part.size

    def _merge(self, part: ChunkScan) -> bool:
        partial = part.partial
        if not partial.declared or len(part.keys) != sum(len(acc.doc_ids) for acc in partial.accs.values()):
            return False  # a metric run.json does not declare, or a record of a task it does not have
        if self.merged is None:
            self.merged, self.figures = partial, part.figures
        else:
            merged = self.merged
            for name, acc in merged.accs.items():
                if not acc.merge(partial.accs[name], merged.seq, self.records):
                    return False
            merged.seq += partial.seq
            assert self.figures is not None
            self.figures.merge(part.figures)
        self.keys.append(part.keys)
        return self.logs.adopt(part.spools)

    def result(self, manifest: RunManifest) -> tuple[ScanResult, RunFigures] | None:
        """The run's columns and run figures when the parts cover all of samples.jsonl (its size is theirs), each
        sample once; else None, the spools removed. ``manifest``: run.json as the run ended (its time taken)."""
        try:
            size = (self.root / SAMPLES).stat().st_size
        except OSError:
            size = -1
        if self.broken or self.merged is None or self.figures is None or size != self.size:
            self.discard()
            return None
        keys = np.concatenate(self.keys)
        if not all_distinct(keys):  # a sample twice (or a hash collision): the file scan decides
            self.discard()
            return None
        self.figures.ops.manifest = manifest  # the workers' copy was made as the run started
        accs = self.merged.accs
        return ScanResult({name: finish_task(acc) for name, acc in accs.items()}, {}), self.figures

    def discard(self) -> None:
        """Remove every spool (the results are computed from the file, or not at all)."""
        self.broken = True
        self.logs.discard()
