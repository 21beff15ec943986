"""Helpers for testing: ``assert_eval`` (evaluations as assertions; the pytest plugin is ``pytest_plugin``), a
real OpenAI-compatible HTTP server with scripted replies and faults for testing tasks offline, scripted
tool-calling models for agent tasks, and a tiny causal LM made offline for log-likelihood tasks.

The names are loaded on first use, so ``python -m assay.testing.server`` runs the server module without importing
it twice (and without runpy's warning about it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports

if TYPE_CHECKING:
    from assay.testing.evaltest import SampleCase as SampleCase
    from assay.testing.evaltest import aassert_eval as aassert_eval
    from assay.testing.evaltest import assert_eval as assert_eval
    from assay.testing.failure import EvalAssertionError as EvalAssertionError
    from assay.testing.scripted import Conversation as Conversation
    from assay.testing.scripted import ConversationReplies as ConversationReplies
    from assay.testing.scripted import tool_then_answer as tool_then_answer
    from assay.testing.server import FaultPlan as FaultPlan
    from assay.testing.server import OpenAITestServer as OpenAITestServer
    from assay.testing.server import ScriptedReplies as ScriptedReplies
    from assay.testing.tiny_lm import make_tiny_lm as make_tiny_lm

# public name -> the module of this package that defines it
_EXPORTS = {
    "assert_eval": ".evaltest",
    "aassert_eval": ".evaltest",
    "EvalAssertionError": ".failure",
    "SampleCase": ".evaltest",
    "OpenAITestServer": ".server",
    "FaultPlan": ".server",
    "ScriptedReplies": ".server",
    "ConversationReplies": ".scripted",
    "Conversation": ".scripted",
    "tool_then_answer": ".scripted",
    "make_tiny_lm": ".tiny_lm",
}
__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
