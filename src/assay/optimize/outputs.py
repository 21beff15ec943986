"""What an optimisation leaves behind: the trials table, the lineage, the cost by role, the winning task as YAML
with a diff against the original, and the summary; :func:`read_tables` rebuilds the tables from the journal alone,
so an interrupted optimisation can be reported too."""

from __future__ import annotations

import csv
import difflib
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from assay.optimize.candidate import apply
from assay.optimize.journal import JOURNAL
from assay.optimize.manifest import recorded_config
from assay.optimize.readout import interval
from assay.optimize.result import OptimizationResult

if TYPE_CHECKING:
    from assay.optimize.candidate import Candidate
    from assay.optimize.engine import Engine, Evaluation

TRIAL_COLUMNS = (
    "trial", "iteration", "origin", "cid", "parent", "split", "n", "errored", "mean", "ci_low", "ci_high", "accepted",
    "pruned", "calls_used", "objectives", "params", "run_dir",
)  # fmt: skip


def read_journal(folder: Path) -> list[dict[str, Any]]:
    """Every complete journal entry in order (a torn last line is skipped)."""
    path = folder / JOURNAL
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def read_tables(folder: Path) -> dict[str, Any]:
    """Trials, candidates (lineage), the optimiser calls and the evaluations, from the journal."""
    entries = read_journal(folder)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        kinds.setdefault(e["kind"], []).append(e)
    return {
        "trials": kinds.get("trial", []),
        "candidates": kinds.get("candidate", []),
        "proposals": kinds.get("propose", []),
        "evals": kinds.get("eval", []),
    }


def cost_by_role(tables: dict[str, Any], prices: dict[str, Any] | None, optimizer_name: str | None) -> dict[str, Any]:
    """Calls, tokens and (with prices) USD per role: the task model, its judges, the optimiser, the final test."""
    charged = [e for e in tables["evals"] if e.get("charged", True)]
    test = [e for e in tables["evals"] if not e.get("charged", True)]

    def total(evals: list[dict[str, Any]], key: str) -> float:
        return math.fsum(float((e.get("ops") or {}).get(key) or 0) for e in evals)

    def usd(evals: list[dict[str, Any]], key: str) -> float | None:
        vals = [(e.get("ops") or {}).get(key) for e in evals]
        return math.fsum(v for v in vals if v is not None) if any(v is not None for v in vals) else None

    props = tables["proposals"]
    opt_in = sum(int(p.get("input_tokens") or 0) for p in props)
    opt_out = sum(int(p.get("output_tokens") or 0) for p in props)
    price = (prices or {}).get(optimizer_name or "") if optimizer_name else None
    return {
        "task_model": {
            "calls": sum(int(e["calls"]) for e in charged),
            "tokens": int(total(charged, "model_tokens")),
            "cost_usd": usd(charged, "model_cost_usd"),
        },
        "judge": {
            "calls": int(total(charged, "judge_requests") - total(charged, "judge_cache_hits")),
            "tokens": int(total(charged, "judge_tokens")),
            "cost_usd": usd(charged, "judge_cost_usd"),
        },
        "optimizer": {
            "calls": sum(int(p.get("attempts") or 1) for p in props),
            "tokens": opt_in + opt_out,
            "cost_usd": (opt_in * price["input"] + opt_out * price["output"]) / 1e6 if price else None,
        },
        "final_test": {
            "calls": sum(int(e["calls"]) for e in test),
            "tokens": int(total(test, "model_tokens")),
            "cost_usd": usd(test, "model_cost_usd"),
        },
    }


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_trials_csv(folder: Path, trials: list[dict[str, Any]]) -> None:
    """``trials.csv``: one row per trial (objectives and params as JSON)."""
    tmp = folder / "trials.csv.tmp"
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=TRIAL_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for t in trials:
            row = dict(t)
            for key in ("objectives", "params"):
                if key in row:
                    row[key] = json.dumps(row[key], sort_keys=True)
            writer.writerow(row)
    os.replace(tmp, folder / "trials.csv")


def _yaml(config: dict[str, Any]) -> str:
    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump(config, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def _summary(engine: Engine, best: Candidate, base: Candidate, ev_base: Evaluation, ev_best: Evaluation,
             comparison: dict[str, Any], improved: bool) -> str:  # fmt: skip
    """The headline: the two test means, their difference and the test, all of the same outcomes (an errored
    sample is a failure on either side), so the means differ by the difference stated."""
    metric = f"{engine.metric.name},{engine.filter}"
    n = len(ev_best.values)
    if best.id == base.id:
        b, _, _ = interval(ev_base.values)
        return (
            f"no candidate beat the original task on the validation split; the task is unchanged "
            f"({metric} on the test split: {b:.3f}, n={n})"
        )
    p = comparison.get("p_value")
    ci = comparison.get("ci") or [math.nan, math.nan]
    errors = [f"{k} {'by the original' if who == 'a' else 'by the candidate'}"
              for who in ("a", "b") if (k := comparison.get(f"errored_{who}"))]  # fmt: skip
    counted = f"; errored samples count as failures: {', '.join(errors)}" if errors else ""
    shown = (
        f"{comparison['mean_b']:.3f} vs {comparison['mean_a']:.3f} for the original (n={n}, {metric}{counted}), "
        f"difference {comparison['diff']:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    )
    shown += f", {comparison.get('test')} p={p:.3g}" if p is not None else ""
    if improved:
        return f"improved: candidate {best.id} scores {shown} on the held-out test split"
    return (
        f"no candidate beat the baseline significantly: the best on validation ({best.id}) scores {shown} on the "
        f"held-out test split (alpha={engine.spec.alpha:g})"
    )


def write_outputs(
    engine: Engine,
    folder: Path,
    base: Candidate,
    best: Candidate,
    val: dict[str, tuple[Candidate, Evaluation]],
    ev_base: Evaluation,
    ev_best: Evaluation,
    comparison: dict[str, Any],
    improved: bool,
    pareto_rows: list[dict[str, Any]],
    manifest: dict[str, Any],
) -> OptimizationResult:
    """Write the tables, the winning task and the summary; return the result."""
    tables = read_tables(folder)
    write_trials_csv(folder, tables["trials"])
    val_means = {cid: ev.mean for cid, (_, ev) in val.items()}
    lineage = [
        {**{k: c[k] for k in ("key", "parents", "origin", "component", "note", "failures", "diff")},
         "cid": c["key"], "candidate": c["candidate"], "val_mean": val_means.get(c["key"])}
        for c in tables["candidates"]
    ]  # fmt: skip
    _atomic(folder / "lineage.json", json.dumps(lineage, indent=2, ensure_ascii=False))
    original_cfg = recorded_config(engine.base_config)  # never a literal key or a URL's credentials
    best_cfg = recorded_config(apply(engine.base_config, best, engine.original, engine.target_field))
    original_yaml, best_yaml = _yaml(original_cfg), _yaml(best_cfg)
    _atomic(folder / "best_task.yaml", best_yaml)
    _atomic(
        folder / "best_task.diff",
        "".join(
            difflib.unified_diff(
                original_yaml.splitlines(keepends=True), best_yaml.splitlines(keepends=True), "original", "best"
            )
        ),
    )
    optimizer_spec = manifest.get("optimizer_model")
    optimizer_name = engine.optimizer.name if engine.optimizer is not None else None
    costs = cost_by_role(tables, engine.run_settings.get("prices"), optimizer_name)
    calls = {
        "budget": engine.budget,
        "used": engine.used,
        "task_model": engine.task_calls,  # every attempt sent, retries too: used = task_model + optimizer
        "optimizer": engine.optimizer_calls,
        "judge": costs["judge"]["calls"],
        "final_test": engine.final_calls,
        "budget_usd": engine.budget_usd,
        "spent_usd": engine.spent_usd if engine.run_settings.get("prices") else None,
    }
    mb, lb, hb = interval(ev_base.values)
    mw, lw, hw = interval(ev_best.values)
    result = OptimizationResult(
        folder=folder,
        strategy=engine.spec.strategy,
        status="finished",
        baseline=base.id,
        best=best.id,
        val={"baseline": val_means.get(base.id), "best": val_means.get(best.id)},
        test={
            "baseline": {"mean": mb, "ci": [lb, hb], "n": len(ev_base.values), "run_dir": ev_base.run_dir},
            "best": {"mean": mw, "ci": [lw, hw], "n": len(ev_best.values), "run_dir": ev_best.run_dir},
            "comparison": comparison,
        },
        improved=improved,
        summary=_summary(engine, best, base, ev_base, ev_best, comparison, improved),
        calls=calls,
        cost_usd={role: c["cost_usd"] for role, c in costs.items()},
        pareto=pareto_rows,
        warnings=list(engine.warnings),
    )
    summary = {**result.to_dict(), "cost_by_role": costs, "optimizer_model": optimizer_spec}
    _atomic(folder / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False, default=str))
    return result
