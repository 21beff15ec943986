"""Per-row checks: a row's own ``assert:`` list (promptfoo's assertion names) judged by assay's evaluators.

The ``row_checks`` evaluator reads a row's checks (``expected: doc.assert`` by default; a row without them is *not
applicable*), builds the assay evaluator each promptfoo type maps to (:data:`MAPPING`), and gives the row one
verdict as promptfoo does: the weighted mean of the checks' scores (weight 0: reported, not counted), passing when
every counted check passes, or, with a ``threshold`` (the row's, else the option), when the mean reaches it.
``$ref: '#/check_sets/NAME'`` (or promptfoo's ``#/assertionTemplates/NAME``) splices in a named check set.

A ``python`` (or ``javascript``, run by the machine's Node.js) check is the check author's code from the task
file, trusted as the task file is; the model's output reaches it only as the data value ``output``, never as code.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import Field

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.models.base import Response
from assay.verdict import Verdict, unit_score

Builder = Callable[[Mapping[str, Any]], tuple[str, dict[str, Any], Any]]


def _text(check: Mapping[str, Any]) -> str:
    return str(check.get("value", ""))


def _items(check: Mapping[str, Any]) -> list[str]:
    value = check.get("value")
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _contains(mode: str, ignore_case: bool, many: bool) -> Builder:
    def build(c: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any]:
        subs = _items(c) if many else [_text(c)]
        return "contains", {"substrings": subs, "mode": mode, "ignore_case": ignore_case}, None

    return build


def _schema(extract: str) -> Builder:
    def build(c: Mapping[str, Any]) -> tuple[str, dict[str, Any], Any]:
        schema = c.get("value")
        return "schema", {"json_schema": schema if isinstance(schema, dict) else True, "extract": extract}, None

    return build


# promptfoo assertion type -> builder of (assay evaluator, its options, the expected value it compares with)
MAPPING: dict[str, Builder] = {
    "equals": lambda c: ("exact_match", {}, _text(c)),
    "contains": _contains("all", False, False),
    "icontains": _contains("all", True, False),
    "contains-all": _contains("all", False, True),
    "icontains-all": _contains("all", True, True),
    "contains-any": _contains("any", False, True),
    "icontains-any": _contains("any", True, True),
    "starts-with": lambda c: ("regex", {"pattern": "^" + re.escape(_text(c))}, None),
    "regex": lambda c: ("regex", {"pattern": _text(c)}, None),
    "is-json": _schema("strict"),
    "contains-json": _schema("anywhere"),
    "similar": lambda c: ("semantic_similarity", {"threshold": float(c.get("threshold", 0.75))}, _text(c)),
    "levenshtein": lambda c: ("fuzzy_match", {"algorithm": "levenshtein"}, _text(c)),
}
OWN_TYPES = ("python", "javascript", "llm-rubric")  # judged here: code checks and the judge
UNSUPPORTED = ("webhook", "model-graded-closedqa", "factuality", "cost", "latency", "perplexity", "moderation")


def known_type(kind: str) -> bool:
    """True when a promptfoo assertion type (with or without ``not-``) has an assay equivalent here."""
    base = kind[4:] if kind.startswith("not-") else kind
    return base in MAPPING or base in OWN_TYPES


class RowChecksOptions(Options):
    """Options of row_checks."""

    check_sets: dict[str, Any] = Field(
        default_factory=dict, description="named check sets (a check or a list of checks) rows name with $ref"
    )
    threshold: float | None = Field(
        default=None, description="the row's pass threshold on the weighted mean (a row's own 'threshold' wins)"
    )
    judge: Any = Field(default=None, description="the judge model spec for llm-rubric checks")
    threshold_field: str = Field(default="threshold", description="the row field that holds the row's threshold")


@register("row_checks")
class RowChecks(Evaluator):
    """A row's own checks (promptfoo ``assert:``), weighted and passed as promptfoo passes a test."""

    Options = RowChecksOptions
    default_expected: ClassVar[str] = "doc.assert"
    needs_expected: ClassVar[bool] = True

    def setup(self) -> None:
        self._built: dict[str, Evaluator] = {}

    def check(self, actual: Any, expected: Any) -> Verdict:
        raise EvaluationInputError("row_checks is judged asynchronously (aevaluate)")

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Judge a row's checks (from synchronous code: runs the async path)."""
        return asyncio.run(self.aevaluate(actual, expected, context=context))

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        """The row's verdict: each check judged, the weighted mean, passed by promptfoo's rule."""
        try:
            checks = self.expand(expected)
        except ConfigError as err:
            return Verdict.errored(f"row_checks: {err}")
        output = actual.text or "" if isinstance(actual, Response) else "" if actual is None else str(actual)
        doc = dict((context or {}).get("doc") or {})
        results: list[dict[str, Any]] = []
        for i, check in enumerate(checks):
            kind = str(check.get("type"))
            try:
                verdict, value = await self._judge(kind, check, actual, output, context or {})
            except Exception as err:  # a check that cannot run errors the row, naming it
                return Verdict.errored(f"row_checks: check {i} ({kind}) raised {type(err).__name__}: {err}")
            if verdict.is_error:
                return Verdict.errored(f"row_checks: check {i} ({kind}): {verdict.error}")
            weight = float(check.get("weight", 1.0))
            results.append(
                {"type": kind, "score": verdict.score, "passed": verdict.passed, "weight": weight, "value": value}
                | ({"reason": verdict.reason} if verdict.reason else {})
                | ({"metric": check["metric"]} if "metric" in check else {})
            )
        counted = [r for r in results if r["weight"] > 0]
        total = math.fsum(r["weight"] for r in counted)
        score = math.fsum(r["score"] * r["weight"] for r in counted) / total if total else 1.0
        opts = self.options
        assert isinstance(opts, RowChecksOptions)
        threshold = doc.get(opts.threshold_field, opts.threshold)
        passed = score >= float(threshold) if threshold is not None else all(r["passed"] for r in counted)
        failing = [
            f"{r['type']}{' (' + r['reason'] + ')' if r.get('reason') else ''}" for r in counted if not r["passed"]
        ]
        reason = None if passed else "failed: " + "; ".join(failing) if failing else f"score below {threshold}"
        return Verdict(score, passed, reason, {"checks": results, "threshold": threshold})

    def expand(self, checks: Any) -> list[dict[str, Any]]:
        """The row's checks with every ``$ref`` replaced by its named check set."""
        if isinstance(checks, dict):
            checks = [checks]
        if not isinstance(checks, list):
            raise ConfigError(f"a row's checks are a list of {{type: ..., value: ...}}, got {checks!r}")
        out: list[dict[str, Any]] = []
        for check in checks:
            if not isinstance(check, dict):
                raise ConfigError(f"a check is a mapping like {{type: contains, value: ...}}, got {check!r}")
            ref = check.get("$ref")
            if ref is None:
                if "type" not in check:
                    raise ConfigError(f"a check needs a 'type', got {check!r}")
                out.append(check)
                continue
            name = str(ref).rsplit("/", 1)[-1]
            sets = self.options.check_sets  # type: ignore[attr-defined]
            if name not in sets:
                raise ConfigError(f"$ref {ref!r}: no check set {name!r}; defined: {', '.join(sets) or 'none'}")
            out.extend(self.expand(sets[name]))
        return out

    async def _judge(
        self, kind: str, check: Mapping[str, Any], actual: Any, output: str, context: Mapping[str, Any]
    ) -> tuple[Verdict, Any]:
        inverse = kind.startswith("not-")
        base = kind[4:] if inverse else kind
        if base in ("python", "javascript"):
            raw = (
                python_check(_text(check), output, context)
                if base == "python"
                else await node_check(_text(check), output, context)
            )
            verdict, value = code_verdict(raw, check.get("threshold"))
        else:
            evaluator, expected = self._evaluator(base, check)
            verdict = await evaluator.aevaluate(actual, expected, context=context)
            value = None if verdict.is_error else verdict.score
        if inverse and not verdict.is_error:
            reason = f"{base} held, and the check is {kind}" if verdict.passed else None
            verdict = Verdict(1.0 - verdict.score, not verdict.passed, reason, verdict.details)
        return verdict, value

    def _evaluator(self, base: str, check: Mapping[str, Any]) -> tuple[Evaluator, Any]:
        if base == "llm-rubric":
            judge = check.get("provider") or self.options.judge  # type: ignore[attr-defined]
            if judge is None:
                raise ConfigError("llm-rubric needs a judge model: set row_checks' 'judge' option")
            name, options, expected = "llm_judge", {"criteria": _text(check), "model": judge}, None
        elif base in MAPPING:
            name, options, expected = MAPPING[base](check)
        else:
            raise ConfigError(f"assertion type {base!r} has no assay equivalent; known: {', '.join(sorted(MAPPING))}")
        key = json.dumps([name, options], sort_keys=True, default=str)
        evaluator = self._built.get(key)
        if evaluator is None:
            evaluator = self._built[key] = Evaluator.from_config({"name": name, **options})
        return evaluator, expected

    async def aclose(self) -> None:
        for evaluator in self._built.values():
            await evaluator.aclose()


def code_verdict(raw: Any, threshold: Any) -> tuple[Verdict, Any]:
    """A code check's result as promptfoo reads it: a bool passes or fails; a number is a score (passing when it
    reaches ``threshold``, else when above 0) kept on its own scale in the details and counted clipped to [0, 1];
    a mapping gives ``pass``, ``score`` and ``reason``."""
    if isinstance(raw, dict):
        passed = bool(raw.get("pass", raw.get("pass_", False)))
        score = float(raw.get("score", 1.0 if passed else 0.0))
        reason = raw.get("reason")
        return Verdict(_unit(score), passed, None if passed else str(reason or "the check failed")), score
    if isinstance(raw, bool):
        return Verdict(float(raw), raw, None if raw else "the check returned false"), raw
    if isinstance(raw, int | float):
        score = float(raw)
        if math.isnan(score):
            return Verdict.errored("the check returned NaN"), None
        passed = score >= float(threshold) if threshold is not None else score > 0
        return Verdict(_unit(score), passed, None if passed else f"the check returned {raw}"), score
    if isinstance(raw, str):  # promptfoo: a string result is a reason to fail unless it is 'true'
        ok = raw.strip().lower() == "true"
        return Verdict(float(ok), ok, None if ok else raw), raw
    return Verdict.errored(f"the check returned {type(raw).__name__}, not a bool, number or {{pass, score}}"), None


def _unit(score: float) -> float:
    """A code check's score as counted in the row's mean: itself in [0, 1], else clipped (its own value is kept)."""
    inside = unit_score(score)
    return inside if inside is not None else (1.0 if score > 1 else 0.0)


def _code_context(output: str, context: Mapping[str, Any]) -> dict[str, Any]:
    return {"vars": dict(context.get("doc") or {}), "prompt": context.get("prompt", "")}


def python_check(source: str, output: str, context: Mapping[str, Any]) -> Any:
    """Run a python check (an expression, or a function body that returns): the author's code, the output data."""
    namespace: dict[str, Any] = {"output": output, "context": _code_context(output, context), "json": json}
    namespace["math"] = math
    body = source.strip()
    if "\n" not in body and not body.startswith("return"):
        return eval(compile(body, "<python check>", "eval"), namespace)  # the task author's expression; output is data
    exec(compile("def _check(output, context):\n" + textwrap.indent(body, "    "), "<python check>", "exec"), namespace)
    return namespace["_check"](output, namespace["context"])


NODE_TIMEOUT = 30.0


async def node_check(source: str, output: str, context: Mapping[str, Any]) -> Any:
    """Run a javascript check with the machine's Node.js; the output and vars are given as JSON on stdin."""
    node = shutil.which("node")
    if node is None:
        raise ConfigError("a javascript check needs Node.js ('node' on PATH)")
    body = source.strip()
    fn = body if "\n" in body or body.startswith("return") else f"return ({body});"
    script = (
        "const d = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        f"const r = (function(output, context) {{ {fn} }})(d.output, d.context);"
        "process.stdout.write(JSON.stringify(r === undefined ? null : r));"
    )
    proc = await asyncio.create_subprocess_exec(
        node,
        "-e",
        script,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    data = json.dumps({"output": output, "context": _code_context(output, context)}).encode()
    out, err = await asyncio.wait_for(proc.communicate(data), NODE_TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(err.decode(errors="replace").strip().splitlines()[-1] if err else "node failed")
    return json.loads(out or b"null")
