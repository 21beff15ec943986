"""The lm-eval part of ``results.json``: per-task and group keys, configs, versions, hashes and run metadata."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from assay.models.base import display_name
from assay.record import RunManifest
from assay.results import schema
from assay.results.aggregate import MetricSummary, combine_group
from assay.secrets import REDACTED, holds_secrets, is_secret_config_key


def _json_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def _scalar_types(value: Any) -> list[type] | None:
    """The types of a dict's values when all are JSON scalars (1 == 1.0 == True, yet each is its own JSON)."""
    if type(value) is not dict:
        return None
    types = [type(v) for v in value.values()]
    return types if _JSON_SCALARS.issuperset(types) else None


class RecordFacts:
    """What the lm-eval document needs from the records, gathered one record at a time: the generation
    parameters if all samples share them, and when the last sample ended."""

    def __init__(self) -> None:
        self._gen_kwargs: Any = None
        self._gen_key: str | None = None
        self._gen_types: list[type] | None = None
        self.n = 0
        self.mixed = False
        self.last_end: float | None = None

    def add(self, rec: Any) -> None:
        """Take one record dict (as parsed from its line) or SampleRecord into account."""
        if type(rec) is dict or isinstance(rec, Mapping):
            gen_kwargs = rec.get("gen_kwargs", {})
            started = rec.get("started_at", 0.0)
            times = (started, rec.get("model_seconds", 0.0), rec.get("eval_seconds", 0.0))
        else:
            gen_kwargs, times = rec.gen_kwargs, (rec.started_at, rec.model_seconds, rec.eval_seconds)
        if self.n == 0:
            self._gen_kwargs, self._gen_key = gen_kwargs, _json_key(gen_kwargs)
            self._gen_types = _scalar_types(gen_kwargs)
        elif not self.mixed:
            same = (  # equal with scalar values of the same types: the same JSON, found at a fraction of its cost
                self._gen_types is not None
                and gen_kwargs == self._gen_kwargs
                and [type(v) for v in gen_kwargs.values()] == self._gen_types
            )
            if not same:
                self.mixed = _json_key(gen_kwargs) != self._gen_key
        self.n += 1
        if times[0]:
            end = times[0] + times[1] + times[2]
            self.last_end = end if self.last_end is None else max(self.last_end, end)

    def merge(self, other: RecordFacts) -> None:
        """Take the records another instance saw (read after this one's) into account."""
        if other.n == 0:
            return
        if self.n == 0:
            self._gen_kwargs, self._gen_key, self._gen_types = other._gen_kwargs, other._gen_key, other._gen_types
            self.mixed = other.mixed
        elif not self.mixed:
            self.mixed = other.mixed or other._gen_key != self._gen_key
        self.n += other.n
        if other.last_end is not None:
            self.last_end = other.last_end if self.last_end is None else max(self.last_end, other.last_end)

    @property
    def gen_kwargs(self) -> Any:
        """The generation parameters every sample used, or None (none, or they differ)."""
        return None if self.mixed or self.n == 0 else self._gen_kwargs


def _evaluation_seconds(manifest: RunManifest, facts: RecordFacts) -> float:
    if manifest.total_seconds is not None:
        return float(manifest.total_seconds)
    if manifest.finished_at is not None:
        return max(0.0, manifest.finished_at - manifest.created_at)
    return max(0.0, facts.last_end - manifest.created_at) if facts.last_end is not None else 0.0


def _common(values: list[Any]) -> Any:
    distinct = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return next(iter(values)) if len(distinct) == 1 else None


def _scrub(value: Any) -> Any:
    """Drop keys that look like credentials, and hide header values, in a config before it reaches a results
    file."""
    if isinstance(value, Mapping):
        return {k: REDACTED if holds_secrets(k) else _scrub(v) for k, v in value.items() if not is_secret_config_key(k)}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_safe(value: Any) -> Any:
    """Plain JSON types only, with any non-finite float as null (metric keys never hold one: see _put_metric)."""
    return _finite(json.loads(json.dumps(value, default=str)))


def _model_args(model: Mapping[str, Any]) -> str:
    """lm-eval's ``model_args`` string, without anything that looks like a credential."""
    return ",".join(
        f"{k}={v}"
        for k, v in model.items()
        if k != "provider" and not isinstance(v, dict | list) and not is_secret_config_key(k)
    )


def put_metric(target: dict[str, Any], metric: str, filter_name: str, entry: Mapping[str, Any]) -> None:
    """Only finite numbers go under lm-eval keys; under a cluster key the stderr is the clustered one (left out,
    like any stderr that cannot be computed, when there are fewer than two clusters)."""
    value = entry.get("mean")
    if value is None or not math.isfinite(value):
        return
    target[schema.metric_key(metric, filter_name)] = float(value)
    clustered = entry.get("clustered")
    se = clustered.get("stderr") if isinstance(clustered, Mapping) else entry.get("stderr")
    if se is not None and math.isfinite(se):
        target[schema.stderr_key(metric, filter_name)] = float(se)


def groups_figures(
    manifest: RunManifest,
    summaries: dict[str, dict[tuple[str, str], MetricSummary]],
    results: dict[str, Any],
    weighting: str,
    confidence: float,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    members: dict[str, list[str]] = {}
    for task in manifest.tasks:
        for g in task.groups:
            members.setdefault(g, []).append(task.name)
    groups: dict[str, Any] = {}
    assay_groups: dict[str, Any] = {}
    for g, tasks in members.items():
        out: dict[str, Any] = {"name": g, "alias": g, "sample_len": 0}
        figures: dict[str, dict[str, Any]] = {}
        keys: list[tuple[str, str]] = []
        for t in tasks:
            keys.extend(k for k in summaries[t] if k not in keys)
        for filter_name, metric in keys:
            subs = [(t, summaries[t][(filter_name, metric)]) for t in tasks if (filter_name, metric) in summaries[t]]
            entry = combine_group(subs, weighting=weighting, confidence=confidence)
            entry.update(metric=metric, filter=filter_name)
            figures.setdefault(filter_name, {})[metric] = entry
            if entry["mean"] is not None:
                out[schema.metric_key(metric, filter_name)] = float(entry["mean"])
                if entry["stderr"] is not None:
                    out[schema.stderr_key(metric, filter_name)] = float(entry["stderr"])
        out["sample_len"] = sum(int(results[t]["sample_len"]) for t in tasks)
        groups[g] = out
        assay_groups[g] = {"subtasks": tasks, "weighting": weighting, "filters": figures}
    group_subtasks: dict[str, list[str]] = dict(members)
    grouped = {t for ts in members.values() for t in ts}
    for task in manifest.tasks:
        if task.name not in grouped:
            group_subtasks[task.name] = []
    return groups, assay_groups, group_subtasks


def lm_eval_document(
    manifest: RunManifest,
    facts: RecordFacts,
    results: dict[str, Any],
    groups: dict[str, Any],
    group_subtasks: dict[str, list[str]],
    error_policy: str,
    bootstrap_iters: int,
    seed: int,
) -> dict[str, Any]:
    tasks = manifest.tasks
    model = dict(manifest.model)
    model_name = display_name(model)
    hib: dict[str, dict[str, bool]] = {t.name: {m.name: m.higher_is_better for m in t.metrics} for t in tasks}
    n_shot: dict[str, int] = {t.name: t.n_shot for t in tasks}
    for g, subs in group_subtasks.items():
        if g in groups:
            hib[g] = {k: v for s in subs for k, v in hib.get(s, {}).items()}
            shots = {n_shot[s] for s in subs}
            if len(shots) == 1:
                n_shot[g] = shots.pop()
    system_instruction = _common([t.system_instruction for t in tasks]) if tasks else None
    chat_template = model.get("chat_template")
    config = {
        **{k: v for k, v in manifest.config.items() if k != "prices"},
        "model": str(model.get("provider", "model")),
        "model_args": _model_args(model),
        "model_describe": model,
        "judges": manifest.judges,
        "limit": manifest.config.get("limit"),
        "bootstrap_iters": bootstrap_iters,
        "random_seed": manifest.config.get("seed"),
        "numpy_seed": seed,
        "error_policy": error_policy,
        "gen_kwargs": facts.gen_kwargs,
    }
    return {
        "results": results,
        "groups": groups,
        "group_subtasks": group_subtasks,
        "configs": {t.name: t.without_credentials().config for t in tasks},
        "versions": {t.name: t.version for t in tasks},
        "n-shot": n_shot,
        "higher_is_better": hib,
        "n-samples": {t.name: {"original": t.n_docs, "effective": t.n_selected} for t in tasks},
        "config": _scrub(config),
        "git_hash": manifest.git_hash,
        "date": manifest.created_at,
        "task_hashes": {t.name: t.task_hash for t in tasks},
        "model_source": str(model.get("provider", "model")),
        "model_name": model_name,
        "model_name_sanitized": schema.sanitize_model_name(model_name),
        "system_instruction": system_instruction,
        "system_instruction_sha": schema.hash_string(system_instruction) if system_instruction else None,
        "fewshot_as_multiturn": bool(manifest.config.get("fewshot_as_multiturn", False)),
        "chat_template": chat_template if isinstance(chat_template, str) else None,
        "chat_template_sha": schema.hash_string(chat_template) if isinstance(chat_template, str) else None,
        "start_time": manifest.created_at,
        "end_time": manifest.finished_at,
        "total_evaluation_time_seconds": str(_evaluation_seconds(manifest, facts)),
        "assay_version": manifest.assay_version,
    }
