"""Samples of a dataset whose rows are read on demand: made when asked for, never all held at once.

The rows are checked once, up front, with the eager path's errors (a missing mapped field, a repeated id, each
naming the row), as the file's validating pass reads them (:class:`RowCheck`): ids are compared by a 64-bit hash
(8 bytes a row), and only rows whose hashes collide are read again to compare their ids exactly.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from assay.data.lazy import JsonlRows
from assay.errors import DataError
from assay.tasks.sample import Sample

if TYPE_CHECKING:
    from assay.data.readers import Dataset
    from assay.tasks.fields import FieldMap

Screen = Callable[[dict[str, Any], Any, Any, dict[str, Any]], bool]  # (row, input, target, metadata) -> sure to render


class RowCheck:
    """What the samples need from each row, gathered as the rows are first read (the dataset's own validating pass,
    so that no row is parsed again for it): each id's 64-bit hash, the first row lacking a mapped field, and, given
    a ``screen`` (:meth:`Prompt.row_cannot_fail`), the rows whose prompt might not render.

    Called with each row's index and value, in order; :attr:`seen` counts the calls."""

    def __init__(self, fields: FieldMap, screen: Screen | None = None) -> None:
        self.fields = fields
        self.screen = screen
        self.hashes = array("q")
        self.missing: int | None = None  # the first row lacking a mapped field: rows past it are not looked at
        self.unsure: array[int] | None = array("q") if screen is not None else None
        self.seen = 0

    def __call__(self, i: int, row: dict[str, Any]) -> None:
        self.seen += 1
        if self.missing is not None:
            return
        try:
            sid, inp, tgt, md = self.fields.values(i, row)
        except KeyError:
            self.missing = i
            return
        self.hashes.append(hash(sid))
        screen, unsure = self.screen, self.unsure
        if screen is not None and unsure is not None:
            try:
                sure = screen(row, inp, tgt, md)
            except Exception:  # the render decides
                sure = False
            if not sure:
                unsure.append(i)


class LazySamples(Sequence[Sample]):
    """A Sample per row of ``dataset``, made from the row each time it is asked for.

    ``unsure`` holds the rows whose prompt might not render (ascending), when a screen was given at the check;
    None when it is not known."""

    def __init__(self, fields: FieldMap, dataset: Dataset, checked: RowCheck | None = None) -> None:
        self.fields = fields
        self.dataset = dataset
        if checked is None or checked.seen != len(dataset.rows):  # not fed by the file's own pass: read it again
            checked = RowCheck(fields)
            for i, row in enumerate(dataset.rows):
                checked(i, row)
                if checked.missing is not None:
                    break
        self.unsure = checked.unsure
        self._check(checked)

    def _check(self, checked: RowCheck) -> None:
        """Raise the first error the eager path would: the earliest row that lacks a field or repeats an id."""
        duplicate = self._first_duplicate(checked.hashes)
        if duplicate is not None:
            raise duplicate
        if checked.missing is not None:
            i = checked.missing
            self.fields.pick(self.dataset, i, self.dataset.rows[i])  # raises the error naming the row and field
            raise AssertionError(f"row {i} was found to lack a field")  # pragma: no cover - the file changed

    def _first_duplicate(self, hashes: array[int]) -> DataError | None:
        """The error for the earliest row whose id an earlier row has, among rows whose id hashes collide."""
        import numpy as np

        if len(hashes) < 2:
            return None
        h = np.frombuffer(hashes, dtype=np.int64)
        order = np.argsort(h, kind="stable")
        ordered = h[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if not same.size:
            return None
        candidates = np.unique(np.concatenate([order[same], order[same + 1]]))
        rows = self.dataset.rows
        first_of: dict[str, int] = {}
        for i in candidates.tolist():  # ascending: the first row seen with an id is where it was first used
            sid = self.fields.pick(self.dataset, i, rows[i])[0]
            first = first_of.setdefault(sid, i)
            if first != i:
                return self.fields.duplicate(self.dataset, i, first, sid)
        return None

    def __len__(self) -> int:
        return len(self.dataset.rows)

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> list[Sample]: ...
    def __getitem__(self, index: int | slice) -> Sample | list[Sample]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:  # consecutive rows: read as one block
                return [self._make(i, row) for i, row in enumerate(self._rows(start, stop), start)]
            return [self[i] for i in range(start, stop, step)]
        if index < 0:
            index += len(self)
        return self._make(index, self.dataset.rows[index])

    def _rows(self, start: int, stop: int) -> list[dict[str, object]]:
        rows = self.dataset.rows
        if isinstance(rows, JsonlRows):
            return rows.block(start, stop)
        return list(rows[start:stop])

    def _make(self, i: int, row: dict[str, object]) -> Sample:
        sid, inp, tgt, md = self.fields.pick(self.dataset, i, row)
        return Sample(i, sid, row, inp, tgt, md)

    def __iter__(self) -> Iterator[Sample]:
        for i, row in enumerate(self.dataset.rows):
            yield self._make(i, row)

    def __repr__(self) -> str:
        return f"LazySamples({len(self)} samples of {self.dataset.source})"


class SampleView(Sequence[Sample]):
    """Some samples of a :class:`LazySamples`, in a given order (a limit, a seeded shuffle), without copying them."""

    def __init__(self, base: LazySamples, order: Sequence[int]) -> None:
        self.base = base
        self.order = order

    def __len__(self) -> int:
        return len(self.order)

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> list[Sample]: ...
    def __getitem__(self, index: int | slice) -> Sample | list[Sample]:
        if isinstance(index, slice):
            order = self.order[index]
            if isinstance(order, range) and order.step == 1:  # in file order: one block
                return self.base[order.start : order.stop]
            return [self.base[i] for i in order]
        return self.base[self.order[index]]

    def __iter__(self) -> Iterator[Sample]:
        if isinstance(self.order, range) and self.order.step == 1:  # in file order: read in blocks
            for i, sample in enumerate(self.base):
                if i >= self.order.stop:
                    return
                if i >= self.order.start:
                    yield sample
            return
        for i in self.order:
            yield self.base[i]


def unsure_positions(samples: Sequence[Sample]) -> Sequence[int] | None:
    """The positions in ``samples`` whose prompt might not render, as screened when the rows were first read
    (ascending), or None when that is not known (samples in memory, few-shot examples, a shuffled order)."""
    if isinstance(samples, LazySamples):
        return samples.unsure
    if isinstance(samples, SampleView) and samples.base.unsure is not None:
        order = samples.order
        if isinstance(order, range) and order.start == 0 and order.step == 1:  # positions are rows
            return [i for i in samples.base.unsure if i < order.stop]
    return None
