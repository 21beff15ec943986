"""Helpers for testing tasks offline: a real OpenAI-compatible HTTP server with scripted replies and faults.

The names are loaded on first use, so ``python -m assay.testing.server`` runs the server module without importing
it twice (and without runpy's warning about it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.testing.server import FaultPlan, OpenAITestServer, ScriptedReplies

__all__ = ["FaultPlan", "OpenAITestServer", "ScriptedReplies"]


def __getattr__(name: str) -> Any:
    """``FaultPlan``, ``OpenAITestServer`` and ``ScriptedReplies`` from :mod:`assay.testing.server`."""
    if name in __all__:
        from assay.testing import server

        return getattr(server, name)
    raise AttributeError(f"module 'assay.testing' has no attribute {name!r}")
