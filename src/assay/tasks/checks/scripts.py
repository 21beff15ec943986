"""promptfoo 0.123.1's ``javascript`` and ``python`` assertions and how it reads what they return: a bool passes or
fails; a number is the score (passing above 0, or at the assertion's ``threshold``), kept as it is (promptfoo's
test score is the weighted mean of such raw scores); a GradingResult (``pass``, ``score`` and ``reason`` all
present) is taken as it is. Python may also return ``"true"``/``"false"`` or a JSON text, and snake_case keys.
Code that raises, or returns anything else, fails the check with promptfoo's reason (it does not error)."""

from __future__ import annotations

import json
import math
from typing import Any

from assay.tasks.checks.code import CheckError, run_python
from assay.tasks.checks.node import NodeError
from assay.tasks.checks.params import MISSING, Params, js_stringify

PASSED = "Assertion passed"


class ScriptResultError(ValueError):
    """A script returned what promptfoo cannot read as a result."""


MUST = "Python assertion must return a boolean, number, or {pass, score, reason} object."


def is_grading_result(value: Any) -> bool:
    """promptfoo's ``isGradingResult``: a mapping with a bool ``pass``, a number ``score`` and a text ``reason``."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("pass"), bool)
        and isinstance(value.get("score"), int | float)
        and not isinstance(value.get("score"), bool)
        and isinstance(value.get("reason"), str)
        and (value.get("namedScores") is None or isinstance(value["namedScores"], dict))
        and (value.get("componentResults") is None or isinstance(value["componentResults"], list))
    )


def _suffix(reason: str, suffix: Any) -> str:
    return f"{reason}\n{suffix}" if isinstance(suffix, str) and suffix else reason


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def normalize(p: Params, value: Any, code: str, suffix: Any) -> dict[str, Any]:
    """promptfoo's ``normalizeScriptAssertionResult`` / ``normalizeJavascriptAssertionResult``."""
    threshold = p.threshold
    if isinstance(value, bool):
        passed = value != p.inverse
        return {
            "pass": passed,
            "score": float(passed),
            "reason": PASSED if passed else _suffix(f"{code} returned {str(value).lower()}", suffix),
        }
    if _number(value):
        raw = value > 0 if threshold is None else value >= threshold
        passed = raw != p.inverse
        return {
            "pass": passed,
            "score": float(value),
            "reason": PASSED if passed else _suffix(f"{code} returned {str(raw).lower()}", suffix),
        }
    passed = value["pass"] != p.inverse
    if passed == value["pass"]:
        reason = value.get("reason")
    else:
        reason = PASSED if passed else f"{code} returned {str(value['pass']).lower()}"
    out = {k: v for k, v in value.items() if k not in ("assertion",)}
    return out | {"pass": passed, "score": float(value["score"]), "reason": reason}


async def javascript(p: Params) -> dict[str, Any]:
    code = p.value
    rendered = code.rstrip() if isinstance(code, str) else code
    try:
        if p.from_script is MISSING:
            if not isinstance(code, str):
                raise CheckError("javascript assertion must have a string value")
            value, undefined = await p.row.code.javascript({"code": rendered, "kind": "assert"}, p.output, p.context)
            value = None if undefined else value
        else:
            value = p.from_script
        if not (isinstance(value, bool) or _number(value) or is_grading_result(value)):
            raise ValueError(
                "Custom function must return a boolean, number, or GradingResult object. "
                f"Got type {_js_type(value)}: {js_stringify(value)}"
            )
        if _number(value) and math.isnan(value):
            raise ValueError("Custom function returned NaN")
    except CheckError:
        raise
    except (NodeError, ValueError) as err:
        return {"pass": False, "score": 0.0, "reason": _suffix(f"Custom function threw error: {err}", rendered)}
    return normalize(p, value, "Custom function", rendered)


def _js_type(value: Any) -> str:
    return "undefined" if value is None else "string" if isinstance(value, str) else "object"


async def python(p: Params) -> dict[str, Any]:
    if not isinstance(p.value, str):
        raise CheckError("python assertion must have a string value")
    try:
        value = run_python(p.value, p.output, p.context) if p.from_script is MISSING else p.from_script
        return _python_result(p, value)
    except ScriptResultError as err:
        return {"pass": False, "score": 0.0, "reason": f"Python code execution failed: {err}"}
    except Exception as err:  # the config's code raised: promptfoo fails the check with the error
        return {"pass": False, "score": 0.0, "reason": f"Python code execution failed: {type(err).__name__}: {err}"}


def _python_result(p: Params, value: Any) -> dict[str, Any]:
    """promptfoo's ``normalizeScriptResult`` for Python."""
    suffix = p.assertion.get("value")
    lowered = value.lower() if isinstance(value, str) else None
    if value is True or lowered == "true":
        return normalize(p, True, "Python code", suffix)
    if value is False or lowered == "false":
        return normalize(p, False, "Python code", suffix)
    if isinstance(value, str) and value.startswith("{"):
        parsed = json.loads(value)
        if not isinstance(parsed, dict):
            raise ScriptResultError(f"{MUST} Got instead: {value}")
        value = parsed
    if isinstance(value, dict):
        mapped = dict(value)
        for snake, camel in (
            ("pass_", "pass"),
            ("named_scores", "namedScores"),
            ("component_results", "componentResults"),
        ):
            if snake in mapped and camel not in mapped:
                mapped[camel] = mapped[snake]
        if not is_grading_result(mapped):
            raise ScriptResultError(f"{MUST} Got instead:\n{json.dumps(mapped, indent=2, default=str)}")
        threshold = p.threshold
        if threshold is not None and mapped["score"] < threshold:
            message = f"Python score {_num(mapped['score'])} is less than threshold {_num(threshold)}"
            mapped["pass"], mapped["reason"] = False, f"{message}: {mapped['reason']}" if mapped["reason"] else message
        return normalize(p, mapped, "Python code", suffix)
    try:
        score = (
            float(str(value).strip().split()[0])
            if value is not None and not isinstance(value, list | dict)
            else math.nan
        )
    except (ValueError, IndexError):
        score = math.nan
    if math.isnan(score):
        raise ScriptResultError(f"{MUST} Instead got:\n{value}")
    return normalize(p, score, "Python code", suffix)


def _num(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
