"""Prompt variants (``variants:`` in a task): the task rebuilt with each named prompt, one cell of a matrix each.

A variant replaces the task's prompt only (template, system prompt or chat messages); the data, fields, few-shot,
evaluators and the task's name stay, so the cells of a matrix pair sample by sample in ``assay compare``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assay.errors import ConfigError
from assay.tasks.task import Task

_NAME = re.compile(r"^[\w][\w.\-]*$")


def variant_names(task: Task) -> list[str]:
    """The task's variant names, in the order written (empty when it has none)."""
    return list(task.config.variants or {})


def with_variant(task: Task, name: str) -> Task:
    """The task with variant ``name``'s prompt in place of its own (and no ``variants:``): a task of its own."""
    variants = task.config.variants or {}
    if name not in variants:
        raise ConfigError(f"task {task.name!r} has no variant {name!r}; its variants: {', '.join(variants) or 'none'}")
    if not _NAME.match(name):
        raise task.config_error(("variants", name), "a variant name uses letters, digits, '_', '-' and '.' only")
    variant = variants[name]
    if variant.template is None and variant.system is None and variant.messages is None:
        raise task.config_error(("variants", name), "a variant gives a template, a system prompt or messages")
    config = task.to_config()
    if variant.template is not None:
        config["template"] = variant.template
        config.pop("messages", None)
    if variant.messages is not None:
        config["messages"] = [m.model_dump() for m in variant.messages]
        config.pop("template", None)
    if variant.system is not None:
        config["system"] = variant.system
    try:
        return Task.from_config(config, base_dir=task._ctx.base_dir, source=f"{task._ctx.source} (variant {name})")
    except ConfigError as err:
        raise ConfigError(f"task {task.name!r}, variant {name!r}: {err}") from None


def expand_variants(tasks: Sequence[Task]) -> list[tuple[str | None, list[Task]]]:
    """The tasks once per variant name: ``[(None, tasks)]`` when none has variants. Tasks that have variants must
    name the same ones (a cell is one prompt of each); a task without any runs unchanged in every cell."""
    named = [(task, variant_names(task)) for task in tasks]
    with_names = [(task, names) for task, names in named if names]
    if not with_names:
        return [(None, list(tasks))]
    first, names = with_names[0]
    for task, other in with_names[1:]:
        if other != names:
            raise ConfigError(
                f"tasks {first.name!r} and {task.name!r} name different variants ({', '.join(names)} vs "
                f"{', '.join(other)}); the cells of a matrix are one variant name each"
            )
    return [(name, [with_variant(task, name) if variant_names(task) else task for task in tasks]) for name in names]
