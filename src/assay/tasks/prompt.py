"""Rendering a sample into chat messages: a text template (one user message), a list of message templates,
or the sample's input as is; few-shot examples prepended as text or as earlier chat turns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from assay.models.base import Message
from assay.tasks.config import FewshotConfig
from assay.tasks.fewshot import example_context, shot_target
from assay.tasks.sample import Sample
from assay.tasks.template import MAX_OUTPUT, Template

_SAMPLE_NAMES = frozenset({"doc", "input", "target", "metadata", "fewshot"})  # what sample_context adds to a row


class RenderError(Exception):
    """A template failed for one sample (or one of its few-shot examples)."""

    def __init__(
        self, template: Template | None, error: Exception | str, context: dict[str, Any], example: Sample | None = None
    ) -> None:
        super().__init__(str(error))
        self.template = template
        self.error = error
        self.context = context
        self.example = example


def sample_context(sample: Sample, shots: list[Sample]) -> dict[str, Any]:
    """The template variables: the row's fields, then ``doc``, ``input``, ``target``, ``metadata``, ``fewshot``."""
    return {
        **sample.doc,
        "doc": sample.doc,
        "input": sample.input,
        "target": sample.target,
        "metadata": sample.metadata,
        "fewshot": [example_context(s) for s in shots],
    }


def is_messages(value: Any) -> bool:
    """True for a non-empty list of chat messages (mappings with a ``role``)."""
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


@dataclass(frozen=True, eq=False)
class Prompt:
    """How a task turns a sample into messages.

    * ``template``: one user message (``system`` adds a system message); few-shot examples are rendered
      with the same template, each followed by ``target_delimiter`` and its target, joined by ``separator``
      and put before the sample's text (lm-evaluation-harness layout).
    * ``messages``: a chat of message templates; few-shot examples become earlier turns (the non-system
      messages rendered for the example, then an assistant message with its target).
    * neither: the sample's ``input`` as the user message, or as the whole chat when it is a message list.

    A template that reads the ``fewshot`` variable lays examples out itself; nothing is added automatically.
    """

    template: Template | None = None
    system: Template | None = None
    messages: tuple[tuple[str, Template], ...] | None = None
    fewshot: FewshotConfig | None = None
    # a few-shot example renders the same way every time it is shown: (id, kind) -> (example, rendering)
    _shots: dict[tuple[int, str], tuple[Sample, Any]] = field(default_factory=dict, repr=False)
    # the answer shown after a few-shot example (a multiple-choice task shows the gold choice); default: its target
    answer: Callable[[Sample], str] | None = None
    # what else a row must give (a multiple-choice row its choices), checked wherever the prompt is rendered
    row_check: Callable[[Sample], None] | None = None

    def _answer(self, shot: Sample) -> str:
        if self.answer is None:
            return _target(shot)
        try:
            return self.answer(shot)
        except Exception as err:
            raise RenderError(None, err, {}, shot) from err

    def _shot(self, shot: Sample, kind: str, make: Callable[[], Any]) -> Any:
        hit = self._shots.get((id(shot), kind))
        if hit is not None and hit[0] is shot:
            return hit[1]
        value = make()
        self._shots[(id(shot), kind)] = (shot, value)
        return value

    @cached_property
    def uses_fewshot_variable(self) -> bool:
        """True when a template lays out the few-shot examples itself."""
        templates = [self.template, self.system, *(t for _, t in self.messages or ())]
        return any(t is not None and "fewshot" in t.variables for t in templates)

    @property
    def screens(self) -> bool:
        """True when :meth:`cannot_fail` can ever be True: one plain template, no system or chat messages."""
        template = self.template
        if self.row_check is not None:
            return False
        return template is not None and template.plain is not None and self.system is None and self.messages is None

    def cannot_fail(self, sample: Sample) -> bool:
        """True when rendering ``sample`` without few-shot examples is sure to succeed, found without rendering it:
        one plain template (no system or chat messages) whose every name resolves, as in :func:`sample_context`,
        to a value with a text, the whole within MAX_OUTPUT. False says nothing: the render must be tried."""
        return self.row_cannot_fail(sample.doc, sample.input, sample.target, sample.metadata)

    def row_cannot_fail(self, doc: dict[str, Any], input_: Any, target: Any, metadata: dict[str, Any]) -> bool:
        """:meth:`cannot_fail` for the sample a row makes (its fields picked out, before the Sample is built)."""
        plan = self._screen_plan
        if plan is None:
            return False
        size, names, globals_, missing = plan
        for name in names:
            if name in _SAMPLE_NAMES:  # as sample_context puts them (doc first), few-shot examples left out
                if name == "doc":
                    value: Any = doc
                elif name == "input":
                    value = input_
                elif name == "target":
                    value = target
                else:
                    value = metadata if name == "metadata" else []
            elif name in doc:
                value = doc[name]
            else:
                value = globals_.get(name, missing)
            if value is missing:
                return False
            if type(value) is not str:
                try:
                    value = str(value)
                except Exception:
                    return False
            size += len(value)
        return size <= MAX_OUTPUT

    @cached_property
    def _screen_plan(self) -> tuple[int, tuple[str, ...], dict[str, Any], Any] | None:
        """The plain template's literal text length, the names it puts in, its globals and Jinja's missing
        sentinel (None when :meth:`cannot_fail` is never True)."""
        if not self.screens:
            return None
        template = self.template
        assert template is not None and template.plain is not None
        pieces = template.plain.pieces
        literal = sum(len(piece) for piece in pieces if isinstance(piece, str))
        names = tuple(piece[0] for piece in pieces if not isinstance(piece, str))
        # a name neither the row nor (once compiled) Jinja's globals give says "not sure": the render decides
        return literal, names, template.compiled_globals, template.plain.missing

    def render(self, sample: Sample, shots: list[Sample]) -> list[Message]:
        """The messages for ``sample``; raises RenderError naming the template that failed."""
        if self.row_check is not None:
            try:
                self.row_check(sample)
            except Exception as err:
                raise RenderError(None, err, {}) from err
        laid_out = self.uses_fewshot_variable
        ctx = sample_context(sample, shots if laid_out else [])  # examples' contexts only where a template reads them
        auto = [] if laid_out else shots
        out: list[Message] = []
        if self.system is not None:
            out.append({"role": "system", "content": _render(self.system, ctx)})
        if self.messages is not None:
            out.extend(self._chat(ctx, auto))
        elif self.template is not None:
            text = _render(self.template, ctx)
            out.append({"role": "user", "content": self._with_text_shots(text, auto, self.template)})
        else:
            out.extend(self._from_input(sample, auto))
        return out

    def _with_text_shots(self, text: str, shots: list[Sample], template: Template | None) -> str:
        if not shots:
            return text
        assert self.fewshot is not None
        delimiter = self.fewshot.target_delimiter

        def block(shot: Sample) -> str:
            body = _render(template, example_context(shot), shot) if template is not None else _input_text(shot)
            return body + delimiter + self._answer(shot)

        parts = [self._shot(shot, "text", partial(block, shot)) for shot in shots]
        sep = self.fewshot.separator
        return sep.join(parts) + sep + text

    def _chat(self, ctx: dict[str, Any], shots: list[Sample]) -> list[Message]:
        assert self.messages is not None
        lead = 0
        while lead < len(self.messages) and self.messages[lead][0] in ("system", "developer"):
            lead += 1
        out = [{"role": role, "content": _render(t, ctx)} for role, t in self.messages[:lead]]
        turns = self.messages[lead:]

        def shot_turns(shot: Sample) -> list[Message]:
            ectx = example_context(shot)
            rendered = [{"role": role, "content": _render(t, ectx, shot)} for role, t in turns]
            return [*rendered, {"role": "assistant", "content": self._answer(shot)}]

        for shot in shots:
            out.extend(dict(m) for m in self._shot(shot, "chat", partial(shot_turns, shot)))
        out.extend({"role": role, "content": _render(t, ctx)} for role, t in self.messages[lead:])
        return out

    def _from_input(self, sample: Sample, shots: list[Sample]) -> list[Message]:
        value = sample.input
        if isinstance(value, str):
            return [{"role": "user", "content": self._with_text_shots(value, shots, None)}]
        if is_messages(value):
            out: list[Message] = []
            for shot in shots:
                if not is_messages(shot.input):
                    raise RenderError(None, "a few-shot example's input is not a message list", {}, shot)
                out.extend(dict(m) for m in shot.input)
                out.append({"role": "assistant", "content": self._answer(shot)})
            out.extend(dict(m) for m in value)
            return out
        kind = "missing" if value is None else f"a {type(value).__name__}"
        raise RenderError(None, f"there is no template and the input is {kind}, not text or a message list", {})


def _render(template: Template, ctx: dict[str, Any], example: Sample | None = None) -> str:
    try:
        return template.render(ctx)
    except Exception as err:
        raise RenderError(template, err, ctx, example) from err


def _input_text(shot: Sample) -> str:
    if not isinstance(shot.input, str):
        raise RenderError(None, "a few-shot example's input is not text", {}, shot)
    return shot.input


def _target(shot: Sample) -> str:
    try:
        return shot_target(shot)
    except ValueError as err:
        raise RenderError(None, err, {}, shot) from err
