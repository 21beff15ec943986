"""contains: the output contains all / any / none of a list of substrings or regular expressions."""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

from pydantic import ValidationInfo, field_validator

from assay.errors import EvaluationInputError
from assay.evaluators.base import Evaluator, Options, as_text
from assay.evaluators.registry import register
from assay.evaluators.text.common import clip, cut, listing, references
from assay.verdict import Verdict


class _Matcher(NamedTuple):
    """One contains item: with a pattern it is searched for; otherwise ``needle`` is looked up."""

    item: str
    pattern: re.Pattern[str] | None
    needle: str

    def find(self, text: str, folded: str) -> str | None:
        """The text found for this item (``folded`` is the case-folded text when case is ignored), or None."""
        if self.pattern is not None:
            m = self.pattern.search(text)
            return None if m is None else m.group(0)
        return self.item if self.needle in folded else None


class ContainsOptions(Options):
    """Options of contains: which items, how many must be present, and how they are matched.

    - ``substrings``: the items; when unset, the expected value(s) are the items.
    - ``mode``: ``all`` items must be present (default; partial credit: the share found), ``any`` one of them
      (a full pass, 1.0, whichever is found), or ``none`` of them (the share absent).
    - ``regex``: the items are regular expressions (searched for); in ``substrings`` they are checked when built.
    - ``ignore_case``: plain items compare by Unicode case folding (``str.casefold``), regexes with re.IGNORECASE.
    """

    mode: Literal["all", "any", "none"] = "all"
    regex: bool = False
    ignore_case: bool = False
    substrings: list[str] | None = None

    @field_validator("substrings")
    @classmethod
    def _valid_substrings(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("give at least one substring (or leave it unset to use the expected values)")
        for i, item in enumerate(value):
            if item == "":
                raise ValueError(f"item {i} is empty, and an empty string is in every output")
            if info.data.get("regex"):
                try:
                    re.compile(item)
                except re.error as err:
                    raise ValueError(f"item {i} is an invalid regular expression {item!r}: {err}") from None
        return value


@register("contains")
class Contains(Evaluator):
    """The output contains all / any / none of a list of substrings (or regular expressions).

    Items come from the ``substrings`` option or, when it is unset, from the expected value(s). Score: ``all``
    the share of items found (1 when every one is), ``any`` 1 when one is found (else 0), ``none`` the share
    absent (1 when none is found).
    """

    Options = ContainsOptions
    options: ContainsOptions

    def setup(self) -> None:
        self._flags = re.IGNORECASE if self.options.ignore_case else 0
        self._fixed = self._matchers(self.options.substrings) if self.options.substrings else None

    def _matchers(self, items: list[str]) -> list[_Matcher]:
        """One matcher per item: a compiled pattern (regex mode) or the needle to look for."""
        out = []
        for item in items:
            if self.options.regex:
                try:
                    pattern = re.compile(item, self._flags)
                except re.error as err:
                    raise EvaluationInputError(
                        f"contains: expected {item!r} is not a valid regular expression: {err}"
                    ) from None
                out.append(_Matcher(item, pattern, item))
            else:
                out.append(_Matcher(item, None, item.casefold() if self.options.ignore_case else item))
        return out

    def _show(self, item: str) -> str:
        return f"/{cut(item, 60)}/" if self.options.regex else clip(item, 60)

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        matchers = self._fixed
        if matchers is None:
            if expected is None:
                raise EvaluationInputError(
                    "contains: no substrings; set the 'substrings' option or give expected values"
                )
            matchers = self._matchers(references(expected, self.name))
        folded = text.casefold() if self.options.ignore_case and not self.options.regex else text
        found: list[tuple[str, str]] = []  # (item, the text it found)
        missing: list[str] = []
        for m in matchers:
            hit = m.find(text, folded)
            if hit is None:
                missing.append(m.item)
            else:
                found.append((m.item, hit))
        matched = [item for item, _ in found]
        total = len(matchers)
        mode = self.options.mode
        details: dict[str, Any] = {
            "mode": mode,
            "matched": [cut(m) for m in matched],
            "missing": [cut(m) for m in missing],
            "total": total,
        }
        if mode == "none":
            score = len(missing) / total
            if not matched:
                return Verdict.pass_(score, details)
            return self._forbidden(text, found, score, details)
        score = (1.0 if matched else 0.0) if mode == "any" else len(matched) / total
        if (mode == "all" and not missing) or (mode == "any" and matched):
            return Verdict.pass_(score, details)
        kind = "patterns" if self.options.regex else "substrings"
        shown = [self._show(m) for m in missing]
        if mode == "all":
            reason = f"output {clip(text, 80)} lacks {len(missing)} of {total} required {kind}: {listing(shown)}"
            verb = "Include text matching" if self.options.regex else "Include"
            feedback = f"{verb} {listing(shown)} in the answer."
        else:
            reason = f"output {clip(text, 80)} contains none of the {total} {kind} {listing(shown, 'or')}"
            verb = "text matching at least one of" if self.options.regex else "at least one of"
            feedback = f"Include {verb} {listing(shown, 'or')} in the answer."
        return Verdict.fail(reason, score=score, feedback=feedback, details=details)

    def _forbidden(self, text: str, found: list[tuple[str, str]], score: float, details: dict[str, Any]) -> Verdict:
        kind = "pattern" if self.options.regex else "substring"
        shown = [self._show(item) for item, _ in found]
        plural = "s" if len(found) != 1 else ""
        reason = f"output {clip(text, 80)} contains {len(found)} forbidden {kind}{plural}: {listing(shown)}"
        if self.options.regex:
            details["found_text"] = {cut(item): cut(hit) for item, hit in found}
            texts = [f"{clip(hit, 40)} (matching {self._show(item)})" for item, hit in found]
            feedback = f"Remove {listing(texts)} from the answer."
        else:
            feedback = f"Remove {listing(shown)} from the answer."
        return Verdict.fail(reason, score=score, feedback=feedback, details=details)
