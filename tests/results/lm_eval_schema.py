"""A typed description of lm-evaluation-harness's on-disk results and per-sample logs, written from the field
list of the issue, independent of the writer: strict about value types and about the extra keys allowed."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

METRIC_KEY = re.compile(r"^[^,]+,[^,]+$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
RESERVED = {"name", "alias", "sample_len", "sample_count"}


class TaskResult(BaseModel):
    """``results[task]`` / ``groups[group]``: name, alias, sample_len, and only floats under "metric,filter"."""

    model_config = ConfigDict(extra="allow", strict=True)

    name: StrictStr
    alias: StrictStr
    sample_len: StrictInt

    @model_validator(mode="after")
    def metrics_are_floats(self) -> TaskResult:
        extra = self.model_extra or {}
        for key, value in extra.items():
            if key in RESERVED:
                continue
            if not METRIC_KEY.match(key):
                raise ValueError(f"non-metric key {key!r} inside a task's results")
            if type(value) is not float:
                raise ValueError(f"{key!r} must be a float, got {value!r}")
            metric, _, filt = key.partition(",")
            if metric.endswith("_stderr") and f"{metric.removesuffix('_stderr')},{filt}" not in extra:
                raise ValueError(f"stderr {key!r} without its metric")
        return self


class NSamples(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    original: StrictInt
    effective: StrictInt


class ResultsFile(BaseModel):
    """The top level of results.json; anything beyond lm-eval's keys must be the single ``assay`` key."""

    model_config = ConfigDict(extra="forbid", strict=True)

    results: dict[str, TaskResult]
    groups: dict[str, TaskResult]
    group_subtasks: dict[str, list[StrictStr]]
    configs: dict[str, dict[str, Any]]
    versions: dict[str, StrictStr | StrictFloat | StrictInt]
    n_shot: dict[str, StrictInt]
    higher_is_better: dict[str, dict[str, StrictBool]]
    n_samples: dict[str, NSamples]
    config: dict[str, Any]
    git_hash: StrictStr | None
    date: StrictFloat
    task_hashes: dict[str, StrictStr]
    model_source: StrictStr
    model_name: StrictStr
    model_name_sanitized: StrictStr
    system_instruction: StrictStr | None
    system_instruction_sha: StrictStr | None
    fewshot_as_multiturn: StrictBool
    chat_template: StrictStr | None
    chat_template_sha: StrictStr | None
    start_time: StrictFloat
    end_time: StrictFloat | None
    total_evaluation_time_seconds: StrictStr
    assay_version: StrictStr
    assay: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def dashed_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for dashed in ("n-shot", "n-samples"):
                if dashed in data:
                    data[dashed.replace("-", "_")] = data.pop(dashed)
        return data

    @model_validator(mode="after")
    def consistent(self) -> ResultsFile:
        float(self.total_evaluation_time_seconds)
        for task in self.results:
            assert task in self.versions and task in self.n_shot and task in self.task_hashes, task
        return self


class GenArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    arg_0: StrictStr
    arg_1: dict[str, Any]


class SampleLine(BaseModel):
    """One line of samples_<task>.jsonl: lm-eval's SampleResult, plus one float per metric and nothing else."""

    model_config = ConfigDict(extra="allow", strict=True)

    doc_id: StrictInt
    doc: dict[str, Any]
    target: StrictStr
    arguments: dict[str, GenArgs]
    resps: list[list[StrictStr]]
    filtered_resps: list[StrictStr | list[StrictStr]]
    filter: StrictStr
    metrics: list[StrictStr]
    doc_hash: StrictStr
    prompt_hash: StrictStr
    target_hash: StrictStr

    @model_validator(mode="after")
    def exact_extras(self) -> SampleLine:
        extra = self.model_extra or {}
        if set(extra) != set(self.metrics):
            raise ValueError(f"extra keys {sorted(extra)} must be exactly the metrics {self.metrics}")
        for name, value in extra.items():
            if type(value) is not float:
                raise ValueError(f"metric {name!r} must be a float, got {value!r}")
        if list(self.arguments) != ["gen_args_0"]:
            raise ValueError("arguments must be {'gen_args_0': {...}}")
        for h in (self.doc_hash, self.prompt_hash, self.target_hash):
            if not SHA256.match(h):
                raise ValueError(f"not a sha256 hex digest: {h!r}")
        return self
