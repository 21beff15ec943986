"""The results scan of a large ``samples.jsonl`` split over forked processes: each reads a range of lines into
partial columns, run figures and sample-log spools, and this process merges them in file order into what one
serial scan builds (the same results, byte for byte: a test proves it).

Whenever a range cannot be merged exactly (a sample written twice, a bad line, a metric run.json does not
declare, a worker that died) this returns None and the caller scans serially, which also reports any error with
the file's real line numbers.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from assay.forking import fork_available, other_threads, worker_start
from assay.record import RunManifest
from assay.results.columns import ScanPartial, ScanResult, merge_partials, scan_partial
from assay.results.runfigures import RunFigures
from assay.results.samplelog import SampleLogSpool, SpoolFiles
from assay.results.sources import StreamSource
from assay.store.sampleindex import SAMPLES, SampleStream, rewritten_lines

MIN_BYTES_PER_PROCESS = 32 << 20  # a smaller range is scanned as quickly in this process as by forking


@dataclass
class Sharded:
    """A scan made by several processes, merged: the columns, the run figures and the torn-line count."""

    scanned: ScanResult
    figures: RunFigures
    torn: int


@dataclass
class _RangeScan:
    """What a worker sends back for its range of lines."""

    partial: ScanPartial
    figures: RunFigures
    spools: dict[str, SpoolFiles]
    offsets: Any  # byte offset and (task, sample id) hash of each line: what finds a sample written twice
    hashes: Any
    torn: int


def line_ranges(path: Path, parts: int, min_bytes: int | None = None) -> list[tuple[int, int | None]]:
    """At most ``parts`` byte ranges of about equal size that start and end on line boundaries (the last runs to
    the end of the file), none smaller than ``min_bytes`` (default: :data:`MIN_BYTES_PER_PROCESS`)."""
    size = path.stat().st_size
    smallest = MIN_BYTES_PER_PROCESS if min_bytes is None else min_bytes
    parts = max(1, min(parts, size // max(1, smallest)))
    bounds = [0]
    with open(path, "rb") as fh:
        for k in range(1, parts):
            fh.seek(max(bounds[-1], size * k // parts - 1))
            fh.readline()  # to just past the newline ending the line under way
            at = fh.tell()
            if bounds[-1] < at < size:
                bounds.append(at)
    ends: list[int | None] = [*bounds[1:], None]
    return list(zip(bounds, ends, strict=True))


def scan_sharded(
    root: Path,
    manifest: RunManifest,
    sample_logs: SampleLogSpool,
    *,
    processes: int,
    prices: dict[str, Any],
    scan_options: dict[str, Any],
) -> Sharded | None:
    """Scan ``root``'s samples in up to ``processes`` forked processes and merge what they found (the sample logs'
    spools into ``sample_logs``); None when the file is small, forking is not available or not safe (another
    thread runs), or the parts cannot be merged exactly: scan serially then."""
    path = root / SAMPLES
    if processes < 2 or not fork_available() or not path.is_file():
        return None
    if other_threads():
        return None
    ranges = line_ranges(path, processes)
    if len(ranges) < 2:
        return None
    done: list[_RangeScan] = []
    failed = False
    jobs: list[Future[_RangeScan]] = []
    try:
        fork = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(
            len(ranges), mp_context=fork, initializer=worker_start, initargs=(os.getpid(),)
        ) as pool:  # leaving it waits for the workers (they leave Ctrl-C to this process)
            jobs = [pool.submit(_scan_range, root, manifest, start, end, prices, scan_options) for start, end in ranges]
            for job in jobs:
                try:
                    done.append(job.result())
                except Exception:
                    failed = True
    except BaseException:  # Ctrl-C while waiting: the spools of every range scanned go
        for job in jobs:
            if job.done() and not job.cancelled() and job.exception() is None:
                for files in job.result().spools.values():
                    files.delete()
        raise
    try:
        merged = None if failed else _merge(path, done, sample_logs)
    finally:
        for part in done:
            for files in part.spools.values():
                files.delete()  # those not adopted
    if merged is None:
        sample_logs.reset()
    return merged


def _merge(path: Path, done: list[_RangeScan], sample_logs: SampleLogSpool) -> Sharded | None:
    offsets = np.concatenate([part.offsets for part in done])
    if rewritten_lines(path, offsets, np.concatenate([part.hashes for part in done])).size:
        return None  # a sample written twice: the serial scan keeps its last copy
    positions = np.cumsum([0] + [part.offsets.size for part in done[:-1]]).tolist()
    scanned = merge_partials([part.partial for part in done], positions)
    if scanned is None:
        return None
    figures = done[0].figures
    for part in done[1:]:
        figures.merge(part.figures)
    for part in done:
        if not sample_logs.adopt(part.spools):
            return None
    return Sharded(scanned, figures, done[-1].torn)


def _scan_range(
    root: Path, manifest: RunManifest, start: int, end: int | None, prices: dict[str, Any], options: dict[str, Any]
) -> _RangeScan:
    """In a worker: scan the lines of ``samples.jsonl`` in [start, end) with spools of its own."""
    stream = SampleStream(root, start, end)
    figures = RunFigures(manifest, prices, mergeable=True)
    logs = SampleLogSpool(root, [task.name for task in manifest.tasks])
    try:
        partial = scan_partial(
            manifest, StreamSource(stream), observers=(figures.observe,), sample_logs=logs, **options
        )
        spools = logs.detach()
    except BaseException:
        logs.discard()
        raise
    offsets, hashes = stream.keys_read()
    return _RangeScan(partial, figures, spools, offsets, hashes, stream.torn)
