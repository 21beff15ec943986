"""A promptfoo test's assertions judged as promptfoo 0.123.1's ``runAssertions`` judges them: each assertion's own
transform, its value rendered with the test's vars, its handler; ``assert-set`` groups; weights, metrics (named
scores) and thresholds; the test's verdict is promptfoo's GradingResult (weighted mean, pass rule, reason)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.tasks.checks.catalog import ASSERT_SET, base_type, graded_types, refusal
from assay.tasks.checks.code import FILE, CheckError, is_code_file, transform_label
from assay.tasks.checks.handlers import HANDLERS
from assay.tasks.checks.params import MISSING, SCRIPT_TYPES, Params, Row, result
from assay.tasks.checks.structured import load_yaml

if TYPE_CHECKING:
    import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """Nunjucks as promptfoo configures it, in assay's sandbox: an undefined var renders as empty text."""
    import jinja2

    from assay.tasks.template import environment

    return environment().overlay(undefined=jinja2.Undefined)


def render(text: str, variables: Mapping[str, Any]) -> str:
    """promptfoo's ``nunjucks.renderString(value, vars)`` on an assertion value, with assay's sandboxed Jinja."""
    if "{{" not in text and "{%" not in text and "{#" not in text:
        return text
    try:
        return _environment().from_string(text).render(dict(variables))
    except Exception as err:
        raise CheckError(f"rendering {text[:60]!r} with the test's vars: {type(err).__name__}: {err}") from None


def read_reference(ref: str, base_dir: Path) -> Any:
    """promptfoo's ``processFileReference``: a .json/.yaml/.yml file's data, a .txt file's trimmed text."""
    path = (base_dir / ref[len(FILE) :]).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise CheckError(f"cannot read {path}: {err.strerror}") from None
    if path.suffix in (".json", ".yaml", ".yml"):
        return load_yaml(text)
    if path.suffix == ".txt":
        return text.strip()
    raise CheckError(f"Unsupported file type: {path}")


async def run_assertion(assertion: Mapping[str, Any], row: Row, output: Any) -> dict[str, Any]:
    """One assertion's GradingResult (``pass``, ``score``, ``reason``...). Raises CheckError where promptfoo throws."""
    kind = str(assertion.get("type"))
    base, inverse = base_type(kind)
    why = refusal(kind)
    if why is not None:
        raise CheckError(why)
    if assertion.get("transform"):
        meta = {"metadata": row.response.metadata} if row.response is not None else {}
        context = {"vars": row.vars, "prompt": {"label": row.prompt}, **meta}
        output = await row.code.transform(assertion["transform"], output, context)
    context = value_context(assertion, row)
    value, from_script = assertion.get("value"), MISSING
    if isinstance(value, str):
        if is_code_file(value):
            from_script, failure = await row.code.value_from_script(value, output, context)
            if failure is not None:
                return result(False, failure)
        elif value.startswith(FILE):
            value = read_reference(value, row.code.base_dir)
        else:
            value = render(value, row.vars)
    elif isinstance(value, list):
        value = [
            (read_reference(v, row.code.base_dir) if v.startswith(FILE) else render(v, row.vars))
            if isinstance(v, str)
            else v
            for v in value
        ]
    if from_script is not MISSING and base not in SCRIPT_TYPES:
        if isinstance(from_script, bool) or (isinstance(from_script, dict) and "pass" in from_script):
            what = "boolean" if isinstance(from_script, bool) else "GradingResult"
            raise CheckError(
                f'Script for "{kind}" assertion returned a {what}. '
                "Only javascript/python/ruby assertion types can return them; return the expected value."
            )
        value = from_script
    params = Params(assertion, base, inverse, value, from_script, output, row, context)
    if base in graded_types() and base not in HANDLERS:
        outcome = await graded(params)
    else:
        outcome = HANDLERS[base](params)
        if asyncio.iscoroutine(outcome):
            outcome = await outcome
    assert isinstance(outcome, dict)
    if assertion.get("weight") == 0:
        outcome["pass"] = True
    return outcome


def value_context(assertion: Mapping[str, Any], row: Row) -> dict[str, Any]:
    """promptfoo's ``assertionValueContext``: what a python/javascript check gets as ``context``."""
    response = row.response
    provider_response: dict[str, Any] = {"output": row.extra.get("output")}
    out: dict[str, Any] = {"prompt": row.prompt, "vars": row.vars, "test": row.test}
    if response is not None:
        usage = response.usage
        provider_response |= {
            "tokenUsage": {
                "prompt": usage.input_tokens,
                "completion": usage.output_tokens,
                "total": usage.input_tokens + usage.output_tokens,
            },
            "cached": response.cached,
            "latencyMs": round(response.latency_s * 1000),
            "finishReason": response.finish_reason,
            "metadata": response.metadata,
        }
        out["provider"] = {"id": response.model or "", "label": response.model or ""}
        out["metadata"] = response.metadata
    out["providerResponse"] = provider_response
    if assertion.get("config"):
        out["config"] = assertion["config"]
    return out


async def graded(params: Params) -> dict[str, Any]:
    """A model-graded assertion, judged by :func:`assay.tasks.checks.graded.judge_graded`."""
    row = params.row
    check = {**params.assertion, "value": params.value}
    variables = row.vars
    if params.assertion.get("contextTransform"):
        variables = {**row.vars, "context": await context_transform(params.assertion["contextTransform"], row)}
    from assay.tasks.checks.graded import judge_graded

    ctx = row.services.graded_context(row, variables)
    verdict = await judge_graded(str(params.assertion["type"]), check, params.text, ctx)
    if verdict.is_error:
        raise CheckError(str(verdict.error))
    details = verdict.details if isinstance(verdict.details, Mapping) else {}
    reason = details.get("reason") or verdict.reason or ("Assertion passed" if verdict.passed else "Assertion failed")
    # promptfoo's own score, unclipped (runJsonGradingPrompt: score = parsed.score; a grader may say 2 or 8): the
    # assertion's score and the test's mean use it; the Verdict's score is the clipped one
    raw = details.get("score")
    score = float(raw) if isinstance(raw, int | float) and _finite(raw) else verdict.score
    out = {"pass": verdict.passed, "score": score, "reason": str(reason), **_named(details)}
    calls = details.get("judges")  # the grader's requests, counted with the row's verdict like any judge's
    if isinstance(calls, list) and calls:
        out["judges"] = list(calls)
    return out


async def context_transform(code: Any, row: Row) -> Any:
    """promptfoo's ``resolveContext`` transform: run on the provider's output before the test's transform; the
    result (a text or a list of texts) is the check's ``context``."""
    meta = {"metadata": row.response.metadata} if row.response is not None else {}
    label = transform_label(code) if isinstance(code, str) else "[inline transform]"
    context = {"vars": row.vars, "prompt": {"label": row.prompt}, **meta}
    try:
        made = await row.code.transform(code, row.extra.get("raw_output"), context)
        if not (isinstance(made, str) or (isinstance(made, list) and all(isinstance(x, str) for x in made))):
            raise CheckError(
                f"contextTransform must return a string or array of strings. Got {type(made).__name__}. "
                f"Check your transform expression: {label}"
            )
    except CheckError as err:
        raise CheckError(f"Failed to transform context using expression '{label}': {err}") from None
    return made


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _named(details: Mapping[str, Any]) -> dict[str, Any]:
    named = details.get("named_scores") if isinstance(details, Mapping) else None
    return {"namedScores": dict(named)} if isinstance(named, Mapping) and named else {}


class Tally:
    """promptfoo's ``AssertionsResult``: weighted scores, named scores, the last failure's reason."""

    def __init__(self, threshold: Any) -> None:
        self.threshold = threshold
        self.total = self.weight = 0.0
        self.failed: str | None = None
        self.components: dict[int, dict[str, Any]] = {}
        self.named: dict[str, float] = {}
        self.named_weights: dict[str, float] = {}

    def add(self, index: int, outcome: dict[str, Any], metric: str | None, weight: Any) -> None:
        w = 1.0 if weight is None else float(weight)
        self.total += float(outcome["score"]) * w
        self.weight += w
        self.components[index] = outcome
        if metric:
            self.named[metric] = self.named.get(metric, 0.0) + float(outcome["score"]) * w
            self.named_weights[metric] = self.named_weights.get(metric, 0.0) + w
        for name, score in (outcome.get("namedScores") or {}).items():
            if name != metric:
                incoming = float((outcome.get("namedScoreWeights") or {}).get(name, 1.0)) * w
                self.named[name] = self.named.get(name, 0.0) + float(score) * incoming
                self.named_weights[name] = self.named_weights.get(name, 0.0) + incoming
        if not outcome["pass"]:
            self.failed = str(outcome.get("reason"))

    def outcome(self) -> dict[str, Any]:
        score = self.total / self.weight if self.weight > 0 else 0.0
        passed, reason = self.failed is None, self.failed or "All assertions passed"
        threshold = self.threshold
        if isinstance(threshold, int | float) and not isinstance(threshold, bool) and not math.isnan(threshold):
            passed = score >= threshold
            reason = f"Aggregate score {score:.2f} {'≥' if passed else '<'} {_js_number(threshold)} threshold"
        named = {k: (v / self.named_weights[k] if self.named_weights[k] > 0 else 0.0) for k, v in self.named.items()}
        out = {"pass": passed, "score": score, "reason": reason, "namedScores": named}
        if self.named_weights:
            out["namedScoreWeights"] = dict(self.named_weights)
        return out


def _js_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


async def run_assertions(checks: Sequence[Mapping[str, Any]], row: Row, output: Any, threshold: Any) -> dict[str, Any]:
    """The test's GradingResult, with ``checks`` (one entry per top-level assertion, an assert-set's nested)."""
    if not checks:
        return {"pass": True, "score": 1.0, "reason": "No assertions", "namedScores": {}, "checks": []}
    jobs: list[tuple[int, int | None, Mapping[str, Any]]] = []  # (index, index inside its assert-set, assertion)
    for i, check in enumerate(checks):
        if check.get("type") == ASSERT_SET:
            inner = check.get("assert")
            if not isinstance(inner, list):
                raise CheckError(f"assert-set {i}: 'assert' must be a list of assertions")
            jobs.extend((i, j, sub) for j, sub in enumerate(inner))
        else:
            jobs.append((i, None, check))
    outcomes = await asyncio.gather(*(_run_one(a, row, output, i, j) for i, j, a in jobs))
    main = Tally(threshold)
    sets: dict[int, Tally] = {}
    entries: dict[int, dict[str, Any]] = {}
    for (i, j, assertion), outcome in zip(jobs, outcomes, strict=True):
        metric = render(str(assertion["metric"]), row.vars) if assertion.get("metric") else None
        entry = _entry(assertion, outcome, metric)
        if j is None:
            main.add(i, outcome, metric, assertion.get("weight"))
            entries[i] = entry
        else:
            tally = sets.setdefault(i, Tally(checks[i].get("threshold")))
            tally.add(j, outcome, metric, assertion.get("weight"))
            entries.setdefault(i, {"checks": []})["checks"].append(entry)
    for i, tally in sets.items():
        check = checks[i]
        outcome = tally.outcome()
        metric = render(str(check["metric"]), row.vars) if check.get("metric") else None
        main.add(i, outcome, metric, check.get("weight"))
        entries[i] = _entry(check, outcome, metric) | {"checks": entries.get(i, {}).get("checks", [])}
    final = main.outcome()
    final["checks"] = [entries[i] for i in sorted(entries)]
    calls = [call for outcome in outcomes for call in outcome.get("judges") or ()]
    if calls:  # every grader request of the test, so the run counts its judge usage
        final["judges"] = calls
    return final


async def _run_one(assertion: Mapping[str, Any], row: Row, output: Any, i: int, j: int | None) -> dict[str, Any]:
    if not isinstance(assertion, Mapping) or "type" not in assertion:
        raise CheckError(f"assertion {i}: a mapping with a 'type' is needed, got {assertion!r}")
    try:
        return await run_assertion(assertion, row, output)
    except CheckError as err:
        where = f"assertion {i}" if j is None else f"assertion {i}.assert[{j}]"
        raise CheckError(f"{where} ({assertion.get('type')}): {err}") from None


def _entry(assertion: Mapping[str, Any], outcome: dict[str, Any], metric: str | None) -> dict[str, Any]:
    weight = assertion.get("weight")
    entry = {
        "type": assertion.get("type"),
        "pass": bool(outcome["pass"]),
        "passed": bool(outcome["pass"]),
        "score": float(outcome["score"]),
        "weight": 1.0 if weight is None else float(weight),
        "reason": outcome.get("reason"),
    }
    if metric:
        entry["metric"] = metric
    if "value" in assertion and not isinstance(assertion.get("value"), dict | list):
        entry["value"] = assertion["value"]
    if outcome.get("namedScores") and assertion.get("type") == ASSERT_SET:
        entry["named_scores"] = outcome["namedScores"]
    return entry
