"""What caused a failing verdict, as a key that failures with the same cause share, and a readable title.

The cause is, in order of preference: the check the evaluator names (``details["check"]``: json_match, schema,
tool_usage), the judge's stated problem and grade (llm_judge), else the head of the reason — parenthesised asides
and the specifics after the first ``": "`` dropped — with its quoted values, numbers and ids as slots. A title shows
a slot's value when every failure of the theme has the same one, the range of a varying number, and ``…`` for
varying text: never a bare placeholder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

_TOKEN = re.compile(  # the leading lookahead lets the scan skip most positions at once (about twice as fast)
    r"""(?=['"\d+\-a-f])(?:(?P<text>(?<![\w'"])'(?:[^'\\\n]|\\.)*'(?![\w])|(?<![\w"'])"(?:[^"\\\n]|\\.)*"(?![\w]))"""
    r"|(?P<id>\b[0-9a-f]{8,}\b)"
    r"|(?P<n>(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?(?![\w])))",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\s*\([^()]*\)")
_PROBLEM_NOISE = re.compile(r"[^\w\s-]+")
PATTERN_LIMIT = 200


@dataclass(frozen=True)
class Slotted:
    """Text split into literal segments and the values between them: ``segments[0] v0 segments[1] v1 …``."""

    segments: tuple[str, ...]
    kinds: tuple[str, ...]  # "text", "id" or "n" per value
    values: tuple[str, ...]
    pattern: str  # the text with every value replaced by its placeholder (<text>, <id>, <n>): the grouping key


def slotted(text: str) -> Slotted:
    """``text`` (whitespace collapsed) split at its quoted values, long hex ids and numbers."""
    text = " ".join(text.split())
    segments, kinds, values = [], [], []
    pos = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "text"
        segments.append(text[pos : match.start()])
        kinds.append(kind)
        values.append(match.group(0))
        pos = match.end()
    segments.append(text[pos:])
    out = [segments[0]]
    for kind, segment in zip(kinds, segments[1:], strict=True):
        out += ["<", kind, ">", segment]
    return Slotted(tuple(segments), tuple(kinds), tuple(values), "".join(out))


_slotted_check = lru_cache(maxsize=4096)(slotted)  # checks and problems repeat across a run


def clip(text: str, limit: int = PATTERN_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reason_pattern(text: str) -> str:
    """``text`` with quoted values, numbers and long hex ids masked and whitespace collapsed."""
    return clip(slotted(text).pattern)


@dataclass
class SlotStats:
    """What the values of each slot of one pattern were across a theme: the first, whether all were the same, and
    the range of numbers. Constant memory per slot."""

    kinds: tuple[str, ...]
    segments: tuple[str, ...]
    first: list[str] = field(default_factory=list)
    same: list[bool] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    roles: list[str | None] = field(default_factory=list)  # what every value of a slot was, e.g. "the output"
    count: int = 0

    @classmethod
    def of(cls, s: Slotted) -> SlotStats:
        """Empty stats for the pattern of ``s``."""
        n = len(s.values)
        return cls(s.kinds, s.segments, list(s.values), [True] * n, [math.inf] * n, [-math.inf] * n, [""] * n)

    def add(self, s: Slotted, roles: Mapping[str, str] | None = None) -> None:
        """Count one text of this pattern; ``roles`` names known values (``{"Lima": "the expected answer"}``)."""
        self.count += 1
        if not s.values and s.segments != self.segments:  # one cause worded differently (a judge's problem):
            self.segments = max(self.segments, s.segments, key=lambda t: (len(t[0]), t))  # the fullest, whatever
            # order the samples finished in
        for i, value in enumerate(s.values):
            if value != self.first[i]:
                self.same[i] = False
            role = (roles or {}).get(_unquote(value))
            if self.roles[i] == "":
                self.roles[i] = role
            elif self.roles[i] != role:
                self.roles[i] = None
            number = _number(value) if self.kinds[i] == "n" else None
            if number is not None:
                self.low[i] = min(self.low[i], number)
                self.high[i] = max(self.high[i], number)

    def render(self) -> str:
        """The pattern with constant values shown, varying numbers as their range and varying text as ``…``."""
        out = [self.segments[0]]
        for i, segment in enumerate(self.segments[1:]):
            if self.same[i]:
                shown = self.first[i]
            elif self.roles[i]:
                shown = f"[{self.roles[i]}]"
            elif self.kinds[i] == "n" and math.isfinite(self.low[i]):
                shown = f"{self.low[i]:g}–{self.high[i]:g}"
            else:
                shown = "…"
            out += [shown, segment]
        return clip("".join(out))


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return " ".join(value.split())


def roles_of(target: Any, output: Any) -> dict[str, str]:
    """Known values of a sample for :meth:`SlotStats.add`: its expected answer(s) and its output."""
    roles: dict[str, str] = {}
    if isinstance(output, str) and output.strip():
        roles[" ".join(output.split())] = "the output"
    answers = target if isinstance(target, list) else [target]
    for answer in answers:
        if isinstance(answer, str | int | float) and not isinstance(answer, bool) and str(answer).strip():
            roles[" ".join(str(answer).split())] = "the expected answer"
    return roles


def _number(value: str) -> float | None:
    try:
        return float(value.rstrip("%").replace(",", ""))
    except ValueError:
        return None


_QUOTED = re.compile(
    r"""(?=['"])(?:(?<![\w'"])'(?:[^'\\\n]|\\.)*'(?![\w])|(?<![\w"'])"(?:[^"\\\n]|\\.)*"(?![\w]))"""
)  # the lookahead skips most positions at once


def _head(reason: str) -> str:
    """The part of a reason that states the check: parenthesised asides and the specifics after ``": "`` dropped,
    both looked for outside quoted values (an output such as ``'{"pop": 1}'`` or ``'f(x)'`` is a value, not part
    of the reason's wording, and must not split one cause into several themes)."""
    plain, previous = reason, None
    while previous != plain:
        previous, plain = plain, _ASIDE.sub("", plain)
    head, sep, _ = plain.partition(": ")
    head = head if sep and len(head.split()) >= 2 else plain
    before = reason[: reason.find("(")] if plain != reason else ""
    if all(t.count("'") % 2 == 0 and t.count('"') % 2 == 0 for t in (head, before)):
        return head  # no quote was cut open, and the first aside starts outside quotes: the common, fast case
    masked = _QUOTED.sub(lambda m: "\0" * len(m.group(0)), reason)  # same length: positions agree
    previous = None
    while previous != masked:
        previous = masked
        for start, end in reversed([m.span() for m in _ASIDE.finditer(masked)]):
            reason, masked = reason[:start] + reason[end:], masked[:start] + masked[end:]
    cut = masked.find(": ")
    head = reason[:cut] if cut >= 0 else reason
    return head if cut >= 0 and len(head.split()) >= 2 else reason


@dataclass(frozen=True)
class Cause:
    """The cause of one failing (or errored) verdict: ``key`` groups, ``text`` is slotted for the title."""

    key: str
    text: Slotted
    grade: str | None = None


def _fixed(text: str) -> Slotted:
    """Text shown as it is (no slots)."""
    return Slotted((text,), (), (), text)


def judge_grade(details: Mapping[str, Any]) -> str | None:
    """A judge verdict's grade (or pairwise result) as text; None when there is none."""
    grade = details.get("result", details.get("grade"))
    return None if grade is None or isinstance(grade, dict | list) else str(grade)


def causes_of(verdict: Mapping[str, Any]) -> list[Cause]:
    """The causes of a failing or errored verdict dict (as stored in ``samples.jsonl``): one, or one per check
    when the evaluator lists several (``details["failed_checks"]``: each differing field of a json_match, …)."""
    error = verdict.get("error")
    details = verdict.get("details") or {}
    if not isinstance(details, Mapping):
        details = {}
    if error:
        text = slotted(_ASIDE.sub("", str(error)))
        return [Cause(clip(text.pattern), text)]
    checks = details.get("failed_checks")
    if not (isinstance(checks, list) and checks and all(isinstance(c, str) for c in checks)):
        check = details.get("check")
        checks = [check] if isinstance(check, str) and check.strip() else []
    if checks:
        found = [_slotted_check(c) for c in dict.fromkeys(checks)]
        return [Cause("check:" + text.pattern, text) for text in found]
    if "judges" in details and "mode" in details:  # an llm_judge verdict
        grade = judge_grade(details)
        problem = str(details.get("problem") or "").strip()
        if problem:
            key = " ".join(_PROBLEM_NOISE.sub(" ", problem.casefold()).split())
            return [Cause(f"judge:{key}", _fixed(f"the judge's problem: {problem}"), grade)]
        return [Cause("judge:", _fixed("the judge named no problem"), grade)]
    reason = verdict.get("reason") or verdict.get("feedback") or "(no reason given)"
    text = slotted(_head(str(reason)))
    return [Cause(clip(text.pattern), text, judge_grade(details) if "grade" in details else None)]
