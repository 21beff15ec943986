"""Reading the RAG judge's JSON replies: extracted claims, and one verdict per numbered item (all or none)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from assay.evaluators.judge.parse import JudgeReplyError, find_json_object


@dataclass(frozen=True)
class ItemVerdict:
    """The judge's verdict on one numbered item (a claim, a statement, a chunk) and its reason."""

    verdict: str
    reason: str


def _object(reply: str | None, key: str, quoted: Iterable[str]) -> dict[str, Any]:
    if not reply or not reply.strip():
        raise JudgeReplyError("the judge's reply is empty")
    obj = find_json_object(reply, (key,), quoted)
    if obj is None:
        raise JudgeReplyError(f"no JSON object with {key!r} in the judge's reply")
    return obj


def read_texts(reply: str | None, key: str, quoted: Iterable[str] = ()) -> list[str]:
    """The list of strings under ``key`` (claims, statements); blank ones dropped, anything else refused."""
    value = _object(reply, key, quoted)[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise JudgeReplyError(f"the judge's {key!r} must be a list of strings, got {value!r:.200}")
    return [" ".join(v.split()) for v in value if v.strip()]


def read_verdicts(
    reply: str | None, count: int, allowed: tuple[str, ...], quoted: Iterable[str] = ()
) -> list[ItemVerdict]:
    """One verdict for each item 1 … ``count`` from ``{"verdicts": [{"index", "verdict", "reason"}]}``.

    An item left out, judged twice, out of range, or given a verdict not in ``allowed`` makes the whole reply
    unusable (a :class:`JudgeReplyError`, hence an error verdict): a score over some of the items would be a guess.
    """
    items = _object(reply, "verdicts", quoted)["verdicts"]
    if not isinstance(items, list):
        raise JudgeReplyError(f"the judge's 'verdicts' must be a list, got {items!r:.200}")
    found: dict[int, ItemVerdict] = {}
    for item in items:
        if not isinstance(item, dict):
            raise JudgeReplyError(f"each verdict must be an object, got {item!r:.200}")
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 1 <= index <= count:
            raise JudgeReplyError(f"the judge gave a verdict for item {index!r}, but the items are 1 to {count}")
        if index in found:
            raise JudgeReplyError(f"the judge gave two verdicts for item {index}")
        found[index] = ItemVerdict(_verdict(item, allowed, f"item {index}"), _reason(item))
    missing = [i for i in range(1, count + 1) if i not in found]
    if missing:
        raise JudgeReplyError(f"the judge gave no verdict for item(s) {', '.join(map(str, missing))} of {count}")
    return [found[i] for i in range(1, count + 1)]


def verdicts_schema(allowed: tuple[str, ...]) -> dict[str, Any]:
    """The JSON-schema properties of a verdicts reply."""
    return {"verdicts": _items_schema("index", {"type": "integer"}, allowed)}


def texts_schema(key: str) -> dict[str, Any]:
    """The JSON-schema properties of a list-of-strings reply."""
    return {key: {"type": "array", "items": {"type": "string"}}}


@dataclass(frozen=True)
class Classified:
    """A statement the judge wrote out of a text, with its verdict and reason."""

    statement: str
    verdict: str
    reason: str


def read_classified(reply: str | None, allowed: tuple[str, ...], quoted: Iterable[str] = ()) -> list[Classified]:
    """``{"statements": [{"statement", "verdict", "reason"}]}``: statements split out of a text and each judged."""
    items = _object(reply, "statements", quoted)["statements"]
    if not isinstance(items, list):
        raise JudgeReplyError(f"the judge's 'statements' must be a list, got {items!r:.200}")
    out: list[Classified] = []
    for item in items:
        statement = item.get("statement") if isinstance(item, dict) else None
        if not isinstance(statement, str) or not statement.strip():
            raise JudgeReplyError(f"each statement must be an object with a non-empty 'statement', got {item!r:.200}")
        verdict = _verdict(item, allowed, repr(statement[:80]))
        out.append(Classified(" ".join(statement.split()), verdict, _reason(item)))
    return out


def classified_schema(allowed: tuple[str, ...]) -> dict[str, Any]:
    """The JSON-schema properties of a statements-with-verdicts reply."""
    return {"statements": _items_schema("statement", {"type": "string"}, allowed)}


def _items_schema(key: str, kind: dict[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    properties = {key: kind, "verdict": {"type": "string", "enum": list(allowed)}, "reason": {"type": "string"}}
    item = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "array", "items": item}


def _verdict(item: dict[str, Any], allowed: tuple[str, ...], what: str) -> str:
    verdict = str(item.get("verdict", "")).strip().casefold()
    if verdict not in allowed:
        offered = ", ".join(repr(a) for a in allowed)
        raise JudgeReplyError(f"the judge's verdict on {what} is {item.get('verdict')!r}, not one of {offered}")
    return verdict


def _reason(item: dict[str, Any]) -> str:
    reason = item.get("reason")
    return reason.strip() if isinstance(reason, str) else ""
