"""The task file schema (pydantic) and its shorthands; validation errors name the file, line and key path."""

from __future__ import annotations

import datetime as _dt
import re
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.data.spec import DatasetSpec
from assay.errors import ConfigError
from assay.models.loglikelihood import OutputType
from assay.tasks.taskfile import ConfigContext, KeyPath, did_you_mean

Role = Literal["system", "developer", "user", "assistant", "tool"]
RepeatReduction = Literal["mean", "max", "min", "majority"]  # as assay.results.aggregate.REPEAT_REDUCTIONS

# key as it may be written -> canonical key
TOP_LEVEL_ALIASES = {"metrics": "evaluators", "group": "groups"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldsConfig(_Strict):
    """Which row fields are the id, input, target and metadata (dotted paths into nested rows allowed)."""

    id: str | None = None
    input: str | None = None
    target: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)  # name -> field path


class MessageConfig(_Strict):
    """One chat message of a ``messages`` template; ``content`` is a Jinja2 template."""

    role: Role
    content: str


class FewshotConfig(_Strict):
    """Few-shot examples: ``n`` drawn (seeded, per sample) from ``source`` (None = the task's own dataset,
    never the sample itself), or the ``fixed`` rows in order."""

    n: int | None = Field(default=None, ge=0)
    seed: int = 1234
    source: DatasetSpec | None = None
    fixed: list[dict[str, Any]] | None = None
    separator: str = "\n\n"
    target_delimiter: str = " "

    @model_validator(mode="after")
    def _check(self) -> FewshotConfig:
        if self.fixed is not None:
            if self.source is not None:
                raise ValueError("give either 'fixed' examples or a 'source' to sample from, not both")
            if not self.fixed:
                raise ValueError("'fixed' is empty")
            if self.n is not None and self.n > len(self.fixed):
                raise ValueError(f"n is {self.n} but only {len(self.fixed)} fixed examples are given")
        elif self.n is None:
            raise ValueError("set 'n' (how many examples to sample) or give 'fixed' examples")
        return self

    @property
    def shots(self) -> int:
        """How many examples each prompt gets."""
        if self.fixed is not None:
            return len(self.fixed) if self.n is None else self.n
        return self.n or 0


class GenerationConfig(BaseModel):
    """Generation parameters sent with every request; the known ones are checked, others pass through."""

    model_config = ConfigDict(extra="allow")

    temperature: float | None = Field(default=None, ge=0)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    stop: list[str] | None = None

    def params(self) -> dict[str, Any]:
        """The parameters that were set, as a plain dict."""
        return self.model_dump(mode="json", exclude_none=True)


class FilterConfig(_Strict):
    """A named filter pipeline: its steps run in order on each sample's responses."""

    name: str = Field(pattern=r"^[\w][\w.\-]*$")
    steps: list[dict[str, Any]] = Field(default_factory=list)


class ResourcesConfig(_Strict):
    """What each Ray worker reserves to run this task's evaluators (``--executor ray``), e.g. a GPU for one that
    loads a model; the command line's ``--ray-num-cpus`` / ``--ray-num-gpus`` take precedence."""

    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)


class ReasoningConfig(_Strict):
    """How a generation task treats a reasoning model's reasoning written into its reply (``<think>…</think>``):
    taken out before filters and evaluators (``strip``, the default), by the ``delimiters`` given as
    ``[opening, closing]`` pairs (None: :data:`assay.tasks.reasoning.DEFAULT_DELIMITERS`)."""

    strip: bool = True
    delimiters: list[tuple[str, str]] | None = None

    @field_validator("delimiters", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, list) or not value:
            raise ValueError("give a list of [opening, closing] pairs, e.g. [['<think>', '</think>']], or strip: false")
        for pair in value:
            if not (isinstance(pair, list | tuple) and len(pair) == 2 and all(isinstance(t, str) and t for t in pair)):
                raise ValueError(f"each pair is [opening, closing], two texts that are not empty; got {pair!r}")
        return value

    def is_default(self) -> bool:
        """True when this is what a task without the key does (its hash then stays as it was)."""
        return self.strip and self.delimiters is None


class VariantConfig(_Strict):
    """One prompt variant of a matrix (``variants:``): the template, system prompt or chat messages it uses instead
    of the task's own (a plain string is a template)."""

    template: str | None = None
    system: str | None = None
    messages: list[MessageConfig] | None = None


class TemplateDialectConfig(_Strict):
    """``template_dialect``: how the task's templates render. ``promptfoo`` (a promptfoo config's tasks): as
    promptfoo's nunjucks does (undefined names as empty text, values as JavaScript writes them, the ``load`` and
    ``dump`` filters, the ``env`` global: the process environment under ``env``); see assay.tasks.template."""

    name: Literal["promptfoo"]
    env: dict[str, str] = Field(default_factory=dict)  # the ``env`` global's overrides (a promptfoo config's env)


class HeadlineTests(_Strict):
    """``headline: {tests: METRIC}``: each sample is a test judged by METRIC's ``passed`` (see ``headline``)."""

    tests: str = Field(min_length=1)


class TaskConfig(_Strict):
    """A task as written in YAML (after shorthands are expanded)."""

    name: str = Field(pattern=r"^[\w][\w.\-]*$", description="letters, digits, '_', '-', '.'")
    alias: str | None = None  # display name in result tables
    version: str = "1.0"
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    dataset: DatasetSpec
    fields: FieldsConfig = Field(default_factory=FieldsConfig)
    template: str | None = None
    system: str | None = None
    messages: list[MessageConfig] | None = None
    fewshot: FewshotConfig | None = None
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    # OpenAI schemas (declared only), runnable tools and standard tools by name (assay.tools.spec)
    tools: list[dict[str, Any] | str] | None = None
    environment: dict[str, Any] | None = None  # one per sample (assay.environments.spec); agents act in it
    agent: dict[str, Any] | None = None  # the tool loop's limits (assay.agents.config.AgentConfig)
    user: dict[str, Any] | None = None  # a simulated user (assay.agents.user.UserConfig)
    response_format: dict[str, Any] | None = None
    filters: list[FilterConfig] = Field(default_factory=list)
    repeats: int = Field(default=1, ge=1)
    repeat_reduction: RepeatReduction | None = None  # how a sample's repeats combine in results (default: mean)
    # lm-eval's output types: generate text (the default), or score given text by its log-likelihood
    output_type: OutputType = "generate_until"
    choices: list[Any] | dict[str, Any] | str | None = None  # multiple_choice: a list, a field or a Jinja template
    target_delimiter: str = " "  # multiple_choice: between the context and each choice, as lm-eval's
    evaluators: list[Any] = Field(default_factory=list)  # checked by assay.tasks.metrics
    model: dict[str, Any] | None = None
    # named models: `assay run` without --model runs each as a cell of a matrix (promptfoo's providers)
    models: dict[str, dict[str, Any]] | None = None
    optimize: dict[str, Any] | None = None  # what `assay optimize` may change; checked by assay.optimize.spec
    cache: bool | None = None  # answer repeated requests from the response cache (opt-in; not part of the hash)
    resources: ResourcesConfig | None = None  # how it runs, not what it evaluates: not part of the task hash
    # named prompts: `assay run` runs each (with every --model) as a cell of a matrix (assay.tasks.variants)
    variants: dict[str, VariantConfig] | None = None
    # a reasoning model's <think>…</think> taken out of generated replies before scoring (assay.tasks.reasoning)
    reasoning: ReasoningConfig = Field(default_factory=ReasoningConfig)
    # what reports lead with: every metric's mean (``metrics``, the default), or the samples as tests, passed / failed
    # / errored by one metric's ``passed`` with the pass rate's Wilson interval (``tests``, or ``{tests: METRIC}``
    # for a task with several metrics; promptfoo's view). How results are read, not what is asked: not hashed
    headline: Literal["metrics", "tests"] | HeadlineTests | None = None
    # how the templates render: assay's strict Jinja (no key), or promptfoo's nunjucks (``promptfoo``, or
    # ``{name: promptfoo, env: {...}}``); hashed only when given, so other tasks' hashes stay as they were
    template_dialect: TemplateDialectConfig | None = None

    @field_validator("template_dialect", mode="before")
    @classmethod
    def _dialect_shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @field_validator("headline", mode="before")
    @classmethod
    def _headline(cls, value: Any) -> Any:
        if value is None or value in ("metrics", "tests") or isinstance(value, dict):
            return value
        raise ValueError(f"headline is 'metrics' (the default), 'tests' or {{tests: METRIC}}; got {value!r}")

    @field_validator("variants", mode="before")
    @classmethod
    def _variant_shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: {"template": v} if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("models")
    @classmethod
    def _named_models(cls, value: dict[str, dict[str, Any]] | None) -> dict[str, dict[str, Any]] | None:
        if value is not None and not value:
            raise ValueError("'models' is empty; name each model: {NAME: {provider: ..., model: ...}}")
        for name in value or {}:
            if not re.fullmatch(r"[\w][\w.\-]*", name):
                raise ValueError(f"a model name uses letters, digits, '_', '-', '.'; got {name!r}")
        return value

    @field_validator("messages")
    @classmethod
    def _non_empty(cls, value: list[MessageConfig] | None) -> list[MessageConfig] | None:
        if value is not None and not value:
            raise ValueError("'messages' is empty")
        return value

    @model_validator(mode="after")
    def _prompt(self) -> TaskConfig:
        if self.template is not None and self.messages is not None:
            raise ValueError("give either 'template' (one user message) or 'messages' (a chat), not both")
        if self.system is not None and self.messages and any(m.role == "system" for m in self.messages):
            raise ValueError("'system' is given and 'messages' has a system message too; keep one")
        if self.output_type == "multiple_choice" and self.choices is None:
            raise ValueError("output_type multiple_choice needs 'choices': a list, a field or a Jinja template")
        if self.choices is not None and self.output_type != "multiple_choice":
            raise ValueError(f"'choices' is for output_type multiple_choice, and this task's is {self.output_type}")
        return self


def expand_shorthands(raw: dict[str, Any], ctx: ConfigContext) -> dict[str, Any]:
    """Expand the short forms a task file may use into the canonical schema, recording renamed keys."""
    data = dict(raw)
    for alias, canonical in TOP_LEVEL_ALIASES.items():
        if alias in data:
            if canonical in data:
                raise ctx.error((alias,), f"give either {alias!r} or {canonical!r}, not both")
            data[canonical] = data.pop(alias)
            ctx.renames[canonical] = alias
    for key in ("tags", "groups"):
        if isinstance(data.get(key), str):
            data[key] = [data[key]]
    version = data.get("version")
    if isinstance(version, int | float | _dt.date) and not isinstance(version, bool):
        data["version"] = str(version)
    dataset = data.get("dataset")
    if isinstance(dataset, str | Path):
        data["dataset"] = {"path": str(dataset)}
    elif isinstance(dataset, list):
        data["dataset"] = {"rows": dataset}
    fields = data.get("fields")
    if isinstance(fields, dict) and isinstance(fields.get("metadata"), list):
        meta = fields["metadata"]
        if all(isinstance(m, str) for m in meta):
            data["fields"] = {**fields, "metadata": {m: m for m in meta}}
    fewshot = data.get("fewshot")
    if isinstance(fewshot, int) and not isinstance(fewshot, bool):
        data["fewshot"] = {"n": fewshot}
    elif isinstance(fewshot, dict) and "source" in fewshot:
        source = fewshot["source"]
        if source == "same":
            data["fewshot"] = {k: v for k, v in fewshot.items() if k != "source"}
        elif isinstance(source, str | Path):
            data["fewshot"] = {**fewshot, "source": {"path": str(source)}}
    if isinstance(data.get("reasoning"), bool):  # reasoning: false keeps the reasoning in the scored reply
        data["reasoning"] = {"strip": data["reasoning"]}
    generation = data.get("generation")
    if isinstance(generation, dict) and isinstance(generation.get("stop"), str):
        data["generation"] = {**generation, "stop": [generation["stop"]]}
    return data


def validate_config(data: dict[str, Any], ctx: ConfigContext) -> TaskConfig:
    """Validate the expanded config; every problem is reported as ``file:line: key.path: message``."""
    try:
        return TaskConfig.model_validate(data)
    except ValidationError as err:
        errors = sorted(err.errors(), key=lambda e: ctx.line(tuple(e["loc"])) or 0)
        problems = [_describe(e, ctx) for e in errors]
        if len(problems) == 1:
            raise ConfigError(problems[0]) from None
        raise ConfigError(f"{ctx.source}: {len(problems)} problems:\n  " + "\n  ".join(problems)) from None


def _describe(error: Any, ctx: ConfigContext) -> str:
    loc: KeyPath = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        known = known_keys(loc[:-1])
        hint = did_you_mean(key, known)
        return f"{ctx.where(loc)}: unknown key{hint}; known keys: {', '.join(known)}"
    if error["type"] == "missing":
        return f"{ctx.where(loc[:-1])}: missing required key {loc[-1]!r}"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] in ("string_pattern_mismatch",) and loc and loc[-1] == "name":
        message = "use letters, digits, '_', '-' and '.' only (it names result files)"
    got = error.get("input")
    shown = "" if isinstance(got, dict | list) or error["type"].startswith("value_error") else f" (got {got!r})"
    return f"{ctx.where(loc)}: {message}{shown}"


def known_keys(loc: KeyPath) -> list[str]:
    """The keys allowed in the mapping at ``loc`` of a task config (for unknown-key messages)."""
    model = _model_at(loc)
    if model is None:
        return []
    keys = list(model.model_fields)
    if model is TaskConfig:
        keys += list(TOP_LEVEL_ALIASES)
    return sorted(keys)


def _unwrap(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _model_at(loc: KeyPath) -> type[BaseModel] | None:
    tp: Any = TaskConfig
    for part in loc:
        tp = _unwrap(tp)
        origin = typing.get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str) and part in tp.model_fields:
            tp = tp.model_fields[part].annotation
        elif origin is list and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif origin is dict and isinstance(part, str):
            tp = typing.get_args(tp)[1]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def check_tools(cfg: TaskConfig, ctx: ConfigContext) -> None:
    """Check tools against the OpenAI tool schema and response_format's shape; JSON Schemas must be valid."""
    if not cfg.tools and cfg.response_format is None:
        return  # most tasks: no need to import jsonschema (0.1-0.2 s of start-up)
    import jsonschema

    from assay.tools.spec import is_runnable

    for i, tool in enumerate(cfg.tools or ()):
        if isinstance(tool, str) or is_runnable(tool):
            continue  # a runnable tool: checked by assay.agents.taskspec
        fn = tool.get("function")
        if tool.get("type") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ctx.error(
                ("tools", i),
                "a tool is {type: function, function: {name: ..., description: ..., parameters: {...}}} "
                "(the OpenAI tool schema)",
            )
        params = fn.get("parameters")
        if params is not None:
            try:
                jsonschema.validators.validator_for(params).check_schema(params)
            except jsonschema.SchemaError as err:
                raise ctx.error(
                    ("tools", i, "function", "parameters"), f"not a valid JSON Schema: {err.message}"
                ) from None
    rf = cfg.response_format
    if rf is not None:
        kind = rf.get("type")
        if kind not in ("text", "json_object", "json_schema"):
            raise ctx.error(
                ("response_format", "type"), f"must be 'text', 'json_object' or 'json_schema', got {kind!r}"
            )
        if kind == "json_schema":
            spec = rf.get("json_schema")
            schema = spec.get("schema") if isinstance(spec, dict) else None
            if not isinstance(schema, dict):
                raise ctx.error(("response_format",), "type json_schema needs json_schema: {name: ..., schema: {...}}")
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as err:
                raise ctx.error(
                    ("response_format", "json_schema", "schema"), f"not a valid JSON Schema: {err.message}"
                ) from None
