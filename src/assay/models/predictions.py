"""Existing outputs as a model: answers read from a JSONL file and keyed by sample id.

The file is checked and indexed in one streamed pass (sha256, every line parsed, duplicate ids refused), but its
entries are not kept: an index of (id hash, byte offset, length, line) takes 32 bytes a line, and an answer is read
back from disk when asked for. Ten million predictions cost ~320 MB of index, not gigabytes of objects.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from assay.errors import DataError
from assay.jsonfast import NOT_SURE, try_loads
from assay.models.base import Model, ModelError, Request, Response, ToolCall

if TYPE_CHECKING:  # numpy loads when a predictions file is indexed, not when the module is imported
    import numpy as np
    import numpy.typing as npt

TEXT_FIELDS = ("prediction", "output", "response", "text")
_BLOCK = 1 << 23  # bytes read at a time while indexing
_SPAN_SLACK = 4  # the lines asked for are read in one go when their stretch of the file is at most this many times them


class _Entry:
    """One sample's stored outputs: a single one, or one per repeat."""

    __slots__ = ("line", "per_repeat", "texts", "tool_calls")

    def __init__(self, line: int, texts: list[str | None], tool_calls: list[list[ToolCall]], per_repeat: bool):
        self.line = line
        self.texts = texts
        self.tool_calls = tool_calls
        self.per_repeat = per_repeat


class PredictionsModel(Model):
    """Answers from a JSONL file of existing outputs, one object per line, keyed by ``id_field``.

    The output is read from ``text_field``; when it is not given, the first of ``prediction``, ``output``,
    ``response`` and ``text`` present on each line is used. A list value holds one output per repeat (repeat ``i``
    takes item ``i``); ``tool_calls_field`` then holds one list of calls per repeat. Non-string outputs (numbers,
    objects) become their JSON text. Every line is checked at construction (a bad line is a DataError naming it);
    ``sha256``, when given, must match the file.
    """

    provider: ClassVar[str] = "predictions"
    cacheable: ClassVar[bool] = False

    def __init__(
        self,
        path: str | Path,
        *,
        id_field: str = "id",
        text_field: str | None = None,
        tool_calls_field: str = "tool_calls",
        sha256: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.name = self.path.name
        self.id_field = id_field
        self.text_field = text_field
        self.tool_calls_field = tool_calls_field
        self._fd: int | None = None
        self._index(sha256)

    def __repr__(self) -> str:
        return f"PredictionsModel({str(self.path)!r})"

    def __len__(self) -> int:
        return int(self._hashes.size)

    def _where(self, line: int) -> str:
        return f"{self.path}:{line}"

    # ---- the index ---------------------------------------------------------------------------------

    def _lines(self, digest: Any) -> Iterator[tuple[int, int, bytes]]:
        """(line number, byte offset, line without its newline) of every line, feeding ``digest`` as it reads."""
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed below
        except OSError as err:
            raise DataError(f"cannot read predictions file {self.path}: {err.strerror or err}") from None
        with fh:
            offset, number, rest = 0, 0, b""
            while block := fh.read(_BLOCK):
                digest.update(block)
                parts = (rest + block).split(b"\n")
                rest = parts.pop()
                for raw in parts:
                    number += 1
                    yield number, offset, raw
                    offset += len(raw) + 1
            if rest:
                yield number + 1, offset, rest

    def _index(self, expected_sha: str | None) -> None:
        import numpy as np

        digest = hashlib.sha256()
        hashes, offsets, lengths, numbers = array("q"), array("q"), array("l"), array("l")
        for number, offset, raw in self._lines(digest):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 BOM
                offset, raw = offset + 3, raw[3:]
            row = try_loads(raw)  # valid UTF-8 when orjson reads it: decoded with 'replace' it would be the same
            if row is not NOT_SURE:
                sample_id = self._checked_id(row, number)
            else:
                text = raw.decode("utf-8", "replace")
                if not text.strip():
                    continue
                sample_id, _ = self._parse(text, number)
            hashes.append(hash(sample_id))
            offsets.append(offset)
            lengths.append(len(raw))
            numbers.append(number)
        self.sha256 = digest.hexdigest()
        if expected_sha is not None and expected_sha != self.sha256:
            raise DataError(
                f"predictions file {self.path} changed: sha256 {self.sha256[:12]}…, expected {expected_sha[:12]}…"
            )
        keys = np.frombuffer(hashes, dtype=np.int64) if hashes else np.zeros(0, np.int64)
        order = np.argsort(keys, kind="stable")  # stable: equal hashes keep file order
        self._hashes = keys[order]
        self._offsets = np.asarray(offsets, dtype=np.int64)[order]
        self._lengths = np.asarray(lengths, dtype=np.int64)[order]
        self._numbers = np.asarray(numbers, dtype=np.int64)[order]
        self._check_duplicates()

    def _check_duplicates(self) -> None:
        import numpy as np

        same = np.flatnonzero(self._hashes[1:] == self._hashes[:-1])
        for i in same.tolist():
            first, second = self._read(i), self._read(i + 1)
            if first[0] == second[0]:
                lines = sorted((int(self._numbers[i]), int(self._numbers[i + 1])))
                raise DataError(
                    f"{self.path}: sample id {first[0]!r} appears twice, on lines {lines[0]} and {lines[1]}"
                )

    def _read(self, position: int) -> tuple[str, _Entry]:
        """The id and entry at ``position`` of the index, read back from the file."""
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        raw = os.pread(self._fd, self._lengths.item(position), self._offsets.item(position))
        row = try_loads(raw)
        if row is not NOT_SURE:
            return self._entry(row, self._numbers.item(position))
        return self._parse(raw.decode("utf-8", "replace"), self._numbers.item(position))

    def _parse(self, line: str, number: int) -> tuple[str, _Entry]:
        try:
            row = json.loads(line)
        except ValueError as err:
            raise DataError(f"{self._where(number)}: not valid JSON ({err})") from None
        return self._entry(row, number)

    def _checked_id(self, row: Any, number: int) -> str:
        """The id of a parsed line, checked as :meth:`_entry` checks it, without making the entry for the usual line
        (an object with its id and a text field, no tool calls: nothing else in it can be wrong)."""
        if type(row) is dict and self.id_field in row and row.get(self.tool_calls_field) is None:
            fields = (self.text_field,) if self.text_field else TEXT_FIELDS
            for field in fields:
                if field in row:
                    return str(row[self.id_field])
        return self._entry(row, number)[0]

    def _entry(self, row: Any, number: int) -> tuple[str, _Entry]:
        """The id and entry of a parsed line (a DataError naming the line when it is not a prediction)."""
        if not isinstance(row, dict):
            raise DataError(f"{self._where(number)}: expected a JSON object, got {type(row).__name__}")
        if self.id_field not in row:
            raise DataError(f"{self._where(number)}: no {self.id_field!r} field (the sample id)")
        sample_id = str(row[self.id_field])
        fields = (self.text_field,) if self.text_field else TEXT_FIELDS
        field = next((f for f in fields if f in row), None)
        raw_calls = row.get(self.tool_calls_field)
        if field is None and raw_calls is None:
            raise DataError(f"{self._where(number)}: no prediction field (looked for {', '.join(map(repr, fields))})")
        value = row.get(field) if field else None
        per_repeat = isinstance(value, list)
        texts = [_as_text(v) for v in value] if isinstance(value, list) else [_as_text(value)]
        try:
            calls = self._tool_calls(raw_calls, len(texts), per_repeat)
        except (TypeError, ValueError) as err:
            raise DataError(f"{self._where(number)}: field {self.tool_calls_field!r}: {err}") from None
        return sample_id, _Entry(number, texts, calls, per_repeat)

    def _tool_calls(self, raw: Any, repeats: int, per_repeat: bool) -> list[list[ToolCall]]:
        if raw is None:
            return [[] for _ in range(repeats)]
        if not isinstance(raw, list):
            raise TypeError(f"expected a list, got {type(raw).__name__}")
        if not per_repeat:
            return [[_tool_call(c) for c in raw]]
        if len(raw) != repeats or not all(isinstance(r, list) for r in raw):
            raise ValueError(
                f"with {repeats} predictions (one per repeat) it must be a list of {repeats} lists of calls"
            )
        return [[_tool_call(c) for c in calls] for calls in raw]

    def entries(self, sample_ids: Sequence[str]) -> list[_Entry | None]:
        """The stored outputs of each sample id (None where the file has none), read from disk in one pass.

        The lines are read in file order (one read of the stretch they lie in, when they are most of it) and
        parsed together; a sample whose hash leads to another id's line is looked up line by line.
        """
        import numpy as np

        n, size = len(sample_ids), self._hashes.size
        out: list[_Entry | None] = [None] * n
        if not n or not size:
            return out
        wanted = np.fromiter((hash(s) for s in sample_ids), dtype=np.int64, count=n)
        found = np.minimum(np.searchsorted(self._hashes, wanted), size - 1)
        hits = np.flatnonzero(self._hashes[found] == wanted)
        positions = found[hits]
        for i, position, (found_id, entry) in zip(
            hits.tolist(), positions.tolist(), self._read_many(positions), strict=True
        ):
            sample_id = sample_ids[i]
            out[i] = entry if found_id == sample_id else self._probe(sample_id, int(wanted[i]), position + 1)
        return out

    def _probe(self, sample_id: str, key: int, position: int) -> _Entry | None:
        """The entry of ``sample_id`` among the index's entries of hash ``key`` from ``position`` on."""
        while position < self._hashes.size and self._hashes.item(position) == key:  # equal hashes: compare the ids
            found_id, candidate = self._read(position)
            if found_id == sample_id:
                return candidate
            position += 1
        return None

    def _read_many(self, positions: npt.NDArray[np.int64]) -> list[tuple[str, _Entry]]:
        """The ids and entries at many positions of the index: their lines read in file order, parsed together."""
        import numpy as np

        if not positions.size:
            return []
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDONLY)
        offsets, lengths = self._offsets[positions], self._lengths[positions]
        numbers = self._numbers[positions].tolist()
        start, end = int(offsets.min()), int((offsets + lengths).max())
        if end - start <= _SPAN_SLACK * int(lengths.sum()) + _BLOCK:  # the lines are most of their stretch
            span = os.pread(self._fd, end - start, start)
            raws = [span[o - start : o - start + k] for o, k in zip(offsets.tolist(), lengths.tolist(), strict=True)]
        else:
            raws = [b""] * len(numbers)
            for i in np.argsort(offsets, kind="stable").tolist():  # scattered: one read a line, in file order
                raws[i] = os.pread(self._fd, lengths.item(i), offsets.item(i))
        try:  # the lines parsed at indexing, so they parse as one JSON array of the same objects (decoded as
            # each line is: a bad byte sequence cannot reach past the line's end); json.loads reads one such array
            # as fast as orjson (measured), so it stays
            rows = json.loads((b"[" + b",".join(raws) + b"]").decode("utf-8", "replace"))
        except ValueError:
            rows = None
        if not isinstance(rows, list) or len(rows) != len(raws):  # the file changed: each line names its error
            return [self._parse(raw.decode("utf-8", "replace"), k) for raw, k in zip(raws, numbers, strict=True)]
        return [self._entry(row, k) for row, k in zip(rows, numbers, strict=True)]

    # ---- answering ---------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any]:
        """The file (path and content hash) and how it is read."""
        return {
            "provider": self.provider,
            "path": str(self.path),
            "id_field": self.id_field,
            "text_field": self.text_field,
            "tool_calls_field": self.tool_calls_field,
            "sha256": self.sha256,
        }

    def answer(self, entry: _Entry | None, sample_id: str, repeat: int) -> Response:
        """The response of ``entry`` for one repeat; ModelError (not retryable) when there is none."""
        if entry is None:
            raise ModelError(f"no prediction for sample {sample_id!r} in file {self.path}")
        index = repeat if entry.per_repeat else 0
        if index >= len(entry.texts) or (repeat > 0 and not entry.per_repeat):
            have = f"{len(entry.texts)} predictions" if entry.per_repeat else "one prediction (not a list)"
            raise ModelError(
                f"sample {sample_id!r} has {have} in {self._where(entry.line)}; repeat {repeat} "
                "needs a list with one prediction per repeat"
            )
        return Response(
            text=entry.texts[index],
            tool_calls=list(entry.tool_calls[index]),
            finish_reason="stop",
            metadata={"source": self._where(entry.line)},
        )

    async def generate(self, request: Request) -> Response:
        """The stored output for the request's sample id and repeat."""
        return self.answer(self.entries([request.sample_id])[0], request.sample_id, request.repeat)

    async def aclose(self) -> None:
        self._close()

    def _close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:  # a model built and dropped without aclose (scripts, tests) gives its descriptor back
        with contextlib.suppress(Exception):  # interpreter shutdown
            self._close()


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _tool_call(call: Any) -> ToolCall:
    if not isinstance(call, dict):
        raise TypeError(f"a tool call must be an object, got {type(call).__name__}")
    if isinstance(call.get("function"), dict):  # OpenAI shape
        function = call["function"]
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        return ToolCall(name=function.get("name"), arguments=arguments, id=call.get("id"), result=call.get("result"))
    return ToolCall.model_validate(call)
