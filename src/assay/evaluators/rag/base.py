"""The RAG metrics' shared machinery: ask the judge (retried, cached, recorded), read its JSON, build the verdict.

A metric implements :meth:`RagJudge.measure`, which asks the judge through :class:`Asker` and returns a
:class:`Measured`: the score, the per-item verdicts (claims, statements or chunks, each with the judge's reason), and
which items count against the output. Any failed or unreadable judge call makes the verdict an *error* (never a
zero); its details keep every call (prompt, raw reply, usage), as ``llm_judge`` does.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from assay.evaluators.judge.client import CallRecord, JudgeModels, summarize_calls
from assay.evaluators.judge.evaluator import JudgeBase
from assay.evaluators.judge.parse import JudgeReplyError
from assay.evaluators.judge.prompt import schema_format
from assay.evaluators.rag.inputs import Material, answer_of, contexts_of, question_of, reference_of
from assay.evaluators.rag.options import ContextOptions, RagOptions
from assay.evaluators.rag.prompts import Prompt
from assay.evaluators.text.common import clip, cut, listing
from assay.verdict import Verdict

T = TypeVar("T")


class JudgeFailed(Exception):
    """A judge call failed or its reply could not be read; the verdict is an error."""


@dataclass
class Measured:
    """A metric's result for one output: its score, the items judged, and the ones that count against it."""

    score: float
    items: list[dict[str, Any]]
    failing: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # counts shown in details (supported, total, …)
    note: str | None = None  # why there was nothing to judge, when so


class Asker:
    """Asks the one judge model of a sample and keeps a record of every call."""

    def __init__(self, models: JudgeModels, params: dict[str, Any], structured: bool) -> None:
        self.models = models
        self.params = params
        self.structured = structured
        self.calls: list[CallRecord] = []

    async def __call__(
        self, purpose: str, prompt: Prompt, properties: dict[str, Any], read: Callable[[str | None], T]
    ) -> T:
        """One judge call: ``properties`` give the JSON-schema reply; ``read`` parses it (raising JudgeReplyError)."""
        record = await self.models.call(
            0,
            purpose=purpose,
            messages=prompt.messages,
            cache_messages=prompt.cache_messages,
            params=self.params,
            response_format=schema_format(purpose, properties) if self.structured else None,
        )
        self.calls.append(record)
        if record.error is not None:
            raise JudgeFailed(record.error)
        try:
            value = read(record.reply)
        except JudgeReplyError as err:
            record.error = f"judge {record.model}: {err}"
            raise JudgeFailed(record.error) from None
        self.models.commit(0, record)
        return value


class RagJudge(JudgeBase):
    """A RAG metric: the judge checks parts of the output (or of the retrieved context) one by one."""

    options: RagOptions
    definition: ClassVar[str] = ""  # whose definition the score follows, recorded in every verdict's details
    needs_reference: ClassVar[bool] = False
    higher_is_better: ClassVar[bool] = True
    default_expected: ClassVar[str] = "none"  # the reference, for the metrics that read one: "target"
    item_key: ClassVar[str] = "items"  # the details key listing the judged items: claims, statements, contexts

    def material(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Material:
        """The sample's answer, question, retrieved chunks and reference, as far as this metric reads them."""
        options = self.options
        contexts = contexts_of(context, options.context, self.name) if isinstance(options, ContextOptions) else []
        return Material(
            answer=answer_of(actual, self.name),
            question=question_of(context, options.include_input),
            contexts=contexts,
            reference=reference_of(expected, self.name) if self.reads_reference() else None,
        )

    def reads_reference(self) -> bool:
        """Whether this metric reads the reference answer (the metric's expected value)."""
        return self.needs_reference

    @abstractmethod
    async def measure(self, ask: Asker, material: Material) -> Measured:
        """Ask the judge and compute the score (raises JudgeFailed when a call fails)."""

    @abstractmethod
    def describe(self, measured: Measured) -> tuple[str, str]:
        """The reason (what counts against the output) and the feedback (what to change) of ``measured``."""

    def passes(self, score: float) -> bool:
        """Whether a score passes the threshold (at least it; a lower-is-better metric overrides)."""
        return score >= self.options.pass_threshold

    async def _judge(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Verdict:
        material = self.material(actual, expected, context)
        ask = Asker(await self._models(), self._params(), self.options.structured_output)
        try:
            measured = await self.measure(ask, material)
        except JudgeFailed as err:
            return Verdict.errored(str(err), details=self._details(ask.calls))
        details = self._details(ask.calls) | {"score": measured.score, **measured.figures}
        details[self.item_key] = measured.items
        if measured.note:
            details["note"] = measured.note
        passed = self.passes(measured.score)
        reason, feedback = self.describe(measured) if measured.failing else ("", "")
        if not passed and not reason:
            reason = f"score {measured.score:.2f} does not pass the threshold {self.options.pass_threshold:g}"
        return Verdict(measured.score, passed, None if passed else reason, details, feedback or None)

    def _details(self, calls: list[CallRecord]) -> dict[str, Any]:
        return {
            "judge": summarize_calls(calls),
            "judges": [c.to_dict() for c in calls],
            "definition": self.definition,
            "pass_threshold": self.options.pass_threshold,
        }

    def threshold_text(self, score: float) -> str:
        """``score 0.50 < pass threshold 0.7``, the way a failing reason ends."""
        sign = "<" if self.higher_is_better else ">"
        return f"score {score:.2f} {sign} pass threshold {self.options.pass_threshold:g}"

    def counted(self, measured: Measured, what: str, key: str) -> tuple[str, str]:
        """The reason ``2 of 4 <what>: 'a' (why) and 'b' (why) (score …)`` and the quoted failing items."""
        named = quoted_items(measured.failing, key)
        reason = (
            f"{len(measured.failing)} of {len(measured.items)} {what}: {named} ({self.threshold_text(measured.score)})"
        )
        return reason, named


def quoted_items(items: list[dict[str, Any]], key: str, limit: int = 5) -> str:
    """``'a' (reason) and 'b' (reason)`` for the items that count against an output, cut after ``limit``."""
    shown = [
        f"{clip(str(item[key]))}" + (f" ({cut(item['reason'], 200)})" if item.get("reason") else "") for item in items
    ]
    return listing(shown, "and", limit)
