"""``assay.optimize`` / ``aoptimize``: an optimisation from start (or resume) to its verdict on the held-out test split.

The folder holds ``optimization.json`` (what is optimised, with what, the splits), the journal, every candidate's
ordinary run folder under ``runs/``, and at the end ``trials.csv``, ``lineage.json``, ``summary.json`` and the
winning task as ``best_task.yaml`` beside ``best_task.diff``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.optimize.candidate import Candidate
from assay.optimize.engine import Engine, Evaluation, OptimizeError
from assay.optimize.journal import Journal
from assay.optimize.manifest import (
    MANIFEST,
    check_run_settings,
    check_splits,
    finite_budget_usd,
    needs_model_again,
    read_manifest,
    recorded_config,
    recorded_model,
    recorded_settings,
    write_manifest,
)
from assay.optimize.outputs import write_outputs
from assay.optimize.result import OptimizationResult
from assay.optimize.spec import OptimizeSpec, parse_spec
from assay.optimize.splits import make_splits

__all__ = ["aoptimize", "optimize"]


def _new_folder(output_dir: Path, name: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = output_dir / f"{name}-optimize-{stamp}-{secrets.token_hex(3)}"
    path.mkdir(parents=True, exist_ok=False)
    return path


def _model_arg(given: Any, recorded: Any, what: str, folder: Path, option: str) -> Any:
    if given is not None:
        return given
    if needs_model_again(recorded):
        raise ConfigError(
            f"{folder} was started with a {what} that its files do not record in full (an object, or a spec with "
            f"credentials, which are never written); give it again ({option})"
        )
    return recorded


async def aoptimize(
    task: Any = None,
    model: Any = None,
    *,
    optimizer_model: Any = None,
    budget: int | None = None,
    budget_usd: float | None = None,
    output_dir: str | Path = "runs",
    resume: str | Path | None = None,
    log: Callable[[str], None] | None = None,
    run_settings: dict[str, Any] | None = None,
    **overrides: Any,
) -> OptimizationResult:
    """Optimise a task (YAML path, config or Task) for ``model`` within ``budget`` model calls, or resume a folder.

    ``budget_usd`` (with prices in ``run_settings``) also stops the optimisation before a step once that much has
    been spent (a step may pass it by its own cost). ``overrides`` are keys of the task's ``optimize:`` section
    (strategy, components, constraints, splits, seed, objectives, space, sampler, trials, minibatch, fewshot,
    metric, alpha). ``run_settings`` go to every candidate run (concurrency, cache, timeout_s, prices, …).
    """
    from assay.api import load_tasks, resolve_model
    from assay.models.registry import load_model
    from assay.runner.lock import run_lock
    from assay.tasks import Task

    settings = dict(run_settings or {})
    check_run_settings(settings)
    folder: Path | None
    if resume is not None:
        folder = Path(resume)
        if task is not None or overrides or budget is not None or budget_usd is not None:
            raise ConfigError("a resumed optimisation keeps its task, settings and budget; pass only resume=FOLDER")
        manifest = read_manifest(folder)
        path = folder / MANIFEST
        task_obj = Task.from_config(manifest["task"], source=f"{path}: task")
        if task_obj.hash != manifest["task_hash"]:
            redacted = "***" in json.dumps(manifest["task"])
            raise ConfigError(
                f"{folder}: the task's dataset or config changed since the optimisation started (task hash "
                f"{task_obj.hash[:12]} vs {manifest['task_hash'][:12]}); its splits and runs no longer fit"
                + (" (the recorded task had credentials removed, which resuming cannot restore)" if redacted else "")
            )
        spec = OptimizeSpec.model_validate(manifest["spec"])
        model = _model_arg(model, manifest["model"], "model", folder, "--model / --base-url")
        optimizer_model = _model_arg(
            optimizer_model, manifest["optimizer_model"], "optimiser model", folder,
            "--optimizer-model / --optimizer-base-url",
        )  # fmt: skip
        budget = int(manifest["budget"])
        budget_usd = manifest.get("budget_usd")
        settings = {**manifest["run_settings"], **{k: v for k, v in (run_settings or {}).items() if k != "prices"}}
        check_run_settings(settings)
        splits = {k: list(v) for k, v in manifest["splits"].items()}
        check_splits(path, splits, len(task_obj.dataset.rows))
    else:
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise ConfigError(f"budget: give a budget of model calls (an integer >= 1), got {budget!r}")
        budget_usd = finite_budget_usd(budget_usd)
        (task_obj,) = load_tasks(task)
        if task_obj.external:
            raise ConfigError(
                f"task {task_obj.name!r} is lm-eval's: its prompts, few-shot examples and scoring are built by "
                "lm-eval's task layer, which optimize does not rewrite; optimise an assay task file instead"
            )
        spec = parse_spec(task_obj, overrides)
        model = model if model is not None else task_obj.model
        if model is None:
            raise ConfigError("no model: pass model=… (or --model) or give the task a 'model:' section")
        splits = make_splits(list(task_obj.dataset.rows), spec.splits)
        need = len(splits["val"]) * task_obj.repeats
        if budget < need:
            raise ConfigError(
                f"a budget of {budget} model calls does not cover evaluating the original task on the validation "
                f"split ({need} calls); raise --budget"
            )
        manifest = {
            "kind": "assay.optimization",
            "created_at": time.time(),
            "task": recorded_config(task_obj.to_config()),  # no literal key, no URL credentials (not hashed)
            "task_hash": task_obj.hash,
            "model": recorded_model(model),
            "optimizer_model": recorded_model(optimizer_model),
            "budget": budget,
            "budget_usd": budget_usd,
            "spec": spec.model_dump(mode="json"),
            "splits": splits,
            "run_settings": recorded_settings(settings),
            "status": "running",
        }
        folder = None
    resolve_model(model, [task_obj])  # a bad model spec fails before any call
    optimizer = load_model(optimizer_model) if isinstance(optimizer_model, str | dict) else optimizer_model
    if spec.strategy == "reflective" and optimizer is None:
        raise ConfigError("the reflective strategy needs an optimiser model (--optimizer-model)")
    if optimizer is not None:
        optimizer.check()
    if "cost" in spec.objectives and not settings.get("prices"):
        raise ConfigError("the 'cost' objective needs prices (--prices FILE)")
    if budget_usd is not None and not settings.get("prices"):
        raise ConfigError("a budget in US dollars needs prices (--prices FILE)")
    if folder is None:  # every check passed: only now is anything written
        folder = _new_folder(Path(output_dir), task_obj.name)
        write_manifest(folder, manifest)
    with run_lock(folder, action="optimise"):
        journal = Journal(folder)
        engine: Engine | None = None
        try:
            engine = Engine(folder, task_obj, model, optimizer, spec, splits, budget, settings, journal)
            engine.log = log
            engine.budget_usd = budget_usd
            result = await _optimise(engine, folder, manifest)
        except (KeyboardInterrupt, asyncio.CancelledError, OptimizeError) as err:
            manifest["status"] = "failed" if isinstance(err, OptimizeError) else "interrupted"
            if engine is not None and engine.warnings:
                manifest["warnings"] = engine.warnings
            write_manifest(folder, manifest)
            if log is not None:
                log(f"optimisation {manifest['status']}; finished steps are kept. Resume with: "
                    f"assay optimize --resume {folder}")  # fmt: skip
            raise
        finally:
            journal.close()
            if engine is not None:
                engine.close()
            if optimizer is not None:
                await optimizer.aclose()
    return result


async def _optimise(engine: Engine, folder: Path, manifest: dict[str, Any]) -> OptimizationResult:
    spec = engine.spec
    manifest["status"] = "running"
    write_manifest(folder, manifest)
    base = engine.baseline()
    val: dict[str, tuple[Candidate, Evaluation]] = {}
    pareto_rows: list[dict[str, Any]] = []
    if spec.strategy == "reflective":
        from assay.optimize.reflective import run_reflective

        pool = await run_reflective(engine)
        val = {c: (pool.candidates[c], pool.val[c]) for c in pool.val}
    elif spec.strategy == "fewshot":
        from assay.optimize.fewshot import run_fewshot

        val = await run_fewshot(engine)
    else:
        from assay.optimize.search import pareto, run_search

        trials = await run_search(engine)
        for t in trials:
            if t.values is not None and len(t.scores) == len(engine.splits["val"]):
                ev = Evaluation(t.candidate.id, "val", sorted(t.scores), t.scores, t.evals[-1].run_dir, 0)
                val.setdefault(t.candidate.id, (t.candidate, ev))
        front = set(pareto(trials, len(spec.objectives)))
        pareto_rows = [
            {"trial": t.number, "cid": t.candidate.id, "objectives": dict(zip(spec.objectives, t.values, strict=True))}
            for t in trials
            if t.number in front and t.values is not None
        ]
    if base.id not in val:
        raise OptimizeError(
            f"the budget ({engine.budget} model calls) does not cover evaluating the original task on the "
            f"validation split ({len(engine.splits['val']) * engine.task.repeats} calls, more with retries: "
            f"{engine.used} were made); start again with a larger --budget"
        )
    order = list(val)
    best_id = max(order, key=lambda c: (val[c][1].mean, c == base.id, -order.index(c)))
    best = val[best_id][0]
    ev_base = await engine.evaluate(base, "test", label="test", charge=False)
    ev_best = ev_base if best_id == base.id else await engine.evaluate(best, "test", label="test", charge=False)
    engine.finish_count()
    comparison = _compare(engine, ev_base, ev_best, spec.alpha)
    improved = bool(comparison.get("better"))
    result = write_outputs(
        engine, folder, base, best, val, ev_base, ev_best, comparison, improved, pareto_rows, manifest
    )
    manifest["status"] = "finished"
    manifest["finished_at"] = time.time()
    if engine.warnings:
        manifest["warnings"] = engine.warnings
    write_manifest(folder, manifest)
    return result


def _compare(engine: Engine, ev_base: Evaluation, ev_best: Evaluation, alpha: float) -> dict[str, Any]:
    """``assay compare``'s paired test of best (B) against the original (A) on the test split, of the outcomes
    candidates are ranked by (``errors="as_failure"``: an errored sample is a failure on either side), so the two
    means it states differ by exactly the difference it tests."""
    from assay.results.compare import compare_runs

    if ev_base.run_dir == ev_best.run_dir:
        return {"same": True, "better": False, "diff": 0.0, "p_value": None, "ci": None, "test": "none"}
    comp = compare_runs(ev_base.run_dir, ev_best.run_dir, alpha=alpha, errors="as_failure")
    for m in comp.metrics:
        if m.metric == engine.metric.name and m.filter == engine.filter:
            return {
                "same": False,
                "errors": m.errors,
                "outcomes": m.outcomes,
                "better": m.better,
                "worse": m.worse,
                "diff": m.diff,
                "ci": m.ci,
                "ci_method": m.ci_method,
                "p_value": m.p_value,
                "test": m.test,
                "n_shared": m.n_shared,
                "mean_a": m.mean_a,
                "mean_b": m.mean_b,
                "errored_a": m.n_errored_a,
                "errored_b": m.n_errored_b,
                "improved_ids": m.improved_ids,
                "regressed_ids": m.regressed_ids,
                "warnings": comp.warnings,
            }
    raise OptimizeError(f"the test runs share no {engine.metric.name},{engine.filter} metric to compare")


def optimize(task: Any = None, model: Any = None, **kwargs: Any) -> OptimizationResult:
    """Synchronous :func:`aoptimize` (works inside a running event loop too)."""
    from assay.api import run_sync

    return run_sync(aoptimize(task, model, **kwargs))
