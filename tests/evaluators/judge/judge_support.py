"""Helpers for judge tests: read a judge request the way a judge that follows the prompt does."""

from __future__ import annotations

import re
from typing import Any

from assay.testing.server import OpenAITestServer

_TAG = re.compile(r'open with <(untrusted-[0-9a-f]{16}) name="\.\.\.">')


def boundary_of(request: dict[str, Any]) -> str:
    """The boundary tag announced in the system message of a judge request."""
    match = _TAG.search(request["messages"][0]["content"])
    assert match is not None, "the system message must announce the boundary tag"
    return match.group(1)


def blocks(request: dict[str, Any]) -> dict[str, str]:
    """Each data block of a judge request, by name, as delimited by the announced boundary tag."""
    boundary = re.escape(boundary_of(request))
    user = request["messages"][-1]["content"]
    return dict(re.findall(rf'<{boundary} name="([^"]+)">\n(.*?)\n</{boundary}>', user, flags=re.DOTALL))


def is_grade(request: dict[str, Any]) -> bool:
    """True for a grading request (not evaluation steps)."""
    return "## The response to evaluate" in request["messages"][-1]["content"]


def judge_spec(server: OpenAITestServer, name: str = "judge-1") -> dict[str, Any]:
    """The judge model spec for a test server."""
    return {"provider": "openai", "model": name, "base_url": server.base_url}
