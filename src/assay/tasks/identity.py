"""What identifies a task: the payloads its hashes cover, its config as written back, and its run.json entry.

Kept apart from :class:`assay.tasks.Task` (which builds and renders) so that what changes a task's identity is
read in one place: a field added to a task must be added here, or two different tasks would hash the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.hashing import sha256_hex
from assay.secrets import redact_spec

if TYPE_CHECKING:
    from assay.record import TaskInfo
    from assay.tasks.task import Task

HASH_SCHEMA = 1  # bump when the meaning of the hashed payload changes


def request_payload(task: Task) -> dict[str, Any]:
    """What shapes the requests alone: data, fields, prompt, few-shot, generation, tools, repeats."""
    cfg = task.config
    fewshot: dict[str, Any] | None = None
    if cfg.fewshot is not None and cfg.fewshot.shots > 0:
        fs = cfg.fewshot
        if fs.fixed is not None:
            source: Any = {"fixed": sha256_hex(fs.fixed[: fs.shots])}
        elif task.fewshot_spec is not None:
            source = {"dataset": task.fewshot_pool_hash(), "seed": fs.seed}
        else:
            source = {"dataset": "same", "seed": fs.seed}
        fewshot = {"n": fs.shots, "source": source, "separator": fs.separator, "delimiter": fs.target_delimiter}
    payload = {
        "schema": HASH_SCHEMA,
        "dataset": task.dataset.content_hash,
        "fields": task.fields.to_config(),
        "template": cfg.template,
        "system": cfg.system,
        "messages": [m.model_dump() for m in cfg.messages] if cfg.messages is not None else None,
        "fewshot": fewshot,
        "generation": task.generation,
        "tools": task.tools,
        "response_format": task.response_format,
        "repeats": task.repeats,
    }
    if cfg.agent is not None:  # the loop's limits change trajectories (only then: other hashes stay as they were)
        payload["agent"] = cfg.agent
    if cfg.environment is not None:  # the world the agent acts in (only then: other hashes stay as they were)
        payload["environment"] = cfg.environment
    if cfg.template_dialect is not None:  # how the prompt renders (only then: other hashes stay as they were)
        payload["template_dialect"] = cfg.template_dialect.model_dump()
    if cfg.user is not None:  # who plays the user shapes the conversation (its credentials do not)
        payload["user"] = redact_spec(cfg.user)
    if cfg.output_type != "generate_until":  # only then: the hashes of every generating task stay as they were
        payload["output_type"] = cfg.output_type
        payload["choices"] = cfg.choices
        payload["target_delimiter"] = cfg.target_delimiter
        payload["unconditional"] = any(m.evaluator.name == "acc_mutual_info" for m in task.metrics)
    return payload


def hash_payload(task: Task) -> dict[str, Any]:
    """Everything that changes the requests or the per-sample verdicts.

    Left out on purpose: name, alias, description, tags, groups, model and models (the runner keys answers by model
    separately), dataset location (only its content counts), and higher_is_better, repeat_reduction and headline
    (they change how results are read and aggregated, not any request or per-sample verdict).

    ``reasoning`` is hashed only when it differs from the default (strip the default delimiters), so that the
    hashes of tasks without the key stay as they were; it is not in :func:`request_payload`, as it changes how the
    replies are scored, not what is asked."""
    payload = {
        **request_payload(task),
        "version": task.version,
        "filters": [p.to_config() for p in task.configured_pipelines],
        "metrics": [
            {"name": m.name, "evaluator": m.evaluator.to_config(), "expected": m.expected, "filters": m.filters}
            for m in task.metrics
        ],
    }
    if not task.config.reasoning.is_default():
        payload["reasoning"] = reasoning_config(task)
    return payload


def reasoning_config(task: Task) -> dict[str, Any]:
    """The task's ``reasoning`` key as written back (the delimiters only when they are not the default)."""
    rc = task.config.reasoning
    out: dict[str, Any] = {"strip": rc.strip}
    if rc.delimiters is not None:
        out["delimiters"] = [list(pair) for pair in rc.delimiters]
    return out


def task_config(task: Task) -> dict[str, Any]:
    """The task as a JSON-safe config that :meth:`Task.from_config` rebuilds (dataset paths made absolute)."""
    cfg = task.config
    out: dict[str, Any] = {"name": task.name, "version": task.version}
    if task.alias is not None:
        out["alias"] = task.alias
    if task.description is not None:
        out["description"] = task.description
    if task.tags:
        out["tags"] = list(task.tags)
    if task.groups:
        out["groups"] = list(task.groups)
    out["dataset"] = task.dataset_spec.to_config()
    if fields := task.fields.to_config():
        out["fields"] = fields
    for key in ("template", "system"):
        if getattr(cfg, key) is not None:
            out[key] = getattr(cfg, key)
    if cfg.output_type != "generate_until":
        out["output_type"] = cfg.output_type
        if cfg.choices is not None:
            out["choices"] = cfg.choices
        if cfg.target_delimiter != " ":
            out["target_delimiter"] = cfg.target_delimiter
    if cfg.messages is not None:
        out["messages"] = [m.model_dump() for m in cfg.messages]
    if cfg.fewshot is not None:
        fewshot = cfg.fewshot.model_dump(mode="json", exclude_none=True, exclude={"source"})
        fewshot["source"] = task.fewshot_spec.to_config() if task.fewshot_spec is not None else "same"
        if cfg.fewshot.fixed is not None:
            del fewshot["source"]
        out["fewshot"] = fewshot
    if task.generation:
        out["generation"] = dict(task.generation)
    if task.tools is not None:
        out["tools"] = task.tools
        if task.base_dir is not None:  # where `python:` tool modules and MCP servers are found: a resume from
            out["task_dir"] = str(task.base_dir.resolve())  # another folder imports them from here
    if cfg.agent is not None:  # hashed (request_payload), so recorded: a resume rebuilds the same task
        out["agent"] = cfg.agent
    if cfg.environment is not None:  # hashed, so recorded; its relative paths are read from task_dir
        out["environment"] = cfg.environment
        if task.base_dir is not None and "task_dir" not in out:
            out["task_dir"] = str(task.base_dir.resolve())
    if cfg.template_dialect is not None:  # hashed (request_payload), so recorded
        out["template_dialect"] = cfg.template_dialect.model_dump()
    if cfg.user is not None:  # its model's api_key and header values are never written
        out["user"] = redact_spec(cfg.user)
    if task.response_format is not None:
        out["response_format"] = task.response_format
    if task.configured_pipelines:
        out["filters"] = [p.to_config() for p in task.configured_pipelines]
    if not cfg.reasoning.is_default():
        out["reasoning"] = reasoning_config(task)
    out["repeats"] = task.repeats
    if task.repeat_reduction is not None:
        out["repeat_reduction"] = task.repeat_reduction
    if getattr(task, "tests_metric", None) is not None:  # headline: tests, with the metric it resolved to
        out["headline"] = {"tests": task.tests_metric}
    out["evaluators"] = [m.to_config() for m in task.metrics]
    if task.model is not None:
        out["model"] = task.model
    if task.models is not None:
        out["models"] = task.models
    if cfg.resources is not None:
        out["resources"] = cfg.resources.model_dump(exclude_none=True)
    return out


def task_info(task: Task, n_selected: int) -> TaskInfo:
    """What the results code records about the task in run.json."""
    from assay.record import MetricInfo, TaskInfo

    return TaskInfo(
        name=task.name,
        version=task.version,
        task_hash=task.hash,
        config=task_config(task),
        n_shot=task.n_shot,
        metrics=[
            MetricInfo(
                name=m.name,
                evaluator=m.evaluator.to_config(),
                higher_is_better=m.higher_is_better,
                aggregation=m.aggregation,
            )
            for m in task.metrics
        ],
        filters=task.filters,
        repeats=task.repeats,
        groups=list(task.groups),
        n_docs=task.n_docs,
        n_selected=n_selected,
        system_instruction=task.system,
    )
