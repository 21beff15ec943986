"""Per-row checks: a row's own ``assert:`` list (promptfoo's assertions) judged as promptfoo 0.123.1 judges a test.

The ``row_checks`` evaluator reads a row's checks (``expected: doc.assert`` by default; a row without them is *not
applicable*; an empty list passes, as a promptfoo test without assertions does), applies the test's
``options.transform`` to the output, and runs every assertion (:mod:`assay.tasks.checks`): each type with
promptfoo's meaning, defaults and messages, ``not-`` variants, ``assert-set``, ``weight``, ``metric`` (named
scores), per-assertion ``threshold`` and ``transform``, values rendered with the row's vars. The row's verdict is
promptfoo's GradingResult: the weighted mean, passing when every counted assertion passes or, with a threshold
(the row's, else the option), when the mean reaches it. ``$ref: '#/check_sets/NAME'`` (or promptfoo's
``#/assertionTemplates/NAME``) splices in a named check set.

``python`` and ``javascript`` checks and transforms are the config author's code, trusted as the task file is; the
model's output reaches them only as the data value ``output``, never as code.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.models.base import Response
from assay.tasks.checks.catalog import UNSUPPORTED, known_type
from assay.tasks.checks.code import CheckError, CodeRunner, python_script, run_python
from assay.tasks.checks.engine import run_assertions
from assay.tasks.checks.params import Row, js_stringify
from assay.tasks.importers.promptfoo.providers import recorded_env
from assay.verdict import Verdict

__all__ = ["UNSUPPORTED", "RowChecks", "known_type", "promptfoo_output", "python_script", "run_python"]


class RowChecksOptions(Options):
    """Options of row_checks."""

    check_sets: dict[str, Any] = Field(
        default_factory=dict, description="named check sets (a check or a list of checks) rows name with $ref"
    )
    threshold: float | None = Field(
        default=None, description="the row's pass threshold on the weighted mean (a row's own threshold wins)"
    )
    judge: Any = Field(default=None, description="the judge model spec for model-graded checks (llm-rubric, ...)")
    threshold_field: str = Field(default="threshold", description="the row field that holds the row's threshold")
    options_field: str | None = Field(
        default=None, description="the row field with the test's promptfoo options (transform, provider, ...)"
    )
    provider_env: dict[str, str] | None = Field(
        default=None,
        description="promptfoo provider settings of the environment (OPENAI_BASE_URL, ...) recorded at load: "
        "graders named by id resolve against these, not the process's, so a resume grades where the run did",
    )
    vars_exclude_prefix: str | None = Field(
        default=None, description="row fields starting with this are not vars (promptfoo configs: '__')"
    )
    base_dir: str | None = Field(
        default=None, description="the folder file:// check values and transforms are read from (default: cwd)"
    )
    tools: list[Any] | None = Field(
        default=None, description="the provider's tools, for is-valid-openai-tools-call (promptfoo config.tools)"
    )
    functions: list[Any] | None = Field(
        default=None, description="the provider's functions, for is-valid-openai-function-call"
    )
    prices: dict[str, dict[str, float]] | None = Field(
        default=None, description="model -> {input, output} USD per 1M tokens, for cost checks"
    )


def promptfoo_output(actual: Any) -> Any:
    """The output as promptfoo's OpenAI chat provider gives it: the text; else the legacy function call
    (``{name, arguments}``, recorded in ``metadata["function_call"]``) or the tool calls; the message (``{role,
    content, function_call, tool_calls}``) when there is text besides a call."""
    if not isinstance(actual, Response):
        return "" if actual is None else actual if isinstance(actual, str | dict | list) else str(actual)
    function_call = actual.metadata.get("function_call") if isinstance(actual.metadata, dict) else None
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": js_stringify(c.arguments)},
        }
        for c in actual.tool_calls
    ]
    if actual.text and (function_call or calls):
        message: dict[str, Any] = {"role": "assistant", "content": actual.text}
        if function_call:
            message["function_call"] = function_call
        if calls:
            message["tool_calls"] = calls
        return message
    if actual.text is None or (actual.text == "" and calls):  # output = message.function_call || message.tool_calls
        return function_call or calls or ""
    return actual.text


@register("row_checks")
class RowChecks(Evaluator):
    """A row's own checks (promptfoo ``assert:``), weighted and passed as promptfoo passes a test."""

    Options = RowChecksOptions
    default_expected: ClassVar[str] = "doc.assert"
    needs_expected: ClassVar[bool] = True

    def setup(self) -> None:
        o = self.opts
        self.code = CodeRunner(Path(o.base_dir).resolve() if o.base_dir else Path.cwd())
        self.graded_cache: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        """A copy (sent to a Ray worker) holds no judge, grader or process: it builds its own when used."""
        state = self.__dict__.copy()
        state.update(graded_cache={})
        return state

    @property
    def opts(self) -> RowChecksOptions:
        assert isinstance(self.options, RowChecksOptions)
        return self.options

    @property
    def tools(self) -> list[Any] | None:
        return self.opts.tools

    @property
    def functions(self) -> list[Any] | None:
        return self.opts.functions

    @property
    def prices(self) -> dict[str, dict[str, float]] | None:
        """The ``prices`` option, else the run's price table (``--prices``)."""
        return self.opts.prices if self.opts.prices is not None else getattr(self, "_run_prices", None)

    def price(self, model: str, prompt_tokens: int) -> dict[str, float] | None:
        """The USD per 1M tokens ``{input, output}`` a ``cost`` check prices ``model`` at: the run's ``--prices``,
        else the ``prices`` option (a promptfoo provider's cost/inputCost/outputCost), else promptfoo's own table of
        OpenAI models (promptfoo's OpenAI provider prices every call it knows the model of)."""
        from assay.tasks.checks.openai_prices import promptfoo_price

        for table in (getattr(self, "_run_prices", None), self.opts.prices):
            if table and model in table:
                return table[model]
        return promptfoo_price(model, prompt_tokens)

    def use_run_prices(self, prices: dict[str, dict[str, float]]) -> None:
        """The run's ``--prices`` table, for ``cost`` checks when the ``prices`` option gives none."""
        self._run_prices = prices

    def check(self, actual: Any, expected: Any) -> Verdict:
        raise EvaluationInputError("row_checks is judged asynchronously (aevaluate)")

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Judge a row's checks (from synchronous code: runs the async path)."""
        return asyncio.run(self._once(actual, expected, context))

    async def _once(self, actual: Any, expected: Any, context: Mapping[str, Any] | None) -> Verdict:
        try:
            return await self.aevaluate(actual, expected, context=context)
        finally:
            await self.code.aclose()

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        """The row's verdict: promptfoo's GradingResult of the test, as a Verdict."""
        o = self.opts
        context = context or {}
        doc = dict(context.get("doc") or {})
        try:
            checks = self.expand(expected)
        except ConfigError as err:
            return Verdict.errored(str(err))
        prefix = o.vars_exclude_prefix
        variables = {k: v for k, v in doc.items() if not (prefix and k.startswith(prefix))}
        options = doc.get(o.options_field) if o.options_field else None
        options = dict(options) if isinstance(options, Mapping) else {}
        threshold = doc.get(o.threshold_field, o.threshold)
        response = actual if isinstance(actual, Response) else None
        prompt = str(context.get("prompt") or "")
        test = {"vars": variables, "assert": checks, "options": options}
        for key, field in (
            ("threshold", o.threshold_field),
            ("description", "__description"),
            ("metadata", "__metadata"),
        ):
            if field in doc:
                test[key] = doc[field]
        row = Row(response, variables, prompt, test, self.code, self)
        if context.get("outputs") is not None:  # select-best: every output of this test, when the caller has them
            row.extra["outputs"] = list(context["outputs"])
        output = promptfoo_output(actual)
        row.extra["raw_output"] = output
        try:
            transform = options.get("transform") or options.get("postprocess")
            if transform:
                meta = {"metadata": response.metadata} if response is not None else {}
                output = await self.code.transform(
                    transform, output, {"vars": variables, "prompt": {"raw": prompt, "label": prompt}, **meta}
                )
            row.extra["output"] = output
            with recorded_env(o.provider_env):
                outcome = await run_assertions(checks, row, output, threshold)
        except CheckError as err:
            return Verdict.errored(str(err))
        return _verdict(outcome, threshold)

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
            sets = self.opts.check_sets
            if name not in sets:
                raise ConfigError(f"$ref {ref!r}: no check set {name!r}; defined: {', '.join(sets) or 'none'}")
            out.extend(self.expand(sets[name]))
        return out

    def graded_context(self, row: Row, variables: dict[str, Any] | None = None) -> Any:
        """The model-graded family's context (:class:`assay.tasks.checks.graded.GradedContext`)."""
        import dataclasses

        from assay.tasks.checks.graded import GradedContext

        known = {
            "vars": row.vars if variables is None else variables,
            "prompt": row.prompt,
            "options": row.options,
            "test_options": row.options,
            "judge": self.opts.judge,
            "default_judge": self.opts.judge,
            "cache": self.graded_cache,
            "test": row.test,
            "response": row.response,
            "output": row.extra.get("output"),
            "outputs": row.extra.get("outputs"),
        }
        fields = {f.name for f in dataclasses.fields(GradedContext)}
        return GradedContext(**{k: v for k, v in known.items() if k in fields})

    def use_run_cache(self, enabled: bool, path: str | os.PathLike[str] | None = None) -> None:
        """Follow the run's response-cache switch for the model-graded checks' judge calls (as every judge does)."""
        from assay.tasks.checks.graded import use_run_cache

        use_run_cache(self.graded_cache, enabled, path)

    async def aclose(self) -> None:
        from assay.tasks.checks.graded import aclose_graded

        await aclose_graded(self.graded_cache)
        await self.code.aclose()


def _verdict(outcome: dict[str, Any], threshold: Any) -> Verdict:
    """promptfoo's GradingResult as a Verdict: its score clipped to [0, 1] (a code check's raw number can take the
    mean outside; the raw mean is ``details.promptfoo_score``), its pass and reason."""
    raw = float(outcome["score"])
    details: dict[str, Any] = {
        "checks": outcome.get("checks", []),
        "threshold": threshold,
        "named_scores": outcome.get("namedScores") or {},
        "promptfoo_score": raw,
    }
    if outcome.get("judges"):
        details["judges"] = outcome["judges"]
    score = min(1.0, max(0.0, raw))
    passed = bool(outcome["pass"])
    reason = str(outcome.get("reason") or "")
    return Verdict(score, passed, None if passed else reason, details | {"reason": reason})
