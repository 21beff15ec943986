"""The numeric evaluator: read the answer number out of free text and compare it within a tolerance."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, overload

from pydantic import Field, model_validator

from assay.errors import EvaluationInputError
from assay.evaluators.base import Evaluator, Options, as_text, expected_list
from assay.evaluators.registry import register
from assay.evaluators.text.common import clip, cut
from assay.verdict import Verdict

_THIN_SPACES = "\u00a0\u202f\u2009"  # no-break space, narrow no-break space, thin space: typographic group separators
_CURRENCY = "$€£¥"
_SIGN = "+\\-\u2212"  # plus, hyphen-minus, minus sign (inside a character class)
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_DETAIL_CANDIDATES = 100  # candidates listed in details; the count is always given


def number_pattern(
    decimal: Literal[".", ","] = ".", times_ten: bool = True, space_groups: bool = True
) -> re.Pattern[str]:
    """The regular expression of one number written with ``decimal`` as the decimal mark.

    Thousands are grouped by ',' (or '.' when the decimal mark is ','), a no-break or thin space, or (with
    ``space_groups``) an ordinary space, with one kind of separator per number and groups of exactly three
    digits. A sign must touch the number (or its currency symbol), and no letter, digit or decimal mark may
    touch its left: 'GPT-4' reads 4, '3-4' reads 3 and 4, 'v1.2.3' reads nothing.
    """
    point = re.escape(decimal)
    seps = f"[{',' if decimal == '.' else '.'}{_THIN_SPACES}{' ' if space_groups else ''}]"
    integer = rf"\d{{1,3}}(?P<sep>{seps})\d{{3}}(?!\d)(?:(?P=sep)\d{{3}}(?!\d))*|\d+"
    mantissa = rf"(?P<mantissa>(?:{integer})(?:{point}\d+)?|{point}\d+)"
    exponent = rf"[eE](?P<exp>[{_SIGN}]?\d+)"
    if times_ten:
        times = rf"[ ]?[×xX*·⋅][ ]?{_power('t')}"
        number = rf"(?:(?P<bare>{_power('b')})|{mantissa}(?:{exponent}|{times})?)"
    else:
        number = rf"{mantissa}(?:{exponent})?"
    return re.compile(
        rf"(?<![\w{point}])(?P<sign>[{_SIGN}])?(?:(?P<cur>[{_CURRENCY}])[ ]?)?(?P<sign2>[{_SIGN}])?"
        rf"{number}(?P<pct>[ ]?[%％])?(?:[ ]?(?P<cur2>[{_CURRENCY}]))?"
    )


def _power(prefix: str) -> str:
    """'10^5', '10**-3', '10^(5)', '10^{5}' or '10⁵', with the exponent in groups named by ``prefix``."""
    sup = "[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+"
    return rf"10(?:(?:\^|\*\*)[({{]?(?P<{prefix}exp>[{_SIGN}]?\d+)[)}}]?|(?P<{prefix}sup>{sup}))"


PercentRule = Literal["as_number", "as_fraction", "either"]
# 'either' by default: a percentage matches the expected number as written (12% = 12, what every result judged so
# far relied on) or as a fraction (12% = 0.12); no pass becomes a fail, only a percentage equal to an expected
# fraction starts to pass (see NumericOptions)
DEFAULT_PERCENT: PercentRule = "either"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One number found in the text: its value, the text it was read from and where; ``fraction`` is its second
    reading under ``percent: either`` when it is a percentage (12% reads 12, and 0.12)."""

    value: float
    text: str
    start: int
    fraction: float | None = None

    def readings(self) -> tuple[float, ...]:
        """The values this number may stand for: its value, then its fraction when it has one."""
        return (self.value,) if self.fraction is None else (self.value, self.fraction)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": _json_number(self.value), "text": cut(self.text), "start": self.start}
        if self.fraction is not None:
            out["fraction"] = _json_number(self.fraction)
        return out


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else repr(value)


class NumericOptions(Options):
    """Options of numeric: how numbers are written and read, which one is the answer, and the tolerance.

    - ``policy``: the answer is the ``last`` number (default, as after a chain of thought) or the ``first``.
    - ``decimal``: the decimal mark, '.' (1,234.5) or ',' (1.234,5).
    - ``percent``: how a percentage ('45%', in the output or a string expected value) compares: ``either``
      (default) as 45 or as 0.45, whichever the expected value is; ``as_number`` as 45 only; ``as_fraction`` as
      0.45 only. ``either`` keeps every pass of ``as_number`` (the rule before it was an option) and adds the
      answers that give an expected fraction as a percentage ('about 12%' for 0.12). Numbers without '%' have
      one reading.
    - ``percent_as_fraction``: the older spelling of ``percent: as_fraction`` (true reads '45%' as 0.45 only);
      kept so old task files load, and refused beside any other ``percent``.
    - ``times_ten``: read '2.1×10^5', '2.1 x 10**5', '3×10⁸' and '10^6' as one number each.
    - ``space_groups``: read '1 234 567' with ordinary spaces as one number; turn it off when outputs list
      numbers separated by spaces ('100 200 300'). No-break and thin spaces always group digits.
    - ``abs_tol``, ``rel_tol``: as in :func:`math.isclose` (defaults 0 and 1e-9).
    """

    policy: Literal["last", "first"] = "last"
    decimal: Literal[".", ","] = "."
    percent: PercentRule | None = None  # None: DEFAULT_PERCENT (kept out of configs, so task hashes stay)
    percent_as_fraction: bool = False
    times_ten: bool = True
    space_groups: bool = True
    abs_tol: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    rel_tol: float = Field(1e-9, ge=0.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _one_percent_rule(self) -> NumericOptions:
        if self.percent_as_fraction and self.percent not in (None, "as_fraction"):
            raise ValueError(f"percent_as_fraction: true contradicts percent: {self.percent}; give only percent")
        return self

    @property
    def percent_rule(self) -> PercentRule:
        """The rule in force: ``percent``, else ``as_fraction`` for ``percent_as_fraction``, else the default."""
        if self.percent is not None:
            return self.percent
        return "as_fraction" if self.percent_as_fraction else DEFAULT_PERCENT


def format_number(value: float) -> str:
    """A number as a person would write it (42, not 42.0)."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


@register("numeric")
class Numeric(Evaluator):
    """The answer number in the output (the last one, or the first) equals the expected number within tolerance.

    Reads signs, thousands separators, currency symbols ($€£¥), percentages, scientific notation
    ('1.5e-3', and with ``times_ten`` '2.1×10^5', '2.1 x 10**5', '3×10⁸', '10^6'). Tolerance follows
    :func:`math.isclose` (``rel_tol`` default 1e-9, ``abs_tol`` default 0). A non-numeric expected is an error.
    """

    Options = NumericOptions
    options: NumericOptions

    def setup(self) -> None:
        self._pattern = number_pattern(self.options.decimal, self.options.times_ten, self.options.space_groups)
        self._rule = self.options.percent_rule

    def _value(self, m: re.Match[str]) -> float:
        """The number a match stands for. A match of plain digits (with a decimal point when the mark is '.') is
        all mantissa, without sign, separator, exponent or percent: its value is ``float`` of it, read at once."""
        text = m.group(0)
        if text.isdecimal() or (self.options.decimal == "." and text.replace(".", "", 1).isdecimal()):
            return float(text)
        groups = m.groupdict()
        if groups.get("bare") is not None:
            mantissa = "1"
        else:
            mantissa = m["mantissa"]
            if m["sep"]:
                mantissa = mantissa.replace(m["sep"], "")
            if self.options.decimal == ",":
                mantissa = mantissa.replace(",", ".")
        sup = groups.get("tsup") or groups.get("bsup")
        exponent = m["exp"] or groups.get("texp") or groups.get("bexp") or (sup and sup.translate(_SUPERSCRIPTS)) or "0"
        negative = (m["sign"] or m["sign2"] or "+") in "-\u2212"
        value = float(f"{'-' if negative else ''}{mantissa}e{exponent.replace(chr(0x2212), '-')}")
        if m["pct"] and self._rule == "as_fraction":
            value /= 100
        return value

    def _fraction(self, m: re.Match[str], value: float) -> float | None:
        """The second reading of a percentage under ``percent: either`` (its value over 100), else None."""
        return value / 100 if self._rule == "either" and m["pct"] else None

    def _candidate(self, m: re.Match[str]) -> Candidate:
        value = self._value(m)
        return Candidate(value, m.group(0).strip(), m.start(), self._fraction(m, value))

    def candidates(self, text: str) -> list[Candidate]:
        """Every number in ``text``, in order."""
        return [self._candidate(m) for m in self._pattern.finditer(text)]

    def parse_expected(self, expected: Any) -> float:
        """The expected value as a float: a number, or a string that is exactly one number."""
        return self.expected_readings(expected)[0]

    def expected_readings(self, expected: Any) -> tuple[float, ...]:
        """The values an expected number stands for: one, or two for a percentage string under ``percent: either``
        ('12%': 12 and 0.12)."""
        fraction = None
        if _is_number(expected):
            value = float(expected)
        elif isinstance(expected, str):
            m = self._pattern.fullmatch(expected.strip())
            if m is None:
                raise EvaluationInputError(f"numeric: expected {clip(expected)} is not a number")
            value = self._value(m)
            fraction = self._fraction(m, value)
        else:
            raise EvaluationInputError(f"numeric: expected must be a number or numeric string, got {expected!r}")
        if math.isnan(value):
            raise EvaluationInputError("numeric: expected is NaN, which equals nothing")
        return (value,) if fraction is None else (value, fraction)

    def _close(self, value: float, target: float) -> bool:
        return math.isclose(value, target, rel_tol=self.options.rel_tol, abs_tol=self.options.abs_tol)

    def check(self, actual: Any, expected: Any) -> Verdict:
        targets = [r for e in expected_list(expected) for r in self.expected_readings(e)]
        if not targets:
            raise EvaluationInputError("numeric: expected is an empty list; give at least one acceptable number")
        if _is_number(actual):
            text = repr(actual)
            found: Sequence[Candidate] = [Candidate(float(actual), text, 0)]
        else:
            text = as_text(actual, self.name)
            # numbers are read lazily: a huge output with many numbers only parses the ones reported
            found = _LazyCandidates(list(self._pattern.finditer(text)), self._candidate)
        opts = self.options
        details: dict[str, Any] = {
            "expected": targets if len(targets) > 1 else targets[0],
            "policy": opts.policy,
            "n_candidates": len(found),
            "candidates": [found[i].to_dict() for i in range(min(len(found), _DETAIL_CANDIDATES))],
        }
        if not found:
            return Verdict.fail(
                f"no number found in output {clip(text, 80)}",
                feedback="State the answer as a number in digits (for example 'The answer is 42.'); "
                "the output contains none.",
                details=details,
            )
        chosen = found[-1] if opts.policy == "last" else found[0]
        readings = chosen.readings()
        matched = next((r for r in readings if any(self._close(r, t) for t in targets)), None)
        # the reading compared: the one that matched, else the one nearest an expected value
        pairs = [(abs(r - t), r, t) for r in readings for t in targets]
        nearest = min(range(len(pairs)), key=lambda k: pairs[k][0])
        diff, value, target = pairs[nearest]
        if matched is not None:
            value = matched
            diff = min(abs(matched - t) for t in targets)
        details["extracted"] = _json_number(value)
        details["extracted_text"] = cut(chosen.text)
        if chosen.fraction is not None:
            details["percent"] = "fraction" if value == chosen.fraction else "number"
        details["difference"] = diff if math.isfinite(diff) else repr(diff)
        if matched is not None:
            return Verdict.pass_(details=details)
        return self._mismatch(chosen, found, target, details, value)

    def _mismatch(
        self, chosen: Candidate, found: Sequence[Candidate], target: float, details: dict[str, Any], value: float
    ) -> Verdict:
        opts = self.options
        which = f"the {opts.policy} number" if len(found) > 1 else "the only number"
        tolerance = f"abs_tol {opts.abs_tol:g}, rel_tol {opts.rel_tol:g}"
        reason = (
            f"{which} in the output, {format_number(value)} (from {clip(chosen.text, 40)}), differs from "
            f"expected {format_number(target)} by {_difference(value, target)} ({tolerance})"
        )
        elsewhere = next((c for c in found if any(self._close(r, target) for r in c.readings())), None)
        if elsewhere is not None:
            feedback = (
                f"The output mentions {clip(elsewhere.text, 40)} but its {opts.policy} number is "
                f"{clip(chosen.text, 40)}; give the final answer, {format_number(target)}, as the {opts.policy} "
                f"number of the output."
            )
        else:
            feedback = (
                f"The answer read from the output is {format_number(value)} but {format_number(target)} "
                f"is expected; recheck the calculation and state {format_number(target)} as the "
                f"{opts.policy} number of the output."
            )
        return Verdict.fail(reason, feedback=feedback, details=details)


def _difference(value: float, target: float) -> str:
    """``|value - target|`` without float noise (0.1, not 0.09999999999999998)."""
    diff = abs(value - target)
    return format_number(float(f"{diff:.12g}")) if math.isfinite(diff) else repr(diff)


def _is_number(value: Any) -> bool:
    """A real number (int, float, Decimal, Fraction, numpy scalar), not a bool."""
    return isinstance(value, numbers.Real | Decimal) and not isinstance(value, bool)


class _LazyCandidates(Sequence[Candidate]):
    """Candidates built from regex matches only when looked at."""

    def __init__(self, matches: list[re.Match[str]], build: Callable[[re.Match[str]], Candidate]) -> None:
        self._matches = matches
        self._build = build

    def __len__(self) -> int:
        return len(self._matches)

    @overload
    def __getitem__(self, index: int) -> Candidate: ...
    @overload
    def __getitem__(self, index: slice) -> list[Candidate]: ...
    def __getitem__(self, index: int | slice) -> Candidate | list[Candidate]:
        if isinstance(index, slice):
            return [self._build(m) for m in self._matches[index]]
        return self._build(self._matches[index])
