"""regex: the output matches a regular expression, optionally with a captured group equal to the answer."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options, as_text
from assay.evaluators.normalize import NormalizeOptions, Normalizer
from assay.evaluators.registry import register
from assay.evaluators.text.common import clip, compared_answer, cut, references
from assay.verdict import Verdict


class RegexOptions(Options, NormalizeOptions):
    """Options of regex: the pattern, how it must match, its flags, and an optional group to compare.

    ``ignore_case`` both makes the pattern case-insensitive and compares a captured group ignoring case
    (use an inline ``(?i)`` in the pattern for a case-insensitive pattern only). The other normalisation
    options apply to the comparison of the captured group with the expected answer.
    """

    pattern: str = Field(description="the regular expression (Python re syntax), checked when the task loads")
    mode: Literal["search", "fullmatch"] = Field(
        "search",
        description="'search' passes when the pattern matches anywhere in the output; 'fullmatch' only when it "
        "matches the whole output",
    )
    multiline: bool = Field(False, description="re.MULTILINE: ^ and $ also match at each line's start and end")
    dotall: bool = Field(False, description="re.DOTALL: . also matches a newline, so a pattern can span lines")
    group: int | str | None = Field(
        None,
        description="a group number or name whose captured text must equal the expected answer (after the "
        "normalisation options); null passes on any match and ignores the expected value",
    )
    ignore_case: bool = Field(
        False,
        description="match the pattern case-insensitively (re.IGNORECASE) and compare a captured group with the "
        "answer in lower case",
    )

    @field_validator("pattern")
    @classmethod
    def _valid_pattern(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as err:
            raise ValueError(f"invalid regular expression {value!r}: {err}") from None
        return value


@register("regex")
class Regex(Evaluator):
    """The output matches a regular expression; with ``group``, that group's capture must equal the expected answer.

    Without ``group`` the expected value is not used.
    """

    Options = RegexOptions
    options: RegexOptions

    def setup(self) -> None:
        opts = self.options
        flags = (
            (re.IGNORECASE if opts.ignore_case else 0)
            | (re.MULTILINE if opts.multiline else 0)
            | (re.DOTALL if opts.dotall else 0)
        )
        self._pattern = re.compile(opts.pattern, flags)
        group = opts.group
        if isinstance(group, int) and not 0 <= group <= self._pattern.groups:
            raise ConfigError(
                f"regex: option 'group': the pattern {opts.pattern!r} has {self._pattern.groups} group(s), "
                f"so group must be between 0 and {self._pattern.groups} (got {group})"
            )
        if isinstance(group, str) and group not in self._pattern.groupindex:
            names = ", ".join(repr(n) for n in self._pattern.groupindex) or "none"
            raise ConfigError(
                f"regex: option 'group': the pattern {opts.pattern!r} has no group named {group!r} "
                f"(named groups: {names})"
            )
        self.normalize = Normalizer.from_options(opts)

    def _show(self) -> str:
        return f"/{self.options.pattern}/"

    def check(self, actual: Any, expected: Any) -> Verdict:
        text = as_text(actual, self.name)
        opts = self.options
        m = self._pattern.search(text) if opts.mode == "search" else self._pattern.fullmatch(text)
        if m is None:
            return self._no_match(text)
        details: dict[str, Any] = {"match": cut(m.group(0)), "span": [m.start(), m.end()]}
        if opts.group is None:
            return Verdict.pass_(details=details)
        if expected is None:
            raise EvaluationInputError(
                "regex: option 'group' compares the captured text with the expected answer, "
                "but no expected answer was given"
            )
        answers = references(expected, self.name)
        norm_answers = [self.normalize(a) for a in answers]
        first = clip(compared_answer(answers[0], norm_answers[0]))  # the answer as it is compared
        captured = m.group(opts.group)
        if captured is None:
            return Verdict.fail(
                f"group {opts.group!r} of {self._show()} took no part in the match {clip(m.group(0))}",
                feedback=f"State the answer {first} where the pattern {self._show()} reads group {opts.group!r}.",
                details=details,
            )
        norm = self.normalize(captured)
        details["captured"] = cut(captured)
        if norm in norm_answers:
            details["matched"] = cut(answers[norm_answers.index(norm)])
            return Verdict.pass_(details=details)
        details["normalized_captured"] = cut(norm)
        details["normalized_expected"] = [cut(a) for a in norm_answers]
        if len(answers) == 1:
            reason = f"group {opts.group!r} captured {clip(captured)}, which does not equal expected {first}"
            if norm != captured or norm_answers[0] != compared_answer(answers[0], norm_answers[0]):
                reason += f" (after normalisation: {clip(norm)} vs {clip(norm_answers[0])})"
        else:
            shown = ", ".join(clip(compared_answer(a, n), 40) for a, n in zip(answers[:5], norm_answers, strict=False))
            reason = (
                f"group {opts.group!r} captured {clip(captured)}, which equals none of {len(answers)} answers ({shown})"
            )
        feedback = (
            f"The pattern {self._show()} read the answer {clip(captured)} from {clip(m.group(0), 80)}; "
            f"the answer there should be {first}."
        )
        return Verdict.fail(reason, feedback=feedback, details=details)

    def _no_match(self, text: str) -> Verdict:
        if self.options.mode == "fullmatch":
            part = self._pattern.search(text)
            if part is not None and part.group(0):
                return Verdict.fail(
                    f"output {clip(text, 80)} does not match {self._show()} as a whole; "
                    f"only {clip(part.group(0), 60)} at {part.start()}-{part.end()} does",
                    feedback=(
                        f"Answer with only the part that matches, {clip(part.group(0), 60)}, without the text around."
                    ),
                    details={"partial_match": cut(part.group(0)), "span": [part.start(), part.end()]},
                )
            return Verdict.fail(
                f"output {clip(text, 80)} does not match {self._show()} as a whole",
                feedback=f"The whole output must match the pattern {self._show()}; the output was {clip(text, 80)}.",
            )
        if not text.strip():
            feedback = f"The output is empty; it must contain text matching the pattern {self._show()}."
        else:
            feedback = f"The output must contain text matching the pattern {self._show()}; it was {clip(text, 80)}."
        return Verdict.fail(f"output {clip(text, 80)} contains no match for {self._show()}", feedback=feedback)
