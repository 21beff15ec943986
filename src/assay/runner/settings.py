"""How a run executes (``RunSettings``, recorded in run.json) and how it ended (``RunOutcome``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.models.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_RETRY_BUDGET, RetryPolicy
from assay.runner.executors import ExecutorName, RayOptions
from assay.runner.exits import DEFAULT_MAX_ERROR_RATE, DEFAULT_MAX_RESPONSE_CHARS
from assay.secrets import redact_spec

if TYPE_CHECKING:
    from assay.tasks import Task

# the settings a resumed run may change: how it executes, never what it evaluates or how results are computed
RUNTIME_SETTINGS = frozenset(
    {
        "concurrency",
        "timeout_s",
        "max_attempts",
        "retry_deadline_s",
        "retry_budget",
        "max_error_rate",
        "budget_usd",  # a run stopped at its budget resumes with a larger one
        "max_environments",
        "cache",
        "cache_path",
        "name",
        "progress",
        "max_response_chars",
        "executor",
        "ray",
        "processes",
    }
)
RESULTS_OPTIONS = {
    "error_policy",
    "bootstrap_iters",
    "seed",
    "cluster_key",
    "repeat_reduction",
    "group_weighting",
    "confidence",
    "prices",
}


class RunSettings(BaseModel):
    """Everything about how a run executes (not what it evaluates); recorded in run.json."""

    model_config = ConfigDict(extra="forbid")

    output_dir: Path = Path("runs")
    name: str | None = Field(default=None, min_length=1, max_length=200)  # the run's label (reports, compare)
    limit: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=32, ge=1, le=4096)
    # the one cache switch (model answers and judges' answers): None: on when a task says ``cache: true``; the
    # response cache is opt-in (a judge's own ``cache`` option, when set, decides for that judge)
    cache: bool | None = None
    cache_path: Path | None = None
    timeout_s: float | None = Field(default=None, gt=0)  # None: the model's own timeout_s, else 60 s
    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    # no retry starts later than this after a request's first attempt; None: the longer of 120 s and two timeouts
    retry_deadline_s: float | None = Field(default=None, gt=0)
    # retries (of errors other than 429s) add at most this share to the requests sent, plus a reserve; None: no cap
    retry_budget: float | None = Field(default=DEFAULT_RETRY_BUDGET, ge=0)
    max_error_rate: float | None = Field(default=DEFAULT_MAX_ERROR_RATE, ge=0, le=1)  # None: no limit
    max_response_chars: int | None = Field(default=DEFAULT_MAX_RESPONSE_CHARS, ge=1)  # None: keep answers whole
    error_policy: Literal["exclude", "as_zero", "fail"] = "exclude"
    bootstrap_iters: int = Field(default=10_000, ge=0)
    seed: int = 1234
    cluster_key: str | None = None  # metadata key whose samples share a cluster (clustered stderr)
    repeat_reduction: Literal["mean", "max", "min", "majority"] = "mean"
    group_weighting: Literal["size", "equal"] = "size"
    confidence: float = Field(default=0.95, gt=0, lt=1)
    prices: dict[str, dict[str, float]] | None = None  # model -> {"input": usd per 1M tokens, "output": …}
    feedback_model: str | dict[str, Any] | None = None  # a model spec that rewrites failing verdicts' feedback
    progress: bool | None = None  # None: show it when writing to a terminal
    executor: ExecutorName = "local"  # who runs the work: this process, or a Ray cluster (assay[ray])
    ray: RayOptions = Field(default_factory=RayOptions)
    # processes scoring offline work (a predictions run) with the local executor, and scanning a large
    # samples.jsonl for the results; None: one per CPU (at most 8)
    processes: int | None = Field(default=None, ge=1)
    # stop as soon as this claim is decided (``METRIC>=VALUE`` or ``METRIC>=baseline-D``; see runner.decide)
    decide: str | None = None
    decide_alpha: float = Field(default=0.05, gt=0, lt=1)  # each wrong decision's chance is at most half of it
    decide_baseline: Path | None = None  # the run a ``>=baseline-D`` claim pairs with, by sample id
    budget_usd: float | None = Field(default=None, gt=0)  # the most the run may spend, at ``prices`` (runner.budget)
    max_environments: int = Field(default=32, ge=1, le=4096)  # agent environments alive at once (runner.environments)

    @field_validator("name")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value)):
            raise ValueError("a run name is one line of text without leading or trailing spaces")
        return value

    def retry_policy(self, timeout_s: float) -> RetryPolicy:
        """How the run retries a failed request (each attempt bounded by ``timeout_s``)."""
        return RetryPolicy(
            max_attempts=self.max_attempts,
            timeout_s=timeout_s,
            deadline_s=self.retry_deadline_s,
            retry_budget=self.retry_budget,
        )

    def results_options(self) -> dict[str, Any]:
        """The settings that shape results.json (passed to write_results)."""
        return self.model_dump(include=RESULTS_OPTIONS)

    def recorded(self) -> dict[str, Any]:
        """The settings as stored in the manifest (paths as strings, no credentials in a feedback model's spec)."""
        out = self.model_dump(mode="json", exclude={"progress"})
        out["feedback_model"] = redact_spec(out["feedback_model"])
        return out

    def use_cache(self, tasks: list[Task]) -> bool:
        """Whether the run reads and writes the response cache: as set, else when a task asks for it."""
        if self.cache is not None:
            return self.cache
        return any(task.config.cache for task in tasks)


class RunOutcome(BaseModel):
    """Where the run is and how it ended."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_dir: Path
    status: str  # finished | failed | interrupted
    name: str | None = None  # the run's name (``--name``), if it has one
    written: int
    skipped: int
    errors: int  # samples whose model request failed (this session)
    cache_hits: int  # model answers served from the response cache
    requests: int
    retries: int
    seconds: float
    evaluator_errors: int = 0  # samples with an error verdict (this session)
    judge_cache_hits: int = 0  # judge calls answered from the response cache (this session)
    cache_oldest: float | None = None  # when the oldest / newest answer served from the cache was written
    cache_newest: float | None = None
    truncated: int = 0  # responses stored shortened in samples.jsonl (scored whole)
    limit_stops: int = 0  # agent trajectories ended by a limit (max_turns, ...): scored failures
    message: str | None = None
    first_error: str | None = None  # "task/sample_id: error" of the first sample whose model request failed
    first_evaluator_error: str | None = None
    # why the run did not succeed: "error_rate" (finished or stopped with too many errors), "model_access"
    # (401/403/404), "disk_full", "worker_lost" (scoring processes or Ray workers died), "error" (an unexpected
    # error); None when it succeeded or was interrupted
    stopped_by: str | None = None
    resume_command: str | None = None
    decision: dict[str, Any] | None = None  # what --decide decided (runner.decide.Gate.summary)
