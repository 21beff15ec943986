"""What the model-graded checks' tests share: the grading test server (assay's OpenAI test server plus an embeddings
endpoint, ``POST /v1/embeddings``, a deterministic letter-count vector per text, so answer-relevance runs over real
sockets as promptfoo runs it against an OpenAI-compatible grader), a grader that answers by the prompt it is sent, and
helpers that undo assay's delimiting so a request can be compared with the one promptfoo sent.

The reference numbers in ``test_graded*.py`` come from real promptfoo 0.123.1 runs (``promptfoo eval --no-cache``
with ``OPENAI_BASE_URL`` pointing at this server, answering the same scripted replies): its verdicts, and a hash of
every grading request it sent (:func:`request_hash`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import urllib.request
from collections.abc import Mapping
from typing import Any

import pytest
from aiohttp import web

from assay.evaluators.judge.prompt import system_message
from assay.tasks.checks.graded import GradedContext, aclose_graded, judge_graded
from assay.testing.server import OpenAITestServer
from assay.verdict import Verdict

DIMENSIONS = 26
PROMPT = "Answer briefly: What is the capital of France?"
CONTEXT = "Paris is the capital of France. It is known for the Eiffel Tower. The Seine flows through it."
VARS = {"question": "What is the capital of France?", "query": "What is the capital of France?", "context": CONTEXT}
SHORT = "Paris."  # model-a's output in the reference runs
LONG = "The capital of France is Paris, home of the Eiffel Tower."  # model-b's
MARKERS = [  # (text only that grading prompt holds, the reply key)
    ("You are grading output according to a user-specified rubric", "llm-rubric"),
    ("precise factuality evaluator", "factuality"),
    ("[BEGIN DATA]", "closedqa"),
    ("generate 3-4 concise evaluation steps", "geval-steps"),
    ("You will be given one Reply for a Prompt", "geval"),
    ("create one or more statements from each sentence", "faith-statements"),
    ("Natural language inference", "faith-nli"),
    ("classify if the sentence can be attributed", "recall"),
    ("extract relevant sentences from the provided context", "relevance"),
    ("Generate question for the given answer", "answer-relevance"),
    ("comparing multiple pieces of text", "select-best"),
]


def letter_vector(text: str) -> list[float]:
    """The embedding the server returns: how often each letter a-z occurs in ``text`` (case-folded)."""
    vector = [0.0] * DIMENSIONS
    for char in text.casefold():
        if "a" <= char <= "z":
            vector[ord(char) - ord("a")] += 1.0
    return vector


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity as promptfoo computes it (0 when either vector is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


class GradingServer(OpenAITestServer):
    """The OpenAI test server with ``/v1/embeddings``; ``embedding_requests`` logs their bodies."""

    def __init__(self, reply: Any = None, **kwargs: Any) -> None:
        self.embedding_requests: list[dict[str, Any]] = []
        super().__init__(reply, **kwargs)

    async def _setup(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        self.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": letter_vector(t)} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0}
        return web.json_response({"object": "list", "data": data, "model": body["model"], "usage": usage})


def test_the_embeddings_endpoint_answers_letter_counts():
    with GradingServer("hi") as server:
        req = urllib.request.Request(
            server.base_url + "/embeddings",
            data=json.dumps({"model": "e", "input": "Abba"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req) as resp:
            got = json.load(resp)
    assert got["data"][0]["embedding"][:3] == [2.0, 2.0, 0.0]
    assert server.embedding_requests == [{"model": "e", "input": "Abba"}]
    assert cosine(letter_vector("ab"), letter_vector("ba")) == pytest.approx(1.0)
    assert cosine(letter_vector("..."), letter_vector("ab")) == 0.0


def grader(replies: Mapping[str, Any]) -> Any:
    """A reply function: the reply for the grading prompt the request holds (by :data:`MARKERS`, else ``custom``);
    a reply given as a mapping is picked by the first of its keys found in the request (``*``: otherwise)."""

    def reply(body: dict[str, Any]) -> Any:
        text = "\n".join(str(m.get("content")) for m in body["messages"])
        key = next((k for marker, k in MARKERS if marker in text), "custom")
        value = replies.get(key, f"no reply scripted for {key}")
        if isinstance(value, Mapping):
            return next((v for k, v in value.items() if k != "*" and k in text), value.get("*", "no match"))
        return value

    return reply


def context(server: OpenAITestServer, cache: dict[str, Any], **fields: Any) -> GradedContext:
    """A GradedContext with the reference runs' vars and prompt, the server's ``grader`` model as default judge."""
    base: dict[str, Any] = {
        "vars": dict(VARS),
        "prompt": PROMPT,
        "options": {},
        "judge": {"provider": "openai", "model": "grader", "base_url": server.base_url},
        "cache": cache,
    }
    return GradedContext(**(base | fields))


async def judge(server: OpenAITestServer, check: Mapping[str, Any], output: str, **fields: Any) -> Verdict:
    """One check judged with a fresh cache, closed afterwards."""
    cache: dict[str, Any] = {}
    try:
        return await judge_graded(str(check["type"]), check, output, context(server, cache, **fields))
    finally:
        await aclose_graded(cache)


def judge_sync(server: OpenAITestServer, check: Mapping[str, Any], output: str, **fields: Any) -> Verdict:
    """:func:`judge` from a synchronous test."""
    return asyncio.run(judge(server, check, output, **fields))


def boundary_of(messages: list[dict[str, Any]]) -> str | None:
    """The boundary tag assay delimited untrusted values with in these messages (None: nothing was delimited)."""
    found = re.search(r"<(untrusted-[0-9a-f]{16}) name=", json.dumps(messages))
    return found.group(1) if found else None


def undelimited(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as promptfoo would have sent them: assay's rules about the blocks and the blocks' tags taken out."""
    boundary = boundary_of(messages)
    if boundary is None:
        return [{"role": m["role"], "content": m["content"]} for m in messages]
    rules = system_message(boundary)["content"]
    out = []
    for m in messages:
        content = m["content"]
        if m["role"] == "system" and content == rules:
            continue
        content = content.removeprefix(rules + "\n\n")
        content = re.sub(rf'<{boundary} name="[^"]*">\n', "", content)
        out.append({"role": m["role"], "content": content.replace(f"\n</{boundary}>", "")})
    return out


def request_hash(messages: list[dict[str, Any]]) -> str:
    """A short hash of a request's messages (role and content), as recorded from promptfoo's requests."""
    shown = [{"role": m["role"], "content": m["content"]} for m in messages]
    return hashlib.sha256(json.dumps(shown, ensure_ascii=False, sort_keys=True).encode()).hexdigest()[:16]


def grading_requests(server: OpenAITestServer) -> list[dict[str, Any]]:
    """The chat requests the server got, each with ``hash`` (of its undelimited messages) and ``boundary``."""
    out = []
    for body in server.requests:
        plain = undelimited(body["messages"])
        out.append({**body, "plain": plain, "hash": request_hash(plain), "boundary": boundary_of(body["messages"])})
    return out
