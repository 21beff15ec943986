"""The run's own per-sample record: one line of ``samples.jsonl`` per finished sample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from assay.models.base import Message, Response


class FilterRecord(BaseModel):
    """One filter pipeline's view of a sample: the filtered responses and every metric's verdicts."""

    filtered: list[Any]  # per repeat, or a single value after e.g. majority vote
    verdicts: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)  # metric -> Verdict.to_dict() each
    scores: dict[str, float | None] = Field(default_factory=dict)  # metric -> mean over filtered; None if all errored
    passed: dict[str, bool | None] = Field(default_factory=dict)  # metric -> all filtered passed; None if errored


class SampleRecord(BaseModel):
    """Everything about one finished sample: request, responses, filtered responses, verdicts, timings."""

    task: str
    task_hash: str
    doc_id: int  # position in the dataset; joins with samples_<task>.jsonl
    sample_id: str
    doc: dict[str, Any]
    prompt: str  # the rendered prompt as text (chat messages joined), hashed as prompt_hash
    messages: list[Message]
    gen_kwargs: dict[str, Any] = Field(default_factory=dict)
    target: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    responses: list[Response | None] = Field(default_factory=list)  # one per repeat; None where it failed
    response_errors: list[str | None] = Field(default_factory=list)  # one per repeat
    # the reasoning taken out of each response's text before it was scored (assay.tasks.reasoning), one per repeat
    # (None where there was none); empty when no response had any. The responses keep the whole replies.
    reasoning: list[str | None] = Field(default_factory=list)
    cache_hits: int = 0
    filters: dict[str, FilterRecord] = Field(default_factory=dict)
    started_at: float = 0.0
    model_seconds: float = 0.0
    eval_seconds: float = 0.0

    @property
    def error(self) -> str | None:
        """The first model error of this sample, if any repeat failed."""
        return next((e for e in self.response_errors if e), None)


def judge_cache_hits(filters: Mapping[str, FilterRecord | Mapping[str, Any]]) -> int:
    """How many judge calls of a record's verdicts were answered from the response cache (``details["judges"]``
    entries marked ``cached``): ``filters`` as a SampleRecord holds them, or in their JSON form."""
    hits = 0
    for filtered in filters.values():
        verdicts = filtered.verdicts if isinstance(filtered, FilterRecord) else filtered.get("verdicts") or {}
        for metric_verdicts in verdicts.values():
            for verdict in metric_verdicts:
                details = verdict.get("details")
                calls = details.get("judges") if isinstance(details, dict) else None
                if isinstance(calls, list):
                    hits += sum(1 for call in calls if isinstance(call, dict) and call.get("cached") is True)
    return hits


def redact_config_urls(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """A JSON-like config with credentials in URL strings and every header value (a model's ``headers:``)
    redacted, and the paths where that happened."""
    from assay.secrets import REDACTED, holds_secrets, redact_url

    if isinstance(value, dict):
        out: dict[str, Any] = {}
        where: list[str] = []
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if holds_secrets(key) and item:
                out[key] = REDACTED
                where.append(here)
                continue
            out[key], found = redact_config_urls(item, here)
            where += found
        return out, where
    if isinstance(value, list):
        items, where = [], []
        for i, item in enumerate(value):
            redacted, found = redact_config_urls(item, f"{path}[{i}]")
            items.append(redacted)
            where += found
        return items, where
    if isinstance(value, str) and "://" in value:
        redacted = redact_url(value)
        return redacted, [path] if redacted != value else []
    return value, []


class MetricInfo(BaseModel):
    """One metric of a task: its key in results, the evaluator config behind it and its direction."""

    name: str  # metric key, e.g. "exact_match" or an alias such as "em_strict"
    evaluator: dict[str, Any]  # Evaluator.to_config()
    higher_is_better: bool = True
    aggregation: str = "mean"  # "corpus": a figure from summed per-sample statistics (assay.results.corpus)


class TaskInfo(BaseModel):
    """What the results code needs to know about a task of the run."""

    name: str
    version: str = "1.0"
    task_hash: str
    config: dict[str, Any]  # the task's full config, JSON-safe
    n_shot: int = 0
    metrics: list[MetricInfo]
    filters: list[str] = Field(default_factory=lambda: ["none"])
    repeats: int = 1
    groups: list[str] = Field(default_factory=list)  # groups/tags the task belongs to
    n_docs: int  # dataset size before any limit
    n_selected: int  # samples this run evaluates
    system_instruction: str | None = None
    # where ``config`` had credentials removed (e.g. ``evaluators[0].model.base_url``): it cannot rebuild the task
    redacted: list[str] = Field(default_factory=list)

    def without_credentials(self) -> TaskInfo:
        """This info as it may be written: credentials in URLs anywhere in the config (a judge's ``base_url``) and
        header values (a model's ``headers:``) replaced by ``***`` (:mod:`assay.secrets`), and where listed in
        ``redacted``."""
        config, where = redact_config_urls(self.config)
        if not where:
            return self
        metrics = [m.model_copy(update={"evaluator": redact_config_urls(m.evaluator)[0]}) for m in self.metrics]
        return self.model_copy(update={"config": config, "metrics": metrics, "redacted": [*self.redacted, *where]})


class RunManifest(BaseModel):
    """``run.json``: what was run, with what, and when. Written at start, updated when the run ends."""

    run_id: str
    name: str | None = None  # the run's name (``--name``): how reports and comparisons label it; else its folder
    assay_version: str
    created_at: float
    finished_at: float | None = None
    total_seconds: float | None = None
    status: str = "running"  # running | finished | interrupted | failed
    model: dict[str, Any]  # Model.describe()
    judges: list[dict[str, Any]] = Field(default_factory=list)
    tasks: list[TaskInfo]
    config: dict[str, Any] = Field(default_factory=dict)  # limit, seed, concurrency, repeats, …
    git_hash: str | None = None
    rescored_from: str | None = None  # `assay score`: the run folder whose logged answers this run re-scored
