"""Fixtures for the RAG metric and G-Eval tests: the judge tests' real local server and private cache."""

from __future__ import annotations

from tests.evaluators.judge.conftest import _private_cache, serve

__all__ = ["_private_cache", "serve"]
