"""A custom evaluator (docs/how-to/custom-evaluators.md): the answer must be in the output, in few words.

Importing this module registers it under the name ``concise_answer``; a package can also make it known to every
``assay`` command through the ``assay.evaluators`` entry-point group (see the how-to).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay import Evaluator, Options, Response, Verdict, register


@register("concise_answer")
class ConciseAnswer(Evaluator):
    """The expected answer appears in the output, and the output is at most ``max_words`` words long."""

    class Options(Options):
        max_words: int = Field(10, gt=0, description="the most words an output may have")
        ignore_case: bool = Field(True, description="compare the answer and the output ignoring case")

    options: Options  # the validated options, for type checkers

    def check(self, actual: Any, expected: Any) -> Verdict:
        # in a run, `actual` is what the task's filters made of the reply: the Response itself when no step
        # changed it, text after a text step (regex, strip, ...); called directly, whatever it was given
        if isinstance(actual, Response):
            actual = actual.text or ""
        if not isinstance(actual, str):  # an output it cannot judge: an error verdict, counted apart, never a zero
            return Verdict.errored(f"concise_answer judges text, got {type(actual).__name__}")
        answers = expected if isinstance(expected, list) else [expected]
        text = actual.lower() if self.options.ignore_case else actual
        found = [a for a in answers if (str(a).lower() if self.options.ignore_case else str(a)) in text]
        words = len(actual.split())
        details = {"words": words, "max_words": self.options.max_words}
        if not found:
            return Verdict.fail(
                f"the output {actual!r} does not contain the answer {answers[0]!r}",
                feedback=f"Answer with {answers[0]!r}.",
                details=details,
            )
        if words > self.options.max_words:
            return Verdict.fail(
                f"the output has {words} words, more than {self.options.max_words}",
                score=0.5,  # partial credit: right answer, too many words
                feedback=f"Answer with {found[0]!r} alone, in at most {self.options.max_words} words.",
                details=details,
            )
        return Verdict.pass_(details=details)
