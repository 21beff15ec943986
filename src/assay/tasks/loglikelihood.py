"""Tasks that score text instead of generating it: lm-eval's ``output_type`` (``multiple_choice``,
``loglikelihood``, ``loglikelihood_rolling``) turned into each sample's :class:`~assay.models.base.LoglikelihoodQuery`.

* ``multiple_choice``: the prompt is the context; each choice (from ``choices:``: a list, a row field, or a Jinja
  template rendering a list, as lm-eval's ``doc_to_choice``) follows ``target_delimiter``; the target is the gold
  choice's index or text.
* ``loglikelihood``: the prompt is the context, the target the continuation (lm-eval: no delimiter is added).
* ``loglikelihood_rolling``: the target is the whole text scored (lm-eval's ``doc_to_target``); no prompt.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import DataError
from assay.models.base import LoglikelihoodQuery
from assay.tasks.sample import Sample, get_path
from assay.tasks.template import Template, compile_template, describe_render_error

if TYPE_CHECKING:
    from assay.tasks.config import TaskConfig
    from assay.tasks.taskfile import ConfigContext

# lm-eval's default metrics of each output type
DEFAULT_METRICS: dict[str, list[str]] = {
    "multiple_choice": ["acc", "acc_norm"],
    "loglikelihood": ["perplexity", "acc"],
    "loglikelihood_rolling": ["word_perplexity", "byte_perplexity", "bits_per_byte"],
}


def check_config(cfg: TaskConfig, ctx: ConfigContext) -> None:
    """Refuse what has no meaning when text is scored rather than generated (ConfigError naming the key)."""
    kind = cfg.output_type
    if kind == "generate_until":
        return
    refused = {
        "messages": "a chat (the context is one text: use 'template')",
        "system": "a system message (put it in the template)",
        "tools": "tools",
        "response_format": "a response_format",
    }
    for key, what in refused.items():
        if getattr(cfg, key) is not None:
            raise ctx.error((key,), f"output_type {kind} scores text and takes no {what}")
    if cfg.generation.params():
        raise ctx.error(("generation",), f"output_type {kind} generates nothing, so generation settings have no effect")
    if cfg.repeats != 1:
        raise ctx.error(("repeats",), f"output_type {kind} gives the same figures every time; repeats must be 1")
    if not cfg.reasoning.is_default():
        raise ctx.error(("reasoning",), f"output_type {kind} generates no reply to take reasoning out of")
    if kind == "loglikelihood_rolling" and (cfg.template is not None or cfg.fewshot is not None):
        key = "template" if cfg.template is not None else "fewshot"
        raise ctx.error(
            (key,),
            "output_type loglikelihood_rolling scores the target text alone (lm-eval's doc_to_target), "
            "with no prompt or few-shot examples; map the text with fields.target",
        )


@dataclass(frozen=True)
class ChoiceSource:
    """Where a sample's choices come from: ``items`` (a fixed list), ``field`` (a dotted path into the row) or
    ``template`` (Jinja rendering a Python list literal, as lm-eval's doc_to_choice)."""

    items: tuple[str, ...] | None = None
    field: str | None = None
    template: Template | None = None
    where: str = "choices"

    @classmethod
    def build(cls, raw: Any, ctx: ConfigContext) -> ChoiceSource:
        """From the task file's ``choices``: a list, a mapping (its values, as lm-eval), a field or a template."""
        where = ctx.where(("choices",))
        if isinstance(raw, dict):
            raw = list(raw.values())
        if isinstance(raw, list):
            if not raw:
                raise ctx.error(("choices",), "the list of choices is empty")
            return cls(items=tuple(_as_choice(c) for c in raw), where=where)
        if not isinstance(raw, str) or not raw:
            raise ctx.error(("choices",), f"a list, a field name or a Jinja template, got {raw!r}")
        if "{{" in raw or "{%" in raw:
            return cls(template=compile_template(raw, where), where=where)
        return cls(field=raw, where=where)

    def choices(self, sample: Sample, context: dict[str, Any] | None = None) -> list[str]:
        """The sample's choices as texts; DataError naming the row when they cannot be read."""
        if self.items is not None:
            return list(self.items)
        if self.field is not None:
            try:
                value = get_path(sample.doc, self.field)
            except KeyError:
                raise DataError(f"the row has no field {self.field!r} ({self.where})") from None
        else:
            assert self.template is not None
            from assay.tasks.prompt import sample_context

            variables = context if context is not None else sample_context(sample, [])
            try:
                text = self.template.render(variables)
            except Exception as err:
                raise DataError(f"{self.where}: {describe_render_error(err, self.template, variables)}") from None
            try:
                value = ast.literal_eval(text)
            except (SyntaxError, ValueError):
                raise DataError(f"{self.where} rendered {text[:80]!r}, which is not a list literal") from None
        if isinstance(value, dict):
            value = list(value.values())
        if not isinstance(value, list | tuple) or not value:
            raise DataError(f"{self.where}: the choices are {value!r:.80}, not a non-empty list")
        return [_as_choice(c) for c in value]


def _as_choice(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise DataError(f"a choice is {value!r:.60}; choices are texts")
    return str(value)


def gold_text(sample: Sample, choices: list[str]) -> str | None:
    """The gold choice's text (a few-shot example shows it after its question, as lm-eval), or None."""
    target = sample.target
    if isinstance(target, list | tuple):
        target = target[0] if target else None
    if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(choices):
        return choices[target]
    return target if isinstance(target, str) else None


@dataclass(frozen=True)
class QueryBuilder:
    """Builds each sample's query for one output type."""

    kind: str
    source: ChoiceSource | None
    delimiter: str
    unconditional: bool  # acc_mutual_info is among the metrics: also score each choice after an empty context

    def query(self, sample: Sample, context: str) -> LoglikelihoodQuery:
        """The sample's query, ``context`` being its rendered prompt (unused by a rolling task)."""
        if self.kind == "multiple_choice":
            assert self.source is not None
            choices = self.source.choices(sample)
            continuations = tuple(f"{self.delimiter}{c}" for c in choices)
            return LoglikelihoodQuery(
                kind="multiple_choice",
                context=context,
                continuations=continuations,
                choices=tuple(choices),
                unconditional=continuations if self.unconditional else None,
            )
        target = sample.target
        if isinstance(target, list | tuple) and len(target) == 1:
            target = target[0]
        if not isinstance(target, str) or not target:
            what = "the text to score" if self.kind == "loglikelihood_rolling" else "the continuation to score"
            raise DataError(
                f"sample {sample.id!r}: the target is {what} and must be a non-empty text, got {target!r:.60}"
            )
        if self.kind == "loglikelihood_rolling":
            return LoglikelihoodQuery(kind="loglikelihood_rolling", continuations=(target,))
        return LoglikelihoodQuery(kind="loglikelihood", context=context, continuations=(target,))
