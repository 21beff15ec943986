"""A task's metrics: which evaluator, under which result key, judged against what, on which filters."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import ConfigError, DataError
from assay.evaluators.base import Evaluator
from assay.evaluators.registry import from_config
from assay.metricnames import metric_name_problem
from assay.tasks.sample import Sample, get_path
from assay.tasks.taskfile import ConfigContext, KeyPath, did_you_mean

# keys of an evaluator entry that configure the metric rather than the evaluator
METRIC_KEYS = ("name", "metric", "higher_is_better", "expected", "filters", "aggregation", "scope")
SCOPES = ("turn", "conversation")  # assay.runner.turns: judge each turn of a conversation, or the whole
AGGREGATIONS = ("mean", "corpus")


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a task. ``expected`` is ``"target"`` (default), ``"none"``, ``"doc"``, ``"doc.<field>"`` or
    ``"metadata.<field>"``; ``filters`` restricts it to some filter pipelines (None: all). ``aggregation`` is
    ``"mean"`` or ``"corpus"`` (corpus BLEU/chrF/TER from summed statistics); None takes the evaluator's default."""

    name: str
    evaluator: Evaluator
    higher_is_better: bool = True
    expected: str = "target"
    filters: tuple[str, ...] | None = None
    aggregation: str | None = None
    scope: str | None = None  # "turn": judged turn by turn (assay.runner.turns); None/"conversation": the whole

    def __post_init__(self) -> None:
        check_expected(self.expected)
        if self.aggregation is None:
            object.__setattr__(self, "aggregation", default_aggregation(self.evaluator))
        problem = aggregation_problem(self.evaluator, str(self.aggregation))
        if problem:
            raise ValueError(problem)
        if self.scope is not None and self.scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")
        if self.scope == "conversation":  # the default: the whole conversation (one spelling, one task hash)
            object.__setattr__(self, "scope", None)

    def to_config(self) -> dict[str, Any]:
        """The metric as a task-file entry: the evaluator's config plus the metric keys that differ from defaults."""
        config = dict(self.evaluator.to_config())
        if self.name != self.evaluator.name:
            config["metric"] = self.name
        if self.higher_is_better != default_higher_is_better(self.evaluator):
            config["higher_is_better"] = self.higher_is_better
        if self.expected != default_expected(self.evaluator):
            config["expected"] = self.expected
        if self.filters is not None:
            config["filters"] = list(self.filters)
        if self.aggregation != default_aggregation(self.evaluator):
            config["aggregation"] = self.aggregation
        if self.scope is not None:
            config["scope"] = self.scope
        return config

    def applies_to(self, pipeline: str) -> bool:
        """True when this metric judges the values of filter pipeline ``pipeline``."""
        return self.filters is None or pipeline in self.filters


def default_higher_is_better(evaluator: Evaluator) -> bool:
    """The evaluator's own ``higher_is_better`` attribute, True when it has none."""
    return bool(getattr(evaluator, "higher_is_better", True))


def default_expected(evaluator: Evaluator) -> str:
    """What the evaluator compares with unless told: its ``default_expected`` ("none" for TruthfulQA's mc1, whose
    gold is the first choice), else the target."""
    return str(getattr(evaluator, "default_expected", "target"))


def default_aggregation(evaluator: Evaluator) -> str:
    """The evaluator's own ``default_aggregation`` ("corpus" for BLEU, chrF, TER), "mean" when it has none."""
    return str(getattr(evaluator, "default_aggregation", "mean"))


def aggregation_problem(evaluator: Evaluator, aggregation: str) -> str | None:
    """Why ``aggregation`` does not fit ``evaluator`` (unknown, or corpus without per-sample statistics), or None."""
    if aggregation not in AGGREGATIONS:
        return f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {aggregation!r}"
    if aggregation == "corpus" and getattr(evaluator, "default_aggregation", None) != "corpus":
        return f"evaluator {evaluator.name!r} has no corpus aggregation (it has: mean); corpus is for bleu, chrf, ter"
    return None


def check_expected(expected: str) -> None:
    """Raise ValueError unless ``expected`` is target, none, doc (the whole row), doc.<field> or metadata.<field>."""
    if expected in ("target", "none", "doc"):
        return
    for prefix in ("doc.", "metadata."):
        if expected.startswith(prefix) and len(expected) > len(prefix):
            return
    raise ValueError(f"expected must be 'target', 'none', 'doc', 'doc.<field>' or 'metadata.<field>', got {expected!r}")


def expected_value(sample: Sample, expected: str, where: str = "") -> Any:
    """The value a metric compares against for ``sample``; a missing field raises DataError."""
    if expected == "target":
        return sample.target
    if expected == "none":
        return None
    if expected == "doc":  # the whole row: tests spread over several fields (HumanEval's test + entry_point)
        return sample.doc
    source, _, path = expected.partition(".")
    container = sample.doc if source == "doc" else sample.metadata
    try:
        return get_path(container, path)
    except KeyError:
        at = where or f"sample {sample.id!r}"
        raise DataError(f"{at}: expected: {expected!r}: the {source} has no field {path!r}") from None


def build_metrics(entries: list[Any], ctx: ConfigContext, pipelines: list[str]) -> list[MetricSpec]:
    """MetricSpecs from task-file entries (a name, a mapping, an Evaluator or a MetricSpec); names must be unique."""
    metrics = [_build_one(entry, ("evaluators", i), ctx, pipelines) for i, entry in enumerate(entries)]
    first: dict[str, int] = {}
    for i, metric in enumerate(metrics):
        j = first.setdefault(metric.name, i)
        if j != i:
            raise ctx.error(
                ("evaluators", i),
                f"metric name {metric.name!r} is used by evaluators[{j}] and evaluators[{i}]; "
                f"give one an alias with `metric: <name>` (e.g. metric: {metric.name}_2)",
            )
    return metrics


def _build_one(entry: Any, path: KeyPath, ctx: ConfigContext, pipelines: list[str]) -> MetricSpec:
    if isinstance(entry, MetricSpec):
        spec = entry
    elif isinstance(entry, Evaluator):
        spec = MetricSpec(entry.name, entry, default_higher_is_better(entry), default_expected(entry))
    elif isinstance(entry, str):
        spec = _from_mapping({"name": entry}, path, ctx)
    elif isinstance(entry, dict):
        spec = _from_mapping(entry, path, ctx)
    else:
        raise ctx.error(path, f"an evaluator is a name or a mapping like {{name: exact_match, ...}}, got {entry!r}")
    for k, name in enumerate(spec.filters or ()):
        if name not in pipelines:
            hint = did_you_mean(name, pipelines)
            raise ctx.error(
                (*path, "filters", k), f"no filter pipeline {name!r}{hint}; defined: {', '.join(pipelines)}"
            )
    return spec


def _resolve_paths(options: dict[str, Any], ctx: ConfigContext) -> dict[str, Any]:
    """Evaluator options with the files they name resolved against the task file's folder, as datasets are, so a
    run means the same wherever it was started and records the absolute path: ``require_calibration.records``."""
    need = options.get("require_calibration")
    records = need.get("records") if isinstance(need, dict) else None
    if not isinstance(need, dict) or not isinstance(records, str) or not records:
        return options
    path = Path(records).expanduser()
    if not path.is_absolute():  # a task given as a dict has no file: the working directory, as for its dataset
        path = (ctx.base_dir if ctx.base_dir is not None else Path.cwd()) / path
    return {**options, "require_calibration": {**need, "records": str(path)}}


def _from_mapping(entry: dict[str, Any], path: KeyPath, ctx: ConfigContext) -> MetricSpec:
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ctx.error(
            path if "name" not in entry else (*path, "name"), "each evaluator needs a 'name' (e.g. exact_match)"
        )
    options = _resolve_paths({k: v for k, v in entry.items() if k not in METRIC_KEYS}, ctx)
    try:
        evaluator = from_config({"name": name, **options})
    except ConfigError as err:
        raise _evaluator_error(err, entry, path, ctx) from None
    metric = entry.get("metric", name)
    if not isinstance(metric, str) or not re.fullmatch(r"[\w][\w.\-]*", metric):
        raise ctx.error((*path, "metric"), f"a metric name uses letters, digits, '_', '-', '.'; got {metric!r}")
    problem = metric_name_problem(metric)
    if problem:
        raise ctx.error((*path, "metric" if "metric" in entry else "name"), problem)
    hib = entry.get("higher_is_better", default_higher_is_better(evaluator))
    if not isinstance(hib, bool):
        raise ctx.error((*path, "higher_is_better"), f"must be true or false, got {hib!r}")
    expected = entry.get("expected", default_expected(evaluator))
    if expected is None:  # YAML `expected: null`: nothing from the row, as `expected: none`
        expected = "none"
    try:
        check_expected(expected if isinstance(expected, str) else repr(expected))
    except ValueError as err:
        raise ctx.error((*path, "expected"), str(err)) from None
    filters = entry.get("filters")
    if isinstance(filters, str):
        filters = [filters]
    if filters is not None and (not isinstance(filters, list) or not all(isinstance(f, str) for f in filters)):
        raise ctx.error((*path, "filters"), f"a list of filter pipeline names, got {filters!r}")
    aggregation = entry.get("aggregation", default_aggregation(evaluator))
    problem = aggregation_problem(evaluator, aggregation) if isinstance(aggregation, str) else "must be a string"
    if problem:
        raise ctx.error((*path, "aggregation"), problem)
    scope = entry.get("scope")
    if scope is not None and scope not in SCOPES:
        raise ctx.error((*path, "scope"), f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    filtered = tuple(filters) if filters is not None else None
    return MetricSpec(metric, evaluator, hib, expected, filtered, aggregation, scope)


def _evaluator_error(err: ConfigError, entry: dict[str, Any], path: KeyPath, ctx: ConfigContext) -> ConfigError:
    """Re-raise an evaluator's ConfigError at the key path (and line) of the option it names."""
    message = str(err)
    if message.startswith("unknown evaluator"):
        from assay.evaluators.registry import names

        hint = did_you_mean(str(entry.get("name")), names())
        return ctx.error((*path, "name"), message.replace(";", hint + ";", 1) if hint else message)
    named = re.search(r"option '([^']+)'", message)
    key = named.group(1).split(".")[0] if named else None
    if key is not None and f"unknown option {key!r}" in message:
        from assay.evaluators.registry import get_class

        known = get_class(str(entry["name"])).Options.model_fields
        hint = did_you_mean(key, known)
        message = message.replace(f"unknown option {key!r}", f"unknown option {key!r}{hint}", 1)
    return ctx.error((*path, key) if key in entry else path, message)
