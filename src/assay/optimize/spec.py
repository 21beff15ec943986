"""What an optimisation may change and how it is judged: the task's ``optimize:`` section (or the same keys given
on the command line or from Python), validated with errors that name the task file, line and key."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.tasks import Task

Strategy = Literal["reflective", "fewshot", "search"]
Objective = Literal["score", "cost", "latency_p95", "tokens"]
FewshotMethod = Literal["random", "bootstrap", "greedy"]
Sampler = Literal["tpe", "random", "grid"]
NESTED = ("fewshot", "splits")  # sections an override updates key by key rather than replaces
WHOLE_FIELDS = ("system",)
# keys that only one strategy reads: given on the command line (or to assay.optimize) for another, they are an error
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "components": ("reflective",),
    "constraints": ("reflective",),
    "minibatch": ("reflective",),
    "merge_every": ("reflective",),
    "fewshot": ("fewshot",),
    "space": ("search",),
    "sampler": ("search",),
    "trials": ("search",),
    "prune": ("search",),
}  # components that are a whole text field of the task (others are marked blocks)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


MAX_GRID_POINTS = 10_000  # a grid of more points is refused: each point is a trial costing a validation run


class ParamSpec(_Strict):
    """One dimension of a search space: a float or int range (optionally log-scale or stepped) or a choice,
    active only ``when`` other parameters have the given value(s)."""

    type: Literal["float", "int", "choice"]
    low: float | None = Field(default=None, allow_inf_nan=False)
    high: float | None = Field(default=None, allow_inf_nan=False)
    log: bool = False
    step: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    choices: list[Any] | None = None
    when: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> ParamSpec:
        if self.type == "choice":
            if not self.choices:
                raise ValueError("a choice needs a non-empty 'choices' list")
            if self.low is not None or self.high is not None:
                raise ValueError("a choice takes 'choices', not 'low'/'high'")
            return self
        if self.low is None or self.high is None:
            raise ValueError(f"a {self.type} range needs 'low' and 'high'")
        if self.type == "int":
            for key in ("low", "high", "step"):
                value = getattr(self, key)
                if value is not None and value != int(value):
                    raise ValueError(f"an int range takes whole numbers; {key} is {value:g}")
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale range needs low > 0")
        if self.log and self.step is not None:
            raise ValueError("give either 'log' or 'step', not both")
        return self

    def grid_size(self) -> int | None:
        """How many values a grid takes of this parameter (None: a float range without a step has no grid)."""
        if self.type == "choice":
            return len(self.choices or ())
        assert self.low is not None and self.high is not None
        if self.step is not None:
            return math.floor((self.high - self.low) / self.step + 1e-9) + 1
        if self.type == "int":
            return int(self.high) - int(self.low) + 1
        return None


class SplitSpec(_Strict):
    """Train / validation / test: seeded fractions of the dataset, or a row ``field`` naming each row's split."""

    train: float = Field(default=0.4, gt=0, lt=1)
    val: float = Field(default=0.3, gt=0, lt=1)
    test: float = Field(default=0.3, gt=0, lt=1)
    seed: int = 0
    field: str | None = None  # a row field whose value is "train", "val" or "test"

    @model_validator(mode="after")
    def _check(self) -> SplitSpec:
        total = self.train + self.val + self.test
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"train + val + test must add up to 1, got {total:g}")
        return self


class FewshotSpace(_Strict):
    """The few-shot strategy's space: up to ``max_demos`` demos from the training split, ``candidates`` sets tried."""

    method: FewshotMethod = "bootstrap"
    max_demos: int = Field(default=4, ge=1, le=64)
    candidates: int = Field(default=6, ge=1)


class OptimizeSpec(_Strict):
    """The ``optimize:`` section of a task."""

    strategy: Strategy = "reflective"
    metric: str | None = None  # default: the task's first metric
    filter: str | None = None  # default: the metric's first filter
    components: list[str] = Field(default_factory=lambda: ["system"])
    constraints: list[str] = Field(default_factory=list)  # natural-language rules the optimiser model must keep
    splits: SplitSpec = Field(default_factory=SplitSpec)
    minibatch: int = Field(default=4, ge=1)
    merge_every: int = Field(default=3, ge=0)  # reflective: try a merge every N proposals (0: never)
    fewshot: FewshotSpace = Field(default_factory=FewshotSpace)
    space: dict[str, ParamSpec] = Field(default_factory=dict)
    objectives: list[Objective] = Field(default_factory=lambda: ["score"])  # type: ignore[arg-type]
    sampler: Sampler = "tpe"
    trials: int | None = Field(default=None, ge=1)  # search: stop after this many trials (else at the budget)
    prune: bool = True  # search: stop clearly bad trials after partial validation
    seed: int = 0
    alpha: float = Field(default=0.05, gt=0, lt=1)

    @field_validator("components")
    @classmethod
    def _components(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a component is listed twice")
        return value

    @field_validator("objectives")
    @classmethod
    def _objectives(cls, value: list[str]) -> list[str]:
        if not value or value[0] != "score":
            raise ValueError("the first objective is 'score' (others: cost, latency_p95, tokens)")
        if len(set(value)) != len(value):
            raise ValueError("an objective is listed twice")
        return value

    @field_validator("space")
    @classmethod
    def _space(cls, value: dict[str, ParamSpec]) -> dict[str, ParamSpec]:
        for name, spec in value.items():
            for other in spec.when:
                if other not in value:
                    raise ValueError(f"{name}.when names {other!r}, which is not in the space")
                if other == name:
                    raise ValueError(f"{name}.when names {name} itself")
        return value


def parse_spec(task: Task, overrides: dict[str, Any] | None = None) -> OptimizeSpec:
    """The task's ``optimize:`` section merged with ``overrides`` (None values ignored); errors name file and line."""
    raw = dict(getattr(task.config, "optimize", None) or {})
    given = {k: v for k, v in (overrides or {}).items() if v is not None and v != [] and v != ()}
    merged = {**raw, **given}
    for key in NESTED:  # `--demos 2` changes max_demos only, keeping the task's fewshot method and candidates
        if isinstance(raw.get(key), dict) and isinstance(given.get(key), dict):
            merged[key] = {**raw[key], **given[key]}
    try:
        spec = OptimizeSpec.model_validate(merged)
    except ValidationError as err:
        e = err.errors()[0]
        loc = ("optimize", *tuple(e["loc"]))
        message = str(e["msg"]).removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            from assay.tasks.taskfile import did_you_mean

            known = _known(tuple(e["loc"])[:-1])
            message = f"unknown key{did_you_mean(str(loc[-1]), known)}; known keys: {', '.join(known)}"
        if loc[1] in given:
            raise ConfigError(f"{'.'.join(str(p) for p in loc[1:])}: {message}") from None
        raise task.config_error(loc, message) from None
    _check_against_task(task, spec, given)
    return spec


def _known(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = OptimizeSpec
    nested: dict[str, type[BaseModel]] = {"splits": SplitSpec, "fewshot": FewshotSpace}
    if loc and isinstance(loc[0], str) and loc[0] in nested:
        model = nested[loc[0]]
    elif loc and loc[0] == "space":
        model = ParamSpec
    return sorted(model.model_fields)


def _check_against_task(task: Task, spec: OptimizeSpec, given: dict[str, Any]) -> None:
    def error(key: tuple[Any, ...], message: str) -> ConfigError:
        if key[0] in given:
            return ConfigError(f"{'.'.join(str(k) for k in key)}: {message}")
        return task.config_error(("optimize", *key), message)

    for key in given:
        applies = APPLIES_TO.get(key)
        if applies is not None and spec.strategy not in applies:
            raise ConfigError(
                f"{key}: applies to the {' and '.join(applies)} strategy, not {spec.strategy}; it would be ignored"
            )
    metrics = [m.name for m in task.metrics]
    if not metrics:
        raise task.config_error(("evaluators",), "an optimisation needs at least one evaluator to score candidates")
    if spec.metric is not None and spec.metric not in metrics:
        raise error(("metric",), f"the task has no metric {spec.metric!r}; metrics: {', '.join(metrics)}")
    metric = task.metric(spec.metric or metrics[0])
    filters = metric.filters or task.filters
    if spec.filter is not None and spec.filter not in filters:
        raise error(("filter",), f"metric {metric.name!r} is not computed under filter {spec.filter!r}")
    if spec.strategy == "reflective":
        from assay.optimize.candidate import find_blocks

        blocks = find_blocks(task.config)
        for i, name in enumerate(spec.components):
            if name not in WHOLE_FIELDS and name not in blocks:
                known = ", ".join([*WHOLE_FIELDS, *blocks])
                raise error(
                    ("components", i),
                    f"{name!r} is neither a text field ({', '.join(WHOLE_FIELDS)}) nor a block marked "
                    f"'{{# optimize: {name} #}} … {{# end optimize #}}' in the task's template; known: {known}",
                )
        if "system" in spec.components and task.config.messages is not None:
            raise error(("components",), "'system' is a component but the task uses 'messages'; mark a block instead")
    if spec.strategy == "search" and not spec.space:
        raise error(("space",), "the search strategy needs a 'space' of parameters to search")
    if spec.strategy != "search" and len(spec.objectives) > 1:
        raise error(("objectives",), "several objectives apply to the search strategy only")
    settable = known_params(task)
    for name, param in spec.space.items():
        if name == "model" and param.type != "choice":
            raise error(("space", name), "'model' is a choice among model specs")
        if name not in settable:
            from assay.tasks.taskfile import did_you_mean

            names = sorted(settable)
            raise error(
                ("space", name),
                f"not a generation parameter{did_you_mean(name, names)}; known: {', '.join(names)}. "
                "A parameter of your own server is searched once the task's generation: section sets it",
            )
        for i, choice in enumerate(param.choices or ()):
            secret = _credential(choice)
            if secret is not None:
                raise error(
                    ("space", name, "choices", i),
                    f"holds a credential ({secret}), which would be written to the optimisation folder (trials, "
                    "lineage, journal); name an environment variable instead (api_key_env: MY_KEY)",
                )
        problem = _bad_value(name, param)
        if problem is not None:
            raise error(("space", name, *problem[0]), problem[1])
    if spec.strategy == "search" and spec.sampler == "grid":
        problem = _bad_grid(spec.space)
        if problem is not None:
            raise error(("space", *problem[0]), problem[1])


def known_params(task: Task) -> set[str]:
    """What a search space may set: the model, the standard generation parameters, and any the task sets."""
    from assay.models.openai_compat import STANDARD_PARAMS
    from assay.tasks.config import GenerationConfig

    standard = set(STANDARD_PARAMS) - {"stream"}  # only false is allowed: nothing to search
    return {"model", *standard, *GenerationConfig.model_fields, *task.config.generation.params()}


def _bad_value(name: str, param: ParamSpec) -> tuple[tuple[Any, ...], str] | None:
    """Where a parameter's range ends or choices are not values the task's generation section accepts (a
    temperature below 0), and why."""
    from assay.tasks.config import GenerationConfig

    if name not in GenerationConfig.model_fields:
        return None
    values: list[tuple[str, int | None, Any]] = [("choices", i, c) for i, c in enumerate(param.choices or ())]
    values += [(key, None, getattr(param, key)) for key in ("low", "high") if getattr(param, key) is not None]
    for key, index, value in values:
        if param.type == "int" and isinstance(value, float):
            value = int(value)
        try:
            GenerationConfig.model_validate({name: value})
        except ValidationError as err:
            where = (key,) if index is None else (key, index)
            return where, f"{value!r} is not a valid {name}: {err.errors()[0]['msg']}"
    return None


def _bad_grid(space: dict[str, ParamSpec]) -> tuple[tuple[Any, ...], str] | None:
    """Why a grid cannot be enumerated: a float range without a step, or more than MAX_GRID_POINTS points."""
    total = 1
    sizes = []
    for name, param in space.items():
        size = param.grid_size()
        if size is None:
            return (name,), "the grid sampler needs 'choices' or a 'step' for floats"
        sizes.append(f"{name}: {size}")
        total *= size
    if total > MAX_GRID_POINTS:
        return (), (
            f"the grid has {total:,} points ({', '.join(sizes)}), more than {MAX_GRID_POINTS:,}; give a larger "
            "'step' or fewer choices, or use the tpe or random sampler"
        )
    return None


def _credential(value: Any) -> str | None:
    """Where ``value`` (a model spec, nested) holds a credential: a key such as ``api_key``, or a URL with a
    password or a secret query value (``assay.secrets`` decides what looks like one)."""
    from assay.secrets import has_redactions, is_secret_config_key, looks_secret

    if isinstance(value, dict):
        for key, inner in value.items():
            if key != "api_key_env" and (looks_secret(key) or is_secret_config_key(key)):
                return repr(str(key))
            found = _credential(inner)
            if found is not None:
                return found
    if isinstance(value, list):
        for inner in value:
            found = _credential(inner)
            if found is not None:
                return found
    if isinstance(value, str) and "://" in value and has_redactions(value):
        return "in a URL"
    return None
