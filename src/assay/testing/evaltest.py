"""Evaluations as test assertions: ``assert_eval`` runs a task (or inline cases) and fails with the failing samples'
reasons and feedback, the metric's interval and the run folder; ``SampleCase.check`` judges one sample's output.

Thin over the public API (``assay.api.run``); the pytest plugin only adds where runs go and per-sample parametrising.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.models.base import Request
    from assay.results import Run
    from assay.tasks import Sample, Task

MAX_SHOWN = 5
CLIP = 160

# Set by the pytest plugin while a test runs: where runs go, and a callback that records the run folder.
RUNS_DIR: ContextVar[Path | None] = ContextVar("assay_runs_dir", default=None)
ON_RUN: ContextVar[Any] = ContextVar("assay_on_run", default=None)


class EvalAssertionError(AssertionError):
    """An evaluation fell short; the message lists the metrics below their thresholds and the failing samples."""

    def __init__(self, message: str, run_dir: Path | None = None) -> None:
        super().__init__(message)
        self.run_dir = run_dir


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


def check_run(run: Run, min_score: Mapping[str, float], *, use: str = "mean", max_errors: int | None = 0) -> list[str]:
    """The problems that make ``run`` fail ``min_score`` (empty when it passes). ``use`` is "mean" (the point
    figure) or "ci_low" (the interval's lower bound must clear the threshold: the stricter, honest check)."""
    if use not in ("mean", "ci_low"):
        raise ConfigError(f"use: 'mean' or 'ci_low', got {use!r}")
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
                ok = checked is not None and (checked >= threshold if hib else checked <= threshold)
                too_many_errors = max_errors is not None and errored > max_errors
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


def _runs_dir(output_dir: str | Path | None) -> Path:
    if output_dir is not None:
        return Path(output_dir)
    return RUNS_DIR.get() or Path("runs") / "pytest"


def _finish(run: Run, min_score: Mapping[str, float] | None, use: str, max_errors: int | None) -> Run:
    __tracebackhide__ = True
    callback = ON_RUN.get()
    if callback is not None:
        callback(run.path)
    problems = check_run(run, min_score or {}, use=use, max_errors=max_errors)
    if problems:
        message = "evaluation below threshold\n" + "\n".join(problems) + f"\nrun folder: {run.path}"
        raise EvalAssertionError(message, run.path)
    return run


def assert_eval(
    task_or_cases: Any,
    model: Any = None,
    *,
    min_score: Mapping[str, float] | None = None,
    evaluators: Sequence[Any] | None = None,
    use: str = "mean",
    max_errors: int | None = 0,
    output_dir: str | Path | None = None,
    **settings: Any,
) -> Run:
    """Evaluate ``model`` on a task (object, file or config) or on inline cases and assert on the figures.

    ``min_score`` maps metric -> threshold (a maximum for lower-is-better metrics such as ``ter``). Raises
    :class:`EvalAssertionError` naming each metric that falls short, its interval, the failing samples' reasons
    and feedback, and the run folder (kept). Returns the :class:`~assay.results.Run` when it passes.
    """
    __tracebackhide__ = True
    from assay.api import run as run_eval

    task = _as_task(task_or_cases, evaluators)
    settings.setdefault("progress", False)
    run = run_eval(task, model, output_dir=_runs_dir(output_dir), **settings)
    return _finish(run, min_score, use, max_errors)


async def aassert_eval(
    task_or_cases: Any,
    model: Any = None,
    *,
    min_score: Mapping[str, float] | None = None,
    evaluators: Sequence[Any] | None = None,
    use: str = "mean",
    max_errors: int | None = 0,
    output_dir: str | Path | None = None,
    **settings: Any,
) -> Run:
    """Async :func:`assert_eval`, for ``async def`` tests (pytest-asyncio)."""
    __tracebackhide__ = True
    from assay.api import arun

    task = _as_task(task_or_cases, evaluators)
    settings.setdefault("progress", False)
    run = await arun(task, model, output_dir=_runs_dir(output_dir), **settings)
    return _finish(run, min_score, use, max_errors)


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
