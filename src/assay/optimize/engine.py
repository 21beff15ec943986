"""The evaluation engine strategies call: evaluate a candidate on (part of) a split as an ordinary run, ask the
optimiser model, keep the budget, and journal every step so a resumed optimisation replays for free.

Only the training split's failures (inputs, outputs, reasons, feedback) are kept for strategies; validation
evaluations yield scores alone, and the test split is evaluated only by the final comparison (``charge=False``).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.optimize.candidate import Candidate, apply, diff, original_texts
from assay.optimize.journal import Journal
from assay.optimize.spec import OptimizeSpec
from assay.optimize.splits import subset_file
from assay.tasks.hashing import sha256_hex

if TYPE_CHECKING:
    from assay.models.base import Model
    from assay.tasks import Task

MAX_FIELD = 2000  # characters of an input, output or feedback kept for the optimiser


class BudgetExhausted(Exception):
    """The next step would pass the budget of model calls."""


class OptimizeError(AssayError):
    """A candidate's evaluation run did not finish, or the optimisation cannot go on."""


@dataclass
class Evaluation:
    """One candidate on a set of samples: per-sample scores (by dataset row index), the run, what it cost."""

    cid: str
    split: str
    indices: list[int]
    scores: dict[int, float | None]
    run_dir: str
    calls: int
    ops: dict[str, Any] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)  # training split only

    @property
    def values(self) -> list[float]:
        """Every sample's score, an errored sample counting as a failure (0): what candidates are ranked by, so
        that a candidate cannot win by erroring wherever it would fail."""
        return [v or 0.0 for v in self.scores.values()]

    @property
    def errored(self) -> int:
        """Samples with no score (the model or an evaluator errored)."""
        return sum(1 for v in self.scores.values() if v is None)

    @property
    def mean(self) -> float:
        """Mean score, errored samples counting 0 (0 when there are no samples)."""
        vals = self.values
        return math.fsum(vals) / len(vals) if vals else 0.0

    @property
    def total(self) -> float:
        """Sum of scores (an errored sample counts 0)."""
        return math.fsum(self.values)


def interval(values: list[float], confidence: float = 0.95) -> tuple[float | None, float | None, float | None]:
    """Mean and the interval a run reports for such scores (Wilson for pass/fail, else the studentized bootstrap,
    clipped to [0, 1]; seeded, so a replay shows the same figures)."""
    import numpy as np

    from assay.results.intervals import headline_interval

    if not values:
        return None, None, None
    x = np.asarray(values, dtype=np.float64)
    binary = bool(np.all((x == 0.0) | (x == 1.0)))
    ci, _ = headline_interval(x, binary=binary, iters=2000, rng=np.random.default_rng(0), confidence=confidence)
    return float(x.mean()), (ci[0] if ci else None), (ci[1] if ci else None)


class Engine:
    """Everything a strategy may do that costs model calls, journaled; ``used`` counts calls so far (replayed too)."""

    def __init__(
        self,
        folder: Path,
        task: Task,
        model: Any,
        optimizer: Model | None,
        spec: OptimizeSpec,
        splits: dict[str, list[int]],
        budget: int,
        run_settings: dict[str, Any],
        journal: Journal,
    ) -> None:
        self.folder = folder
        self.task = task
        self.model = model
        self.optimizer = optimizer
        self.spec = spec
        self.splits = splits
        self.budget = budget
        self.run_settings = run_settings
        self.journal = journal
        self.rows: list[dict[str, Any]] = list(task.dataset.rows)
        self.base_config = task.to_config()
        self.original = original_texts(task.config, spec.components)
        self.metric = task.metric(spec.metric or task.metrics[0].name)
        self.filter = spec.filter or (self.metric.filters or task.filters)[0]
        self.used = 0
        self.budget_usd: float | None = None  # optional: stop before a step once this much has been spent
        self.spent_usd = 0.0
        self.optimizer_calls = 0
        self.iteration = 0
        self._seen: Counter[str] = Counter()
        self._charged: set[str] = set()  # evaluations paid for (or replayed) in this session: a repeat is free
        self._trials = 0
        self.target_field = task.fields.target
        self.log: Callable[[str], None] | None = None

    # ---- candidates ----------------------------------------------------------------------------------------

    def baseline(self) -> Candidate:
        """The task as written."""
        return Candidate(dict(self.original))

    def task_for(self, cand: Candidate, split: str, indices: list[int]) -> Task:
        """The candidate's task on the given rows (few-shot drawn from the training split when it samples)."""
        from assay.tasks import Task

        config = apply(self.base_config, cand, self.original, self.target_field)
        data_dir = self.folder / "data"
        config["dataset"] = {"path": str(subset_file(data_dir, self.rows, indices))}
        fewshot = config.get("fewshot")
        if isinstance(fewshot, dict) and fewshot.get("fixed") is None and fewshot.get("source") == "same":
            train = subset_file(data_dir, self.rows, self.splits["train"])
            config["fewshot"] = {**fewshot, "source": {"path": str(train)}}
        return Task.from_config(config, source=f"candidate {cand.id} of task {self.task.name!r}")

    # ---- evaluation ----------------------------------------------------------------------------------------

    def _charge(self, calls: int) -> None:
        if self.used + calls > self.budget:
            raise BudgetExhausted(f"{self.used} of {self.budget} model calls used; the next step needs {calls}")
        if self.budget_usd is not None and self.spent_usd >= self.budget_usd:
            raise BudgetExhausted(f"${self.spent_usd:.4f} of ${self.budget_usd:.4f} spent")

    def _spend_eval(self, ev: Evaluation) -> None:
        self.used += ev.calls
        self.spent_usd += float(ev.ops.get("model_cost_usd") or 0.0) + float(ev.ops.get("judge_cost_usd") or 0.0)

    def _spend_propose(self, input_tokens: int, output_tokens: int) -> None:
        self.used += 1
        self.optimizer_calls += 1
        prices = (self.run_settings.get("prices") or {}).get(self.optimizer.name if self.optimizer else "")
        if prices:
            cost = input_tokens * prices.get("input", 0.0) + output_tokens * prices.get("output", 0.0)
            self.spent_usd += cost / 1e6

    async def evaluate(
        self, cand: Candidate, split: str, indices: list[int] | None = None, *, label: str = "", charge: bool = True
    ) -> Evaluation:
        """Evaluate ``cand`` on ``indices`` of ``split`` (all of it by default) as an ordinary run folder."""
        if split == "test" and charge:
            raise OptimizeError("the test split is evaluated only by the final comparison")
        rows = sorted(self.splits[split] if indices is None else indices)
        allowed = set(self.splits[split])
        if not set(rows) <= allowed:
            raise OptimizeError(f"rows outside the {split} split were asked for")
        key = sha256_hex({"cid": cand.id, "split": split, "rows": rows})[:20]
        hit = self.journal.get("eval", key)
        if hit is not None:  # a replay after a resume (charged as it was then), or a repeat (no call: free)
            ev = _from_entry(hit)
            if charge and key not in self._charged:
                self._charged.add(key)
                self._spend_eval(ev)
            return ev
        if charge:
            self._charge(len(rows) * self.task.repeats)
        ev = await self._run(cand, split, rows, key, label or split)
        entry = {
            "kind": "eval",
            "key": key,
            "cid": cand.id,
            "split": split,
            "rows": rows,
            "scores": {str(k): v for k, v in ev.scores.items()},
            "run_dir": ev.run_dir,
            "calls": ev.calls,
            "ops": ev.ops,
            "failures": ev.failures,
            "charged": charge,
        }
        self.journal.append(entry)
        if charge:
            self._charged.add(key)
            self._spend_eval(ev)
        return ev

    async def _run(self, cand: Candidate, split: str, rows: list[int], key: str, label: str) -> Evaluation:
        from assay.api import arun_outcome, resolve_model
        from assay.results import load_run

        task = self.task_for(cand, split, rows)
        out_dir = self.folder / "runs" / f"{label}-{cand.id}-{key[:6]}"
        existing = sorted(p for p in out_dir.glob("*/run.json")) if out_dir.is_dir() else []
        model = resolve_model(cand.model if cand.model is not None else self.model, [task])
        if existing:  # started before an interruption: resume it, keeping what finished
            outcome = await arun_outcome(None, model, resume=existing[0].parent, **_runtime(self.run_settings))
        else:
            outcome = await arun_outcome(task, model, output_dir=out_dir, progress=False, **self.run_settings)
        if outcome.status != "finished":
            raise OptimizeError(f"the evaluation run {outcome.run_dir} ended {outcome.status}: {outcome.message}")
        run = load_run(outcome.run_dir)
        values = run.sample_values(task.name, self.filter, self.metric.name).as_dict()
        scores = {rows[doc_id]: v for doc_id, v in values.items()}
        ops = run_ops(run.operational)
        failures = _failures(run, task.name, self.filter, self.metric.name, rows) if split == "train" else []
        calls = int(ops["model_requests"] - ops["model_cache_hits"])
        return Evaluation(cand.id, split, rows, scores, str(outcome.run_dir), calls, ops, failures)

    # ---- the optimiser model -------------------------------------------------------------------------------

    async def propose(self, prompt: str, purpose: str) -> str:
        """One optimiser-model call (journaled by prompt and occurrence): its reply text."""
        from assay.models.base import Request
        from assay.runner.retry import RetryPolicy, call_with_retries

        if self.optimizer is None:
            raise OptimizeError(f"the {self.spec.strategy} strategy needs an optimiser model (--optimizer-model)")
        digest = sha256_hex(prompt)[:20]
        self._seen[digest] += 1
        key = f"{digest}#{self._seen[digest]}"
        hit = self.journal.get("propose", key)
        if hit is not None:
            self._spend_propose(int(hit.get("input_tokens") or 0), int(hit.get("output_tokens") or 0))
            return str(hit["text"])
        self._charge(1)
        request = Request(sample_id=f"optimizer-{purpose}", messages=[{"role": "user", "content": prompt}])
        t0 = time.perf_counter()
        optimizer = self.optimizer
        response, attempts = await call_with_retries(lambda: optimizer.generate(request), RetryPolicy())
        text = response.text or ""
        self.journal.append(
            {
                "kind": "propose",
                "key": key,
                "purpose": purpose,
                "prompt": prompt,
                "text": text,
                "input_tokens": response.usage.input_tokens,
                "output_tokens": response.usage.output_tokens,
                "seconds": time.perf_counter() - t0,
                "attempts": attempts,
            }
        )
        self._spend_propose(response.usage.input_tokens, response.usage.output_tokens)
        return text

    # ---- bookkeeping ---------------------------------------------------------------------------------------

    def record_candidate(
        self,
        cand: Candidate,
        *,
        parents: list[Candidate],
        origin: str,
        component: str | None = None,
        failures: list[dict[str, Any]] | None = None,
        note: str = "",
    ) -> None:
        """Lineage: a candidate's parents, what produced it (failures and their feedback) and its text diff."""
        if self.journal.get("candidate", cand.id) is not None:
            return
        parent = parents[0] if parents else None
        self.journal.append(
            {
                "kind": "candidate",
                "key": cand.id,
                "candidate": cand.to_dict(),
                "parents": [p.id for p in parents],
                "origin": origin,
                "component": component,
                "failures": [
                    {k: f.get(k) for k in ("sample_id", "input", "output", "reason", "feedback", "score")}
                    for f in failures or ()
                ],
                "note": note,
                "diff": diff(parent, cand, parent.id if parent else "original", cand.id),
            }
        )

    def record_trial(self, cand: Candidate, ev: Evaluation | None, **extra: Any) -> None:
        """One row of the trials table (journaled once per position, so a replay writes nothing twice)."""
        self._trials += 1
        key = str(self._trials)
        if self.journal.get("trial", key) is not None:
            return
        mean, lo, hi = interval(ev.values) if ev is not None else (None, None, None)
        if self.log is not None:
            shown = "-" if mean is None else f"{mean:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")
            where = ev.split if ev is not None else "-"
            self.log(
                f"trial {self._trials:>3}  {extra.get('origin', ''):<14} {cand.id}  {where:<5} {shown:<24} "
                f"{'kept' if extra.get('accepted') else 'dropped'}  calls {self.used}/{self.budget}"
            )
        self.journal.append(
            {
                "kind": "trial",
                "key": key,
                "trial": self._trials,
                "cid": cand.id,
                "split": ev.split if ev is not None else None,
                "n": len(ev.values) if ev is not None else 0,
                "errored": ev.errored if ev is not None else 0,
                "mean": mean,
                "ci_low": lo,
                "ci_high": hi,
                "calls_used": self.used,
                "run_dir": ev.run_dir if ev is not None else None,
                **extra,
            }
        )


def _runtime(settings: dict[str, Any]) -> dict[str, Any]:
    from assay.runner.session import RUNTIME_SETTINGS

    return {k: v for k, v in settings.items() if k in RUNTIME_SETTINGS} | {"progress": False}


def _from_entry(entry: dict[str, Any]) -> Evaluation:
    scores = {int(k): v for k, v in entry["scores"].items()}
    return Evaluation(
        entry["cid"],
        entry["split"],
        list(entry["rows"]),
        scores,
        entry["run_dir"],
        int(entry["calls"]),
        entry.get("ops") or {},
        entry.get("failures") or [],
    )


def run_ops(operational: dict[str, Any]) -> dict[str, Any]:
    """A run's operational figures summed per role: requests, cache hits, tokens, p95 latency, cost."""
    out: dict[str, Any] = {}
    for role in ("model", "judge"):
        figures = list(((operational.get("roles") or {}).get(role) or {}).values())
        out[f"{role}_requests"] = sum(int(f.get("requests") or 0) for f in figures)
        out[f"{role}_cache_hits"] = sum(int(f.get("cache_hits") or 0) for f in figures)
        out[f"{role}_tokens"] = sum(int(f.get("input_tokens") or 0) + int(f.get("output_tokens") or 0) for f in figures)
        costs = [f.get("cost_usd") for f in figures if f.get("cost_usd") is not None]
        out[f"{role}_cost_usd"] = math.fsum(costs) if costs else None
        p95 = [float(p) for f in figures if (p := (f.get("latency_s") or {}).get("p95")) is not None]
        out[f"{role}_latency_p95"] = max(p95) if p95 else None
    return out


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 3] + "..."


def _failures(run: Any, task: str, filter_name: str, metric: str, rows: list[int]) -> list[dict[str, Any]]:
    """Each training sample's input, output, score, reason and feedback (passing ones too, marked by score)."""
    out: list[dict[str, Any]] = []
    for rec in run.task_records(task):
        fr = rec.filters.get(filter_name)
        verdicts = (fr.verdicts.get(metric) if fr is not None else None) or []
        first = verdicts[0] if verdicts else {}
        response = rec.responses[0] if rec.responses else None
        score = fr.scores.get(metric) if fr is not None else None
        out.append(
            {
                "row": rows[rec.doc_id],
                "sample_id": rec.sample_id,
                "input": _clip(rec.prompt),
                "output": _clip(response.text if response is not None else rec.error),
                "target": rec.target if isinstance(rec.target, str | int | float) else _clip(rec.target),
                "score": score,
                "passed": fr.passed.get(metric) if fr is not None else None,
                "reason": _clip(first.get("reason") or first.get("error")),
                "feedback": _clip(first.get("feedback")),
            }
        )
    return out
