"""Helpers for testing: ``assert_eval`` (evaluations as assertions; the pytest plugin is ``pytest_plugin``) and a
real OpenAI-compatible HTTP server with scripted replies and faults for testing tasks offline.

The names are loaded on first use, so ``python -m assay.testing.server`` runs the server module without importing
it twice (and without runpy's warning about it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.testing.evaltest import EvalAssertionError as EvalAssertionError
    from assay.testing.evaltest import SampleCase as SampleCase
    from assay.testing.evaltest import aassert_eval as aassert_eval
    from assay.testing.evaltest import assert_eval as assert_eval
    from assay.testing.server import FaultPlan, OpenAITestServer, ScriptedReplies

_EVALTEST = ("EvalAssertionError", "SampleCase", "aassert_eval", "assert_eval")
__all__ = ["FaultPlan", "OpenAITestServer", "ScriptedReplies", *_EVALTEST]


def __getattr__(name: str) -> Any:
    """``assert_eval`` & co. from :mod:`assay.testing.evaltest`; the test server's names from :mod:`.server`."""
    if name in _EVALTEST:
        from assay.testing import evaltest

        return getattr(evaltest, name)
    if name in ("FaultPlan", "OpenAITestServer", "ScriptedReplies"):
        from assay.testing import server

        return getattr(server, name)
    raise AttributeError(f"module 'assay.testing' has no attribute {name!r}")
