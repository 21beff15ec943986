"""llm-rubric, factuality, model-graded-closedqa, g-eval and select-best as promptfoo 0.123.1 judges them
(``src/matchers/llmGrading.ts``, ``rubric.ts``, ``comparison.ts``, ``src/assertions/*.ts``): the same prompt, values,
reply reading, scores, thresholds and reasons. Where promptfoo fails a check because the grader's reply cannot be
read (no JSON, no category, no ``Y``/``N`` at the end, an invalid g-eval score, an out-of-range select-best index),
the verdict here is an error that quotes the reply's head: assay counts an evaluator that could not judge apart,
never as a zero."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from assay.tasks.checks.graded_job import Each, GradedError, Job
from assay.tasks.checks.graded_prompts import (
    DEFAULT_GRADING_PROMPT,
    GEVAL_PROMPT_EVALUATE,
    GEVAL_PROMPT_STEPS,
    OPENAI_CLOSED_QA_PROMPT,
    PROMPTFOO_FACTUALITY_PROMPT,
    SELECT_BEST_PROMPT,
)
from assay.tasks.checks.graded_render import extract_json_objects, js_json, js_string, js_to_number, try_parse
from assay.verdict import Verdict

FACTUALITY = {  # promptfoo's FACTUALITY_CATEGORY_DESCRIPTIONS, and options.factuality's key for each category
    "A": ("subset", 1.0, "The submitted answer is a subset of the expert answer and is fully consistent with it."),
    "B": ("superset", 1.0, "The submitted answer is a superset of the expert answer and is fully consistent with it."),
    "C": ("agree", 1.0, "The submitted answer contains all the same details as the expert answer."),
    "D": ("disagree", 0.0, "There is a disagreement between the submitted answer and the expert answer."),
    "E": (
        "differButFactual",
        1.0,
        "The answers differ, but these differences don't matter from the perspective of factuality.",
    ),
}
GEVAL_MAX = 10
SHARED_LIMIT = 4096  # select-best gradings remembered (one per test)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number_or_undefined(value: float | None) -> str:
    return "undefined" if value is None else js_string(value)


async def llm_rubric(job: Job) -> Verdict:
    """``matchesLlmRubric``: a JSON reply ``{reason, pass, score}``; a threshold also needs the score to reach it."""
    rubric = job.value() or ""
    grader = job.text_grader()
    template = job.rubric_prompt(js_json(DEFAULT_GRADING_PROMPT))
    values = {**job.vars, "rubric": rubric}
    untrusted = {"output": try_parse(job.output)}
    reply = await job.ask(grader, template, values, untrusted, purpose="llm-rubric", json_mode=True)
    objects = extract_json_objects(reply)
    if not objects or not isinstance(objects[0], dict):
        raise job.fail_reply("Could not extract JSON from llm-rubric response", reply)
    parsed = objects[0]
    passed: Any = parsed.get("pass")
    if passed is None:
        passed = True
    if not isinstance(passed, bool):
        passed = re.fullmatch(r"true|yes|pass|y", js_string(passed), re.IGNORECASE) is not None
    score: Any = parsed.get("score")
    if not _is_number(score):
        number = js_to_number(score) if "score" in parsed else float("nan")  # Number(undefined), Number(null) = 0
        score = number if abs(number) != float("inf") and number == number else float(passed)
    threshold = job.threshold(None)
    if threshold is not None:
        passed = passed and score >= threshold
    reason = parsed.get("reason")
    if not reason:
        reason = (
            "Grading passed"
            if passed
            else f"Score {js_string(score)} below threshold {_number_or_undefined(threshold)}"
        )
    return job.verdict(score, passed, js_string(reason), threshold=threshold)


async def factuality(job: Job) -> Verdict:
    """``matchesFactuality``: a category A-E (JSON ``{category, reason}``, else a ``(B)`` in the text), scored by
    ``options.factuality`` (subset, superset, agree, disagree, differButFactual; 1, 1, 1, 0, 1 by default)."""
    expected = job.string_value()
    if not job.ctx.prompt:
        raise GradedError("factuality assertion type must have a prompt")
    grader = job.text_grader()
    template = job.rubric_prompt(js_json(PROMPTFOO_FACTUALITY_PROMPT))
    values = {**job.vars, "input": job.ctx.prompt, "ideal": expected}
    reply = await job.ask(grader, template, values, {"completion": try_parse(job.output)}, purpose="factuality")
    option, reason = _factuality_json(job, reply) or _factuality_legacy(job, reply)
    configured = job.grading.get("factuality") or {}
    lookup: dict[str, float] = {}
    for letter, (key, default, _) in FACTUALITY.items():
        raw = configured.get(key) if isinstance(configured, dict) else None
        lookup[letter] = default if raw is None else js_to_number(raw)
    score = lookup[option]
    passed = score > 0
    return job.verdict(score, passed, reason, category=option)


def _factuality_json(job: Job, reply: str) -> tuple[str, str] | None:
    objects = extract_json_objects(reply)
    data = objects[0] if objects else None
    category = data.get("category") if isinstance(data, dict) else None
    if not category or not isinstance(category, str):
        return None
    option = category.strip().upper()
    if not re.fullmatch(r"[A-E]", option):
        raise job.fail_reply(f"Invalid category value: {option}", reply)
    reason = data.get("reason") if isinstance(data, dict) else None
    if reason is not None and not isinstance(reason, str):
        return None  # promptfoo's reason?.trim() throws here, and it falls back to reading the text
    return option, (reason or "").strip() or f"Category {option}: {FACTUALITY[option][2]}"


def _factuality_legacy(job: Job, reply: str) -> tuple[str, str]:
    match = re.search(r"\s*\(?([a-eA-E])\)", reply)
    if match is None:
        raise job.fail_reply("Factuality checker output did not match expected format", reply)
    rest = re.search(r"\)\s*(.*)", reply, re.DOTALL)
    return match.group(1).upper(), rest.group(1).strip() if rest and rest.group(1) else reply


async def closed_qa(job: Job) -> Verdict:
    """``matchesClosedQa``: passes when the reply ends with ``Y``, fails when it ends with ``N``."""
    criteria = job.string_value()
    if not job.ctx.prompt:
        raise GradedError("model-graded-closedqa assertion type must have a prompt")
    grader = job.text_grader()
    template = job.rubric_prompt(js_json(OPENAI_CLOSED_QA_PROMPT))
    values = {**job.vars, "input": job.ctx.prompt, "criteria": criteria}
    reply = await job.ask(grader, template, values, {"completion": try_parse(job.output)}, purpose="closedqa")
    end = reply.rstrip()
    if end.endswith("Y"):
        return job.verdict(1.0, True, f"The submission meets the criterion:\n{reply}")
    if end.endswith("N"):
        return job.verdict(0.0, False, f"The submission does not meet the criterion:\n{reply}")
    raise job.fail_reply("Model grader produced a malformed response (it ends with neither Y nor N)", reply)


async def g_eval(job: Job) -> Verdict:
    """``matchesGEval``: the grader writes evaluation steps, then scores 0-10; the score is /10, passing at the
    threshold (0.7 by default). A list of criteria is judged one by one and averaged."""
    value = job.value()
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        raise GradedError("G-Eval assertion type must have a string or array of strings value")
    threshold = job.threshold(0.7)
    assert threshold is not None
    if isinstance(value, str):
        score, reason = await _g_eval_one(job, value)
        return job.verdict(score, score >= threshold, reason, threshold=threshold)
    if not value:
        raise GradedError("G-Eval assertion requires at least one criterion string in the value array.")
    results = []
    for i, criterion in enumerate(value):
        try:
            results.append(await _g_eval_one(job, criterion))
        except GradedError as err:
            raise GradedError(f"G-Eval criterion {i + 1}/{len(value)} ({js_json(criterion)}) failed: {err}") from None
    average = sum(s for s, _ in results) / len(results)
    return job.verdict(average, average >= threshold, "\n\n".join(r for _, r in results), threshold=threshold)


async def _g_eval_one(job: Job, criterion: str) -> tuple[float, str]:
    source = job.ctx.prompt or ""
    if not source:
        raise GradedError("No source text to estimate reply")
    grader = job.text_grader()
    rubric = job.grading.get("rubricPrompt")
    own = rubric if isinstance(rubric, dict) else {}
    steps_template = job.rubric_prompt(GEVAL_PROMPT_STEPS, own.get("steps") or {})
    reply = await job.ask(grader, steps_template, {"criteria": criterion}, {}, purpose="g-eval-steps")
    found = re.search(r'\{"steps".+\}', reply)
    if found is None:
        raise job.fail_reply("LLM-proposed evaluation steps are not in JSON format", reply)
    try:
        steps = try_parse(found.group(0))
        steps = steps.get("steps") if isinstance(steps, dict) else None
    except AttributeError:
        steps = None
    if not isinstance(steps, list):
        raise job.fail_reply(f"G-Eval steps response has invalid or missing steps: {js_json(steps)}", reply)
    if not steps:
        raise job.fail_reply("LLM does not propose any evaluation step", reply)
    if not all(isinstance(s, str) and s.strip() for s in steps):
        raise job.fail_reply(f"G-Eval steps response contains invalid steps: {js_json(steps)}", reply)
    job.accept()
    job.details.setdefault("steps", []).append(steps)
    values = {
        "criteria": criterion,
        "steps": "\n- ".join(steps),
        "maxScore": str(GEVAL_MAX),
        "input": try_parse(source),
    }
    template = job.rubric_prompt(GEVAL_PROMPT_EVALUATE, own.get("evaluate") or {})
    reply = await job.ask(grader, template, values, {"output": try_parse(job.output)}, purpose="g-eval")
    found = re.search(r"\{.+\}", reply)
    result = try_parse(found.group(0)) if found else None
    if not isinstance(result, dict):
        raise job.fail_reply("LLM-proposed evaluation result is not in JSON format", reply)
    raw = result.get("score")
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        score = float(raw)
    elif isinstance(raw, str) and raw.strip():
        score = js_to_number(raw)
    else:
        score = float("nan")
    if score != score or abs(score) == float("inf"):
        shown = js_json(raw) if "score" in result else "undefined"
        raise job.fail_reply(f"G-Eval result has invalid or missing score: {shown}", reply)
    if not 0 <= score <= GEVAL_MAX:
        raise job.fail_reply(
            f"G-Eval result score {js_string(score)} is outside the expected 0-{GEVAL_MAX} range", reply
        )
    reason = result.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        shown = js_json(reason) if "reason" in result else "undefined"
        raise job.fail_reply(f"G-Eval result has invalid or missing reason: {shown}", reply)
    job.details.setdefault("grades", []).append(raw)
    return score / GEVAL_MAX, reason


async def select_best(job: Job) -> Verdict:
    """``matchesSelectBest``: one grading of all the test's outputs (shared by them); the one whose index the
    grader names passes with score 1, the others fail with 0."""
    criteria = job.value()
    if not isinstance(criteria, str):
        raise GradedError("select-best must have a string value")
    outputs = job.ctx.outputs
    if outputs is None:
        raise GradedError("select-best compares the outputs of every prompt and provider of a test; none were given")
    if len(outputs) < 2:
        raise GradedError("select-best assertion must have at least two outputs to compare between")
    positions = [i for i, o in enumerate(outputs) if o == job.output]
    if not positions:
        raise GradedError("the output judged is not one of the test's outputs")
    grader = job.text_grader()
    template = job.rubric_prompt(js_json(SELECT_BEST_PROMPT))
    values = {**job.vars, "criteria": criteria}
    key = js_json([grader.key, template, values, outputs])
    loop = asyncio.get_running_loop()
    shared = job.graders.shared
    entry = shared.get(key)
    if entry is None or entry[0] is not loop:
        while len(shared) >= SHARED_LIMIT:
            shared.pop(next(iter(shared)))
        task = loop.create_task(_select(job, grader, template, values, outputs))
        shared[key] = (loop, task)
    else:
        task = entry[1]
        job.details["judge_shared"] = "graded once for all the test's outputs: the call is in another output's details"
    try:
        selected = await asyncio.shield(task)
    except GradedError as err:
        raise GradedError(str(err)) from None
    job.details |= {"selected": selected, "positions": positions}
    if selected in positions:
        return job.verdict(1.0, True, f"Output selected as the best: {criteria}")
    return job.verdict(0.0, False, f"Output not selected: {criteria}")


async def _select(job: Job, grader: Any, template: str, values: dict[str, Any], outputs: list[str]) -> int:
    untrusted = {"outputs": Each(try_parse(o) for o in outputs)}
    reply = await job.ask(grader, template, values, untrusted, purpose="select-best")
    found = re.search(r"\d+", reply.strip())
    verdict = int(found.group(0)) if found else None
    if verdict is None or not 0 <= verdict < len(outputs):
        raise job.fail_reply(f"Invalid select-best verdict: {'NaN' if verdict is None else verdict}", reply)
    job.accept()
    return verdict
