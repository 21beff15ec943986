"""lm-eval task YAMLs read unchanged into assay tasks: ``include``, ``!function`` hooks from the task's folder,
``doc_to_*`` as lm-eval means them, few-shot, filters, metrics and generation settings (see convert.py).
``lm-eval:NAME`` finds a task in the installed lm-eval's task folders."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.tasks import Task

PREFIX = "lm-eval:"
# top-level keys only lm-eval task files have (an assay task file has 'name' and 'dataset')
_MARKERS = re.compile(
    r"^(task|include|dataset_path|doc_to_text|doc_to_target|doc_to_choice|metric_list|filter_list)\s*:", re.M
)


def is_lmeval_reference(source: object) -> bool:
    """True for ``lm-eval:NAME`` / ``lm-eval:path.yaml``, or a YAML file whose top-level keys are lm-eval's."""
    if isinstance(source, str) and source.startswith(PREFIX):
        return True
    if not isinstance(source, str | Path):
        return False
    p = Path(source)
    if p.suffix.lower() not in (".yaml", ".yml", "") or not p.is_file():
        return False
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return bool(_MARKERS.search(text)) and not re.search(r"^(name|dataset)\s*:", text, re.M)


def find_task(name: str) -> Path:
    """The YAML file of the installed lm-eval's task or group ``name`` (``task: name`` or ``group: name`` in its
    tasks folder)."""
    try:
        import lm_eval  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(f"{PREFIX}{name}: lm-eval is not installed (pip install lm-eval)") from None
    root = Path(lm_eval.__file__).parent / "tasks"
    wanted = re.compile(rf"^(task|group):\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$", re.M)
    for path in sorted(root.rglob("*.yaml")):
        try:
            if wanted.search(path.read_text(encoding="utf-8")):
                return path
        except (OSError, UnicodeDecodeError):
            continue
    raise ConfigError(f"{PREFIX}{name}: no task {name!r} in {root}")


def resolve_reference(source: str | Path) -> Path:
    """The file an lm-eval reference names: ``lm-eval:NAME`` looked up, ``lm-eval:FILE`` or a path as given."""
    text = str(source)
    if text.startswith(PREFIX):
        rest = text[len(PREFIX) :]
        as_path = Path(rest)
        return as_path if as_path.suffix.lower() in (".yaml", ".yml") or as_path.is_file() else find_task(rest)
    return Path(source)


def load_lmeval_task(source: str | Path) -> Task:
    """An assay Task from an lm-eval task file (or ``lm-eval:NAME``), checked and validated."""
    from assay.tasks.importers.lmeval.convert import convert
    from assay.tasks.importers.lmeval.groups import is_group_file
    from assay.tasks.importers.lmeval.yamlfile import read_task_file
    from assay.tasks.task import Task

    path = resolve_reference(source)
    tf = read_task_file(path)
    if is_group_file(tf):
        raise ConfigError(f"{path}: a group file holds several tasks: load it with load_lmeval_tasks")
    config = convert(tf)
    return Task.from_config(config, base_dir=tf.path.parent, source=str(path))


def load_lmeval_tasks(source: str | Path) -> list[Task]:
    """The tasks of an lm-eval task file, or of a group file (each task belonging to its groups)."""
    from assay.tasks.importers.lmeval.groups import is_group_file, load_group
    from assay.tasks.importers.lmeval.yamlfile import read_task_file

    path = resolve_reference(source)
    tf = read_task_file(path)
    return load_group(tf) if is_group_file(tf) else [load_lmeval_task(path)]


__all__ = ["PREFIX", "find_task", "is_lmeval_reference", "load_lmeval_task", "load_lmeval_tasks", "resolve_reference"]
