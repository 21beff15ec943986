"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests, benchmarks and offline runs of a task.

It speaks the standard chat-completions protocol (``POST /v1/chat/completions``, ``GET /v1/models``) and the legacy
completions one (``POST /v1/completions``, with ``echo`` and scripted per-token ``logprobs`` for log-likelihood
clients: :mod:`assay.testing.logprobs`), answers with scripted or echoed replies (a reply script file:
:mod:`assay.testing.scripted`), cuts replies at the request's ``stop`` sequences, and injects seeded faults (429
with Retry-After, 500, dropped connections, slow replies), so clients, retries and runners are exercised over real
sockets. Run it in a thread (:class:`OpenAITestServer`) or
as a process: ``python -m assay.testing.server --port 8000 --latency 0.05 --script replies.yaml``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import random
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from assay.errors import ConfigError
from assay.testing.scripted import (  # the reply helpers, importable from here as before
    COMPLETION_KEYS,
    REPLY_KEYS,
    CompletionReply,
    Conversation,
    ConversationReplies,
    Reply,
    ReplyScript,
    ScriptedReplies,
    last_user_text,
    message_text,
    tool_then_answer,
)

__all__ = [
    "Conversation",
    "ConversationReplies",
    "FaultPlan",
    "OpenAITestServer",
    "ReplyScript",
    "ScriptedReplies",
    "last_user_text",
    "message_text",
    "tool_then_answer",
]

FAULT_KINDS = ("drop", "slow")


@dataclass(frozen=True)
class FaultPlan:
    """Which requests fail and how. Random faults are drawn from a seeded generator, one draw per request in arrival
    order, so a plan replays identically; ``fail_first`` fails the first N attempts of each distinct request body.

    ``fail_first_with`` is an HTTP status (429 carries Retry-After) or ``"drop"`` / ``"slow"``.
    """

    rate_429: float = 0.0
    retry_after_s: float | None = 1.0  # the Retry-After header of 429 replies; None sends none
    rate_500: float = 0.0
    rate_drop: float = 0.0  # close the connection without a response
    rate_slow: float = 0.0  # answer after ``slow_s`` seconds instead of ``latency_s``
    slow_s: float = 5.0
    fail_first: int = 0
    fail_first_with: int | str = 500

    def __post_init__(self) -> None:
        rates = {"rate_429": self.rate_429, "rate_500": self.rate_500, "rate_drop": self.rate_drop}
        rates["rate_slow"] = self.rate_slow
        for key, value in rates.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"FaultPlan.{key} must be in [0, 1], got {value!r}")
        if sum(rates.values()) > 1.0 + 1e-9:
            raise ConfigError(f"FaultPlan rates add up to more than 1: {rates}")
        if self.fail_first < 0:
            raise ConfigError(f"FaultPlan.fail_first must be >= 0, got {self.fail_first!r}")
        kind = self.fail_first_with
        if not (isinstance(kind, int) and 400 <= kind <= 599) and kind not in FAULT_KINDS:
            raise ConfigError(f"FaultPlan.fail_first_with must be an HTTP error status or 'drop'/'slow', got {kind!r}")

    def draw(self, u: float) -> int | str | None:
        """The fault for a uniform draw ``u`` in [0, 1): 429, 500, "drop", "slow" or None."""
        for kind, rate in ((429, self.rate_429), (500, self.rate_500), ("drop", self.rate_drop)):
            if u < rate:
                return kind
            u -= rate
        return "slow" if u < self.rate_slow else None


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    kind = "rate_limit_error" if status == 429 else "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "code": status}}
    return web.json_response(body, status=status, headers=headers)


class OpenAITestServer:
    """An OpenAI-compatible server on 127.0.0.1, running in a background thread with its own event loop.

    ``reply`` is a constant string, or a function of the request JSON returning the reply text or a dict with
    ``text``, ``tool_calls`` (``[{"name", "arguments", "id"?}]``; arguments a dict or a raw JSON string),
    ``finish_reason``, ``usage`` (``{"prompt_tokens", "completion_tokens"}``), ``logprobs`` (the choice's, as OpenAI
    sends them: ``{"content": [{"token", "logprob", "top_logprobs"}, ...]}``), ``reasoning_content`` or ``reasoning``
    (a reasoning model's reasoning returned apart from the text, as vLLM with a reasoning parser, DeepSeek and
    OpenRouter send it, under that name in the message), and for scripted errors ``status``,
    ``error`` and ``headers``. The default echoes the last user message. A reply script
    (:meth:`ScriptedReplies.load`, a :class:`~assay.testing.scripted.ReplyScript`) answers both endpoints. The
    request's ``stop`` (a text or a list of up to 4) cuts the reply's text before the first occurrence of any of
    them, finish_reason "stop"; then ``max_tokens`` (or ``max_completion_tokens``) truncates what is left to that
    many words with finish_reason "length" (generation ends at whichever comes first). Usage counts
    whitespace-separated words of the text sent, unless the reply scripts ``usage``. When ``api_key`` is set,
    requests without ``Authorization: Bearer <api_key>`` get 401.

    ``response_formats`` (e.g. ``{"json_object", "text"}``) makes the server behave like one that supports only
    those ``response_format`` types: another type gets HTTP 400, and a scripted reply to a supported JSON type must
    be what such a server would send (a JSON object; under ``json_schema``, valid against the schema), or the
    request fails with HTTP 500 naming the broken script. ``None`` (the default) takes any and checks nothing.

    ``completion`` answers ``/v1/completions``, once per prompt of the request (a text or a list of token ids):
    a str (the text made), or a dict with ``text``, ``logprobs`` (OpenAI's ``{tokens, token_logprobs,
    top_logprobs, text_offset}``, e.g. from :func:`assay.testing.logprobs.logprob_reply`), ``finish_reason`` and
    token counts, or ``status``/``error``/``headers`` for a scripted error. The default echoes a text prompt (with
    ``echo``) and makes no text; ``stop`` cuts the text made (after an echoed prompt); faults apply as to chat.
    """

    def __init__(
        self,
        reply: str | Reply | None = None,
        *,
        latency_s: float = 0.0,
        faults: FaultPlan | None = None,
        port: int = 0,
        seed: int = 0,
        api_key: str | None = None,
        models: tuple[str, ...] = ("assay-test",),
        max_logged: int = 10_000,
        response_formats: Collection[str] | None = None,
        completion: CompletionReply | None = None,
    ) -> None:
        self.reply = reply
        if completion is None and isinstance(reply, ReplyScript):
            completion = reply.completion
        self.completion = completion
        self.response_formats = None if response_formats is None else frozenset(response_formats)
        self.latency_s = latency_s
        self.faults = faults or FaultPlan()
        self.port = port
        self.seed = seed
        self.api_key = api_key
        self.models = models
        self._lock = threading.Lock()
        self._max_logged = max_logged
        self.reset()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None

    # -- statistics -------------------------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget counters, logged requests, fail-first attempts, and restart the fault generator from the seed."""
        with self._lock:
            self.requests_total = 0
            self._status_counts: Counter[int | str] = Counter()
            self._bodies: deque[dict[str, Any]] = deque(maxlen=self._max_logged)
            self._attempts: Counter[str] = Counter()
            self._rng = random.Random(self.seed)
            self.last_authorization: str | None = None
        if isinstance(self.reply, ReplyScript):
            self.reply.reset()

    @property
    def status_counts(self) -> dict[int | str, int]:
        """Requests (chat and completions) per outcome: HTTP status, or "drop" for closed connections."""
        with self._lock:
            return dict(self._status_counts)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The JSON bodies of the last ``max_logged`` requests (chat and completions), oldest first."""
        with self._lock:
            return list(self._bodies)

    # -- lifecycle --------------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        """Start serving in a background thread; return the base URL once the socket is listening."""
        if self._thread is not None:
            return self.base_url
        self._ready.clear()
        self._startup_error = None
        self._thread = threading.Thread(target=self._serve, name="assay-test-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout=30):
            raise RuntimeError("the test server did not start within 30 s")
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise self._startup_error
        return self.base_url

    def stop(self) -> None:
        """Stop serving (pending slow replies are cut off) and wait for the thread to end."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread = None

    def __enter__(self) -> OpenAITestServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._setup())
        except BaseException as err:  # e.g. the port is taken: re-raised by start()
            self._startup_error = err
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            if self._runner is not None:
                loop.run_until_complete(self._runner.cleanup())
            loop.close()

    async def _setup(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]

    # -- handlers ---------------------------------------------------------------------------------------------------

    async def _models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "assay"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, _check_request, self._chat_reply)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, _check_completion_request, self._completion_reply)

    async def _chat_reply(self, body: dict[str, Any]) -> web.Response:
        reply = self.reply(body) if callable(self.reply) else self.reply
        if inspect.isawaitable(reply):
            reply = await reply
        if self.response_formats is not None:
            _check_format(body, reply)
        return _completion(body, reply)

    async def _completion_reply(self, body: dict[str, Any]) -> web.Response:
        replies = []
        for prompt in _prompts(body["prompt"]):
            reply = self.completion(prompt, body) if self.completion is not None else None
            if inspect.isawaitable(reply):
                reply = await reply
            if isinstance(reply, dict) and reply.get("status", 200) != 200:
                status = int(reply["status"])
                return _error(status, str(reply.get("error", f"scripted HTTP {status}")), reply.get("headers"))
            replies.append(reply)
        return _text_completion(body, replies)

    async def _answer(
        self,
        request: web.Request,
        check: Callable[[Any], str | None],
        answer: Callable[[dict[str, Any]], Any],
    ) -> web.StreamResponse:
        raw = await request.read()
        authorization = request.headers.get("Authorization")
        problem: str | None
        try:
            body = json.loads(raw)
        except ValueError as err:
            body, problem = None, f"request body is not JSON: {err}"
        else:
            problem = check(body)
        with self._lock:
            self.requests_total += 1
            self.last_authorization = authorization
            if isinstance(body, dict):
                self._bodies.append(body)
            fault = self._next_fault(raw, body)
        if self.api_key is not None and authorization != f"Bearer {self.api_key}":
            return self._count(_error(401, "invalid or missing API key"))
        if problem is None and self.response_formats is not None:
            problem = _unsupported_format(body, self.response_formats)
        if problem is not None:
            return self._count(_error(400, problem))
        if fault == "drop":
            self._count_status("drop")
            request.protocol.force_close()
            return web.Response()
        if isinstance(fault, int):
            retry_after = self.faults.retry_after_s
            headers = {"Retry-After": f"{retry_after:g}"} if fault == 429 and retry_after is not None else None
            return self._count(_error(fault, f"injected fault: HTTP {fault}", headers))
        delay = self.faults.slow_s if fault == "slow" else self.latency_s
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            return self._count(await answer(body))
        except Exception as err:  # a broken reply script is reported to the client, loudly
            return self._count(_error(500, f"reply function failed: {type(err).__name__}: {err}"))

    def _next_fault(self, raw: bytes, body: Any) -> int | str | None:
        """Called under the lock, once per request in arrival order."""
        plan = self.faults
        u = self._rng.random()
        if plan.fail_first:
            canonical = json.dumps(body, sort_keys=True).encode() if isinstance(body, dict) else raw
            key = hashlib.sha256(canonical).hexdigest()
            self._attempts[key] += 1
            if self._attempts[key] <= plan.fail_first:
                return plan.fail_first_with
        return plan.draw(u)

    def _count(self, response: web.Response) -> web.Response:
        self._count_status(response.status)
        return response

    def _count_status(self, status: int | str) -> None:
        with self._lock:
            self._status_counts[status] += 1


def _check_request(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "'model' must be a string"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list"
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return f"messages[{i}] must be an object with a 'role'"
    if body.get("stream"):
        return "streaming is not supported by the assay test server"
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "'tools' must be a list"
    return _check_stop(body)


def _check_completion_request(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "'model' must be a string"
    if body.get("stream"):
        return "streaming is not supported by the assay test server"
    try:
        _prompts(body.get("prompt"))
    except ValueError as err:
        return str(err)
    return _check_stop(body)


def _check_stop(body: dict[str, Any]) -> str | None:
    stop = body.get("stop")
    if stop is None or isinstance(stop, str):
        return None
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        return "'stop' must be a string or a list of strings"
    if len(stop) > 4:
        return f"'stop' takes at most 4 sequences, got {len(stop)}"
    return None


def _stop_at(text: str, body: dict[str, Any]) -> int | None:
    """Where the first of the request's stop sequences begins in ``text`` (None: none occurs)."""
    stop = body.get("stop")
    found = [text.find(s) for s in ([stop] if isinstance(stop, str) else stop or []) if s]
    return min((i for i in found if i >= 0), default=None)


def _prompts(prompt: Any) -> list[str | list[int]]:
    """The prompts of a completions request: a text, token ids, or a list of either."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return [prompt]
    if isinstance(prompt, list) and prompt:
        out: list[str | list[int]] = []
        for item in prompt:
            if isinstance(item, str) or (
                isinstance(item, list) and item and all(isinstance(t, int) and not isinstance(t, bool) for t in item)
            ):
                out.append(item)
            else:
                raise ValueError("'prompt' items must be texts or non-empty lists of token ids")
        return out
    raise ValueError("'prompt' must be a text, a list of token ids, or a non-empty list of those")


def _text_completion(body: dict[str, Any], replies: list[Any]) -> web.Response:
    """The completions response: one choice per prompt, in order."""
    choices, prompt_tokens, completion_tokens = [], 0, 0
    for index, (prompt, reply) in enumerate(zip(_prompts(body["prompt"]), replies, strict=True)):
        if reply is None:
            reply = {"text": (prompt if isinstance(prompt, str) else "") if body.get("echo") else ""}
        if isinstance(reply, str):
            reply = {"text": reply}
        if not isinstance(reply, dict):
            raise TypeError(f"a completion reply must be a str or dict, got {type(reply).__name__}")
        unknown = sorted(set(reply) - COMPLETION_KEYS)
        if unknown:
            raise ValueError(f"unknown completion reply key(s) {unknown}; known: {sorted(COMPLETION_KEYS)}")
        text = str(reply.get("text") or "")
        finish = reply.get("finish_reason") or "length"
        logprobs = reply.get("logprobs")
        echoed = len(prompt) if body.get("echo") and isinstance(prompt, str) and text.startswith(prompt) else 0
        at = _stop_at(text[echoed:], body)
        if at is not None:  # cut the text made, and the log-probabilities of the tokens cut off
            text, finish = text[: echoed + at], "stop"
            logprobs = _cut_logprobs(logprobs, len(text))
        made = len(prompt) if isinstance(prompt, list) else len(prompt.split())
        prompt_tokens += int(reply.get("prompt_tokens", made))
        completion_tokens += int(reply.get("completion_tokens", len(text.split())))
        choices.append({"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish})
    out = {
        "id": f"cmpl-{hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": choices,
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return web.json_response(out)


def _cut_logprobs(logprobs: Any, end: int) -> Any:
    """Completions log-probabilities without the tokens that start at or after ``end`` of the text."""
    if not isinstance(logprobs, dict) or not isinstance(logprobs.get("text_offset"), list):
        return logprobs
    keep = sum(1 for offset in logprobs["text_offset"] if offset < end)
    return {k: v[:keep] if isinstance(v, list) else v for k, v in logprobs.items()}


def _unsupported_format(body: dict[str, Any], supported: frozenset[str]) -> str | None:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind not in supported:
        return f"response_format type {kind!r} is not supported by this server (it takes {sorted(supported)})"
    return None


def _check_format(body: dict[str, Any], reply: Any) -> None:
    """Raise when a scripted reply breaks the request's JSON ``response_format`` (a real server never would)."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") not in ("json_object", "json_schema"):
        return
    kind = fmt["type"]
    text = reply.get("text") if isinstance(reply, dict) else reply
    if isinstance(reply, dict) and (reply.get("status", 200) != 200 or text is None):
        return
    try:
        value = json.loads(text if isinstance(text, str) else "")
    except ValueError:
        raise ValueError(f"the scripted reply {text!r:.80} is not JSON, but response_format is {kind}") from None
    if not isinstance(value, dict):
        raise ValueError(f"the scripted reply is JSON but not an object, and response_format is {kind}")
    if kind == "json_schema":
        import jsonschema

        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        try:
            jsonschema.validate(value, schema)
        except jsonschema.ValidationError as err:
            raise ValueError(f"the scripted reply does not satisfy the response_format schema: {err.message}") from None


def _completion(body: dict[str, Any], reply: Any) -> web.Response:
    """The chat-completion response for a reply (str, None for an echo, or a reply dict)."""
    if reply is None:
        reply = last_user_text(body)
    if isinstance(reply, str):
        reply = {"text": reply}
    if not isinstance(reply, dict):
        raise TypeError(f"a reply must be a str or dict, got {type(reply).__name__}")
    unknown = sorted(set(reply) - REPLY_KEYS)
    if unknown:
        raise ValueError(f"unknown reply key(s) {unknown}; known: {sorted(REPLY_KEYS)}")
    if reply.get("status", 200) != 200:
        status = int(reply["status"])
        return _error(status, str(reply.get("error", f"scripted HTTP {status}")), reply.get("headers"))
    text: str | None = reply.get("text")
    tool_calls = [_tool_call(i, call) for i, call in enumerate(reply.get("tool_calls") or [])]
    finish = reply.get("finish_reason") or ("tool_calls" if tool_calls else "stop")
    at = _stop_at(text, body) if text is not None else None
    if text is not None and at is not None:
        text, finish = text[:at], "stop"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    if text is not None and isinstance(limit, int) and len(text.split()) > limit:
        text, finish = " ".join(text.split()[:limit]), "length"
    prompt_tokens = sum(len(message_text(m).split()) for m in body["messages"])
    completion_tokens = len((text or "").split()) + sum(len(c["function"]["arguments"].split()) for c in tool_calls)
    usage = reply.get("usage") or {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
    message: dict[str, Any] = {"role": "assistant", "content": text}
    for key in ("reasoning_content", "reasoning"):
        if reply.get(key) is not None:
            message[key] = reply[key]
    if tool_calls:
        message["tool_calls"] = tool_calls
    out = {
        "id": f"chatcmpl-{hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
    if reply.get("logprobs") is not None:  # OpenAI's {"content": [{token, logprob, top_logprobs}, ...]}
        out["choices"][0]["logprobs"] = reply["logprobs"]
    return web.json_response(out, headers=reply.get("headers"))


def _tool_call(index: int, call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id") or f"call_{index}",
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM; print the base URL on stdout once listening, counts on stderr at the end."""
    parser = argparse.ArgumentParser(prog="python -m assay.testing.server", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    replies = parser.add_mutually_exclusive_group()
    replies.add_argument("--reply", default=None, help="a constant reply text (default: echo the last user message)")
    replies.add_argument(
        "--script", default=None, metavar="FILE", help="a reply script, .yaml/.yml/.json (assay.testing.scripted)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault generator")
    parser.add_argument("--api-key", default=None, help="require this bearer token (401 otherwise)")
    parser.add_argument("--rate-429", type=float, default=0.0)
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds of 429 replies")
    parser.add_argument("--rate-500", type=float, default=0.0)
    parser.add_argument("--rate-drop", type=float, default=0.0, help="share of connections closed without a reply")
    parser.add_argument("--rate-slow", type=float, default=0.0)
    parser.add_argument("--slow", type=float, default=5.0, help="seconds of a slow reply")
    parser.add_argument("--fail-first", type=int, default=0, help="fail the first N attempts of each request")
    parser.add_argument("--fail-first-with", default="500", help="an HTTP status, 'drop' or 'slow'")
    args = parser.parse_args(argv)
    kind: int | str = int(args.fail_first_with) if args.fail_first_with.isdigit() else args.fail_first_with
    try:
        faults = FaultPlan(
            rate_429=args.rate_429,
            retry_after_s=args.retry_after,
            rate_500=args.rate_500,
            rate_drop=args.rate_drop,
            rate_slow=args.rate_slow,
            slow_s=args.slow,
            fail_first=args.fail_first,
            fail_first_with=kind,
        )
        reply = ReplyScript.load(args.script) if args.script is not None else args.reply
    except ConfigError as err:
        parser.error(str(err))
    server = OpenAITestServer(
        reply, latency_s=args.latency, faults=faults, port=args.port, seed=args.seed, api_key=args.api_key
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    with server:
        print(server.base_url, flush=True)
        while not done.wait(0.5):
            pass
    print(f"served {server.requests_total} requests: {server.status_counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
