"""``llm_judge``: a judge model grades an output against criteria, or compares it with a baseline output.

The judge is configured on its own (``model``: a spec such as ``"openai:gpt-4o"`` or ``{"provider": "openai",
...}``; never the model under test unless named). It is asked for JSON (``{"explanation", "fix", "score"|"label"}``)
through a strict JSON-schema ``response_format``, falling back to JSON mode and then to plain text where the server
refuses one (the level that worked is remembered per judge). Only the judge's own statements count as its grade: a
grade inside a delimited block, a ``>`` quote, or copied from the output never does, and a reply holding two
different grades, or none, gives an *error* verdict that keeps the raw reply — never the last, the most convenient
or the lowest grade (:mod:`assay.evaluators.judge.reply`). The judge's ``fix`` becomes the verdict's feedback; its
explanation stays in the reason. Scales are listed in :mod:`assay.evaluators.judge.parse`; how several judgements
combine in :mod:`assay.evaluators.judge.variants` and :mod:`assay.evaluators.judge.verdict` (``min_judges``,
position-inconsistent pairwise judgements).

The output (and the task and reference) sit inside a random per-call boundary tag they cannot close, and the judge
is told that anything inside is data. Every call's prompt, raw reply, model, usage, latency and cache status is kept
in ``details["judges"]``; ``details["judge"]`` sums them, so judge usage is reported apart from the model's.
Judgements come from the SQLite response cache only when asked: the run's switch (``--cache``, off by default,
handed over by :meth:`LLMJudge.use_run_cache`) or the judge's own ``cache: true``.

Where it gets what it needs: the reference answer is ``expected`` (or ``expected["reference"]``), or a field of the
dataset row (``reference: doc.FIELD``, from ``context["doc"]``); the task's input is ``context["input"]`` or
``expected["input"]``; a pairwise baseline is ``expected["output_b"]``, the target, or a row field (``baseline``).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from assay.errors import EvaluationInputError
from assay.evaluators.base import BatchResult, Evaluator, _expecteds, as_text
from assay.evaluators.judge.client import CallRecord, JudgeModels, LoopModels, ModelSpec, check_spec
from assay.evaluators.judge.logprobs import request_params, weighted_grade
from assay.evaluators.judge.options import JudgeCallOptions, JudgeOptions
from assay.evaluators.judge.parse import JudgeReplyError, Scale, parse_grade, parse_preference, parse_steps
from assay.evaluators.judge.prompt import (
    canonical,
    grade_format,
    grade_messages,
    new_boundary,
    pairwise_messages,
    preference_format,
    render_input,
    render_transcript,
    steps_format,
    steps_messages,
)
from assay.evaluators.judge.variants import OUTCOME_SCORE, combine_orders, order_outcome
from assay.evaluators.judge.verdict import Unit, VerdictBuilder, base_details
from assay.evaluators.registry import register
from assay.models.retry import RetryPolicy
from assay.verdict import Verdict

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from assay.models.cache import ResponseCache

T = TypeVar("T")
BUNDLE_KEYS = frozenset({"reference", "input", "output_b", "doc"})


@dataclass
class Inputs:
    """What the judge reads besides the output."""

    input_text: str | None
    reference: str | None
    baseline: str | None
    transcript: list[tuple[str, str]] = field(default_factory=list)  # (label, text) per message, when shown

    def texts(self) -> list[str]:
        """Every text shown to the judge besides the output(s): the boundary must differ from all of them."""
        return [self.input_text or "", self.reference or "", *(t for _, t in self.transcript)]


class StepsError(Exception):
    """The judge could not expand the criteria into evaluation steps."""


class JudgeBase(Evaluator):
    """What every judge evaluator shares: its judge models per event loop, retries, the run's cache switch, sync and
    batch entry points over :meth:`_judge`, and the manifest's record of the judges (the RAG metrics build on it)."""

    options: JudgeCallOptions

    def setup(self) -> None:
        model = self.options.model
        self.specs: list[ModelSpec] = [check_spec(s, "model") for s in (model if isinstance(model, list) else [model])]
        self.policy = RetryPolicy(
            max_attempts=self.options.max_attempts,
            initial_backoff_s=self.options.initial_backoff_s,
            timeout_s=self.options.timeout_s,
        )
        self._loops = LoopModels()
        self._lock = threading.Lock()
        self._cache: ResponseCache | None = None
        self._run_cache: tuple[bool, str | None] = (False, None)  # the run's cache switch and file (off by default)
        self._formats: dict[int, int] = {}  # per judge, the structured-output level its server took

    @abstractmethod
    async def _judge(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Verdict:
        """Judge one output (may raise: :meth:`aevaluate` turns an exception into an error verdict)."""

    # -- public entry points ----------------------------------------------------------------------------------------

    def check(self, actual: Any, expected: Any) -> Verdict:
        """Judge one output synchronously (see :meth:`evaluate`)."""
        return self.evaluate(actual, expected)

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Judge one output; works with or without a running event loop (then in a worker thread)."""
        return self.evaluate_batch([actual], [expected], contexts=[context])[0]

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        """Judge one output in the running loop; an exception becomes an error verdict."""
        try:
            return await self._judge(actual, expected, context)
        except EvaluationInputError as exc:
            return Verdict.errored(str(exc))
        except Exception as exc:
            return Verdict.errored(f"{self.name} raised {type(exc).__name__}: {exc}")

    def evaluate_batch(
        self,
        actuals: Sequence[Any],
        expecteds: Sequence[Any] | None = None,
        *,
        contexts: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> BatchResult:
        """Judge many outputs concurrently (``concurrency`` at a time) in one private event loop."""
        exp = _expecteds(actuals, expecteds)
        ctx: Sequence[Mapping[str, Any] | None] = contexts if contexts is not None else [None] * len(actuals)
        if len(ctx) != len(actuals):
            raise ValueError(f"evaluate_batch: {len(actuals)} actuals but {len(ctx)} contexts")

        async def run_all() -> list[Verdict]:
            slots = asyncio.Semaphore(self.options.concurrency)

            async def one(a: Any, e: Any, c: Mapping[str, Any] | None) -> Verdict:
                async with slots:
                    return await self.aevaluate(a, e, context=c)

            try:
                return list(await asyncio.gather(*(one(a, e, c) for a, e, c in zip(actuals, exp, ctx, strict=True))))
            finally:
                await self.aclose()

        return BatchResult.from_verdicts(self.name, run_sync(run_all))

    def judges(self) -> list[dict[str, Any]]:
        """The judge models as recorded in a run's manifest (``RunManifest.judges``): name and spec, no secrets."""
        out: list[dict[str, Any]] = []
        for spec in self.specs:
            if isinstance(spec, str):
                out.append({"name": spec.partition(":")[2], "spec": spec})
            else:
                name = spec.get("model") or spec.get("name") or spec.get("target") or spec["provider"]
                out.append({"name": str(name), "spec": dict(spec)})
        return out

    async def aclose(self) -> None:
        """Close the judge models' connections of the running loop (the runner calls this when a run ends)."""
        await self._loops.aclose()

    def use_run_cache(self, enabled: bool, path: str | os.PathLike[str] | None = None) -> None:
        """Follow the run's cache switch (and its cache file) unless the ``cache`` option says otherwise: the
        runner calls this before scoring, so one switch (``--cache``, off by default) governs the judge too."""
        wanted = (bool(enabled), None if path is None else str(path))
        if wanted != self._run_cache:
            self.close()  # a cache opened for another run's file is not this run's
            self._run_cache = wanted

    def caching(self) -> bool:
        """Whether judgements are read from and written to the response cache: the ``cache`` option when set,
        else the run's switch (off outside a run)."""
        return self.options.cache if self.options.cache is not None else self._run_cache[0]

    def close(self) -> None:
        """Close the response cache."""
        with self._lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            cache.close()

    # -- plumbing ---------------------------------------------------------------------------------------------------

    def _response_cache(self) -> ResponseCache | None:
        if not self.caching():
            return None
        with self._lock:
            if self._cache is None:
                from assay.models.cache import ResponseCache

                self._cache = ResponseCache(self.options.cache_path or self._run_cache[1])
            return self._cache

    async def _models(self) -> JudgeModels:
        return await self._loops.get(
            lambda: JudgeModels(self.specs, self.policy, self._response_cache(), self._formats)
        )

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.options.temperature}
        if self.options.max_tokens is not None:
            params["max_tokens"] = self.options.max_tokens
        return params


@register("llm_judge")
class LLMJudge(JudgeBase):
    """A judge model grades the output against criteria on a scale, or compares it pairwise with a baseline."""

    Options = JudgeOptions
    options: JudgeOptions

    def setup(self) -> None:
        super().setup()
        self.scale = Scale.parse(self.options.scale)
        self._steps: dict[str, list[str]] = {}
        self._builder = VerdictBuilder(self.options, self.scale, self.specs)

    def _inputs(self, expected: Any, context: Mapping[str, Any] | None) -> Inputs:
        context = context or {}
        bundle = expected if isinstance(expected, dict) and BUNDLE_KEYS & set(expected) else None
        doc = context.get("doc") or (bundle or {}).get("doc") or {}
        target = (bundle or {}).get("reference") if bundle is not None else expected
        if target is None:
            target = context.get("target")
        input_value = None
        if self.options.include_input:
            input_value = (bundle or {}).get("input", context.get("input"))
            if input_value is None:
                input_value = context.get("prompt")
        reference = self._source(self.options.reference, target, doc, bundle, "reference")
        baseline = None
        if self.options.mode == "pairwise":
            baseline = self._source(self.options.baseline, target, doc, bundle, "baseline")
            if baseline is None:
                where = self.options.baseline
                raise EvaluationInputError(
                    f"llm_judge (pairwise): no baseline output to compare with (baseline={where!r})"
                )
        shown = context.get("transcript") if self.options.transcript else None
        transcript = render_transcript(shown) if isinstance(shown, list) else []
        return Inputs(render_input(input_value) or None, reference, baseline, transcript)

    @staticmethod
    def _source(
        where: str | None, target: Any, doc: dict[str, Any], bundle: dict[str, Any] | None, option: str
    ) -> str | None:
        if where is None:
            return None
        if where == "target":
            value = target
        elif where == "output_b":
            value = (bundle or {}).get("output_b")
        else:
            name = where[4:]
            if name not in doc:
                raise EvaluationInputError(f"llm_judge: option {option}={where!r}, but the dataset row has no {name!r}")
            value = doc[name]
        if value is None:
            return None
        if isinstance(value, list | tuple) and option == "reference":
            return "\n".join(f"- {render_input(v)}" for v in value)  # several acceptable answers
        return render_input(value)

    # -- judging ----------------------------------------------------------------------------------------------------

    async def _judge(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Verdict:
        output = as_text(actual, self.name)
        inputs = self._inputs(expected, context)
        models = await self._models()
        calls: list[CallRecord] = []
        try:
            steps = [await self._evaluation_steps(models, j, calls) for j in range(len(self.specs))]
        except StepsError as err:
            return Verdict.errored(str(err), details=base_details(self.options, calls))
        judge = self._pairwise if self.options.mode == "pairwise" else self._grade
        units = await asyncio.gather(
            *(
                judge(models, j, k, output, inputs, steps[j])
                for j in range(len(self.specs))
                for k in range(self.options.samples)
            )
        )
        for unit in units:
            calls.extend(unit.calls)
        return self._builder.build(list(units), calls, steps)

    async def _grade(
        self, models: JudgeModels, j: int, k: int, output: str, inputs: Inputs, steps: list[str] | None
    ) -> Unit:
        boundary = new_boundary([output, *inputs.texts()])
        messages = grade_messages(
            boundary=boundary,
            scale=self.scale,
            criteria=self.options.criteria,
            output=output,
            rubric=self.options.rubric,
            steps=steps,
            input_text=inputs.input_text,
            reference=inputs.reference,
            transcript=inputs.transcript,
        )
        weigh = self.options.score_from == "logprobs"
        record = await models.call(
            j,
            purpose="grade",
            messages=messages,
            cache_messages=canonical(messages, boundary),
            params=self._params() | (request_params(self.options.top_logprobs) if weigh else {}),
            response_format=grade_format(self.scale) if self.options.structured_output else None,
            repeat=k,
        )
        unit = Unit(j, k, [record])
        if record.error is not None:
            unit.error = record.error
            return unit
        try:
            quoted = [output, inputs.input_text or "", inputs.reference or ""]
            grade = parse_grade(record.reply, self.scale, quoted)
            weighted = weighted_grade(record.logprobs, float(grade.grade), self.scale, record.model) if weigh else None
        except JudgeReplyError as err:
            unit.error = record.error = f"judge {record.model}: {err}"
            return unit
        models.commit(j, record)
        score = grade.score if weighted is None else weighted.score
        record.extra |= {
            "grade": grade.grade,
            "score": score,
            "explanation": grade.explanation,
            "problem": grade.problem,
            "fix": grade.fix,
            "parse": grade.method,
        }
        if weighted is not None:
            record.extra |= weighted.details()
        unit.problem = grade.problem
        unit.score, unit.grade, unit.explanation, unit.fix = score, grade.grade, grade.explanation, grade.fix
        return unit

    async def _pairwise(
        self, models: JudgeModels, j: int, k: int, output: str, inputs: Inputs, steps: list[str] | None
    ) -> Unit:
        assert inputs.baseline is not None
        orders: list[tuple[Literal["A", "B"], str, str]] = [
            ("A", output, inputs.baseline),
            ("B", inputs.baseline, output),
        ]
        records = await asyncio.gather(
            *(self._pairwise_call(models, j, k, first, second, inputs, steps) for _, first, second in orders)
        )
        unit = Unit(j, k, list(records))
        outcomes = []
        quoted = [output, inputs.baseline, inputs.input_text or "", inputs.reference or ""]
        for (position, _, _), record in zip(orders, records, strict=True):
            if record.error is not None:
                unit.error = unit.error or record.error
                continue
            try:
                preference = parse_preference(record.reply, quoted)
            except JudgeReplyError as err:
                unit.error = unit.error or f"judge {record.model}: {err}"
                record.error = f"judge {record.model}: {err}"
                continue
            outcome = order_outcome(preference.winner, position)
            record.extra |= {
                "order": "output first" if position == "A" else "output second",
                "winner": preference.winner,
                "outcome": outcome,
                "explanation": preference.explanation,
                "problem": preference.problem,
                "fix": preference.fix,
                "parse": preference.method,
            }
            outcomes.append(outcome)
            if outcome != "win" and not unit.explanation:
                unit.explanation = preference.explanation
            if outcome == "loss" and not unit.fix:
                unit.fix = preference.fix  # the fix is for the weaker response: here, the output
            if outcome == "loss" and not unit.problem:
                unit.problem = preference.problem
        if unit.error is not None:
            return unit  # both orders are needed to cancel position bias
        for record in records:
            models.commit(j, record)
        unit.extra = {"orders": outcomes}
        if set(outcomes) == {"win", "loss"}:
            # the same pair, judged both ways: the output won in one position and lost in the other
            unit.inconsistent = "first" if outcomes[0] == "win" else "second"
            unit.extra["result"] = "inconsistent"
            return unit
        result = combine_orders(outcomes[0], outcomes[1])
        unit.score = OUTCOME_SCORE[result]
        unit.grade = result
        unit.extra["result"] = result
        if not unit.explanation:
            unit.explanation = str(records[0].extra.get("explanation", ""))
        return unit

    async def _pairwise_call(
        self,
        models: JudgeModels,
        j: int,
        k: int,
        first: str,
        second: str,
        inputs: Inputs,
        steps: list[str] | None,
    ) -> CallRecord:
        boundary = new_boundary([first, second, *inputs.texts()])
        messages = pairwise_messages(
            boundary=boundary,
            criteria=self.options.criteria,
            first=first,
            second=second,
            rubric=self.options.rubric,
            steps=steps,
            input_text=inputs.input_text,
            reference=inputs.reference,
            transcript=inputs.transcript,
        )
        return await models.call(
            j,
            purpose="pairwise",
            messages=messages,
            cache_messages=canonical(messages, boundary),
            params=self._params(),
            response_format=preference_format() if self.options.structured_output else None,
            repeat=k,
        )

    async def _evaluation_steps(self, models: JudgeModels, j: int, calls: list[CallRecord]) -> list[str] | None:
        """The G-Eval steps for judge ``j``: given, or generated once per (judge model, criteria, rubric)."""
        wanted = self.options.evaluation_steps
        if wanted is False:
            return None
        if isinstance(wanted, list):
            return wanted
        key = json.dumps([models.identity(j), self.options.criteria, self.options.rubric], sort_keys=True, default=str)
        if key in self._steps:
            return self._steps[key]
        async with models.steps_lock:
            if key in self._steps:
                return self._steps[key]
            messages = steps_messages(self.options.criteria, self.options.rubric)
            record = await models.call(
                j,
                purpose="evaluation_steps",
                messages=messages,
                params={"temperature": 0.0},
                response_format=steps_format() if self.options.structured_output else None,
            )
            calls.append(record)
            if record.error is not None:
                raise StepsError(f"could not generate the evaluation steps: {record.error}")
            try:
                steps = parse_steps(record.reply)
            except JudgeReplyError as err:
                record.error = str(err)
                raise StepsError(f"could not generate the evaluation steps: judge {record.model}: {err}") from None
            models.commit(j, record)
            record.extra |= {"steps": steps}
            with self._lock:
                self._steps[key] = steps
            return steps


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code: directly, or in a worker thread when a loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-judge") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


__all__ = ["JudgeBase", "JudgeOptions", "LLMJudge", "run_sync"]
