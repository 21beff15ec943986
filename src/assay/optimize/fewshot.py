"""The few-shot strategy: choose demos from the training split and score each set on validation.

``random`` tries random sets; ``bootstrap`` first runs the task on training rows and draws sets from the rows the
model answered correctly, showing its own passing output as the answer (DSPy's BootstrapFewShot); ``greedy``
grows one set a demo at a time, keeping a demo only when validation improves.
"""

from __future__ import annotations

import random
from typing import Any

from assay.optimize.candidate import Candidate
from assay.optimize.engine import BudgetExhausted, Engine, Evaluation

MAX_BOOTSTRAP_ROWS = 32  # training rows run to find passing demos


def _demo(engine: Engine, row: int, output: str | None = None) -> dict[str, Any]:
    demo = dict(engine.rows[row])
    if output is not None:
        demo["_output"] = output
    return demo


async def _pool(engine: Engine, rng: random.Random, base: Candidate) -> tuple[list[dict[str, Any]], str]:
    """The demos to choose from and how they were chosen: training rows (``random``), or (``bootstrap``) the rows
    the model answered correctly, with its own outputs as the answers."""
    train = list(engine.splits["train"])
    method = engine.spec.fewshot.method
    if method != "bootstrap":
        return [_demo(engine, r) for r in train], method
    if engine.target_field is None:
        engine.warn(
            "fewshot.method bootstrap needs the task's target field (fields.target) to show the model's own "
            "outputs as answers; the demos are training rows as labelled instead (method random)"
        )
        return [_demo(engine, r) for r in train], "random"
    rows = sorted(rng.sample(train, min(MAX_BOOTSTRAP_ROWS, len(train))))
    ev = await engine.evaluate(base, "train", rows, label="bootstrap")
    engine.record_trial(base, ev, iteration=0, origin="bootstrap", parent=None, accepted=True)
    passing = [f for f in ev.failures if f.get("passed") and isinstance(f.get("output"), str)]
    if not passing:
        engine.warn(
            f"fewshot bootstrap: none of the {len(rows)} training rows it ran passed "
            f"{engine.metric.name}, so there are no outputs of the model's own to show; the demos are training "
            "rows as labelled instead (method random). Fix the task first, or set fewshot.method: random"
        )
        return [_demo(engine, r) for r in train], "random"
    return [_demo(engine, int(f["row"]), str(f["output"]).strip()) for f in passing], method


async def run_fewshot(engine: Engine) -> dict[str, tuple[Candidate, Evaluation]]:
    """Evaluate demo sets on validation until the budget or the configured number of sets; candidate id -> result."""
    spec = engine.spec.fewshot
    rng = random.Random(engine.spec.seed)
    base = engine.baseline()
    engine.record_candidate(base, parents=[], origin="original")
    results: dict[str, tuple[Candidate, Evaluation]] = {}
    try:
        ev = await engine.evaluate(base, "val", label="val")
        results[base.id] = (base, ev)
        engine.record_trial(base, ev, iteration=0, origin="original", parent=None, accepted=True)
        pool, origin = await _pool(engine, rng, base)
        k = min(spec.max_demos, len(pool))
        if spec.method == "greedy":
            await _greedy(engine, base, pool, k, results, rng)
        else:
            for i in range(spec.candidates):
                engine.iteration = i + 1
                demos = rng.sample(pool, k)
                cand = Candidate(dict(base.components), demos, dict(base.params), base.model)
                if cand.id in results:
                    continue
                engine.record_candidate(cand, parents=[base], origin=origin, note=f"{k} demos")
                ev = await engine.evaluate(cand, "val", label="val")
                results[cand.id] = (cand, ev)
                engine.record_trial(cand, ev, iteration=i + 1, origin=origin, parent=base.id, accepted=True)
    except BudgetExhausted:
        pass
    return results


async def _greedy(
    engine: Engine,
    base: Candidate,
    pool: list[dict[str, Any]],
    k: int,
    results: dict[str, tuple[Candidate, Evaluation]],
    rng: random.Random,
) -> None:
    """Add, one at a time, the demo (of ``candidates`` drawn each round) that raises validation most."""
    current, current_ev = base, results[base.id][1]
    chosen: list[dict[str, Any]] = []
    for step in range(k):
        engine.iteration = step + 1
        left = [d for d in pool if d not in chosen]
        if not left:
            return
        best: tuple[Candidate, Evaluation] | None = None
        for demo in rng.sample(left, min(engine.spec.fewshot.candidates, len(left))):
            cand = Candidate(dict(base.components), [*chosen, demo], dict(base.params), base.model)
            engine.record_candidate(cand, parents=[current], origin="greedy", note=f"{len(chosen) + 1} demos")
            ev = await engine.evaluate(cand, "val", label="val")
            results[cand.id] = (cand, ev)
            better = best is None or ev.mean > best[1].mean
            engine.record_trial(cand, ev, iteration=step + 1, origin="greedy", parent=current.id, accepted=better)
            if better:
                best = (cand, ev)
        if best is None or best[1].mean <= current_ev.mean:
            return
        current, current_ev = best
        chosen = list(best[0].demos or [])
