"""Evaluations as test assertions: ``assert_eval`` runs a task (or inline cases) and fails with the failing samples'
reasons and feedback, the metric's interval and the run folder; ``SampleCase.check`` judges one sample's output.

Thin over the public API (``assay.api.run``); the pytest plugin adds where runs go, per-sample parametrising and
the isolation of each evaluation from the test session (:mod:`assay.testing.isolation`). Every message written
goes through :func:`assay.secrets.redact_text`: a model spec's credentials never reach a report or JUnit file.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError, ConfigError
from assay.secrets import redact_text
from assay.testing.failure import EvalAssertionError

if TYPE_CHECKING:
    from assay.models.base import Request
    from assay.results import Run
    from assay.tasks import Sample, Task

MAX_SHOWN = 5
CLIP = 160

GATES = ("mean", "each")

# Set by the pytest plugin while a test runs: where runs go, a callback that records the run folder, one that notes
# that the test evaluated something, and how evaluations are isolated from the session (None: not at all).
RUNS_DIR: ContextVar[Path | None] = ContextVar("assay_runs_dir", default=None)
ON_RUN: ContextVar[Any] = ContextVar("assay_on_run", default=None)
ON_EVAL: ContextVar[Any] = ContextVar("assay_on_eval", default=None)
ISOLATION: ContextVar[str | None] = ContextVar("assay_isolation", default=None)


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= CLIP else text[: CLIP - 1] + "…"


def cases_task(cases: Sequence[Any], evaluators: Sequence[Any] | None, name: str = "cases") -> Task:
    """A task from inline cases: dicts with ``input`` and ``expected`` (and optional ``id``), or (input, expected)."""
    from assay.tasks import Task

    rows = []
    for i, case in enumerate(cases):
        if isinstance(case, Mapping):
            if "input" not in case:
                raise ConfigError(
                    f"cases[{i}]: a case needs an 'input' (and usually 'expected'), got keys {sorted(case)}"
                )
            rows.append({"id": str(case.get("id", i)), **{k: v for k, v in case.items() if k != "id"}})
        elif isinstance(case, tuple | list) and len(case) == 2:
            rows.append({"id": str(i), "input": case[0], "expected": case[1]})
        else:
            raise ConfigError(f"cases[{i}]: a case is {{input, expected}} or (input, expected), got {case!r}")
    for row in rows:
        row.setdefault("expected", None)
    return Task.from_config(
        {
            "name": name,
            "dataset": {"rows": rows},
            "fields": {"id": "id", "input": "input", "target": "expected"},
            "template": "{{ input }}",
            "evaluators": list(evaluators) if evaluators else ["exact_match"],
        }
    )


def _as_task(task_or_cases: Any, evaluators: Sequence[Any] | None) -> Task:
    from assay.tasks import Task, load_task

    if isinstance(task_or_cases, Task):
        return task_or_cases
    if isinstance(task_or_cases, str | Path | Mapping):
        return load_task(task_or_cases if not isinstance(task_or_cases, Mapping) else dict(task_or_cases))
    if isinstance(task_or_cases, Sequence):
        return cases_task(task_or_cases, evaluators)
    raise ConfigError(
        f"assert_eval: expected a Task, a task file, a config dict or a list of cases, got {task_or_cases!r}"
    )


def _failing_samples(run: Run, task: str, metric: str, filter_name: str) -> list[str]:
    lines: list[str] = []
    failing = 0
    for rec in run.task_records(task):
        fr = rec.filters.get(filter_name)
        verdicts = fr.verdicts.get(metric, []) if fr is not None else []
        bad = [v for v in verdicts if not v.get("passed")]
        if rec.error:
            bad = bad or [{"error": rec.error}]
        if not bad and verdicts:
            continue
        failing += 1
        if len(lines) >= MAX_SHOWN * 4:
            continue
        v = bad[0] if bad else {"error": "no verdict"}
        output = fr.filtered[0] if fr is not None and fr.filtered else None
        lines.append(f"  - sample {rec.sample_id!r}: prompt {_clip(rec.prompt[-CLIP:])}")
        lines.append(f"      output {_clip(output)}  expected {_clip(rec.target)}")
        if v.get("error"):
            lines.append(f"      error: {_clip(v['error'])}")
        else:
            lines.append(f"      reason: {_clip(v.get('reason'))}")
            if v.get("feedback"):
                lines.append(f"      feedback: {_clip(v['feedback'])}")
    if failing > MAX_SHOWN:
        lines.append(f"  … and {failing - MAX_SHOWN} more failing sample(s)")
    return lines


def _headline_ci(entry: Mapping[str, Any]) -> tuple[list[float] | None, str]:
    """The metric's headline interval and how it was computed (older results have only the t / bootstrap ones)."""
    if entry.get("ci"):
        return entry["ci"], str(entry.get("ci_method") or "interval")
    if entry.get("ci_bootstrap"):
        return entry["ci_bootstrap"], "bootstrap"
    return entry.get("ci_t"), "t"


def _interval(entry: Mapping[str, Any]) -> str:
    ci, method = _headline_ci(entry)
    if not ci or ci[0] is None:
        return "no interval (fewer than 2 scored samples)"
    return f"{round(100 * float(entry.get('confidence', 0.95)))}% CI [{ci[0]:.3f}, {ci[1]:.3f}] ({method})"


def _below_each(
    run: Run, task: str, metric: str, filter_name: str, threshold: float, higher_is_better: bool
) -> tuple[int, int, list[str]]:
    """For the ``each`` gate: how many scored samples miss ``threshold``, of how many, and lines showing them."""
    lines: list[str] = []
    missed = scored = 0
    for rec in run.task_records(task):
        fr = rec.filters.get(filter_name)
        score = fr.scores.get(metric) if fr is not None else None
        if score is None:  # errored or not applicable: counted apart (max_errors), never a miss
            continue
        scored += 1
        if score >= threshold if higher_is_better else score <= threshold:
            continue
        missed += 1
        if missed > MAX_SHOWN:
            continue
        verdicts = fr.verdicts.get(metric, []) if fr is not None else []
        v = next((v for v in verdicts if not v.get("passed")), verdicts[0] if verdicts else {})
        output = fr.filtered[0] if fr is not None and fr.filtered else None
        lines.append(f"  - sample {rec.sample_id!r}: {metric} = {score:.3f}; prompt {_clip(rec.prompt[-CLIP:])}")
        lines.append(f"      output {_clip(output)}  expected {_clip(rec.target)}")
        lines.append(f"      reason: {_clip(v.get('reason'))}")
        if v.get("feedback"):
            lines.append(f"      feedback: {_clip(v['feedback'])}")
    if missed > MAX_SHOWN:
        lines.append(f"  … and {missed - MAX_SHOWN} more sample(s) below the threshold")
    return missed, scored, lines


def check_run(
    run: Run, min_score: Mapping[str, float], *, use: str = "mean", max_errors: int | None = 0, gate: str = "mean"
) -> list[str]:
    """The problems that make ``run`` fail ``min_score`` (empty when it passes).

    ``gate="mean"`` checks the figure over the samples: ``use`` is "mean" (the point figure) or "ci_low" (the
    interval's lower bound must clear the threshold: the stricter, honest check). ``gate="each"`` asks every
    scored sample to clear the threshold on its own (as DeepEval's test cases do); errored samples are counted apart,
    by ``max_errors``, in both gates."""
    if use not in ("mean", "ci_low"):
        raise ConfigError(f"use: 'mean' or 'ci_low', got {use!r}")
    if gate not in GATES:
        raise ConfigError(f"gate: 'mean' (the figure over the samples) or 'each' (every sample), got {gate!r}")
    if gate == "each" and use != "mean":
        raise ConfigError("use='ci_low' is a check of the figure over the samples: it goes with gate='mean'")
    problems: list[str] = []
    tasks = run.settings.get("tasks", {})
    for task, info in tasks.items():
        for filter_name, metrics in info.get("filters", {}).items():
            for metric, threshold in min_score.items():
                entry = metrics.get(metric)
                if entry is None:
                    continue
                value = entry.get("mean")
                ci, _ = _headline_ci(entry)
                checked = value if use == "mean" else (ci[0] if ci else None)
                errored = int(entry.get("n_errored", 0))
                hib = entry.get("higher_is_better", True)
                too_many_errors = max_errors is not None and errored > max_errors
                if gate == "each":
                    problems.extend(
                        _each_problems(run, task, metric, filter_name, threshold, bool(hib), entry, too_many_errors)
                    )
                    if too_many_errors:
                        problems.append(f"  {errored} sample(s) errored (allowed: {max_errors})")
                    continue
                ok = checked is not None and (checked >= threshold if hib else checked <= threshold)
                if ok and not too_many_errors:
                    continue
                shown = "no value" if checked is None else f"{checked:.3f}"
                op = "<" if hib else ">"
                what = metric if use == "mean" else f"{metric} (CI lower bound)"
                head = f"{task}: {what} = {shown} {op} {threshold}" if not ok else f"{task}: {metric} = {shown}"
                head += f"  [{_interval(entry)}; n={entry.get('n_scored')} scored, {errored} errored"
                head += f"; filter {filter_name}]" if filter_name != "none" else "]"
                if too_many_errors:
                    head += f"\n  {errored} sample(s) errored (allowed: {max_errors})"
                problems.append(head)
                problems.extend(_failing_samples(run, task, metric, filter_name))
    known = {m for info in tasks.values() for ms in info.get("filters", {}).values() for m in ms}
    for metric in min_score:
        if metric not in known:
            problems.append(f"min_score names {metric!r}, which the run did not measure (measured: {sorted(known)})")
    return problems


def _each_problems(
    run: Run,
    task: str,
    metric: str,
    filter_name: str,
    threshold: float,
    hib: bool,
    entry: Mapping[str, Any],
    too_many_errors: bool,
) -> list[str]:
    missed, scored, lines = _below_each(run, task, metric, filter_name, threshold, hib)
    if not missed and scored and not too_many_errors:
        return []
    op = ">=" if hib else "<="
    head = f"{task}: {missed} of {scored} sample(s) miss {metric} {op} {threshold} (gate each)"
    if not scored:
        head = f"{task}: no sample was scored on {metric} (gate each)"
    head += f"  [mean {metric} = {_fmt(entry.get('mean'))}; {int(entry.get('n_errored', 0))} errored"
    head += f"; filter {filter_name}]" if filter_name != "none" else "]"
    return [head, *lines]


def _fmt(value: Any) -> str:
    return "no value" if value is None else f"{float(value):.3f}"


def _runs_dir(output_dir: str | Path | None) -> Path:
    if output_dir is not None:
        return Path(output_dir)
    return RUNS_DIR.get() or Path("runs") / "pytest"


def _finish(run: Run, min_score: Mapping[str, float] | None, use: str, max_errors: int | None, gate: str) -> Run:
    __tracebackhide__ = True
    callback = ON_RUN.get()
    if callback is not None:
        callback(run.path)
    problems = check_run(run, min_score or {}, use=use, max_errors=max_errors, gate=gate)
    decision = run.manifest.config.get("decision")
    if isinstance(decision, Mapping) and decision.get("state") != "holds":  # decide=: the claim must hold
        problems.insert(0, str(decision.get("sentence")))
    if problems:
        message = "evaluation below threshold\n" + "\n".join(problems) + f"\nrun folder: {run.path}"
        raise EvalAssertionError(message, run.path)
    return run


def _noted() -> None:
    callback = ON_EVAL.get()
    if callback is not None:
        callback()


def _redacted(err: AssayError) -> AssayError:
    """An assay error of the evaluation (a run that failed, a bad task) with its message redacted and without the
    frames it came through, whose arguments (a model spec with its key) a test report would print."""
    err.args = tuple(redact_text(a) if isinstance(a, str) else a for a in err.args)
    return err.with_traceback(None)


def _run_dir_of(task: Task, model: Any, runs: Path, settings: dict[str, Any]) -> Path:
    """Run the evaluation and return its folder, without loading the results (the caller loads them)."""
    from assay.api import RunFailed, arun_outcome, run_sync
    from assay.api import run as run_eval

    if "format" in settings or "quiet" in settings:  # what only assay.run does: print the table, …
        return run_eval(task, model, output_dir=runs, **settings).path
    outcome = run_sync(arun_outcome(task, model, output_dir=runs, **settings))
    if outcome.stopped_by is not None:
        raise RunFailed(outcome)
    return outcome.run_dir


def _evaluate(task: Task, model: Any, output_dir: str | Path | None, settings: dict[str, Any]) -> Run:
    """Run the evaluation, isolated from the test session as the pytest plugin says (:mod:`assay.testing.isolation`)."""
    __tracebackhide__ = True
    from assay.api import run as run_eval
    from assay.results import load_run

    _noted()
    runs = _runs_dir(output_dir)
    settings.setdefault("progress", False)
    mode = ISOLATION.get()
    try:
        if mode is None:
            return run_eval(task, model, output_dir=runs, **settings)
        from assay.testing.isolation import isolated

        path = isolated(mode, lambda: _run_dir_of(task, model, runs, settings), runs)
    except AssayError as err:
        raise _redacted(err) from None
    return load_run(path)


def assert_eval(
    task_or_cases: Any,
    model: Any = None,
    *,
    min_score: Mapping[str, float] | None = None,
    evaluators: Sequence[Any] | None = None,
    use: str = "mean",
    gate: str = "mean",
    max_errors: int | None = 0,
    output_dir: str | Path | None = None,
    **settings: Any,
) -> Run:
    """Evaluate ``model`` on a task (object, file or config) or on inline cases and assert on the figures.

    ``min_score`` maps metric -> threshold (a maximum for lower-is-better metrics such as ``ter``). ``gate="mean"``
    (the default) asks the figure over the samples to clear it (``use="ci_low"``: its interval's lower bound);
    ``gate="each"`` asks every sample to clear it on its own. Raises :class:`EvalAssertionError` naming each metric
    that falls short, its interval, the failing samples' reasons and feedback, and the run folder (kept). Returns the
    :class:`~assay.results.Run` when it passes. ``settings`` are :func:`assay.run`'s keywords; with
    ``decide="METRIC>=VALUE"`` the run stops as soon as the claim is decided (:mod:`assay.runner.decide`) and the
    assertion fails unless it holds.
    """
    __tracebackhide__ = True
    task = _as_task(task_or_cases, evaluators)
    _check_gate(use, gate)
    run = _evaluate(task, model, output_dir, settings)
    return _finish(run, min_score, use, max_errors, gate)


def _check_gate(use: str, gate: str) -> None:
    """Refuse a bad ``use`` / ``gate`` before anything is run (check_run checks them again on the run)."""
    if gate not in GATES:
        raise ConfigError(f"gate: 'mean' (the figure over the samples) or 'each' (every sample), got {gate!r}")
    if use not in ("mean", "ci_low"):
        raise ConfigError(f"use: 'mean' or 'ci_low', got {use!r}")
    if gate == "each" and use != "mean":
        raise ConfigError("use='ci_low' is a check of the figure over the samples: it goes with gate='mean'")


async def aassert_eval(
    task_or_cases: Any,
    model: Any = None,
    *,
    min_score: Mapping[str, float] | None = None,
    evaluators: Sequence[Any] | None = None,
    use: str = "mean",
    gate: str = "mean",
    max_errors: int | None = 0,
    output_dir: str | Path | None = None,
    **settings: Any,
) -> Run:
    """Async :func:`assert_eval`, for ``async def`` tests (pytest-asyncio)."""
    __tracebackhide__ = True
    from assay.api import arun

    task = _as_task(task_or_cases, evaluators)
    _check_gate(use, gate)
    if ISOLATION.get() is not None:  # forked (or guarded) from a worker thread, while this loop goes on
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        run = await loop.run_in_executor(None, lambda: context.run(_evaluate, task, model, output_dir, settings))
    else:
        _noted()
        settings.setdefault("progress", False)
        try:
            run = await arun(task, model, output_dir=_runs_dir(output_dir), **settings)
        except AssayError as err:
            raise _redacted(err) from None
    return _finish(run, min_score, use, max_errors, gate)


@dataclass(frozen=True)
class SampleCase:
    """One dataset sample as a test case (from the ``assay_samples`` marker): ``input``, ``target``, ``check``."""

    task: Task
    sample: Sample

    @property
    def id(self) -> str:
        return self.sample.id

    @property
    def input(self) -> Any:
        return self.sample.input

    @property
    def target(self) -> Any:
        return self.sample.target

    @property
    def doc(self) -> dict[str, Any]:
        return self.sample.doc

    def request(self, repeat: int = 0) -> Request:
        """The request the task would send for this sample (messages, tools, generation parameters)."""
        return self.task.build_request(self.sample, repeat)

    def prompt(self) -> str:
        """The rendered prompt the task would send for this sample, as text."""
        return self.task.prompt_text(self.request())

    def check(self, output: Any) -> dict[str, Any]:
        """Judge ``output`` with every metric of the task; raise with reasons and feedback when any fails.
        Returns ``{metric: Verdict dict}`` when all pass."""
        __tracebackhide__ = True
        from assay.api import run_sync
        from assay.models.base import Response
        from assay.runner.scoring import score_sample

        response = output if isinstance(output, Response) else Response(text=None if output is None else str(output))
        records, _ = run_sync(score_sample(self.task, self.sample, [response], [None], self.prompt()))
        failures: list[str] = []
        out: dict[str, Any] = {}
        for filter_name, record in records.items():
            for metric, verdicts in record.verdicts.items():
                for v in verdicts:
                    out[metric if filter_name == "none" else f"{metric},{filter_name}"] = v
                    if v.get("passed"):
                        continue
                    label = metric if filter_name == "none" else f"{metric} (filter {filter_name})"
                    if v.get("error"):
                        failures.append(f"{label}: error: {_clip(v['error'])}")
                    else:
                        failures.append(f"{label}: {_clip(v.get('reason'))}")
                        if v.get("feedback"):
                            failures.append(f"  feedback: {_clip(v['feedback'])}")
        _noted()
        if failures:
            shown = _clip(response.text)
            if response.tool_calls:
                shown += f" (tool calls: {', '.join(c.name for c in response.tool_calls)})"
            head = f"sample {self.sample.id!r} of task {self.task.name!r} failed\n"
            head += f"  input {_clip(self.sample.input)}\n  output {shown}  expected {_clip(self.sample.target)}\n"
            raise EvalAssertionError(head + "\n".join(f"  {line}" for line in failures))
        return out


def case_id(case: SampleCase) -> str:
    """A pytest id for a sample: its id, made safe for ``-k`` expressions."""
    return re.sub(r"[^\w.\-]+", "_", case.sample.id) or str(case.sample.doc_id)
