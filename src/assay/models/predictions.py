"""The predictions provider: outputs produced elsewhere, read from a JSONL file and keyed by sample id."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import DataError
from assay.models.base import Model, ModelError, Request, Response, ToolCall

TEXT_FIELDS = ("prediction", "output", "response", "text")


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
    objects) become their JSON text. The file is read once, at construction; ``sha256``, when given, must match it.
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
        try:
            data = self.path.read_bytes()
        except OSError as err:
            raise DataError(f"cannot read predictions file {self.path}: {err.strerror or err}") from None
        self.sha256 = hashlib.sha256(data).hexdigest()
        if sha256 is not None and sha256 != self.sha256:
            raise DataError(
                f"predictions file {self.path} changed: sha256 {self.sha256[:12]}…, expected {sha256[:12]}…"
            )
        self._entries: dict[str, _Entry] = {}
        for number, line in enumerate(data.decode("utf-8-sig", "replace").splitlines(), start=1):
            if line.strip():
                self._load_line(line, number)

    def __repr__(self) -> str:
        return f"PredictionsModel({str(self.path)!r})"

    def __len__(self) -> int:
        return len(self._entries)

    def _where(self, line: int) -> str:
        return f"{self.path}:{line}"

    def _load_line(self, line: str, number: int) -> None:
        try:
            row = json.loads(line)
        except ValueError as err:
            raise DataError(f"{self._where(number)}: not valid JSON ({err})") from None
        if not isinstance(row, dict):
            raise DataError(f"{self._where(number)}: expected a JSON object, got {type(row).__name__}")
        if self.id_field not in row:
            raise DataError(f"{self._where(number)}: no {self.id_field!r} field (the sample id)")
        sample_id = str(row[self.id_field])
        previous = self._entries.get(sample_id)
        if previous is not None:
            raise DataError(
                f"{self.path}: sample id {sample_id!r} appears twice, on lines {previous.line} and {number}"
            )
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
        self._entries[sample_id] = _Entry(number, texts, calls, per_repeat)

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

    async def generate(self, request: Request) -> Response:
        """The stored output for the request's sample id and repeat."""
        entry = self._entries.get(request.sample_id)
        if entry is None:
            raise ModelError(f"no prediction for sample {request.sample_id!r} in file {self.path}")
        index = request.repeat if entry.per_repeat else 0
        if index >= len(entry.texts) or (request.repeat > 0 and not entry.per_repeat):
            have = f"{len(entry.texts)} predictions" if entry.per_repeat else "one prediction (not a list)"
            raise ModelError(
                f"sample {request.sample_id!r} has {have} in {self._where(entry.line)}; repeat {request.repeat} "
                "needs a list with one prediction per repeat"
            )
        return Response(
            text=entry.texts[index],
            tool_calls=list(entry.tool_calls[index]),
            finish_reason="stop",
            metadata={"source": self._where(entry.line)},
        )


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
