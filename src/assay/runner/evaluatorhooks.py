"""What a run tells its tasks' evaluators and asks of them: the judge models they call (for the manifest), the run's
cache switch and price table handed to those that keep their own, and the release of what they hold when it ends.
Below the session, the re-score and the workers, which all deal with evaluators this way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.tasks import Task


def task_judges(task: Task) -> list[dict[str, Any]]:
    """The judge models a task's evaluators call (each names its role), for the manifest."""
    found: list[dict[str, Any]] = []
    for metric in task.metrics:
        judges = getattr(metric.evaluator, "judges", None)
        if callable(judges):
            found.extend({**j, "metric": metric.name, "task": task.name} for j in judges())
    return found


def share_run_cache(tasks: list[Task], enabled: bool, path: Path | None) -> None:
    """Hand the run's cache switch (one for every cache, off by default) to the evaluators that keep one of their
    own (a judge's answers), so they follow it unless their options say otherwise."""
    for task in tasks:
        for metric in task.metrics:
            use = getattr(metric.evaluator, "use_run_cache", None)
            if callable(use):
                use(enabled, path)


def share_run_prices(tasks: list[Task], prices: dict[str, dict[str, float]] | None) -> None:
    """Hand the run's price table (``--prices``) to the evaluators that judge cost (promptfoo's ``cost`` check)."""
    for task in tasks:
        for metric in task.metrics:
            use = getattr(metric.evaluator, "use_run_prices", None)
            if callable(use):
                use(prices or {})


async def close_evaluators(tasks: list[Task]) -> None:
    """Release what the tasks' evaluators hold (judge connections)."""
    for task in tasks:
        for metric in task.metrics:
            await metric.evaluator.aclose()
