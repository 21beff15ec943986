"""One model-graded check being judged: what it reads (vars, the rendered value, threshold, grading options), how
its grading prompt is built (promptfoo's template, untrusted values delimited) and asked, and how its verdict is
written (promptfoo's score, pass and reason; the calls, their usage and an identity for calibration in details)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.evaluators.judge.client import CallRecord, JudgeModels, summarize_calls
from assay.evaluators.judge.prompt import delimit, new_boundary, system_message
from assay.tasks.checks.graded_client import JSON_OBJECT, Grader, Graders, embedding_grader, text_grader
from assay.tasks.checks.graded_render import (
    Untrusted,
    chat_messages,
    js_json,
    js_string,
    js_to_number,
    render_prompt,
    template_values,
)
from assay.verdict import Verdict, unit_score

RESERVED = "__"  # promptfoo reserves the prefix; the reader's row fields use it
CHECK_NAMES = {  # how promptfoo names each check in its grader errors
    "g-eval": "reply geval check",
    "answer-relevance": "answer relevancy check",
    "context-faithfulness": "faithfulness check",
    "context-recall": "context recall check",
    "context-relevance": "context relevance check",
}
HEAD = 300  # how much of an unusable reply an error shows


@dataclass
class GradedContext:
    """What a model-graded check reads besides the output (filled by row_checks for one test)."""

    vars: dict[str, Any]  # the test's vars
    prompt: str  # the rendered prompt sent to the model
    options: dict[str, Any]  # the test's merged options (__options): provider (grader), rubricPrompt, ...
    judge: Any  # the default grader model spec (an assay model spec dict)
    cache: dict[str, Any]  # per-evaluator cache (the built graders), owned by the caller
    outputs: list[str] | None = None  # for select-best: the outputs of every prompt x provider of this test


class GradedError(Exception):
    """The check cannot be judged (a grader reply that cannot be read, a missing var): an error verdict."""


class Each(list[Any]):
    """An untrusted list whose items are shown one by one (``{% for %}``): each item is its own delimited block."""


class Joined(list[Any]):
    """An untrusted list shown joined (``|join``): one delimited block around all of it."""


def head(text: str | None) -> str:
    """The start of a reply, for an error message."""
    text = text or ""
    return repr(text if len(text) <= HEAD else text[:HEAD] + "…")


@dataclass
class Job:
    """One check of one output."""

    kind: str
    check: Mapping[str, Any]
    output: str
    ctx: GradedContext
    graders: Graders
    calls: list[CallRecord] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    prompts: list[str] = field(default_factory=list)  # the templates asked, for the identity
    _pending: list[tuple[JudgeModels, CallRecord]] = field(default_factory=list)

    # -- what the check reads ----------------------------------------------------------------------------------------

    @property
    def vars(self) -> dict[str, Any]:
        """The test's vars (the reader's reserved ``__`` fields left out)."""
        return {k: v for k, v in (self.ctx.vars or {}).items() if not str(k).startswith(RESERVED)}

    @property
    def grading(self) -> dict[str, Any]:
        """promptfoo's ``getFinalTest``: the test's options with the check's own provider and rubricPrompt first."""
        options = dict(self.ctx.options or {})
        options["provider"] = self.check.get("provider") or options.get("provider")
        options["rubricPrompt"] = self.check.get("rubricPrompt") or options.get("rubricPrompt")
        return options

    def value(self) -> Any:
        """The check's value: promptfoo's ``renderedValue`` (the caller renders it over the vars and reads its
        ``file://`` reference, as promptfoo's ``runAssertion`` does before any handler)."""
        return self.check.get("value")

    def string_value(self) -> str:
        """The rendered value, which must be text (promptfoo's invariant)."""
        value = self.value()
        if not isinstance(value, str):
            raise GradedError(f"{self.kind} assertion type must have a string value, got {js_json(value)}")
        return value

    def threshold(self, default: float | None) -> float | None:
        """The check's threshold (a string is read as a number, as promptfoo reads it), else ``default``."""
        raw = self.check.get("threshold")
        if raw is None:
            return default
        number = js_to_number(raw) if isinstance(raw, str) else float(raw)
        return number if math.isfinite(number) else default

    def rubric_prompt(self, default: str, rubric: Any = None) -> str:
        """``loadRubricPrompt``: the given or configured rubricPrompt (an object as its JSON), else ``default``."""
        rubric = self.grading.get("rubricPrompt") if rubric is None else rubric
        if not rubric or (isinstance(rubric, dict) and not rubric):
            return default
        if isinstance(rubric, str):
            return _no_file(rubric, "rubricPrompt")
        return js_json(rubric)

    def text_grader(self) -> Grader:
        """The chat model that grades this check."""
        return text_grader(self.grading.get("provider"), self.ctx.judge, self.check_name)

    def embedding_grader(self) -> Grader:
        """The embedding model of this check."""
        return embedding_grader(self.grading.get("provider"), self.check_name)

    @property
    def check_name(self) -> str:
        """promptfoo's name of the check in its messages."""
        return CHECK_NAMES.get(self.kind, f"{self.kind} check")

    # -- asking -------------------------------------------------------------------------------------------------------

    async def ask(
        self,
        grader: Grader,
        template: str,
        values: dict[str, Any],
        untrusted: dict[str, Any],
        *,
        purpose: str,
        repeat: int = 0,
        json_mode: bool = False,
    ) -> str:
        """Render ``template`` over ``values`` and the ``untrusted`` ones (each delimited), ask the grader and return
        its reply (a failed call or an empty reply raises GradedError, as promptfoo fails the check)."""
        self.prompts.append(template)
        shown = template_values(values)
        texts = {name: _texts(value) for name, value in untrusted.items()}
        others = [template, js_json(values)]
        boundary = new_boundary([t for group in texts.values() for t in group] + others)
        for name, value in untrusted.items():
            shown[name] = _delimited(value, texts[name], boundary, name)
        messages = chat_messages(render_prompt(template, shown))
        if any(boundary in str(m.get("content", "")) for m in messages):
            rules = system_message(boundary)["content"]
            if messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
                messages[0] = {**messages[0], "content": rules + "\n\n" + messages[0]["content"]}
            else:
                messages.insert(0, {"role": "system", "content": rules})
        else:
            boundary = ""
        response_format = JSON_OBJECT if json_mode and grader.default else None
        models, record = await self.graders.ask(
            grader, messages, purpose=purpose, boundary=boundary or None, response_format=response_format, repeat=repeat
        )
        self.calls.append(record)
        if record.error is not None:
            raise GradedError(record.error)
        if not record.reply:
            record.error = "No output"
            raise GradedError(f"the grader {record.model} gave no output")
        self._pending.append((models, record))
        return record.reply

    def accept(self) -> None:
        """The replies so far were read: let the response cache keep them."""
        for models, record in self._pending:
            models.commit(0, record)
        self._pending.clear()

    def fail_reply(self, message: str, reply: str | None = None) -> GradedError:
        """A reply promptfoo cannot read (it fails the check with score 0; assay makes it an error)."""
        if self.calls and reply is not None:
            self.calls[-1].error = message
        return GradedError(message + (f"; the grader replied {head(reply)}" if reply is not None else ""))

    # -- the verdict --------------------------------------------------------------------------------------------------

    def verdict(self, score: float, passed: bool, reason: str, **extra: Any) -> Verdict:
        """promptfoo's result as a verdict: its score (clipped into [0, 1] when it is outside; its own value stays in
        ``details["score"]``), its pass, its reason (also kept in details when the check passes)."""
        self.accept()
        if not isinstance(score, int | float) or not math.isfinite(score):
            return self.error(f"the grader's score {js_string(score)} is not a finite number")
        unit = unit_score(float(score))
        if unit is None:
            unit = 1.0 if score > 1 else 0.0
        details = {"type": self.kind, "score": score, "pass": passed, "reason": reason, **self.details, **extra}
        return Verdict(unit, passed, None if passed else reason, details | self._judge_details())

    def error(self, message: str) -> Verdict:
        """An error verdict naming the check (promptfoo would count it a failure with score 0)."""
        details = {"type": self.kind, **self.details, **self._judge_details()}
        details["promptfoo"] = "fails the check with score 0"
        return Verdict.errored(f"{self.kind}: {message}", details)

    def _judge_details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"identity": self.identity()}
        if self.calls:
            out["judge"] = summarize_calls(self.calls)
            out["judges"] = [c.to_dict() for c in self.calls]
        return out

    def identity(self) -> dict[str, Any]:
        """Who judged, for calibration (as :mod:`assay.evaluators.judge.calibration.identity` names a judge): the
        check type, the grader models, a hash of the grading prompts and the rendered value, and the options that
        change the verdict."""
        models = sorted({c.model for c in self.calls})
        options = {k: self.grading.get(k) for k in ("factuality",) if self.grading.get(k) is not None}
        if self.check.get("threshold") is not None:
            options["threshold"] = self.check.get("threshold")
        prompt = {"templates": self.prompts, "value": self.check.get("value")}
        ident = {
            "evaluator": f"promptfoo:{self.kind}",
            "models": models,
            "prompt_hash": _digest(prompt),
            "options": options,
        }
        ident["id"] = _digest(ident)[:16]
        return ident


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _no_file(text: str, what: str) -> str:
    if text.startswith("file://"):
        raise ConfigError(f"{what} {text!r}: a file:// reference the reader has not resolved")
    return text


def _texts(value: Any) -> list[str]:
    """An untrusted value as the text(s) promptfoo prints for it."""
    if isinstance(value, Each | Joined):
        return [js_string(v) for v in template_values({"v": list(value)})["v"]]
    return [js_string(template_values({"v": value})["v"])]


def _delimited(value: Any, texts: list[str], boundary: str, name: str) -> Any:
    """The untrusted value as the template sees it: inside the boundary, printed as promptfoo prints it."""
    if isinstance(value, Each):
        return [Untrusted(delimit(t, boundary, f"{name} {i}")) for i, t in enumerate(texts)]
    if isinstance(value, Joined):
        if not texts:
            return []
        opening, closing = delimit("\0", boundary, name).split("\0")
        items = list(texts)
        items[0] = opening + items[0]
        items[-1] = items[-1] + closing
        return [Untrusted(t) for t in items]
    return Untrusted(delimit(texts[0], boundary, name))
