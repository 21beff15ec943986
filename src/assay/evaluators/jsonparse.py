"""Read JSON from a model's output: the whole text, a Markdown code fence, or the first JSON value in prose.

Models wrap JSON in ```json fences or in a sentence ("Here you go: {...}"). :func:`extract_json` tries, in
order, the whole (stripped) text, each fenced block, then every ``{`` / ``[`` in the text from left to right
until one starts a complete JSON value. Nothing is ever evaluated as code. Also here: JSON paths
(``$.items[2]``) and short renderings of JSON values for reasons and feedback.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from assay.errors import EvaluationInputError
from assay.jsonerror import same_error

Path = tuple[str | int, ...]

Extract = Literal["strict", "fenced", "anywhere"]
"""How far to look: ``strict`` only the whole text; ``fenced`` also code fences; ``anywhere`` also inside prose."""

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_JSON_FENCE_TAGS = {"", "json", "jsonc", "json5", "javascript", "js"}
_DECODER = json.JSONDecoder()
_IDENTIFIER = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_ABSENT: Any = object()
# a bracket that may open a JSON value: "{" before a key or "}", "[" before a value or "]"
_CANDIDATE = re.compile(r'\{\s*["}]|\[\s*[\]\[{"\-0-9tfnNI]')
_SCAN_BUDGET = 50_000_000  # characters of failed parsing the embedded search may spend (plus 8 per text char)


class JSONExtractError(ValueError):
    """No JSON value could be found in the text; the message says what was tried and the parser's complaint."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """A parsed JSON value and where in the text it was found (``whole``, ``fence`` or ``embedded``)."""

    value: Any
    source: str


def extract_json(text: str, *, extract: Extract = "anywhere", prefer: type | None = None) -> Extracted:
    """The JSON value in ``text``; raises :class:`JSONExtractError` when there is none.

    ``prefer`` (``dict`` or ``list``) picks, among embedded candidates, the first of that type when there is
    one (so "see [1]: {...}" yields the object when an object is expected).
    """
    stripped = text.strip().lstrip("\ufeff")
    if not stripped:
        raise JSONExtractError("the output is empty")
    try:
        return Extracted(json.loads(stripped), "whole")
    except (ValueError, RecursionError) as err:
        whole_error = _describe(err)
    if extract == "strict":
        raise JSONExtractError(f"the output is not valid JSON ({whole_error})")
    fenced = _from_fences(stripped)
    if fenced is not None:
        return fenced
    if extract == "fenced":
        raise JSONExtractError(f"the output is not valid JSON and holds no fenced JSON block ({whole_error})")
    embedded = _embedded(stripped, prefer)
    if embedded is not None:
        return embedded
    if "{" not in stripped and "[" not in stripped:
        raise JSONExtractError("the output contains no JSON object or array")
    raise JSONExtractError(f"no complete JSON object or array was found in the output ({whole_error})")


def _describe(err: BaseException) -> str:
    if isinstance(err, json.JSONDecodeError):
        err = same_error(err)  # a verdict's reason is the same whichever Python scored it
        return f"{err.msg} at line {err.lineno} column {err.colno}"
    if isinstance(err, RecursionError):
        return "nested too deeply"
    return str(err)


def _from_fences(text: str) -> Extracted | None:
    if "```" not in text:
        return None
    for match in _FENCE.finditer(text):
        if match.group(1).lower() not in _JSON_FENCE_TAGS:
            continue
        body = match.group(2).strip()
        if not body:
            continue
        try:
            return Extracted(json.loads(body), "fence")
        except (ValueError, RecursionError):
            continue
    return None


def _embedded(text: str, prefer: type | None) -> Extracted | None:
    """The first ``{``/``[`` that starts a complete JSON value (or the first of type ``prefer``).

    Only brackets followed by something that can start a JSON member are tried, and failed attempts are
    charged what they cost (a parse error counts the lines before it); past a budget the search stops, so
    bracket-heavy megabytes of prose cannot make it quadratic.
    """
    first: Any = _NOTHING
    budget = _SCAN_BUDGET + 8 * len(text)
    match = _CANDIDATE.search(text)
    while match is not None and budget > 0:
        pos = match.start()
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            budget -= 2 * err.pos - pos + 1  # the parse up to the error, and the line count before it
            match = _CANDIDATE.search(text, pos + 1)
            continue
        except (ValueError, RecursionError):
            budget -= len(text)
            match = _CANDIDATE.search(text, pos + 1)
            continue
        if prefer is None or isinstance(value, prefer):
            return Extracted(value, "embedded")
        if first is _NOTHING:
            first = value
        budget -= end - pos
        match = _CANDIDATE.search(text, end)  # brackets inside this value belong to it, not to a separate value
    return None if first is _NOTHING else Extracted(first, "embedded")


_NOTHING = object()


def json_path(path: Path) -> str:
    """``('address', 'city')`` -> ``$.address.city``; ``('items', 2)`` -> ``$.items[2]`` (jsonschema's style)."""
    out = ["$"]
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append("['" + part.replace("\\", "\\\\").replace("'", "\\'") + "']")
    return "".join(out)


def to_plain(value: Any) -> Any:
    """JSON-shaped data: Pydantic models dumped, tuples as lists, non-string keys as strings."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def show(value: Any, limit: int = 80) -> str:
    """A short rendering of a JSON value for reasons: strings as repr, everything else as JSON."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (ValueError, RecursionError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def kind(value: Any) -> str:
    """The JSON type of a value with its article, for messages."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else f"a {type(value).__name__}"


def skeleton(value: Any) -> Any:
    """The shape of ``value`` with its leaves replaced by type placeholders (feedback that does not leak values)."""
    if isinstance(value, dict):
        return {k: skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [skeleton(v) for v in value[:3]]
    if isinstance(value, str):
        return "<string>"
    if isinstance(value, bool):
        return "<boolean>"
    if isinstance(value, int | float):
        return "<number>"
    return value


_TYPE_NOTES = {
    "<string>": "<string> is a JSON string in double quotes",
    "<number>": '<number> is a JSON number without quotes (0.5, not "0.5")',
    "<boolean>": '<boolean> is true or false without quotes (true, not "true")',
}


def shape_text(value: Any, limit: int = 300) -> str:
    """The shape of ``value`` as JSON text whose leaves are bare type placeholders, never quoted:
    ``{"pop": <number>}``, so that a number is not mistaken for a string; with a note on each type used."""
    used: set[str] = set()

    def render(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {render(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(render(x) for x in v[:3]) + "]"
        placeholder = skeleton(v)
        if isinstance(placeholder, str) and placeholder in _TYPE_NOTES:
            used.add(placeholder)
            return placeholder
        return json.dumps(v)

    text = render(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    notes = [_TYPE_NOTES[t] for t in ("<string>", "<number>", "<boolean>") if t in used]
    return text + (f", where {'; '.join(notes)}" if notes else "")


@dataclass(frozen=True, slots=True)
class Unparseable:
    """The output held no JSON: why, for the failing verdict."""

    message: str


def read_json_output(
    actual: Any, evaluator: str, extract: Extract, prefer: type | None
) -> tuple[Any, str] | Unparseable:
    """The output as a JSON value with where it came from, or :class:`Unparseable` (a failure, not an error)."""
    from assay.models.base import Response

    if isinstance(actual, Response):  # a model's answer: its text holds the JSON (other models are data)
        if actual.text is None:
            return Unparseable("the response has no text")
        actual = actual.text
    if isinstance(actual, dict | list | tuple | BaseModel):
        return to_plain(actual), "parsed"
    if isinstance(actual, bool | int | float):
        return actual, "parsed"
    if actual is None:
        return Unparseable("the output is empty (None)")
    if isinstance(actual, bytes | bytearray):
        actual = bytes(actual).decode("utf-8", errors="replace")
    if not isinstance(actual, str):
        text = getattr(actual, "text", _ABSENT)
        if text is _ABSENT or not (text is None or isinstance(text, str)):
            raise EvaluationInputError(
                f"{evaluator} expects JSON text, a dict, a list or a response with .text, got {type(actual).__name__}"
            )
        if text is None:
            return Unparseable("the response has no text")
        actual = text
    try:
        found = extract_json(actual, extract=extract, prefer=prefer)
    except JSONExtractError as err:
        return Unparseable(str(err))
    return found.value, found.source


def read_expected(expected: Any, evaluator: str) -> Any:
    """The expected JSON value: a dict/list (or Pydantic model), a JSON scalar, or JSON text."""
    if expected is None:
        raise EvaluationInputError(f"{evaluator} needs the expected JSON structure, got None")
    if isinstance(expected, str):
        try:
            return json.loads(expected)
        except ValueError as err:
            raise EvaluationInputError(f"{evaluator}: the expected value is not valid JSON ({err})") from None
    if isinstance(expected, dict | list | tuple | BaseModel | bool | int | float):
        return to_plain(expected)
    raise EvaluationInputError(f"{evaluator}: cannot compare with an expected {type(expected).__name__}")
