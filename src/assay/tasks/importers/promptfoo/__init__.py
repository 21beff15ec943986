"""promptfoo configs (``promptfooconfig.yaml``) read into assay tasks as promptfoo 0.123.1 reads them: every key of
its schema honoured or refused at load naming the file, line and key (``keys.py``); prompts, OpenAI-compatible
providers, tests, scenarios, defaultTest, ``$ref``s and file references; each test a row judged by ``row_checks``.
A config is code: its python/javascript checks and transforms run as the user."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.tasks import Task

CONFIG_NAMES = ("promptfooconfig.yaml", "promptfooconfig.yml")
MARKERS = ("prompts", "providers", "tests")  # promptfoo's keys; an assay task file has none of them


def is_promptfoo_config(path: str | Path) -> bool:
    """True for a promptfoo config: named ``promptfooconfig.yaml``, or a YAML mapping with ``prompts`` and
    ``providers`` or ``tests`` and no ``dataset`` (an assay task's)."""
    p = Path(path)
    if p.name in CONFIG_NAMES:
        return True
    if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
        return False
    from assay.tasks.importers.promptfoo.yaml12 import load_yaml12

    try:
        raw = load_yaml12(p.read_text(encoding="utf-8"), str(p))
    except (OSError, UnicodeDecodeError, ConfigError):
        return False  # the task loader reports what is wrong with it
    return (
        isinstance(raw, dict) and "prompts" in raw and ("providers" in raw or "tests" in raw) and "dataset" not in raw
    )


def load_promptfoo(path: str | Path, *, max_tests: int | None = None) -> list[Task]:
    """The tasks of a promptfoo config: one per prompt, every test a row judged by its checks. A config expanding
    past ``max_tests`` tests (default: ``ASSAY_PROMPTFOO_MAX_TESTS``, else 100,000) is refused before anything is
    built."""
    from assay.tasks.importers.promptfoo.convert import task_configs
    from assay.tasks.importers.promptfoo.reader import read_config
    from assay.tasks.task import Task

    config = read_config(path, max_tests=max_tests)
    base = Path(path).resolve().parent
    return [Task.from_config(c, base_dir=base, source=f"{path} ({c['name']})") for c in task_configs(config)]


__all__ = ["MARKERS", "is_promptfoo_config", "load_promptfoo"]
