"""A scripted RAG judge: answers each judge request from the delimited blocks of its prompt, as a judge that follows
the prompt would, with the verdicts a test decides (so the metric's figure can be computed by hand)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from assay.testing.server import OpenAITestServer
from tests.evaluators.judge.judge_support import blocks


def purpose(request: dict[str, Any]) -> str:
    """The judge call's purpose: the name of the JSON schema it asks for."""
    return str(request["response_format"]["json_schema"]["name"])


def numbered_items(text: str) -> list[str]:
    """The items of a ``1. …`` list."""
    return [m.group(1) for m in re.finditer(r"^\d+\. (.*)$", text, flags=re.MULTILINE)]


def chunks(request: dict[str, Any]) -> list[str]:
    """The retrieved chunks of a request, in the order they are numbered."""
    found = blocks(request)
    return [found[f"context {k}"] for k in range(1, len(found) + 1) if f"context {k}" in found]


@dataclass
class ScriptedJudge:
    """Replies by purpose: claims/statements per answer, a verdict (and reason) per claim, statement or chunk."""

    extracted: dict[str, list[str]] = field(default_factory=dict)  # answer -> claims or statements
    verdicts: dict[str, str] = field(default_factory=dict)  # claim, statement or chunk text -> yes / no / idk
    reference_statements: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # reference -> (stmt, v)

    def __call__(self, request: dict[str, Any]) -> Any:
        kind = purpose(request)
        found = blocks(request)
        if kind in ("claims", "statements"):
            return json.dumps({kind: self.extracted[found["response"]]})
        if kind in ("verify_claims", "judge_statements"):
            items = numbered_items(found["claims" if kind == "verify_claims" else "statements"])
            return self._verdicts(items)
        if kind in ("judge_contexts", "judge_contradictions"):
            return self._verdicts(chunks(request))
        if kind == "attribute_reference":
            statements = self.reference_statements[found["reference answer"]]
            return json.dumps(
                {"statements": [{"statement": s, "verdict": v, "reason": f"judged {v}"} for s, v in statements]}
            )
        raise AssertionError(f"unexpected judge call {kind!r}")

    def _verdicts(self, items: list[str]) -> str:
        verdicts = [
            {"index": i, "verdict": self.verdicts[item], "reason": f"because {item[:20]}"}
            for i, item in enumerate(items, 1)
        ]
        return json.dumps({"verdicts": verdicts})


def judge_spec(server: OpenAITestServer) -> dict[str, Any]:
    """The judge model spec for a test server."""
    return {"provider": "openai", "model": "judge", "base_url": server.base_url}
