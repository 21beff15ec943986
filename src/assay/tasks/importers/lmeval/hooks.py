"""``!function`` hooks loaded as lm-eval loads them: ``utils.process_docs`` is ``process_docs`` in the ``utils.py``
beside the task file (the task author's code, run as lm-eval would run it)."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.yamlfile import FunctionRef

_MODULES: dict[Path, ModuleType] = {}


def _module(path: Path, where: str) -> ModuleType:
    found = _MODULES.get(path)
    if found is not None:
        return found
    if not path.is_file():
        raise ConfigError(f"{where}: !function: no module {path.name} in the task's folder {path.parent}")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    name = f"assay_lmeval_hooks_{digest}.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{where}: !function: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        sys.modules.pop(name, None)
        raise ConfigError(f"{where}: !function: importing {path} failed: {type(err).__name__}: {err}") from None
    _MODULES[path] = module
    return module


def hook_path(ref: FunctionRef) -> tuple[Path, str]:
    """The module file and function name a ``!function`` tag names (``utils.f``: ``utils.py`` beside the task)."""
    module_name, _, attr = ref.dotted.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"{ref.where}: !function {ref.dotted!r}: expected module.function (e.g. utils.process_docs)")
    return ref.folder / (module_name.replace(".", "/") + ".py"), attr


def load_hook(path: Path, attr: str, where: str) -> Callable[..., Any]:
    """Function ``attr`` of the module file ``path``; ConfigError naming ``where`` when it cannot be had."""
    fn = getattr(_module(path, where), attr, None)
    if not callable(fn):
        raise ConfigError(f"{where}: !function: {path.name} has no function {attr!r}")
    return fn


def resolve(ref: FunctionRef) -> Callable[..., Any]:
    """The callable a ``!function`` tag names; ConfigError naming the tag's file and line when it cannot be."""
    path, attr = hook_path(ref)
    return load_hook(path, attr, ref.where)
