"""The task's field mapping: which row fields are a sample's id, input, target and metadata."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from assay.data.lazy import is_lazy
from assay.data.readers import Dataset
from assay.errors import DataError
from assay.tasks.sample import Sample, get_path

if TYPE_CHECKING:
    from assay.tasks.lazy_samples import RowCheck


@dataclass(frozen=True)
class FieldMap:
    """Which row fields are the id, input, target and metadata. Explicitly mapped fields must exist in every
    row; unmapped ``id``/``input``/``target`` default to the row's field of that name when present."""

    id: str | None = None
    input: str | None = None
    target: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)  # metadata name -> field path

    def samples(self, dataset: Dataset, checked: RowCheck | None = None) -> Sequence[Sample]:
        """A Sample per row; a row lacking a mapped field, or a repeated id, raises DataError naming the row.

        Rows read on demand (a large JSONL file) give samples made on demand too (:class:`LazySamples`), checked
        with what ``checked`` gathered as the file was read (when it saw every row), else by reading them again."""
        if is_lazy(dataset.rows):
            from assay.tasks.lazy_samples import LazySamples

            return LazySamples(self, dataset, checked)
        out: list[Sample] = []
        seen: dict[str, int] = {}
        for i, row in enumerate(dataset.rows):
            sid, inp, tgt, md = self.pick(dataset, i, row)
            first = seen.setdefault(sid, i)
            if first != i:
                raise self.duplicate(dataset, i, first, sid)
            out.append(Sample(i, sid, row, inp, tgt, md))
        return out

    def pick(self, dataset: Dataset, i: int, row: dict[str, Any]) -> tuple[str, Any, Any, dict[str, Any]]:
        """Row ``i``'s id, input, target and metadata; a missing mapped field raises DataError naming the row."""
        try:
            return self.values(i, row)
        except KeyError as err:
            raise DataError(self._missing(dataset, i, row, str(err.args[0]))) from None

    def values(self, i: int, row: dict[str, Any]) -> tuple[str, Any, Any, dict[str, Any]]:
        """Row ``i``'s id, input, target and metadata; KeyError (the field's path) for a missing mapped field."""
        id_f, input_f, target_f = self.id, self.input, self.target
        if self._plain_keys and type(row) is dict:  # get_path of a key without dots in a dict is the key's value
            sid = str(row[id_f]) if id_f is not None else str(row.get("id", i))
            inp = row[input_f] if input_f is not None else row.get("input")
            tgt = row[target_f] if target_f is not None else row.get("target")
            return sid, inp, tgt, {name: row[path] for name, path in self.metadata.items()}
        sid = str(get_path(row, id_f)) if id_f is not None else str(row.get("id", i))
        inp = get_path(row, input_f) if input_f is not None else row.get("input")
        tgt = get_path(row, target_f) if target_f is not None else row.get("target")
        md = {name: get_path(row, path) for name, path in self.metadata.items()}
        return sid, inp, tgt, md

    @cached_property
    def _plain_keys(self) -> bool:
        """True when every mapped field is a top-level key (no dotted path)."""
        paths = [self.id, self.input, self.target, *self.metadata.values()]
        return all("." not in path for path in paths if path is not None)

    def duplicate(self, dataset: Dataset, i: int, first: int, sid: str) -> DataError:
        """The error for row ``i`` repeating the id of row ``first``."""
        hint = "" if self.id is not None else " (ids come from the rows' 'id' field; set fields.id to a unique field)"
        return DataError(f"{dataset.where(i)}: duplicate id {sid!r}, first used at {dataset.where(first)}{hint}")

    def _missing(self, dataset: Dataset, index: int, row: dict[str, Any], path: str) -> str:
        roles = [r for r in ("id", "input", "target") if getattr(self, r) == path]
        roles += [f"metadata.{n}" for n, p in self.metadata.items() if p == path]
        role = f" (mapped as fields.{roles[0]})" if roles else ""
        keys = ", ".join(sorted(map(str, row))) or "none"
        return f"{dataset.where(index)}: row has no field {path!r}{role}; its fields: {keys}"

    def to_config(self) -> dict[str, Any]:
        """The mapping as written in a task file (unset keys left out)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in ("id", "input", "target") if getattr(self, k) is not None}
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out
