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
from assay.hashing import sha256_hex
from assay.optimize.budget import Budget, BudgetExhausted, CallLog, CountingModel
from assay.optimize.candidate import Candidate, apply, diff, original_texts
from assay.optimize.journal import Journal
from assay.optimize.readout import failures, interval, run_ops
from assay.optimize.spec import OptimizeSpec
from assay.optimize.splits import subset_file

if TYPE_CHECKING:
    from assay.models.base import Model
    from assay.models.retry import RetryPolicy
    from assay.tasks import Task

__all__ = ["BudgetExhausted", "Engine", "Evaluation", "OptimizeError", "interval", "run_ops"]


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


def uncalibrated_objective(metric: str, evaluator: dict[str, Any], folder: Path) -> list[str]:
    """A warning when the objective is a judge with require_calibration and no matching calibration record."""
    from assay.evaluators.judge.calibration.gate import mark

    found = mark(evaluator, folder)
    if found is None or found["calibrated"]:
        return []
    return [f"the objective {metric} is an uncalibrated judge ({found['reason']}): its gains are unmeasured"]


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
        self.run_settings = run_settings
        self.journal = journal
        self.calls = Budget(budget, CallLog(folder))
        self.rows: list[dict[str, Any]] = list(task.dataset.rows)
        self.base_config = task.to_config()
        self.original = original_texts(task.config, spec.components)
        self.metric = task.metric(spec.metric or task.metrics[0].name)
        self.filter = spec.filter or (self.metric.filters or task.filters)[0]
        self.task_calls = 0  # calls of the task model charged to the budget (candidate runs)
        self.optimizer_calls = 0
        self.final_calls = 0  # calls of the final comparison on the test split (not charged)
        self.iteration = 0
        self.warnings: list[str] = []  # said in the output and recorded in optimization.json and summary.json
        self.warnings.extend(uncalibrated_objective(self.metric.name, self.metric.evaluator.to_config(), folder))
        self._seen: Counter[str] = Counter()
        self._charged: set[str] = set()  # evaluations paid for (or replayed) in this session: a repeat is free
        self._trials = 0
        self.target_field = task.fields.target
        self.log: Callable[[str], None] | None = None

    @property
    def used(self) -> int:
        """Model calls charged to the budget so far (every attempt, retries and calls cut off by a kill too)."""
        return self.calls.used

    @property
    def budget(self) -> int:
        """The budget of model calls."""
        return self.calls.limit

    @property
    def budget_usd(self) -> float | None:
        """The optional dollar cap: no step starts once this much has been spent."""
        return self.calls.usd_limit

    @budget_usd.setter
    def budget_usd(self, value: float | None) -> None:
        self.calls.usd_limit = value

    @property
    def spent_usd(self) -> float:
        """Dollars spent so far (with prices)."""
        return self.calls.spent_usd

    def warn(self, message: str) -> None:
        """A warning the user must see: logged now, and kept for optimization.json and summary.json."""
        if message not in self.warnings:
            self.warnings.append(message)
            if self.log is not None:
                self.log(f"warning: {message}")

    def close(self) -> None:
        """Close the call log."""
        self.calls.log.close()

    def finish_count(self) -> None:
        """Count calls earlier sessions made for steps this one never reached (nothing paid for goes unreported)."""
        done = {f"eval {e['key']}" for e in self.journal.of_kind("eval")}
        done |= {f"propose {e['key']}" for e in self.journal.of_kind("propose")}
        left = self.calls.unreplayed(done)
        for step, n in left.items():
            self.calls.used += n
            if step.startswith("propose "):
                self.optimizer_calls += n
            else:
                self.task_calls += n

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

    # ---- the budget ----------------------------------------------------------------------------------------

    def afford(self, calls: int) -> None:
        """Raise BudgetExhausted unless ``calls`` more fit the budget: a step is begun only when it can be finished."""
        self.calls.check(calls)

    def eval_cost(self, cand: Candidate, split: str, indices: list[int] | None = None) -> int:
        """The calls :meth:`evaluate` needs at least (none for an evaluation already paid for in this session)."""
        rows = sorted(self.splits[split] if indices is None else indices)
        return 0 if _eval_key(cand, split, rows) in self._charged else len(rows) * self.task.repeats

    def _spend_usd(self, ev: Evaluation) -> None:
        self.calls.spent_usd += float(ev.ops.get("model_cost_usd") or 0.0) + float(ev.ops.get("judge_cost_usd") or 0)

    def _spend_propose_usd(self, input_tokens: int, output_tokens: int) -> None:
        prices = (self.run_settings.get("prices") or {}).get(self.optimizer.name if self.optimizer else "")
        if prices:
            cost = input_tokens * prices.get("input", 0.0) + output_tokens * prices.get("output", 0.0)
            self.calls.spent_usd += cost / 1e6

    def retry_policy(self) -> RetryPolicy:
        """How the optimiser model's calls are retried: the candidate runs' attempts and timeout."""
        from assay.runner.session import attempt_timeout
        from assay.runner.settings import RunSettings

        settings = RunSettings.model_validate(self.run_settings)  # checked when the optimisation started
        assert self.optimizer is not None
        return settings.retry_policy(attempt_timeout(self.optimizer, settings))

    # ---- evaluation ----------------------------------------------------------------------------------------

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
        key = _eval_key(cand, split, rows)
        hit = self.journal.get("eval", key)
        if hit is not None:  # a replay after a resume (charged as it was then), or a repeat (no call: free)
            ev = _from_entry(hit)
            if key not in self._charged:
                self._charged.add(key)
                if charge:
                    self.calls.used += ev.calls
                    self.task_calls += ev.calls
                    self._spend_usd(ev)
                else:
                    self.final_calls += ev.calls
            return ev
        if charge:
            self.calls.check(len(rows) * self.task.repeats)
        step = f"eval {key}"
        earlier = self.calls.claim_earlier(step, charge=charge)  # calls a killed session made for this run
        ev = await self._run(cand, split, rows, key, label or split, step, charge)
        ev.calls += earlier
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
        self._charged.add(key)
        if charge:
            self.task_calls += ev.calls
            self._spend_usd(ev)
        else:
            self.final_calls += ev.calls
        return ev

    async def _run(
        self, cand: Candidate, split: str, rows: list[int], key: str, label: str, step: str, charge: bool
    ) -> Evaluation:
        from assay.api import arun_outcome, resolve_model
        from assay.results import load_run

        task = self.task_for(cand, split, rows)
        out_dir = self.folder / "runs" / f"{label}-{cand.id}-{key[:6]}"
        existing = sorted(p for p in out_dir.glob("*/run.json")) if out_dir.is_dir() else []
        model = resolve_model(cand.model if cand.model is not None else self.model, [task])
        counted = CountingModel(model, self.calls, step, charge=charge)
        if existing:  # started before an interruption: resume it, keeping what finished
            outcome = await arun_outcome(None, counted, resume=existing[0].parent, **_runtime(self.run_settings))
        else:
            outcome = await arun_outcome(task, counted, output_dir=out_dir, progress=False, **self.run_settings)
        if counted.exhausted:  # retries took the last calls: the run stopped before its end
            raise BudgetExhausted(f"the budget of {self.budget} model calls ran out inside {outcome.run_dir}")
        if outcome.status != "finished":
            raise OptimizeError(f"the evaluation run {outcome.run_dir} ended {outcome.status}: {outcome.message}")
        run = load_run(outcome.run_dir)
        values = run.sample_values(task.name, self.filter, self.metric.name).as_dict()
        scores = {rows[doc_id]: v for doc_id, v in values.items()}
        ops = run_ops(run.operational)
        found = failures(run, task.name, self.filter, self.metric.name, rows) if split == "train" else []
        return Evaluation(cand.id, split, rows, scores, str(outcome.run_dir), counted.calls, ops, found)

    # ---- the optimiser model -------------------------------------------------------------------------------

    async def propose(self, prompt: str, purpose: str) -> str:
        """One optimiser-model request (journaled by prompt and occurrence): its reply text. Each attempt is
        counted (and logged) before it is sent; a model that does not answer ends the optimisation (resumable)."""
        from assay.models.base import ModelError, Request, Response
        from assay.models.retry import call_with_retries

        if self.optimizer is None:
            raise OptimizeError(f"the {self.spec.strategy} strategy needs an optimiser model (--optimizer-model)")
        digest = sha256_hex(prompt)[:20]
        self._seen[digest] += 1
        key = f"{digest}#{self._seen[digest]}"
        hit = self.journal.get("propose", key)
        if hit is not None:
            attempts = int(hit.get("attempts") or 1)
            self.calls.used += attempts
            self.optimizer_calls += attempts
            self._spend_propose_usd(int(hit.get("input_tokens") or 0), int(hit.get("output_tokens") or 0))
            return str(hit["text"])
        self.calls.check(1)
        step = f"propose {key}"
        made = self.calls.claim_earlier(step, charge=True)  # attempts a killed session sent for this request
        request = Request(sample_id=f"optimizer-{purpose}", messages=[{"role": "user", "content": prompt}])
        optimizer = self.optimizer

        async def attempt() -> Response:
            nonlocal made
            self.calls.call(step, charge=True, durable=True)  # logged (and fsynced) before it is sent
            made += 1
            return await optimizer.generate(request)

        t0 = time.perf_counter()
        try:
            response, _ = await call_with_retries(attempt, self.retry_policy())
        except ModelError as err:
            raise OptimizeError(
                f"the optimiser model {optimizer.name!r} did not answer: {err}. The calls made are counted; fix the "
                "model (or --optimizer-base-url) and resume"
            ) from None
        finally:
            self.optimizer_calls += made
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
                "attempts": made,
            }
        )
        self._spend_propose_usd(response.usage.input_tokens, response.usage.output_tokens)
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
    from assay.runner.settings import RUNTIME_SETTINGS

    return {k: v for k, v in settings.items() if k in RUNTIME_SETTINGS} | {"progress": False}


def _eval_key(cand: Candidate, split: str, rows: list[int]) -> str:
    return sha256_hex({"cid": cand.id, "split": split, "rows": rows})[:20]


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
