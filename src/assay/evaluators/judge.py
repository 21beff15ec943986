"""``llm_judge``: a judge model grades an output against criteria, or compares it with a baseline output.

The judge is configured on its own (``model``: a spec such as ``"openai:gpt-4o"`` or ``{"provider": "openai",
...}``; never the model under test unless named). It is asked for JSON (``{"explanation", "score"|"label"}``, with a
strict ``response_format`` where the server takes it) and a reply without JSON is read from its last ``SCORE:`` or
``GRADE:`` line. A reply that cannot be read, or names a grade that was not offered, gives an *error* verdict that
keeps the raw reply — never the lowest score. Scales and their normalisation are listed in
:mod:`assay.evaluators.judge_parse`; how several judgements combine in :mod:`assay.evaluators.judge_variants`.

The output (and the task and reference) sit inside a random per-call boundary tag they cannot close, and the judge
is told that anything inside is data. Every call's prompt, raw reply, model, usage, latency and cache status is kept
in ``details["judges"]``; ``details["judge"]`` sums them, so judge usage is reported apart from the model's.

Where it gets what it needs: the reference answer is ``expected`` (or ``expected["reference"]``), or a field of the
dataset row (``reference: doc.FIELD``, from ``context["doc"]``); the task's input is ``context["input"]`` or
``expected["input"]``; a pairwise baseline is ``expected["output_b"]``, the target, or a row field (``baseline``).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from assay.errors import EvaluationInputError
from assay.evaluators.base import BatchResult, Evaluator, Options, _expecteds, as_text
from assay.evaluators.judge_client import (
    CallRecord,
    JudgeModels,
    LoopModels,
    ModelSpec,
    check_spec,
    has_secret,
    summarize_calls,
)
from assay.evaluators.judge_parse import JudgeReplyError, Scale, parse_grade, parse_preference, parse_steps
from assay.evaluators.judge_prompt import (
    canonical,
    grade_format,
    grade_messages,
    new_boundary,
    pairwise_messages,
    preference_format,
    render_input,
    steps_format,
    steps_messages,
)
from assay.evaluators.judge_variants import combine, combine_orders, order_outcome, outcome_of, spread
from assay.evaluators.registry import register
from assay.runner.retry import RetryPolicy
from assay.verdict import Verdict

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from assay.runner.cache import ResponseCache

T = TypeVar("T")
BUNDLE_KEYS = frozenset({"reference", "input", "output_b", "doc"})


class JudgeOptions(Options):
    """Options of llm_judge.

    ``model``: a judge spec or a list of them (several judges, combined by ``combine``: mean or majority);
    ``criteria`` / ``rubric``: what the judge checks; ``scale`` and ``pass_threshold`` (on the normalised score);
    ``reference``: ``target``, ``doc.FIELD`` or null; ``include_input``: show the task's input;
    ``mode``: ``grade`` or ``pairwise`` (against ``baseline``: ``output_b`` of expected, ``target`` or ``doc.FIELD``);
    ``samples`` (with ``temperature`` > 0): judge n times and average; ``evaluation_steps``: true to have the judge
    write G-Eval steps once per judge model and criteria, or the steps themselves; ``structured_output``: send a
    JSON-schema ``response_format``; ``cache`` / ``cache_path``: the response cache; ``max_attempts``,
    ``initial_backoff_s``, ``timeout_s``: retries per call; ``concurrency``: judgements at once in ``evaluate_batch``.
    """

    model: ModelSpec | list[ModelSpec]
    criteria: str = Field(min_length=1)
    rubric: str | None = None
    scale: str | dict[str, float] = "binary"
    pass_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    reference: str | None = "target"  # "target", "doc.FIELD" or None
    include_input: bool = True
    mode: Literal["grade", "pairwise"] = "grade"
    baseline: str = "output_b"  # pairwise: "output_b" (a key of expected), "target" or "doc.FIELD"
    combine: Literal["mean", "majority"] = "mean"
    samples: int = Field(default=1, ge=1, le=100)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    evaluation_steps: bool | list[str] = False
    structured_output: bool = True
    cache: bool = True
    cache_path: str | None = None
    max_attempts: int = Field(default=4, ge=1, le=20)
    initial_backoff_s: float = Field(default=0.5, ge=0.0)
    timeout_s: float = Field(default=60.0, gt=0.0)
    concurrency: int = Field(default=8, ge=1, le=1024)

    @field_validator("model")
    @classmethod
    def _valid_model(cls, value: Any) -> Any:
        specs = value if isinstance(value, list) else [value]
        if not specs:
            raise ValueError("name at least one judge model")
        for spec in specs:
            if not has_secret(spec):  # reported by setup(), whose message does not echo the value
                check_spec(spec, "model")
        return value

    @field_validator("scale")
    @classmethod
    def _valid_scale(cls, value: Any) -> Any:
        Scale.parse(value)
        return value

    @field_validator("reference")
    @classmethod
    def _valid_reference(cls, value: str | None) -> str | None:
        if value is None or value == "target" or (value.startswith("doc.") and len(value) > 4):
            return value
        raise ValueError("must be 'target', 'doc.<field>' or null")

    @field_validator("baseline")
    @classmethod
    def _valid_baseline(cls, value: str) -> str:
        if value in ("target", "output_b") or (value.startswith("doc.") and len(value) > 4):
            return value
        raise ValueError("must be 'output_b' (a key of expected), 'target' or 'doc.<field>'")

    @field_validator("evaluation_steps")
    @classmethod
    def _valid_steps(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list) and (not value or not all(isinstance(s, str) and s.strip() for s in value)):
            raise ValueError("give true (generate them) or a non-empty list of steps")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> JudgeOptions:
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("'samples' > 1 repeats the same judgement unless 'temperature' > 0")
        return self


@dataclass
class Inputs:
    """What the judge reads besides the output."""

    input_text: str | None
    reference: str | None
    baseline: str | None


@dataclass
class Unit:
    """One judgement by one judge (one call, or the two orders of a pairwise comparison)."""

    judge: int
    sample: int
    calls: list[CallRecord]
    score: float | None = None
    error: str | None = None
    explanation: str = ""
    grade: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class StepsError(Exception):
    """The judge could not expand the criteria into evaluation steps."""


@register("llm_judge")
class LLMJudge(Evaluator):
    """A judge model grades the output against criteria on a scale, or compares it pairwise with a baseline."""

    Options = JudgeOptions
    options: JudgeOptions

    def setup(self) -> None:
        model = self.options.model
        self.specs: list[ModelSpec] = [check_spec(s, "model") for s in (model if isinstance(model, list) else [model])]
        self.scale = Scale.parse(self.options.scale)
        self.policy = RetryPolicy(
            max_attempts=self.options.max_attempts,
            initial_backoff_s=self.options.initial_backoff_s,
            timeout_s=self.options.timeout_s,
        )
        self._loops = LoopModels()
        self._lock = threading.Lock()
        self._cache: ResponseCache | None = None
        self._steps: dict[str, list[str]] = {}
        self._no_response_format: set[int] = set()

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

    def close(self) -> None:
        """Close the response cache."""
        with self._lock:
            cache, self._cache = self._cache, None
        if cache is not None:
            cache.close()

    # -- plumbing ---------------------------------------------------------------------------------------------------

    def _response_cache(self) -> ResponseCache | None:
        if not self.options.cache:
            return None
        with self._lock:
            if self._cache is None:
                from assay.runner.cache import ResponseCache

                self._cache = ResponseCache(self.options.cache_path)
            return self._cache

    async def _models(self) -> JudgeModels:
        return await self._loops.get(
            lambda: JudgeModels(self.specs, self.policy, self._response_cache(), self._no_response_format)
        )

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.options.temperature}
        if self.options.max_tokens is not None:
            params["max_tokens"] = self.options.max_tokens
        return params

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
        return Inputs(render_input(input_value) or None, reference, baseline)

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
            return Verdict.errored(str(err), details=self._base_details(calls))
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
        return self._verdict(list(units), calls, steps)

    async def _grade(
        self, models: JudgeModels, j: int, k: int, output: str, inputs: Inputs, steps: list[str] | None
    ) -> Unit:
        boundary = new_boundary([output, inputs.input_text or "", inputs.reference or ""])
        messages = grade_messages(
            boundary=boundary,
            scale=self.scale,
            criteria=self.options.criteria,
            output=output,
            rubric=self.options.rubric,
            steps=steps,
            input_text=inputs.input_text,
            reference=inputs.reference,
        )
        record = await models.call(
            j,
            purpose="grade",
            messages=messages,
            cache_messages=canonical(messages, boundary),
            params=self._params(),
            response_format=grade_format(self.scale) if self.options.structured_output else None,
            repeat=k,
        )
        unit = Unit(j, k, [record])
        if record.error is not None:
            unit.error = record.error
            return unit
        try:
            grade = parse_grade(record.reply, self.scale)
        except JudgeReplyError as err:
            unit.error = record.error = f"judge {record.model}: {err}"
            return unit
        models.commit(j, record)
        record.extra |= {
            "grade": grade.grade,
            "score": grade.score,
            "explanation": grade.explanation,
            "parse": grade.method,
        }
        unit.score, unit.grade, unit.explanation = grade.score, grade.grade, grade.explanation
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
        for (position, _, _), record in zip(orders, records, strict=True):
            if record.error is not None:
                unit.error = unit.error or record.error
                continue
            try:
                preference = parse_preference(record.reply)
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
                "parse": preference.method,
            }
            outcomes.append(outcome)
            if outcome != "win" and not unit.explanation:
                unit.explanation = preference.explanation
        if unit.error is not None:
            return unit  # both orders are needed to cancel position bias
        for record in records:
            models.commit(j, record)
        result = combine_orders(outcomes[0], outcomes[1])
        unit.score = {"win": 1.0, "tie": 0.5, "loss": 0.0}[result]
        unit.grade = result
        unit.extra = {"orders": outcomes, "result": result}
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
        boundary = new_boundary([first, second, inputs.input_text or "", inputs.reference or ""])
        messages = pairwise_messages(
            boundary=boundary,
            criteria=self.options.criteria,
            first=first,
            second=second,
            rubric=self.options.rubric,
            steps=steps,
            input_text=inputs.input_text,
            reference=inputs.reference,
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

    # -- the verdict ------------------------------------------------------------------------------------------------

    def _base_details(self, calls: list[CallRecord]) -> dict[str, Any]:
        return {
            "judge": summarize_calls(calls),
            "judges": [c.to_dict() for c in calls],
            "mode": self.options.mode,
            "scale": self.options.scale if self.options.mode == "grade" else "win/tie/loss",
            "pass_threshold": self.options.pass_threshold,
        }

    def _verdict(self, units: list[Unit], calls: list[CallRecord], steps: list[list[str] | None]) -> Verdict:
        details = self._base_details(calls)
        if any(steps):
            details["evaluation_steps"] = steps if len(steps) > 1 else steps[0]
        per_judge: list[dict[str, Any]] = []
        scores: list[float] = []
        for j in range(len(self.specs)):
            mine = [u for u in units if u.judge == j]
            ok = [u.score for u in mine if u.score is not None]
            entry: dict[str, Any] = {"model": mine[0].calls[0].model if mine and mine[0].calls else str(self.specs[j])}
            if ok:
                entry["score"] = statistics.fmean(ok)
                scores.append(entry["score"])
                if self.options.samples > 1:
                    entry["spread"] = spread(ok)
            errors = [u.error for u in mine if u.error is not None]
            if errors:
                entry["errors"] = errors
            per_judge.append(entry)
        errored = [u for u in units if u.error is not None]
        if errored:
            details["errors"] = len(errored)
        if not scores:
            first = errored[0].error or "the judge gave no usable reply"
            more = f" (and {len(errored) - 1} more failed judgements)" if len(errored) > 1 else ""
            return Verdict.errored(first + more, details=details)
        combined = combine(scores, self.options.pass_threshold, self.options.combine)
        details["combine"] = combined.details
        details["score"] = combined.score
        if len(self.specs) > 1:
            details["per_judge"] = per_judge
        elif self.options.samples > 1:
            details["spread"] = per_judge[0]["spread"]
        scored = [u for u in units if u.score is not None]
        if len(scored) == 1:
            details["grade"] = scored[0].grade
            details["explanation"] = scored[0].explanation
        if self.options.mode == "pairwise":
            outcomes = [u.grade for u in scored]
            details["result"] = outcome_of(combined.score)
            details["outcomes"] = {o: outcomes.count(o) for o in ("win", "tie", "loss")}
            details["orders"] = [u.extra["orders"] for u in scored]
        if combined.passed:
            return Verdict(combined.score, True, None, details, None)
        return Verdict(combined.score, False, self._reason(scored, combined.score), details, self._feedback(scored))

    def _reason(self, scored: list[Unit], score: float) -> str:
        threshold = self.options.pass_threshold
        worst = min(scored, key=lambda u: u.score if u.score is not None else 0.0)
        model = worst.calls[0].model if worst.calls else "the judge"
        why = f": {_clip(worst.explanation)}" if worst.explanation else ""
        if self.options.mode == "pairwise":
            if len(scored) == 1:
                orders = " and ".join(worst.extra["orders"])
                return f"judge {model} did not prefer the output to the baseline ({orders} over the two orders){why}"
            return f"the judges did not prefer the output to the baseline (score {score:.2f} < {threshold:g}){why}"
        if len(scored) == 1:
            return (
                f"judge {model} graded {worst.grade!r} on the {self.scale.name} scale "
                f"(score {score:.2f} < pass threshold {threshold:g}){why}"
            )
        if len(self.specs) == 1:
            return (
                f"judge {model}'s mean score {score:.2f} over {len(scored)} samples is below the pass threshold "
                f"{threshold:g}{why}"
            )
        return (
            f"the judges' combined score {score:.2f} ({self.options.combine} of {len(self.specs)} judges, "
            f"{len(scored)} judgements) is below the pass threshold {threshold:g}{why}"
        )

    def _feedback(self, scored: list[Unit]) -> str:
        worst = min(scored, key=lambda u: u.score if u.score is not None else 0.0)
        if worst.explanation:
            return worst.explanation
        return f"Revise the output so that it meets the criteria: {self.options.criteria.strip()}"


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code: directly, or in a worker thread when a loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-judge") as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


__all__ = ["JudgeOptions", "LLMJudge", "run_sync"]
