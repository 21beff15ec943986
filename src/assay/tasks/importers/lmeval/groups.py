"""lm-eval group files (``group:`` with a ``task:`` list and ``aggregate_metric_list``) read as lm-eval reads them:
each entry names a task, another group or a tag, found among the task files of the group file's folder (and its
subfolders); every task found is loaded as an ordinary task that belongs to the group and to the groups above it,
so the run's results give each group its size-weighted figure under the group's name, as lm-eval's do."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.yamlfile import TaskFile, read_task_file

if TYPE_CHECKING:
    from assay.tasks import Task

GROUP_KEYS = frozenset({"group", "group_alias", "task", "aggregate_metric_list", "metadata"})
AGGREGATE_KEYS = frozenset({"metric", "aggregation", "weight_by_size", "filter_list"})


def is_group_file(tf: TaskFile) -> bool:
    """True for a group file: ``group:`` naming it, ``task:`` listing its members."""
    return "group" in tf.data and isinstance(tf.data.get("task"), list)


@dataclass
class _Index:
    """The task files under a folder by what they name: task, group and tag names (read once, on first use)."""

    root: Path
    tasks: dict[str, Path] = field(default_factory=dict)
    groups: dict[str, Path] = field(default_factory=dict)
    tags: dict[str, list[Path]] = field(default_factory=dict)
    _read: bool = False

    def scan(self) -> None:
        if self._read:
            return
        self._read = True
        for path in sorted(self.root.rglob("*.yaml")):
            try:
                tf = read_task_file(path)
            except ConfigError:
                continue  # not a task file lm-eval could read either (a template, a broken file): never named
            name = tf.data.get("group") if is_group_file(tf) else tf.data.get("task")
            if not isinstance(name, str):
                continue
            (self.groups if is_group_file(tf) else self.tasks).setdefault(name, path)
            tags = tf.data.get("tag")
            for tag in [tags] if isinstance(tags, str) else tags if isinstance(tags, list) else []:
                if isinstance(tag, str) and not is_group_file(tf):
                    self.tags.setdefault(tag, []).append(path)


def load_group(tf: TaskFile, root: Path | None = None) -> list[Task]:
    """The tasks of group file ``tf`` (found under ``root``, the group file's folder by default), each one
    belonging to this group and to every group between it and this one."""
    members: dict[Path, list[str]] = {}
    _expand(tf, _Index(root or tf.path.parent), [], members, (tf.path.resolve(),))
    from assay.tasks.importers.lmeval import load_lmeval_task

    out: list[Task] = []
    for path, groups in members.items():
        task = load_lmeval_task(path)
        task.groups = list(dict.fromkeys([*task.groups, *groups]))
        out.append(task)
    return out


def _expand(
    tf: TaskFile, index: _Index, above: list[str], members: dict[Path, list[str]], seen: tuple[Path, ...]
) -> None:
    """Add the tasks of group ``tf`` (below the groups ``above``) to ``members``: task file -> its groups."""
    _check_group(tf)
    groups = [*above, str(tf.data["group"])]
    for i, entry in enumerate(tf.data["task"]):
        if not isinstance(entry, str):
            raise tf.error(("task", i), "an inline task config in a group is not supported; give the task its own file")
        index.scan()
        if entry in index.groups:
            path = index.groups[entry].resolve()
            if path in seen:
                raise tf.error(("task", i), f"group {entry!r} includes itself")
            _expand(read_task_file(path), index, groups, members, (*seen, path))
            continue
        paths = [index.tasks[entry]] if entry in index.tasks else index.tags.get(entry, [])
        if not paths:
            where = f"among the task files under {index.root}"
            raise tf.error(("task", i), f"no task, group or tag named {entry!r} {where}")
        for path in paths:
            joined = members.setdefault(path.resolve(), [])
            joined.extend(g for g in groups if g not in joined)


def _check_group(tf: TaskFile) -> None:
    """Refuse a group key or an aggregation assay does not carry over, naming its file and line."""
    for key in tf.data:
        if key not in GROUP_KEYS:
            raise tf.error((key,), "group file key not supported by assay's importer")
    aggregates = tf.data.get("aggregate_metric_list") or []
    if not isinstance(aggregates, list):
        raise tf.error(("aggregate_metric_list",), "a list of {metric: NAME, weight_by_size: true}")
    for i, entry in enumerate(aggregates):
        at: tuple[str | int, ...] = ("aggregate_metric_list", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("metric"), str):
            raise tf.error(at, "an entry is {metric: NAME, aggregation: mean, weight_by_size: true}")
        for key in entry:
            if key not in AGGREGATE_KEYS:
                raise tf.error((*at, key), "not supported (metric, aggregation, weight_by_size, filter_list)")
        if entry.get("aggregation", "mean") != "mean":
            raise tf.error((*at, "aggregation"), f"'mean' is supported, got {entry['aggregation']!r}")
        if entry.get("weight_by_size", True) is not True:
            raise tf.error(
                (*at, "weight_by_size"),
                "assay weights every group of a run alike; for unweighted means run with --group-weighting equal",
            )
