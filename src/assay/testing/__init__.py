"""Helpers for testing tasks offline: a real OpenAI-compatible HTTP server with scripted replies and faults."""

from assay.testing.server import FaultPlan, OpenAITestServer, ScriptedReplies

__all__ = ["FaultPlan", "OpenAITestServer", "ScriptedReplies"]
