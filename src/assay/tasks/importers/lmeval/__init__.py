"""lm-eval tasks read by lm-eval's own task layer (``TaskManager``, the ``assay[lm-eval]`` extra) and run on assay's
runner: ``lm-eval:NAME`` names a task, group or tag of the installed lm-eval; an lm-eval task or group YAML is
loaded with its folder on lm-eval's include path (its ``include:`` files and ``utils.py`` beside it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.tasks.importers.lmeval.settings import EXTRA_HINT, PREFIX, LmevalSettings, settings_for

if TYPE_CHECKING:
    from assay.tasks.importers.lmeval.task import LmevalTask

# top-level keys only lm-eval task and group files have (an assay task file has 'name' and 'dataset')
_MARKERS = re.compile(
    r"^(task|group|include|dataset_path|doc_to_text|doc_to_target|doc_to_choice|metric_list|filter_list)\s*:", re.M
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


def load_lmeval_tasks(references: str | Path | list[str | Path], **options: Any) -> list[LmevalTask]:
    """The tasks of lm-eval references (names, task or group files), loaded together as ``lm_eval --tasks a,b``
    loads them; ``options`` are :class:`LmevalSettings` fields (``num_fewshot``, ``limit``, seeds, chat options)."""
    from assay.tasks.importers.lmeval.suite import load_suite
    from assay.tasks.importers.lmeval.task import LmevalTask

    settings = settings_for(references if isinstance(references, list) else [references], **options)
    suite = load_suite(settings)
    return [LmevalTask(settings, name) for name in suite.tasks]


__all__ = ["EXTRA_HINT", "PREFIX", "LmevalSettings", "is_lmeval_reference", "load_lmeval_tasks"]
