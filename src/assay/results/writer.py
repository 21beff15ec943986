"""Build ``results.json`` (lm-eval schema + the ``assay`` key) from a run, and write it and the sample logs."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import AssayError, ConfigError
from assay.models.base import display_name
from assay.record import RunManifest, SampleRecord, TaskInfo
from assay.results import corpus, schema
from assay.results.aggregate import (
    ERROR_POLICIES,
    GROUP_WEIGHTINGS,
    REPEAT_REDUCTIONS,
    MetricSummary,
    check_choice,
    cluster_labels,
    combine_group,
    sample_values,
    summarize_metric,
    task_rng,
)
from assay.results.independence import SharedContext, independence_warning
from assay.results.judging import judging_figures
from assay.results.operational import operational_figures, validate_prices
from assay.results.stats import FloatArray
from assay.runner.rundir import atomic_write_text
from assay.secrets import is_secret_config_key

ASSAY_SCHEMA_VERSION = 1


class ErroredVerdictsError(AssayError):
    """``error_policy="fail"`` and some verdicts errored; the message counts them and shows examples."""


def _scrub(value: Any) -> Any:
    """Drop keys that look like credentials from a config before it reaches a results file."""
    if isinstance(value, Mapping):
        return {k: _scrub(v) for k, v in value.items() if not is_secret_config_key(k)}
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


def _json_safe(value: Any) -> Any:
    """Plain JSON types only, with any non-finite float as null (metric keys never hold one: see _put_metric)."""
    return _finite(json.loads(json.dumps(value, default=str)))


def _metric_infos(task: TaskInfo, records: list[SampleRecord]) -> list[tuple[str, bool]]:
    """(metric, higher_is_better) in declared order, then any metric found only in the records."""
    out = [(m.name, m.higher_is_better) for m in task.metrics]
    seen = {name for name, _ in out}
    for rec in records:
        for fr in rec.filters.values():
            for name in fr.verdicts:
                if name not in seen:
                    seen.add(name)
                    out.append((name, True))
    for name, _ in out:
        problem = schema.metric_name_problem(name)
        if problem:
            raise ConfigError(f"task {task.name!r}: {problem}")
    return out


def _filter_names(task: TaskInfo, records: list[SampleRecord]) -> list[str]:
    out = list(task.filters)
    for rec in records:
        out.extend(f for f in rec.filters if f not in out)
    return out


def _evaluation_seconds(manifest: RunManifest, records: list[SampleRecord]) -> float:
    if manifest.total_seconds is not None:
        return float(manifest.total_seconds)
    if manifest.finished_at is not None:
        return max(0.0, manifest.finished_at - manifest.created_at)
    ends = [r.started_at + r.model_seconds + r.eval_seconds for r in records if r.started_at]
    return max(0.0, max(ends) - manifest.created_at) if ends else 0.0


def _model_args(model: Mapping[str, Any]) -> str:
    """lm-eval's ``model_args`` string, without anything that looks like a credential."""
    return ",".join(
        f"{k}={v}"
        for k, v in model.items()
        if k != "provider" and not isinstance(v, dict | list) and not is_secret_config_key(k)
    )


def _common(values: list[Any]) -> Any:
    distinct = {json.dumps(v, sort_keys=True, default=str) for v in values}
    return next(iter(values)) if len(distinct) == 1 else None


@dataclass
class _Computed:
    """A built results document with what the sample logs need: each task's sorted records and values."""

    doc: dict[str, Any]
    records: dict[str, list[SampleRecord]]
    values: dict[str, dict[tuple[str, str], FloatArray]]  # task -> (filter, metric) -> per-sample value (NaN errored)


def build_results(
    manifest: RunManifest,
    records: Iterable[SampleRecord],
    *,
    error_policy: str = "exclude",
    bootstrap_iters: int = 10_000,
    seed: int = 1234,
    cluster_key: str | None = None,
    prices: Mapping[str, Any] | None = None,
    repeat_reduction: str = "mean",
    group_weighting: str = "size",
    confidence: float = 0.95,
    torn_lines: int = 0,
) -> dict[str, Any]:
    """The whole ``results.json`` document for a run: lm-eval keys plus the ``assay`` key.

    Raises :class:`ErroredVerdictsError` under ``error_policy="fail"`` when any verdict errored.
    """
    return _compute(
        manifest,
        records,
        error_policy=error_policy,
        bootstrap_iters=bootstrap_iters,
        seed=seed,
        cluster_key=cluster_key,
        prices=prices,
        repeat_reduction=repeat_reduction,
        group_weighting=group_weighting,
        confidence=confidence,
        torn_lines=torn_lines,
    ).doc


def _compute(
    manifest: RunManifest,
    records: Iterable[SampleRecord],
    *,
    error_policy: str,
    bootstrap_iters: int,
    seed: int,
    cluster_key: str | None,
    prices: Mapping[str, Any] | None,
    repeat_reduction: str,
    group_weighting: str,
    confidence: float,
    torn_lines: int,
) -> _Computed:
    check_choice("error_policy", error_policy, ERROR_POLICIES)
    check_choice("repeat_reduction", repeat_reduction, REPEAT_REDUCTIONS)
    check_choice("group_weighting", group_weighting, GROUP_WEIGHTINGS)
    if isinstance(bootstrap_iters, bool) or not isinstance(bootstrap_iters, int) or bootstrap_iters < 0:
        raise ConfigError(
            f"bootstrap_iters: expected a whole number >= 0 (0 skips the bootstrap), got {bootstrap_iters!r}"
        )
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence: expected a number in (0, 1), got {confidence!r}")
    price_table = validate_prices(prices if prices is not None else manifest.config.get("prices"))
    all_records = list(records)
    by_task: dict[str, list[SampleRecord]] = {t.name: [] for t in manifest.tasks}
    unknown: dict[str, int] = {}
    for rec in all_records:
        if rec.task in by_task:
            by_task[rec.task].append(rec)
        else:
            unknown[rec.task] = unknown.get(rec.task, 0) + 1
    warnings = [f"{n} sample(s) of task {t!r}, which is not in run.json, were ignored" for t, n in unknown.items()]

    results: dict[str, Any] = {}
    assay_tasks: dict[str, Any] = {}
    summaries: dict[str, dict[tuple[str, str], MetricSummary]] = {}
    values: dict[str, dict[tuple[str, str], FloatArray]] = {}
    errored_total = 0
    fail_examples: list[str] = []
    for task in manifest.tasks:
        recs = by_task[task.name] = sorted(by_task[task.name], key=lambda r: r.doc_id)
        reduction = str(task.config.get("repeat_reduction", repeat_reduction))
        check_choice(f"task {task.name!r}: repeat_reduction", reduction, REPEAT_REDUCTIONS)
        labels = cluster_labels(recs, cluster_key) if cluster_key else None
        shared = SharedContext()
        for rec in recs[: shared.limit]:
            shared.observe(rec)
        independence = independence_warning(task.name, shared, cluster_key)
        if independence is not None:
            warnings.append(independence)
        task_result: dict[str, Any] = {
            "name": task.name,
            "alias": str(task.config.get("alias", task.name)),
            "sample_len": len(recs),
        }
        filters_out: dict[str, dict[str, Any]] = {}
        corpus_infos = {m.name: m for m in task.metrics if m.aggregation == "corpus"}
        summaries[task.name], values[task.name] = {}, {}
        for filter_name in _filter_names(task, recs):
            for metric, hib in _metric_infos(task, recs):
                sv = sample_values(recs, filter_name, metric, error_policy=error_policy, repeat_reduction=reduction)
                errored_total += sv.n_errored_verdicts
                fail_examples.extend(f"{task.name}/{metric},{filter_name} doc {d}: {e}" for d, e in sv.errors[:2])
                summary = summarize_metric(
                    sv,
                    task=task.name,
                    filter_name=filter_name,
                    metric=metric,
                    higher_is_better=hib,
                    error_policy=error_policy,
                    repeat_reduction=reduction,
                    repeats=task.repeats,
                    bootstrap_iters=bootstrap_iters,
                    seed=seed,
                    confidence=confidence,
                    clusters=labels,
                    cluster_key=cluster_key,
                )
                info = corpus_infos.get(metric)
                if info is not None:  # corpus BLEU/chrF/TER: the figure comes from summed per-sample statistics
                    figures = corpus.corpus_figures(
                        info.evaluator,
                        corpus.collect(recs, filter_name, metric),
                        bootstrap_iters=bootstrap_iters,
                        rng=task_rng(seed, task.name, 2),
                        confidence=confidence,
                    )
                    summary.bootstrap = corpus.apply_corpus(summary.entry, figures)
                    summary.stderr = summary.entry["stderr"]
                summaries[task.name][(filter_name, metric)] = summary
                values[task.name][(filter_name, metric)] = sv.values
                filters_out.setdefault(filter_name, {})[metric] = summary.entry
                _put_metric(task_result, metric, filter_name, summary.entry)
        results[task.name] = task_result
        assay_tasks[task.name] = {
            "n_docs": task.n_docs,
            "n_selected": task.n_selected,
            "n_records": len(recs),
            "n_missing": max(0, task.n_selected - len(recs)),
            "n_model_errors": sum(1 for r in recs if r.error),
            "model_error_example": next((f"{r.sample_id}: {r.error}" for r in recs if r.error), None),
            "repeats": task.repeats,
            "filters": filters_out,
        }
    if error_policy == "fail" and errored_total:
        shown = "; ".join(fail_examples[:5])
        raise ErroredVerdictsError(
            f"{errored_total} verdict(s) errored and error_policy is 'fail'"
            + (f" (e.g. {shown})" if shown else "")
            + "; use error_policy 'exclude' or 'as_zero' to report them instead"
        )

    groups, assay_groups, group_subtasks = _groups(manifest, summaries, results, group_weighting, confidence)
    doc = _lm_eval_document(manifest, all_records, results, groups, group_subtasks, error_policy, bootstrap_iters, seed)
    doc["assay"] = {
        "schema_version": ASSAY_SCHEMA_VERSION,
        "run_id": manifest.run_id,
        "status": manifest.status,
        "error_policy": error_policy,
        "bootstrap_iters": bootstrap_iters,
        "seed": seed,
        "confidence": confidence,
        "cluster_key": cluster_key,
        "repeat_reduction": repeat_reduction,
        "group_weighting": group_weighting,
        "torn_lines": torn_lines,
        "warnings": warnings,
        "tasks": assay_tasks,
        "groups": assay_groups,
        "operational": operational_figures(all_records, manifest, price_table),
        "judging": judging_figures(all_records),
    }
    return _Computed(_json_safe(doc), by_task, values)


def _put_metric(target: dict[str, Any], metric: str, filter_name: str, entry: Mapping[str, Any]) -> None:
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


def _groups(
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


def _lm_eval_document(
    manifest: RunManifest,
    records: list[SampleRecord],
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
        "gen_kwargs": _common([r.gen_kwargs for r in records]) if records else None,
    }
    return {
        "results": results,
        "groups": groups,
        "group_subtasks": group_subtasks,
        "configs": {t.name: t.config for t in tasks},
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
        "total_evaluation_time_seconds": str(_evaluation_seconds(manifest, records)),
        "assay_version": manifest.assay_version,
    }


def _sample_lines(computed: _Computed) -> dict[str, list[dict[str, Any]]]:
    """Per task, the lines of ``samples_<task>.jsonl``: one per sample and filter, metrics with a value only."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task, recs in computed.records.items():
        by_filter: dict[str, dict[str, FloatArray]] = {}
        for (filter_name, metric), vals in computed.values.get(task, {}).items():
            by_filter.setdefault(filter_name, {})[metric] = vals
        lines: list[dict[str, Any]] = []
        for filter_name, metrics in by_filter.items():
            for i, rec in enumerate(recs):
                present = {m: float(v[i]) for m, v in metrics.items() if not math.isnan(v[i])}
                lines.append(schema.sample_log_line(rec, filter_name, present))
        out[task] = lines
    return out


def write_results(
    run_dir: str | os.PathLike[str],
    *,
    error_policy: str = "exclude",
    bootstrap_iters: int = 10_000,
    seed: int = 1234,
    cluster_key: str | None = None,
    prices: Mapping[str, Any] | None = None,
    repeat_reduction: str = "mean",
    group_weighting: str = "size",
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Read ``run.json`` + ``samples.jsonl``, write ``results.json`` and ``samples_<task>.jsonl`` atomically."""
    from assay.runner.rundir import read_manifest, read_samples

    root = Path(run_dir)
    started = time.perf_counter()
    manifest = read_manifest(root)
    records, torn = read_samples(root)
    computed = _compute(
        manifest,
        records,
        error_policy=error_policy,
        bootstrap_iters=bootstrap_iters,
        seed=seed,
        cluster_key=cluster_key,
        prices=prices,
        repeat_reduction=repeat_reduction,
        group_weighting=group_weighting,
        confidence=confidence,
        torn_lines=torn,
    )
    doc = computed.doc
    for task, lines in _sample_lines(computed).items():
        text = "".join(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n" for line in lines)
        atomic_write_text(root / schema.samples_filename(task), text)
    doc["assay"]["results_seconds"] = time.perf_counter() - started
    atomic_write_text(root / "results.json", json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return doc
