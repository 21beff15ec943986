"""Reading a judge's reply (structured JSON, else its own JSON objects and ``SCORE:``/``GRADE:`` lines, which must
all agree) and scale normalisation.

Scales and how a grade becomes a score in [0, 1]:

========================  ===============================  ================================================
scale                     grades the judge may give        normalised score
========================  ===============================  ================================================
``binary``                ``pass`` / ``fail``              pass → 1, fail → 0
``1-5``                   an integer 1 … 5                 (s − 1) / 4   (1 → 0, 3 → 0.5, 5 → 1)
``1-10``                  an integer 1 … 10                (s − 1) / 9   (1 → 0, 10 → 1)
``0-1``                   any number in [0, 1]             s
labels ``{name: score}``  one of the names                 the score given for it (each within [0, 1])
========================  ===============================  ================================================

The grade is read from the judge's own text only (see :mod:`assay.evaluators.judge.reply`); every JSON object and
``SCORE:``/``GRADE:`` line it wrote must agree, and a ``FIX:`` line (or the ``fix`` key) is its suggested change.
Labels match case-insensitively; integer scales take ``4``, ``4.0``, ``"4"`` or ``4/5`` (the denominator must be
the scale's top). Anything else — a number outside the scale, a fraction on an integer scale, a label that was not
offered, a reply with no grade at all — raises :class:`JudgeReplyError`, which the judge turns into an *error*
verdict carrying the raw reply, never into the lowest score.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from assay.errors import ConfigError
from assay.evaluators.judge.reply import Found, Reply, whole_json

ScaleName = Literal["binary", "1-5", "1-10", "0-1", "labels"]
NAMED_SCALES: tuple[str, ...] = ("binary", "1-5", "1-10", "0-1")
GRADE_KEYS = ("score", "label", "grade")
WINNERS = ("A", "B", "tie")

FIX_KEYS = ("fix", "suggestion", "improvement")
# a marker line (quote lines, "> SCORE: 5", are masked before these run; see reply.py)
_FALLBACK = re.compile(r"^[ \t*_#`-]*(?:SCORE|GRADE)[ \t*_`]*:(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)
_WINNER_LINE = re.compile(r"^[ \t*_#`-]*(?:WINNER|GRADE)[ \t*_`]*:(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)
_FIX_LINE = re.compile(r"^[ \t*_#`-]*FIX[ \t*_`]*:(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)
_PROBLEM_LINE = re.compile(r"^[ \t*_#`-]*PROBLEM[ \t*_`]*:(?P<value>.*)$", re.IGNORECASE | re.MULTILINE)
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_FRACTION = re.compile(rf"(?P<num>{_NUMBER.pattern})\s*/\s*(?P<den>{_NUMBER.pattern})")
_WRAPPERS = " \t*_`'\"[]().,;:!"


class JudgeReplyError(ValueError):
    """The judge's reply has no grade, or a grade that was not offered; becomes an error verdict."""


@dataclass(frozen=True)
class Scale:
    """A grading scale: which grades the judge may give and how each maps onto [0, 1]."""

    name: ScaleName
    labels: tuple[tuple[str, float], ...] = ()  # binary and label scales: (label, score) in the order offered
    low: float = 0.0  # numeric scales: the lowest and highest grade
    high: float = 1.0
    integer: bool = False

    @classmethod
    def parse(cls, spec: str | Mapping[str, float]) -> Scale:
        """A scale from its option value: ``"binary"``, ``"1-5"``, ``"1-10"``, ``"0-1"`` or ``{label: score}``."""
        if isinstance(spec, Mapping):
            return cls._labels(spec)
        if spec == "binary":
            return cls("binary", labels=(("pass", 1.0), ("fail", 0.0)))
        if spec == "1-5":
            return cls("1-5", low=1, high=5, integer=True)
        if spec == "1-10":
            return cls("1-10", low=1, high=10, integer=True)
        if spec == "0-1":
            return cls("0-1", low=0, high=1)
        raise ConfigError(
            f"option 'scale': unknown scale {spec!r}; use one of {', '.join(NAMED_SCALES)} or a mapping of labels "
            "to scores such as {correct: 1, partial: 0.5, incorrect: 0}"
        )

    @classmethod
    def _labels(cls, spec: Mapping[str, float]) -> Scale:
        if len(spec) < 2:
            raise ConfigError(f"option 'scale': a label scale needs at least two labels, got {dict(spec)!r}")
        seen: set[str] = set()
        labels: list[tuple[str, float]] = []
        for label, score in spec.items():
            if not isinstance(label, str) or not label.strip():
                raise ConfigError(f"option 'scale': labels must be non-empty strings, got {label!r}")
            key = label.strip().casefold()
            if key in seen:
                raise ConfigError(f"option 'scale': label {label!r} appears twice (labels match case-insensitively)")
            seen.add(key)
            if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
                raise ConfigError(
                    f"option 'scale': the score of label {label!r} must be a number in [0, 1], got {score!r}"
                )
            labels.append((label.strip(), float(score)))
        return cls("labels", labels=tuple(labels))

    @property
    def is_labelled(self) -> bool:
        """True for binary and label scales (the judge names a label rather than a number)."""
        return bool(self.labels)

    @property
    def key(self) -> str:
        """The JSON key the judge is asked to fill: ``label`` or ``score``."""
        return "label" if self.is_labelled else "score"

    def describe(self) -> str:
        """The scale as the judge reads it in the prompt."""
        if self.name == "binary":
            return 'Give the label "pass" if the response meets the criteria, otherwise "fail".'
        if self.is_labelled:
            names = ", ".join(f'"{label}"' for label, _ in self.labels)
            return f"Give exactly one of these labels: {names}."
        if self.integer:
            return f"Give an integer score from {self.low:g} (worst) to {self.high:g} (best)."
        return f"Give a score between {self.low:g} (worst) and {self.high:g} (best); decimals are allowed."

    def fallback_hint(self) -> str:
        """The example last line of a reply without JSON."""
        if self.is_labelled:
            return f"GRADE: {self.labels[0][0]}"
        return f"SCORE: {self.high:g}"

    def grade_schema(self) -> dict[str, Any]:
        """The JSON-schema of the grade field."""
        if self.is_labelled:
            return {"type": "string", "enum": [label for label, _ in self.labels]}
        if self.integer:
            return {"type": "integer", "minimum": int(self.low), "maximum": int(self.high)}
        return {"type": "number", "minimum": self.low, "maximum": self.high}

    def offered(self) -> str:
        """The grades on offer, for error messages."""
        if self.is_labelled:
            return ", ".join(repr(label) for label, _ in self.labels)
        kind = "integers" if self.integer else "numbers"
        return f"{kind} from {self.low:g} to {self.high:g}"

    def normalize(self, grade: Any) -> tuple[str | float, float]:
        """The canonical grade and its score in [0, 1]; :class:`JudgeReplyError` when it was not offered."""
        if self.is_labelled:
            return self._label_score(grade)
        return self._number_score(grade)

    def _label_score(self, grade: Any) -> tuple[str, float]:
        if isinstance(grade, str):
            wanted = grade.strip(_WRAPPERS).casefold()
            for label, score in self.labels:
                if label.casefold() == wanted:
                    return label, score
        raise JudgeReplyError(
            f"the judge gave the grade {grade!r}, which is not one of the offered labels {self.offered()}"
        )

    def _number_score(self, grade: Any) -> tuple[float, float]:
        value = _as_number(grade, self.high)
        if value is None:
            raise JudgeReplyError(f"the judge gave the grade {grade!r}, which is not a number ({self.offered()})")
        if not math.isfinite(value) or not self.low <= value <= self.high:
            raise JudgeReplyError(f"the judge gave the score {value:g}, outside the scale ({self.offered()})")
        if self.integer and value != int(value):
            raise JudgeReplyError(f"the judge gave the score {value:g}, but the scale offers {self.offered()}")
        if self.integer:
            value = float(int(value))
        return value, (value - self.low) / (self.high - self.low)


def _as_number(grade: Any, top: float) -> float | None:
    """A number from a JSON number, a numeric string, or a fraction ``s/top``; None when it is none of these."""
    if isinstance(grade, bool):
        return None
    if isinstance(grade, int | float):
        return float(grade)
    if not isinstance(grade, str):
        return None
    text = grade.strip(" \t*_`'\"[]").rstrip(".,;!")
    if _NUMBER.fullmatch(text):
        return float(text)
    fraction = _FRACTION.fullmatch(text)
    if fraction and float(fraction["den"]) == top:
        return float(fraction["num"])
    return None


@dataclass(frozen=True)
class Grade:
    """One parsed judgement: the grade as given, its normalised score, the explanation, the judge's suggested fix
    (empty when it gave none) and how it was read."""

    grade: str | float
    score: float
    explanation: str
    method: Literal["json", "fallback"]
    fix: str = ""
    problem: str = ""  # the judge's name for the main problem (a few words), for grouping failures


@dataclass(frozen=True)
class Preference:
    """One parsed pairwise judgement: which response won (``A``, ``B`` or ``tie``), why, and the suggested fix."""

    winner: Literal["A", "B", "tie"]
    explanation: str
    method: Literal["json", "fallback"]
    fix: str = ""
    problem: str = ""


def find_json_object(text: str, keys: tuple[str, ...], quoted: Iterable[str] = ()) -> dict[str, Any] | None:
    """The one JSON object in ``text`` (whole reply, fenced block or inline) that has one of ``keys``; inline ones
    inside a delimited block, a quote or copied from ``quoted`` (the material under review) do not count.

    Raises :class:`JudgeReplyError` when there are several different ones: the reply is ambiguous.
    """
    whole = whole_json(text)
    if isinstance(whole, dict):
        return whole if any(k in whole for k in keys) else None
    found = Reply(text, quoted).json_objects(keys)
    distinct = {json.dumps(f.value, sort_keys=True) for f in found}
    if len(distinct) > 1:
        raise JudgeReplyError(f"the judge's reply holds {len(distinct)} different JSON objects with {'/'.join(keys)}")
    return found[0].value if found else None


def _text_field(obj: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            return value.strip()
    return ""


def _explanation(obj: Mapping[str, Any]) -> str:
    return _text_field(obj, ("explanation", "reasoning", "reason", "rationale"))


def _fix(obj: Mapping[str, Any]) -> str:
    return _text_field(obj, FIX_KEYS)


def _problem(obj: Mapping[str, Any]) -> str:
    return _text_field(obj, ("problem", "issue"))


def _line_field(reply: Reply, pattern: re.Pattern[str], skip: list[Found]) -> tuple[str, list[Found]]:
    """The judge's ``FIX:`` or ``PROBLEM:`` line (several different ones are ambiguous: none is used)."""
    lines = reply.marked_lines(pattern, skip)
    values = {f.value for f in lines if f.value}
    return (values.pop() if len(values) == 1 else ""), lines


def _agree(values: list[tuple[Any, Any]], what: str) -> Any:
    """The one canonical value all candidates share; JudgeReplyError when they differ."""
    canon = list(dict.fromkeys(c for c, _ in values))
    if len(canon) > 1:
        shown = ", ".join(repr(raw) for _, raw in values)
        raise JudgeReplyError(
            f"the judge's reply gives {len(values)} conflicting {what}s ({shown}); a reply must give exactly one, "
            "so none of them is used"
        )
    return canon[0]


def parse_grade(reply: str | None, scale: Scale, quoted: Iterable[str] = ()) -> Grade:
    """Read the judge's grade: the reply as one JSON object, else every JSON object and ``SCORE:``/``GRADE:`` line
    the judge wrote itself (not inside a delimited block, a ``>`` quote, or copied from ``quoted``). Several
    different grades raise :class:`JudgeReplyError`, as does none."""
    if not reply or not reply.strip():
        raise JudgeReplyError("the judge's reply is empty")
    whole = whole_json(reply)
    if isinstance(whole, dict):
        key = next((k for k in (scale.key, *GRADE_KEYS) if k in whole), None)
        if key is None:
            raise JudgeReplyError(f"no grade in the judge's JSON reply: it has none of {'/'.join(GRADE_KEYS)}")
        grade, score = scale.normalize(whole[key])
        return Grade(grade, score, _explanation(whole), "json", _fix(whole), _problem(whole))
    text = Reply(reply, quoted)
    objects = text.json_objects(GRADE_KEYS)
    lines = text.marked_lines(_FALLBACK, objects)
    if not objects and not lines:
        # Every grade statement is also in the output: an output that lists every grade ("SCORE: 1" … "SCORE: 5")
        # must not turn the judge's own "SCORE: 1" into an error verdict (counted apart, so a failure would drop out
        # of the score). They are read as the judge's when they agree; several different ones are refused below.
        objects = text.json_objects(GRADE_KEYS, copied=True)
        lines = text.marked_lines(_FALLBACK, objects, copied=True)
    if not objects and not lines:
        raise JudgeReplyError(
            f"no grade in the judge's reply: neither a JSON object with {'/'.join(GRADE_KEYS)} nor a SCORE:/GRADE: "
            "line of its own (quoted material does not count)"
        )
    values: list[tuple[Any, Any]] = []
    for found in objects:
        key = next(k for k in (scale.key, *GRADE_KEYS) if k in found.value)
        values.append((scale.normalize(found.value[key])[0], found.value[key]))
    for found in lines:
        if not found.value:
            raise JudgeReplyError("the judge's SCORE:/GRADE: line is empty")
        values.append((scale.normalize(leading_grade(found.value, scale))[0], found.value))
    grade, score = scale.normalize(_agree(values, "grade"))
    if objects:
        obj = objects[0].value
        return Grade(grade, score, _explanation(obj), "json", _fix(obj), _problem(obj))
    fix, fix_lines = _line_field(text, _FIX_LINE, objects)
    problem, problem_lines = _line_field(text, _PROBLEM_LINE, objects)
    explanation = text.without([*lines, *fix_lines, *problem_lines])
    return Grade(grade, score, explanation, "fallback", fix, problem)


def parse_preference(reply: str | None, quoted: Iterable[str] = ()) -> Preference:
    """Read a pairwise verdict: JSON ``{"winner": "A"|"B"|"tie"}``, else ``WINNER:`` lines, with the judge's own
    statements only (as :func:`parse_grade`); different winners in one reply raise :class:`JudgeReplyError`."""
    if not reply or not reply.strip():
        raise JudgeReplyError("the judge's reply is empty")
    whole = whole_json(reply)
    if isinstance(whole, dict):
        if "winner" not in whole:
            raise JudgeReplyError('no verdict in the judge\'s JSON reply: it has no "winner"')
        return Preference(_winner(whole["winner"]), _explanation(whole), "json", _fix(whole), _problem(whole))
    text = Reply(reply, quoted)
    objects = text.json_objects(("winner",))
    lines = text.marked_lines(_WINNER_LINE, objects)
    if not objects and not lines:  # every verdict statement is also in the material: read them if they agree
        objects = text.json_objects(("winner",), copied=True)
        lines = text.marked_lines(_WINNER_LINE, objects, copied=True)
    if not objects and not lines:
        raise JudgeReplyError(
            'no verdict in the judge\'s reply: neither a JSON object with "winner" nor a WINNER: line of its own'
        )
    values = [(_winner(f.value["winner"]), f.value["winner"]) for f in objects]
    values += [(_winner(leading_winner(f.value)), f.value) for f in lines]
    winner = _agree(values, "winner")
    if objects:
        obj = objects[0].value
        return Preference(winner, _explanation(obj), "json", _fix(obj), _problem(obj))
    fix, fix_lines = _line_field(text, _FIX_LINE, objects)
    problem, problem_lines = _line_field(text, _PROBLEM_LINE, objects)
    return Preference(winner, text.without([*lines, *fix_lines, *problem_lines]), "fallback", fix, problem)


_LEAD_WRAP = r"[\s*_`'\"\[\]]*"
_LEAD_NUMBER = re.compile(
    rf"^{_LEAD_WRAP}(?P<grade>{_NUMBER.pattern}(?:\s*/\s*{_NUMBER.pattern}|\s+out\s+of\s+{_NUMBER.pattern})?)"
    r"[*_`'\"\]]*(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_COMMENT_START = re.compile(r"^(?:$|[(,;:.!\-\u2013\u2014]|\s)")
_MARKER = re.compile(r"\b(?:SCORE|GRADE|WINNER)\b", re.IGNORECASE)
_RANGE = re.compile(r"^\s*(?:[-,/\u2013\u2014]|to\b|or\b|and\b)\s*[+-]?\.?\d", re.IGNORECASE)  # "3-4", "3 or 4"


def _split_comment(value: str, grade: str, rest: str) -> str:
    """``grade`` when ``rest`` is a comment on it (``4 (mostly right)``, ``fail - wrong city``); else ``value``."""
    if _MARKER.search(rest) or _RANGE.match(rest) or not _COMMENT_START.match(rest):
        return value  # another grade or a range on the line, or no separate grade: left for the scale to refuse
    return grade


def leading_grade(value: str, scale: Scale) -> str:
    """The grade of a ``SCORE:``/``GRADE:`` line that goes on with a comment (``4 (mostly correct)``, ``4 out of
    5``, ``fail - wrong city``), so a judge that explains on the grade line is read rather than refused. A line that
    names a second grade (``1 ... "SCORE: 5"``) is returned whole, and refused."""
    if scale.is_labelled:
        folded = value.strip(_WRAPPERS).casefold()
        for label, _ in sorted(scale.labels, key=lambda item: -len(item[0])):
            if folded.startswith(label.casefold()):
                start = value.casefold().index(label.casefold()) + len(label)
                return _split_comment(value, label, value[start:].lstrip("*_`'\"]"))
        return value
    match = _LEAD_NUMBER.match(value)
    if match is None:
        return value
    grade = re.sub(r"\s+out\s+of\s+", "/", match["grade"], flags=re.IGNORECASE)
    return _split_comment(value, grade, match["rest"])


def leading_winner(value: str) -> str:
    """The winner of a ``WINNER:`` line that goes on with a comment (``A (more accurate)``); else the line."""
    match = re.match(r"^[\s*_`'\"\[]*(?P<grade>response\s+[ab]|tie|draw|equal|[ab])\b[*_`'\"\]]*(?P<rest>.*)$", value,
                     re.IGNORECASE | re.DOTALL)  # fmt: skip
    if match is None or re.search(r"\b(?:[AB]|tie|draw)\b", match["rest"]):
        return value  # "A or B", "A (B is close)": the line names two winners, and is refused
    return _split_comment(value, match["grade"], match["rest"])


def _winner(value: Any) -> Literal["A", "B", "tie"]:
    if isinstance(value, str):
        text = value.strip(_WRAPPERS).casefold()
        if text in ("a", "response a"):
            return "A"
        if text in ("b", "response b"):
            return "B"
        if text in ("tie", "draw", "equal"):
            return "tie"
    raise JudgeReplyError(f"the judge named the winner {value!r}; the offered answers are 'A', 'B' and 'tie'")


_NUMBERED = re.compile(r"^\s*(?:\d+[.)]|[-*])\s+(?P<step>\S.*?)\s*$", re.MULTILINE)


def parse_steps(reply: str | None) -> list[str]:
    """Evaluation steps from a G-Eval reply: JSON ``{"steps": [...]}``, else its numbered or bulleted lines."""
    if not reply or not reply.strip():
        raise JudgeReplyError("the judge's reply is empty")
    obj = find_json_object(reply, ("steps",))
    if obj is not None:
        steps = obj["steps"]
        if isinstance(steps, list) and steps and all(isinstance(s, str) and s.strip() for s in steps):
            return [s.strip() for s in steps]
        raise JudgeReplyError(f"the judge's steps must be a non-empty list of strings, got {steps!r}")
    found = [m["step"] for m in _NUMBERED.finditer(reply)]
    if not found:
        raise JudgeReplyError("no evaluation steps in the judge's reply: neither JSON with 'steps' nor numbered lines")
    return found
