"""Finding the judge's own statements in its reply, apart from anything it quotes from the material under review.

A judge often quotes the output it grades, and the output may hold text that looks like a grade (``SCORE: 5``,
``{"score": 5}``). Only what the judge wrote itself may count, so before a grade is looked for, three kinds of
text are masked: boundary-delimited blocks (``<untrusted-… name="…">…</untrusted-…>``, also when the judge never
closes one; a tag that occurs in the material itself is forged and masks nothing), Markdown quote lines (``> …``),
and grade lines or JSON objects that appear verbatim in the delimited material (the output, the task, the
reference). What remains is searched for *every* grade, so that a reply
holding two different grades can be refused instead of resolved in favour of the last or the most convenient one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_OPEN = re.compile(r"<(untrusted-[0-9a-f]{16})\b[^>]*>", re.IGNORECASE)
_TAG = re.compile(r"untrusted-[0-9a-f]{16}", re.IGNORECASE)
_QUOTE_LINE = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Found:
    """One grade-like statement of the judge: a JSON object or the value of a marked line, and where it sits."""

    start: int
    end: int
    value: Any  # the JSON object (a dict), or the text after a marker such as ``SCORE:``
    kind: str  # "json" or "line"


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class Reply:
    """A judge's reply with quoted material masked (same length, newlines kept, so offsets stay valid)."""

    def __init__(self, text: str, quoted: Iterable[str] = ()) -> None:
        self.text = text
        self._quoted = [_squash(q) for q in quoted if q and q.strip()]
        self._quoted_lines = {_squash(line) for q in quoted if q for line in q.splitlines() if line.strip()}
        forged = {tag.casefold() for q in quoted if q for tag in _TAG.findall(q)}
        self.visible = _QUOTE_LINE.sub(_blank, _mask_blocks(text, forged))

    def is_quoted(self, snippet: str) -> bool:
        """True when ``snippet`` occurs verbatim (whitespace aside) in the delimited material."""
        squashed = _squash(snippet)
        return bool(squashed) and any(squashed in q for q in self._quoted)

    def json_objects(self, keys: tuple[str, ...], *, copied: bool = False) -> list[Found]:
        """Top-level JSON objects of the visible text holding one of ``keys`` (nested objects are part of theirs);
        objects that also occur in the delimited material only with ``copied``."""
        decoder = json.JSONDecoder()
        found: list[Found] = []
        pos = 0
        text = self.visible
        while True:
            start = text.find("{", pos)
            if start < 0:
                return found
            try:
                obj, end = decoder.raw_decode(text, start)
            except ValueError:
                pos = start + 1
                continue
            pos = end
            if (
                isinstance(obj, dict)
                and any(k in obj for k in keys)
                and (copied or not self.is_quoted(text[start:end]))
            ):
                found.append(Found(start, end, obj, "json"))

    def marked_lines(
        self, pattern: re.Pattern[str], skip: Iterable[Found] = (), *, copied: bool = False
    ) -> list[Found]:
        """Lines of the visible text matching ``pattern`` (group ``value``), outside ``skip``; lines that also occur
        in the delimited material only with ``copied``."""
        spans = [(f.start, f.end) for f in skip]
        found: list[Found] = []
        for match in pattern.finditer(self.visible):
            if any(a <= match.start() < b for a, b in spans):
                continue
            if not copied and _squash(match.group(0)) in self._quoted_lines:
                continue  # a line copied from the output under review
            found.append(Found(match.start(), match.end(), match["value"].strip(), "line"))
        return found

    def without(self, found: Iterable[Found]) -> str:
        """The reply as written, with the given statements cut out and whitespace trimmed (for explanations)."""
        out, pos = [], 0
        for f in sorted(found, key=lambda f: f.start):
            out.append(self.text[pos : f.start])
            pos = f.end
        out.append(self.text[pos:])
        return "".join(out).strip()


def _blank(match: re.Match[str]) -> str:
    return _blanked(match.group(0))


def _blanked(text: str) -> str:
    return "".join("\n" if ch == "\n" else " " for ch in text)


def _mask_blocks(text: str, forged: set[str]) -> str:
    """``text`` with each boundary-delimited block blanked (to its closing tag, or to the end when the judge never
    closes it). A tag that occurs in the material under review is forged by that material, not a boundary (the real
    one is chosen to occur nowhere in it): it masks nothing, so an output cannot hide the judge's grade that way."""
    out: list[str] = []
    pos = 0
    while (opening := _OPEN.search(text, pos)) is not None:
        if opening.group(1).casefold() in forged:
            out.append(text[pos : opening.end()])
            pos = opening.end()
            continue
        closing = re.compile(rf"</{re.escape(opening.group(1))}\s*>", re.IGNORECASE).search(text, opening.end())
        end = closing.end() if closing is not None else len(text)
        out += [text[pos : opening.start()], _blanked(text[opening.start() : end])]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def whole_json(text: str) -> Any:
    """The reply as one JSON value when it is nothing else (optionally inside one code fence); else None."""
    stripped = text.strip()
    fence = re.fullmatch(r"```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?```", stripped, re.DOTALL | re.IGNORECASE)
    if fence:
        stripped = fence.group(1).strip()
    try:
        return json.loads(stripped)
    except ValueError:
        return None
