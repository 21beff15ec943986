"""What the promptfoo example tests share: the scripted OpenAI-compatible server (assay's test server plus
``POST /v1/embeddings``), helpers for reply functions (which grading prompt a request is, the output it grades), the
``assay run`` of an example (a copy of its folder, unchanged) and the verdicts it wrote, keyed as promptfoo's.

A verdict's key is ``PROVIDER|prompt-K|test-N``: the provider's label or id (as promptfoo names its columns), the
prompt's place in the config's prompt list (1-based, files split at ``---`` counted one by one) and the test's place
in the expanded test list (promptfoo's ``testIdx`` + 1; assay's row ``test-N``).

``record.py`` beside this file runs real promptfoo 0.123.1 on the same folder against the same server and writes
``expected/<example>.json``; the tests compare assay's verdicts with those.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from assay.testing.server import OpenAITestServer, _completion

HERE = Path(__file__).parent
EXPECTED = HERE / "expected"
SWEEP = HERE / "sweep"
Reply = Callable[[dict[str, Any]], Any]

# (a text only that grading prompt holds, its kind); assay sends promptfoo's grading prompts with the graded values
# delimited, so these markers are found in both tools' requests
MARKERS = (
    ("You are grading output according to a user-specified rubric", "llm-rubric"),
    ("precise factuality evaluator", "factuality"),
    ("[BEGIN DATA]", "closedqa"),
    ("generate 3-4 concise evaluation steps", "geval-steps"),
    ("You will be given one Reply for a Prompt", "geval"),
    ("comparing multiple pieces of text", "select-best"),
    ("Generate question for the given answer", "answer-relevance"),
    ("create one or more statements from each sentence", "faith-statements"),
    ("Natural language inference", "faith-nli"),
    ("classify if the sentence can be attributed", "context-recall"),
    ("extract relevant sentences from the provided context", "context-relevance"),
)


def body_text(body: Mapping[str, Any]) -> str:
    """Every message of a chat request, joined."""
    parts = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        parts.append(str(content))
    return "\n".join(parts)


def grading_kind(body: Mapping[str, Any], extra: tuple[tuple[str, str], ...] = ()) -> str | None:
    """Which grading prompt this request is (None: a request of the model under test)."""
    text = body_text(body)
    return next((kind for marker, kind in (*extra, *MARKERS) if marker in text), None)


def undelimited(text: str) -> str:
    """The text with assay's untrusted-value delimiters (``<untrusted-… name="…">`` lines) taken out."""
    text = re.sub(r'<untrusted-[0-9a-f]{16} name="[^"]*">\n', "", text)
    return re.sub(r"\n</untrusted-[0-9a-f]{16}>", "", text)


def between(text: str, start: str, end: str) -> str:
    """The (undelimited) text between the first ``start`` and the next ``end``."""
    text = undelimited(text)
    head = text.index(start) + len(start)
    return text[head : text.index(end, head)].strip()


def rubric(value: bool | float, reason: str = "scripted") -> str:
    """An llm-rubric grader's JSON answer: a pass (score 1/0) or a score (pass when > 0)."""
    if isinstance(value, bool):
        return json.dumps({"reason": reason, "pass": value, "score": 1.0 if value else 0.0})
    return json.dumps({"reason": reason, "pass": value > 0, "score": value})


class ExampleServer(OpenAITestServer):
    """The OpenAI test server with ``/v1/embeddings``: a letter-count vector per text (26 numbers, a-z case-folded),
    so promptfoo's ``similar`` gets real embeddings from the same server it sends completions to."""

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

    async def _chat_reply(self, body: dict[str, Any]) -> web.Response:
        """A reply ``{"function_call": {"name", "arguments"}}`` is a legacy function call (the message's
        ``function_call``, content null), as OpenAI answers a request with ``functions``; else the base server's."""
        reply = self.reply(body) if callable(self.reply) else self.reply
        if not (isinstance(reply, dict) and "function_call" in reply):
            return _completion(body, reply)  # the base server's response, the reply function called once
        call = reply["function_call"]
        message = {"role": "assistant", "content": None, "function_call": call}
        words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or [])
        return web.json_response(
            {
                "id": "chatcmpl-example",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "function_call"}],
                "usage": {"prompt_tokens": words, "completion_tokens": 1, "total_tokens": words + 1},
            }
        )

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": letters(t)} for i, t in enumerate(texts)]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0}
        return web.json_response({"object": "list", "data": data, "model": body["model"], "usage": usage})


def letters(text: str) -> list[float]:
    vector = [0.0] * 26
    for char in text.casefold():
        if "a" <= char <= "z":
            vector[ord(char) - ord("a")] += 1.0
    return vector


@dataclass
class Example:
    """One upstream example: its folder (under this one), the config file run, the scripted replies, and per
    verdict key how promptfoo's pass and score follow from its rules (``why``), and which keys assay gets wrong
    (``xfail``: key -> the precise reason; ``requests`` for the prompts sent, ``rows`` for the set of verdicts)."""

    name: str
    reply: Reply
    why: dict[str, str]
    config: str = "promptfooconfig.yaml"
    xfail: dict[str, str] = field(default_factory=dict)
    grading_markers: tuple[tuple[str, str], ...] = ()  # the example's own grading prompts (rubricPrompt)
    env: dict[str, str] = field(default_factory=dict)
    slow: bool = False  # loads assay's local embedding model (similar): started first
    latency_ms: float | None = None  # a latency check's threshold: a busier machine than that is not judged

    @property
    def id(self) -> str:
        """The example's name, with its config's when that is not promptfooconfig.yaml."""
        return self.name if self.config == "promptfooconfig.yaml" else f"{self.name}:{Path(self.config).stem}"

    @property
    def folder(self) -> Path:
        return HERE / self.name

    @property
    def expected_path(self) -> Path:
        return EXPECTED / f"{self.id.replace(':', '--')}.json"

    def is_grading(self, body: Mapping[str, Any]) -> bool:
        return grading_kind(body, self.grading_markers) is not None


def model_request(body: Mapping[str, Any]) -> str:
    """What identifies a request to the model under test (model, messages, tools/functions): a short hash."""
    shown = {
        "model": body.get("model"),
        "messages": [{"role": m.get("role"), "content": m.get("content")} for m in body.get("messages") or []],
        "tools": body.get("tools"),
        "functions": body.get("functions"),
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def sent_requests(example: Example, requests: list[dict[str, Any]]) -> list[str]:
    """The sorted hashes of the requests to the model under test (grading requests left out)."""
    return sorted(model_request(b) for b in requests if "messages" in b and not example.is_grading(b))


def grader_models(example: Example, requests: list[dict[str, Any]]) -> list[str]:
    """The sorted models of the grading requests (which model grades: the check's provider, the test's
    options.provider, else the tool's default grader)."""
    return sorted(str(b.get("model")) for b in requests if "messages" in b and example.is_grading(b))


# -- assay ----------------------------------------------------------------------------------------------------------


def copy_example(example: Example, dest: Path) -> Path:
    """The example's folder copied unchanged to ``dest``."""
    shutil.copytree(example.folder, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def run_assay(example: Example, work: Path, server: OpenAITestServer) -> subprocess.CompletedProcess[str]:
    """``assay run CONFIG -o runs`` in ``work`` (a copy of the example) against ``server``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "PROMPTFOO_"))}
    env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="x", COLUMNS="200", **example.env)
    env["ASSAY_CACHE_DIR"] = str(work / ".cache")
    cmd = [sys.executable, "-m", "assay", "run", example.config, "-o", "runs"]
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)


def _sample_lines(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "samples.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def assay_verdicts(runs: Path, providers: list[str]) -> dict[str, dict[str, Any]]:
    """Every sample's row_checks verdict, by key (``providers``: promptfoo's provider names, in config order, which
    a matrix's cells follow)."""
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    matrix = run_dir / "matrix.json"
    if matrix.exists():
        cells = json.loads(matrix.read_text())["cells"]
        dirs = [(run_dir / c["run_dir"], c["name"]) for c in cells]
        if len(dirs) != len(providers):
            raise AssertionError(f"assay ran {[n for _, n in dirs]}, promptfoo {providers}")
        named = [(d, providers[i]) for i, (d, _) in enumerate(dirs)]
    else:
        if len(providers) != 1:
            raise AssertionError(f"assay ran one model, promptfoo {providers}")
        named = [(run_dir, providers[0])]
    out: dict[str, dict[str, Any]] = {}
    for cell_dir, provider in named:
        for record in _sample_lines(cell_dir):
            found = re.search(r"\.prompt-(\d+)$", record["task"])
            prompt = int(found.group(1)) if found else 1
            key = f"{provider}|prompt-{prompt}|{record['sample_id']}"
            verdicts = record.get("filters", {}).get("none", {}).get("verdicts", {}).get("row_checks") or [None]
            verdict = verdicts[0]
            error = record.get("response_errors", [None])[0]
            if verdict is None or verdict.get("error"):
                out[key] = {"pass": False, "score": 0.0, "error": error or (verdict or {}).get("error") or "none"}
                continue
            details = verdict.get("details") or {}
            score = details.get("promptfoo_score", verdict.get("score"))
            out[key] = {"pass": bool(verdict["passed"]), "score": score, "error": error, "record": record}
    return out


def load_expected(example: Example) -> dict[str, Any]:
    return json.loads(example.expected_path.read_text(encoding="utf-8"))
