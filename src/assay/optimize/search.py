"""The search strategy: Optuna (TPE, random or grid) over generation parameters and model choice, single- or
multi-objective (score against cost, p95 latency or tokens), pruning clearly bad trials after partial validation.

Optuna's seeded samplers are deterministic given the history told to them, so a resumed search replays its
trials from the journal (no model calls) and reaches the same state.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.optimize.candidate import Candidate
from assay.optimize.engine import BudgetExhausted, Engine, Evaluation
from assay.optimize.spec import MAX_GRID_POINTS, OptimizeSpec, ParamSpec

if TYPE_CHECKING:
    import optuna

CHUNKS = 3  # validation is scored in this many parts; a trial may be pruned after each but the last
MAX_REPEATS = 20  # consecutive proposals of already-tried points after which the search stops (space exhausted)
Z = 1.959964  # 95% two-sided normal quantile, for the Wilson bound of a partial score


def wilson_upper(mean: float, n: int, z: float = Z) -> float:
    """The upper Wilson bound of a mean score in [0, 1] over ``n`` samples (sound at 0 and 1, unlike the t-interval).

    At a perfect score the bound is exactly 1 (the formula's rounding gave 0.9999999999999999, below a perfect best,
    so a perfect partial score was pruned); never below the mean itself."""
    if n == 0:
        return 1.0
    p = min(max(mean, 0.0), 1.0)
    if p >= 1.0:
        return 1.0
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, max(p, (centre + half) / (1 + z * z / n)))


def clearly_worse(partial: list[Evaluation], best: float | None) -> bool:
    """Prune: even the upper 95% bound of the partial validation score is below the best finished trial's score
    (a trial that could still tie the best is kept)."""
    values = [v for ev in partial for v in ev.values]
    if best is None or not values:
        return False
    return wilson_upper(math.fsum(values) / len(values), len(values)) < best - 1e-12


@dataclass
class TrialResult:
    """A finished (or pruned) trial: its candidate, objective values and validation evaluations."""

    number: int
    candidate: Candidate
    values: list[float] | None  # None when pruned
    evals: list[Evaluation] = field(default_factory=list)
    pruned: bool = False

    @property
    def scores(self) -> dict[int, float | None]:
        """Per-sample validation scores over the evaluated parts."""
        out: dict[int, float | None] = {}
        for ev in self.evals:
            out.update(ev.scores)
        return out


def _import_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError("the search strategy needs Optuna: pip install 'assay[optimize]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _grid(space: dict[str, ParamSpec]) -> dict[str, list[Any]]:
    """Each parameter's grid values (the spec refused grids without an end or past MAX_GRID_POINTS points)."""
    grid: dict[str, list[Any]] = {}
    for name, p in space.items():
        size = p.grid_size()
        if size is None or size > MAX_GRID_POINTS:
            raise ConfigError(f"optimize.space.{name}: the grid sampler needs 'choices' or a 'step' for floats")
        if p.type == "choice":
            choices = list(p.choices or [])
            primitive = all(c is None or isinstance(c, bool | int | float | str) for c in choices)
            grid[name] = choices if primitive else list(range(len(choices)))
        else:
            low, step = float(p.low or 0), float(p.step or 1)
            values = [low + i * step for i in range(size)]
            grid[name] = [int(v) for v in values] if p.type == "int" else [round(v, 10) for v in values]
    return grid


def _sampler(spec: OptimizeSpec, optuna: Any) -> Any:
    if spec.sampler == "random":
        return optuna.samplers.RandomSampler(seed=spec.seed)
    if spec.sampler == "grid":  # the grid is enqueued point by point (Optuna's GridSampler stops the study itself)
        return optuna.samplers.RandomSampler(seed=spec.seed)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=spec.seed, multivariate=True, group=True)


def _active(p: ParamSpec, chosen: dict[str, Any]) -> bool:
    for other, want in p.when.items():
        have = chosen.get(other)
        if (have not in want) if isinstance(want, list) else have != want:
            return False
    return True


def suggest(trial: optuna.Trial, space: dict[str, ParamSpec]) -> dict[str, Any]:
    """Values for the active parameters (a parameter is active when its ``when`` conditions hold)."""
    chosen: dict[str, Any] = {}
    pending = dict(space)
    while pending:
        ready = [n for n, p in pending.items() if all(o in chosen or o not in pending for o in p.when)]
        for name in ready:
            p = pending.pop(name)
            if not _active(p, chosen):
                continue
            if p.type == "choice":
                choices = list(p.choices or [])
                if all(c is None or isinstance(c, bool | int | float | str) for c in choices):
                    chosen[name] = trial.suggest_categorical(name, choices)
                else:  # Optuna takes primitive choices only: choose by position (e.g. among model spec dicts)
                    chosen[name] = choices[trial.suggest_categorical(name, list(range(len(choices))))]
            elif p.type == "int":
                step = int(p.step) if p.step else 1
                chosen[name] = trial.suggest_int(name, int(p.low or 0), int(p.high or 0), step=step, log=p.log)
            else:
                chosen[name] = trial.suggest_float(name, float(p.low or 0), float(p.high or 0), step=p.step, log=p.log)
    return chosen


def objective_values(spec: OptimizeSpec, evals: list[Evaluation]) -> list[float]:
    """The trial's objectives: mean score, then cost (USD), p95 latency (s) or tokens, as configured."""
    scores = [v for ev in evals for v in ev.values]
    out = [math.fsum(scores) / len(scores) if scores else 0.0]
    for obj in spec.objectives[1:]:
        if obj == "cost":
            costs = [ev.ops.get("model_cost_usd") for ev in evals]
            out.append(math.fsum(c for c in costs if c is not None))
        elif obj == "latency_p95":
            lat = [ev.ops.get("model_latency_p95") for ev in evals]
            out.append(max((x for x in lat if x is not None), default=0.0))
        else:
            out.append(float(sum(int(ev.ops.get("model_tokens") or 0) for ev in evals)))
    return out


def pareto(results: list[TrialResult], n_objectives: int) -> list[int]:
    """Trial numbers on the Pareto front (score maximised, every other objective minimised)."""
    done = [r for r in results if r.values is not None]

    def key(r: TrialResult) -> list[float]:
        assert r.values is not None
        return [-r.values[0], *r.values[1:n_objectives]]

    front = []
    for r in done:
        kr = key(r)
        dominated = any(
            all(a <= b for a, b in zip(key(o), kr, strict=True)) and key(o) != kr for o in done if o is not r
        )
        if not dominated:
            front.append(r.number)
    return front


async def run_search(engine: Engine) -> list[TrialResult]:
    """Ask Optuna for trials until the trial limit or the budget; each trial is scored on validation in parts."""
    optuna = _import_optuna()
    spec = engine.spec
    directions = ["maximize"] + ["minimize"] * (len(spec.objectives) - 1)
    single = len(directions) == 1
    prune = single and spec.prune  # Optuna prunes single-objective studies only; so do we
    study = optuna.create_study(
        directions=directions, sampler=_sampler(spec, optuna), pruner=optuna.pruners.NopPruner()
    )
    base = engine.baseline()
    engine.record_candidate(base, parents=[], origin="original")
    results: list[TrialResult] = []
    try:
        ev0 = await engine.evaluate(base, "val", label="val")
    except BudgetExhausted:
        return results
    results.append(TrialResult(-1, base, objective_values(spec, [ev0]), [ev0]))
    best: float | None = results[0].values[0] if results[0].values else None
    engine.record_trial(
        base,
        ev0,
        iteration=0,
        origin="original",
        parent=None,
        accepted=True,
        objectives=dict(zip(spec.objectives, results[0].values or [], strict=False)),
    )
    val = list(engine.splits["val"])
    size = math.ceil(len(val) / CHUNKS)
    parts = [val[i : i + size] for i in range(0, len(val), size)]
    limit = spec.trials
    if spec.sampler == "grid":  # every grid point once, at most
        grid = _grid(spec.space)
        points = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
        for point in points:
            study.enqueue_trial(point, skip_if_exists=True)
        limit = len(points) if limit is None else min(limit, len(points))
    tried: dict[str, TrialResult] = {}
    repeats = 0
    for number in itertools.count():
        if limit is not None and number >= limit:
            break
        engine.iteration = number + 1
        trial = study.ask()
        params = suggest(trial, spec.space)
        model = params.pop("model", None)
        cand = Candidate(dict(base.components), None, params, model)
        earlier = tried.get(cand.id)
        if earlier is not None:  # the sampler proposed a tried point again: tell it the same outcome, at no cost
            if earlier.values is None:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                study.tell(trial, earlier.values)
            repeats += 1
            if repeats >= MAX_REPEATS:  # a small, discrete space is exhausted
                break
            continue
        repeats = 0
        try:  # a trial is begun only when the budget covers its whole validation (a partial one cannot win)
            engine.afford(len(val) * engine.task.repeats)
        except BudgetExhausted:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        engine.record_candidate(cand, parents=[base], origin=f"search:{spec.sampler}")
        result = TrialResult(number, cand, None)
        tried[cand.id] = result
        try:
            for step, part in enumerate(parts):
                ev = await engine.evaluate(cand, "val", part, label=f"trial{number}")
                result.evals.append(ev)
                if prune and step < len(parts) - 1:
                    trial.report(objective_values(spec, result.evals)[0], step)
                    if clearly_worse(result.evals, best):
                        result.pruned = True
                        break
        except BudgetExhausted:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
            break
        if result.pruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            result.values = objective_values(spec, result.evals)
            study.tell(trial, result.values)
            best = result.values[0] if best is None else max(best, result.values[0])
        results.append(result)
        merged = Evaluation(cand.id, "val", sorted(result.scores), result.scores, result.evals[-1].run_dir, 0)
        engine.record_trial(
            cand,
            merged,
            iteration=number + 1,
            origin=f"search:{spec.sampler}",
            parent=base.id,
            accepted=not result.pruned,
            pruned=result.pruned,
            params={**params, **({"model": model} if model is not None else {})},
            objectives=dict(zip(spec.objectives, result.values or [], strict=False)),
        )
    return results
