"""Objects named by dotted paths (``package.module:name``), so callables and classes round-trip through configs."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def _import_module(name: str) -> Any:
    """Import a module; one not found on ``sys.path`` is also looked for in the working directory (as
    ``python -m`` would), so ``agent:answer`` finds ``./agent.py`` when run through the ``assay`` command too."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        top = name.partition(".")[0]
        cwd = os.getcwd()
        if err.name != top or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


def import_object(path: str) -> Any:
    """The object named by ``'package.module:attr'`` (or ``'package.module.attr'``); ValueError says why not."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError("expected a dotted path 'package.module:name', got an empty string")
    if ":" in path:
        module_name, _, qualname = path.partition(":")
    else:
        module_name, _, qualname = path.rpartition(".")
    if not module_name or not qualname:
        raise ValueError(f"{path!r} is not a dotted path of the form 'package.module:name'")
    try:
        obj: Any = _import_module(module_name)
    except ImportError as err:
        raise ValueError(f"cannot import module {module_name!r} of {path!r}: {err}") from None
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {qualname!r} (from {path!r})") from None
    return obj


def dotted_path(obj: Any) -> str:
    """The ``'package.module:qualname'`` that :func:`import_object` resolves back to ``obj``; ValueError if none."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    what = getattr(obj, "__qualname__", None) or type(obj).__name__
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        raise ValueError(
            f"{what} (a lambda, a nested function, an instance or a partial) has no importable dotted path; "
            "define it at module level and give it as 'package.module:name'"
        )
    path = f"{module}:{qualname}"
    try:
        found = import_object(path)
    except ValueError:
        found = None
    if found is not obj and found != obj:
        raise ValueError(f"{what} is not importable as {path!r}; give it as 'package.module:name'")
    return path
