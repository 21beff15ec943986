"""Per-sample environments: a workspace, a shell and programs (or a stateful world) that agents act in and
evaluators look at after the loop. See :mod:`assay.environments.base`.

The interface is imported here; the bubblewrap provider and its helpers load on first use (importing this package
starts no subprocess and loads no asyncio machinery). A runner calls :func:`cleanup_leftovers` once at start, then
``env = await get_provider().create(spec, row, sample_id)`` per sample and ``await env.close()`` in a ``finally``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.environments.base import (
    CHECK_DIR,
    WORKSPACE,
    Environment,
    EnvironmentEvaluator,
    EnvironmentFailed,
    EnvironmentLimits,
    EnvironmentSpec,
    Shell,
    ShellResult,
)
from assay.lazyexports import lazy_exports

if TYPE_CHECKING:
    from assay.environments.bwrap_env import BwrapEnvironment
    from assay.environments.cleanup import cleanup_leftovers
    from assay.environments.provider import Provider, get_provider, register_provider
    from assay.environments.workspace import materialise

_LAZY = {
    "BwrapEnvironment": "assay.environments.bwrap_env",
    "cleanup_leftovers": "assay.environments.cleanup",
    "Provider": "assay.environments.provider",
    "get_provider": "assay.environments.provider",
    "register_provider": "assay.environments.provider",
    "materialise": "assay.environments.workspace",
}

__getattr__ = lazy_exports(__name__, _LAZY)  # the provider's names load on first use


__all__ = [
    "CHECK_DIR",
    "WORKSPACE",
    "BwrapEnvironment",
    "Environment",
    "EnvironmentEvaluator",
    "EnvironmentFailed",
    "EnvironmentLimits",
    "EnvironmentSpec",
    "Provider",
    "Shell",
    "ShellResult",
    "cleanup_leftovers",
    "get_provider",
    "materialise",
    "register_provider",
]
