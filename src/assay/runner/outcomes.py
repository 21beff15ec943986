"""What the request loop reports: each request's outcome, and why a run stops before its end. Below the scheduler
and what it calls (an agent's trajectories), so that both speak of them."""

from __future__ import annotations

from dataclasses import dataclass

from assay.errors import AssayError
from assay.models.base import Response


class StopRun(AssayError):
    """The run must stop before its end; samples not yet answered stay pending for ``--resume``."""


class ErrorRateExceeded(StopRun):
    """The run stopped because too many samples failed (``max_error_rate``)."""


class WorkerLost(StopRun):
    """Workers running the run's samples (forked processes, Ray actors) died; finished samples are kept and a
    resume redoes the rest."""


class ModelAccessError(StopRun):
    """The model refused every request (401, 403, 404 model not found): sending the rest would be wasted."""


class ToolsUnavailable(StopRun):
    """An agent task's run-long tools (an MCP server) could not start: the run stops before any trajectory runs
    without them (:mod:`assay.runner.trajectories`)."""


@dataclass
class RequestOutcome:
    """What one request came to: a response (``cached`` when from the response cache), or why there is none."""

    response: Response | None
    error: str | None
    cached: bool


class Decided(StopRun):
    """The claim of ``--decide`` was decided (:mod:`assay.runner.decide`): the run stops, its samples so far kept."""


class OutOfScale(StopRun):
    """``--decide`` met a metric value outside [0, 1], which its confidence sequence cannot take."""


class BudgetSpent(StopRun):
    """``--budget-usd`` was reached (:mod:`assay.runner.budget`): the run stops; a larger budget resumes it."""


class BudgetUnmeasured(StopRun):
    """A provider reported no usage under ``--budget-usd``: the spend cannot be measured, so the run stops."""
