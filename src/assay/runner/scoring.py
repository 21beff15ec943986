"""Score one sample: filter its responses, run every metric's evaluator, build the FilterRecords."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from assay.environments.base import EnvironmentEvaluator
from assay.evaluators.base import Evaluator
from assay.models.base import Model, Response
from assay.record import FilterRecord
from assay.runner.turns import judge_turns
from assay.tasks.applicable import expected_or_absent
from assay.tasks.filters import NoMatch, explain_no_match, unmark
from assay.verdict import Verdict

if TYPE_CHECKING:
    from assay.tasks import Sample, Task


def _is_async(evaluator: Evaluator) -> bool:
    """True when the evaluator does real async work (e.g. calls a judge model)."""
    return type(evaluator).aevaluate is not Evaluator.aevaluate


def _jsonable(value: Any) -> Any:
    """How a filtered value is stored: a Response by its text (the full response is logged once)."""
    if isinstance(value, Response):
        return value.text
    return value


def nothing_to_judge(pipeline: str, reduces: bool, responses: list[Response | None], index: int, failure: str) -> str:
    """Why value ``index`` of a pipeline is None: the model failed, or (its answer was there) a filter step gave
    None, e.g. extract_json finding no JSON; the second must not read as the model's fault."""
    answered = any(r is not None for r in responses) if reduces else responses[index] is not None
    if answered:
        return f"filter pipeline {pipeline!r} gave no value to evaluate (a step found nothing and its fallback is None)"
    return f"no response to evaluate: {failure}"


LIMIT_STOPS = frozenset({"max_turns", "max_tool_calls", "token_budget", "time_limit"})  # assay.agents.transcript


def limit_stop(responses: list[Response | None], index: int, reduces: bool) -> str | None:
    """Why value ``index`` is a scored failure: its agent trajectory reached a limit (None when it did not)."""
    chosen = responses if reduces else responses[index : index + 1]
    for response in chosen:
        if response is not None and response.stop_reason in LIMIT_STOPS:
            return f"the agent stopped at its {response.stop_reason} limit before it answered"
    return None


def _with_transcript(
    context: dict[str, Any], responses: list[Response | None], k: int, reduces: bool
) -> dict[str, Any]:
    """The evaluator's context with the judged response's agent transcript, when it has one (an llm_judge with
    ``transcript: true`` shows it); a pipeline that reduces several repeats to one value has no single transcript."""
    response = responses[k] if k < len(responses) and (not reduces or len(responses) == 1) else None
    if response is None or not response.transcript:
        return context
    return {**context, "transcript": response.transcript}


async def _judge(evaluator: Evaluator, value: Any, expected: Any, context: dict[str, Any]) -> Verdict:
    """One verdict; an evaluator that raises (evaluate() already guards; an overriding aevaluate may not) errors."""
    try:
        if _is_async(evaluator):
            return await evaluator.aevaluate(value, expected, context=context)
        return evaluator.evaluate(value, expected, context=context)
    except Exception as err:
        return Verdict.errored(f"{evaluator.name} raised {type(err).__name__}: {err}")


async def judge_environment(
    evaluator: Evaluator,
    responses: list[Response | None],
    k: int,
    reduces: bool,
    value: Any,
    expected: Any,
    context: dict[str, Any],
    failure: str,
) -> Verdict:
    """An environment evaluator's verdict on value ``k``: it scores what its observation of the sample's environment
    recorded (``context["environment"]``), whatever the trajectory's last words or limit; an error when the sample
    had no trajectory, or a reduced pipeline has no single environment."""
    response = responses[k] if k < len(responses) and (not reduces or len(responses) == 1) else None
    if response is None:
        single = not reduces or len(responses) == 1
        why = failure if single else "a pipeline that reduces repeats has no one environment"
        return Verdict.errored(f"no environment to judge: {why}")
    facts = response.metadata.get("environment")
    shown = dict(context)
    if facts is not None:
        shown["environment"] = facts
    if response.transcript:
        shown["transcript"] = response.transcript
    return await _judge(evaluator, value, expected, shown)


async def score_sample(
    task: Task,
    sample: Sample,
    responses: list[Response | None],
    errors: list[str | None],
    prompt: str = "",
    *,
    feedback_model: Model | None = None,
) -> tuple[dict[str, FilterRecord], float]:
    """Every filter pipeline's verdicts for one sample, and the seconds spent evaluating.

    Evaluators see the sample as ``context`` (input, prompt, doc, metadata, target), which judges need. With a
    ``feedback_model``, each failing verdict's feedback is rewritten by that model (passing ones cost no call).
    """
    started = time.perf_counter()
    failure = next((e for e in errors if e), "the model request failed")
    if task.external:  # e.g. an lm-eval task: its own filters and process_results
        return task.score_responses(sample, responses, failure), time.perf_counter() - started
    out: dict[str, FilterRecord] = {}
    context = {
        "input": sample.input,
        "prompt": prompt,
        "doc": sample.doc,
        "metadata": sample.metadata,
        "target": sample.target,
    }
    for pipeline in task.pipelines:
        filter_name = pipeline.name
        try:
            values: list[Any] = pipeline.apply(responses)
            broken = None
        except Exception as err:  # a (custom) filter step that fails on this response errors the sample's verdicts
            values, broken = [None] * (1 if pipeline.reduces else len(responses)), f"{type(err).__name__}: {err}"
        values, marks = unmark(values)  # a regex fallback is judged as text; its verdict says nothing was extracted
        record = FilterRecord(filtered=[_jsonable(v) for v in values])
        for metric in task.metrics:
            if metric.filters and filter_name not in metric.filters:
                continue
            evaluator = metric.evaluator
            expected, absent = expected_or_absent(task, sample, metric)
            if absent is not None:  # the row gives this metric nothing to check: not applicable, no verdict
                record.verdicts[metric.name], record.scores[metric.name], record.passed[metric.name] = [], None, None
                continue
            verdicts: list[Verdict] = []
            mark: NoMatch | None
            in_env = isinstance(evaluator, EnvironmentEvaluator)
            for k, (value, mark) in enumerate(zip(values, marks, strict=True)):
                if in_env and broken is None:  # scored on what the environment recorded, not on the last words
                    verdicts.append(
                        await judge_environment(
                            evaluator, responses, k, pipeline.reduces, value, expected, context, failure
                        )
                    )
                    continue
                if broken is not None:
                    verdicts.append(Verdict.errored(f"filter pipeline {filter_name!r} failed: {broken}"))
                    continue
                stopped = limit_stop(responses, k, pipeline.reduces)
                if stopped is not None:  # a trajectory cut off by a limit fails, whatever its last words were
                    verdicts.append(Verdict(score=0.0, passed=False, reason=stopped, details={"stopped": stopped}))
                    continue
                if value is None:
                    why = nothing_to_judge(filter_name, pipeline.reduces, responses, k, failure)
                    verdicts.append(Verdict.errored(why))
                    continue
                if metric.scope == "turn":  # each turn judged on its own (assay.runner.turns)
                    verdict = await judge_turns(
                        evaluator, pipeline, responses, k, expected, metric.expected, sample.doc, context, _judge
                    )
                else:
                    shown = _with_transcript(context, responses, k, pipeline.reduces)
                    verdict = explain_no_match(await _judge(evaluator, value, expected, shown), mark)
                if feedback_model is not None:
                    from assay.feedback.generate import with_model_feedback

                    verdict = await with_model_feedback(
                        verdict,
                        feedback_model,
                        input=sample.input if sample.input is not None else prompt,
                        output=_jsonable(value),
                        target=sample.target,
                    )
                verdicts.append(verdict)
            scored = [v for v in verdicts if not v.is_error]
            record.verdicts[metric.name] = [v.to_dict() for v in verdicts]
            record.scores[metric.name] = sum(v.score for v in scored) / len(scored) if scored else None
            record.passed[metric.name] = all(v.passed for v in scored) if scored else None
        out[filter_name] = record
    return out, time.perf_counter() - started
