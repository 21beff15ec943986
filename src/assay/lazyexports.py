"""A package's public names imported from their submodules on first use (PEP 562): importing a package stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    *,
    submodules: Collection[str] = (),
    fallback: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``__getattr__ = lazy_exports(__name__, {"Task": ".task"})``.

    A name in ``exports`` is read from the module given beside it (absolute, or relative to ``package`` with a
    leading dot); a name in ``submodules`` is the package's submodule of that name; any other name goes to
    ``fallback``, which returns its value or None when it has no such name. The value is stored in the package's
    namespace, so later uses are plain attribute reads; an unknown name is an AttributeError as for any module.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module, package), name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        elif fallback is None or (value := fallback(name)) is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        sys.modules[package].__dict__[name] = value
        return value

    return __getattr__
