"""A run's pending work: the (task, sample) pairs still to do, made as they are reached, never all held at once.

A million-sample task held as a list of Samples costs about 750 MB; this holds the tasks' sample sequences (made on
demand for large JSONL datasets) and, on a resume, the ids already done, and skips those while iterating.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby, islice
from typing import TYPE_CHECKING, TypeVar, overload

if TYPE_CHECKING:
    from assay.tasks import Sample, Task

K = TypeVar("K")
V = TypeVar("V")


class PendingWork(Sequence[tuple["Task", "Sample"]]):
    """Every task's samples (within ``limit``) whose ``(task name, sample id)`` is not in ``done``, in task order.

    ``skipped`` counts the samples left out because they were done. Iterating reads the samples in order (in
    blocks for a large dataset); indexing works too, but finds a sample by walking its task's samples on a resume.
    """

    def __init__(self, tasks: Sequence[Task], limit: int | None, done: set[tuple[str, str]]) -> None:
        self._parts: list[tuple[Task, Sequence[Sample], frozenset[str]]] = []
        self._ends: list[int] = []
        self.skipped = 0
        total = 0
        for task in tasks:
            samples = task.samples(limit)
            finished = frozenset(sid for name, sid in done if name == task.name)
            skipped = sum(1 for s in samples if s.id in finished) if finished else 0
            self.skipped += skipped
            total += len(samples) - skipped
            self._parts.append((task, samples, finished))
            self._ends.append(total)

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def __iter__(self) -> Iterator[tuple[Task, Sample]]:
        for task, samples, finished in self._parts:
            if finished:
                yield from ((task, s) for s in samples if s.id not in finished)
            else:
                yield from ((task, s) for s in samples)

    @overload
    def __getitem__(self, index: int) -> tuple[Task, Sample]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[Task, Sample]]: ...
    def __getitem__(self, index: int | slice) -> tuple[Task, Sample] | list[tuple[Task, Sample]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("pending work index out of range")
        part = bisect_right(self._ends, index)
        task, samples, finished = self._parts[part]
        offset = index - (self._ends[part - 1] if part else 0)
        if not finished:
            return task, samples[offset]
        kept = (s for s in samples if s.id not in finished)
        return task, next(s for i, s in enumerate(kept) if i == offset)

    def position_runs(self, size: int) -> Iterator[tuple[int, Task, Sequence[int]]]:
        """The pending samples as (part, task, positions in that task's samples), at most ``size`` at a time, in
        the order of iteration: a task with nothing done is cut into ranges without reading a sample, so that
        whoever scores a run (a forked worker holding these samples too) reads them itself."""
        for part, (task, samples, finished) in enumerate(self._parts):
            if not finished:
                for start in range(0, len(samples), size):
                    yield part, task, range(start, min(start + size, len(samples)))
                continue
            kept = (i for i, s in enumerate(samples) if s.id not in finished)
            while chunk := list(islice(kept, size)):
                yield part, task, chunk

    def samples_at(self, part: int, positions: Sequence[int]) -> list[Sample]:
        """The samples at ``positions`` (ascending) of part ``part``: read as one block of a large dataset when
        they are most of their stretch (a range; a resume's positions around the samples already done)."""
        samples = self._parts[part][1]
        if isinstance(positions, range) and positions.step == 1:
            return list(samples[positions.start : positions.stop])
        if not positions:
            return []
        first, stop = positions[0], positions[-1] + 1
        if stop - first <= 2 * len(positions):
            block = samples[first:stop]
            return [block[i - first] for i in positions]
        return [samples[i] for i in positions]

    def parts(self) -> list[tuple[Task, Sequence[Sample], frozenset[str]]]:
        """Each task with its samples (within the limit) and the ids of those already done (skipped)."""
        return list(self._parts)

    def tasks(self) -> list[Task]:
        """The tasks with pending samples, in order, without reading any sample."""
        starts = [0, *self._ends[:-1]]
        return [task for (task, _, _), start, end in zip(self._parts, starts, self._ends, strict=True) if end > start]


def tasks_of(work: Sequence[tuple[Task, Sample]]) -> list[Task]:
    """The distinct tasks of some work, in order: a :class:`PendingWork` says so without reading its samples."""
    if isinstance(work, PendingWork):
        return work.tasks()
    return list({task.name: task for task, _ in work}.values())


def runs(pairs: Iterable[tuple[K, V]], size: int) -> Iterator[tuple[K, list[V]]]:
    """Consecutive values with the same key (a task), at most ``size`` at a time: the chunks, shards and batches of
    every executor. Only one run is held, so ``pairs`` may be made on demand."""
    for key, group in groupby(pairs, key=lambda pair: pair[0]):
        while run := [value for _, value in islice(group, size)]:
            yield key, run
