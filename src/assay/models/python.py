"""The Python provider: any function, coroutine function or agent object answers requests.

The callable receives the keyword arguments it declares among ``prompt`` (the text of the last user message),
``messages, doc, metadata, params, tools, response_format, repeat, sample_id, request``, or else the Request itself
(if it takes one parameter). It may return a str, a Response, a dict (``text, tool_calls, usage, metadata,
finish_reason``) or a tuple ``(text, tool_calls)``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import inspect
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from pydantic import ValidationError

from assay import importing
from assay.errors import ConfigError
from assay.models.base import Model, ModelError, Request, Response, ToolCall, Usage
from assay.secrets import looks_secret

ARGUMENTS = (
    "prompt",
    "messages",
    "doc",
    "metadata",
    "params",
    "tools",
    "response_format",
    "repeat",
    "sample_id",
    "request",
)
# transcript / stop_reason / turns: an agent may return its whole conversation (format: Response.transcript)
RESULT_KEYS = frozenset(
    {"text", "tool_calls", "usage", "metadata", "finish_reason", "transcript", "stop_reason", "turns"}
)


def import_object(path: str) -> Any:
    """The object at ``"pkg.module:attr"`` (``attr`` may be dotted) or ``"pkg.module.attr"``; ConfigError if absent.

    A module not found on ``sys.path`` is also looked for in the working directory (see :mod:`assay.importing`).
    """
    try:
        return importing.import_object(path)
    except ValueError as err:
        raise ConfigError(f"python: target {err}") from None


def _qualified_name(obj: Any) -> str:
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj) else type(obj)
    module = getattr(target, "__module__", None) or "?"
    return f"{module}:{getattr(target, '__qualname__', type(target).__name__)}"


def _source_digest(obj: Any) -> str | None:
    """A short hash of the source of a function or class (of an instance's class); None when unavailable."""
    target = obj if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj) else type(obj)
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        return None
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)  # async __call__


class PythonModel(Model):
    """An agent or model written in Python, given as a callable or a dotted path ``"pkg.module:attr"``.

    A class is instantiated with ``kwargs``; an object's ``generate`` method is used if it has one, else its
    ``__call__``. Sync callables run in a pool of up to ``max_threads`` worker threads (``threaded=True``), or inline
    on the event loop. An exception becomes a non-retryable ModelError naming its type (a ModelError raised by the
    agent passes through as is). Bump ``version`` to invalidate cached answers after changing code the agent calls
    (edits to the agent's own function or class already change its identity).
    """

    provider: ClassVar[str] = "python"

    def __init__(
        self,
        target: Any,  # a callable, an object with generate(), a class, or "pkg.module:attr"
        *,
        kwargs: dict[str, Any] | None = None,
        threaded: bool = True,
        max_threads: int = 32,
        version: str | None = None,
        name: str | None = None,
    ) -> None:
        self.target = target if isinstance(target, str) else _qualified_name(target)
        obj = import_object(target) if isinstance(target, str) else target
        self.kwargs = dict(kwargs or {})
        self.source_sha256 = _source_digest(obj)
        if inspect.isclass(obj):
            try:
                obj = obj(**self.kwargs)
            except Exception as err:
                raise ConfigError(f"python: cannot instantiate {self.target} ({type(err).__name__}: {err})") from err
        elif self.kwargs:
            raise ConfigError(f"python: 'kwargs' are passed to a class constructor, but {self.target} is not a class")
        fn = getattr(obj, "generate", None) if not inspect.isroutine(obj) else None
        fn = fn if callable(fn) else obj
        if not callable(fn):
            raise ConfigError(f"python: {self.target} is not callable and has no generate() method")
        self._fn: Callable[..., Any] = fn
        self._async = _is_async(fn)
        if max_threads < 1:
            raise ConfigError(f"python: 'max_threads' must be >= 1, got {max_threads!r}")
        self.threaded = threaded
        self.max_threads = max_threads
        self._executor: ThreadPoolExecutor | None = None
        self.version = version
        self.name = name or self.target.rpartition(":")[2] or self.target
        self._arguments, self._pass_request = self._plan_call(fn)

    def _plan_call(self, fn: Callable[..., Any]) -> tuple[tuple[str, ...], bool]:
        """Which Request fields to pass by keyword, or whether to pass the Request itself."""
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):
            return (), True  # no signature (some builtins): pass the Request
        if any(p.kind is p.VAR_KEYWORD for p in params):
            return ARGUMENTS, False
        named = tuple(p.name for p in params if p.name in ARGUMENTS and p.kind is not p.POSITIONAL_ONLY)
        if named:
            self._check_required(params, named)
            return named, False
        if params and params[0].kind in (
            params[0].POSITIONAL_ONLY,
            params[0].POSITIONAL_OR_KEYWORD,
            params[0].VAR_POSITIONAL,
        ):
            self._check_required(params[1:], ())
            return (), True
        raise ConfigError(
            f"python: {self.target} takes no parameters it can be given; it must take the Request, or keyword "
            f"arguments among {', '.join(ARGUMENTS)}"
        )

    def _check_required(self, params: list[inspect.Parameter], filled: tuple[str, ...]) -> None:
        for p in params:
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in filled:
                raise ConfigError(
                    f"python: {self.target} requires parameter {p.name!r}, which assay cannot fill "
                    f"(it passes the Request, or keyword arguments among {', '.join(ARGUMENTS)})"
                )

    def __repr__(self) -> str:
        return f"PythonModel({self.target!r})"

    def identity(self) -> dict[str, Any]:
        """What changes answers: the target, the user's ``version``, a hash of its source code (so editing the agent
        invalidates cached answers; ``version`` covers code it calls) and of its non-secret kwargs."""
        kwargs = self._public_kwargs()
        digest = hashlib.sha256(json.dumps(kwargs, sort_keys=True, default=str).encode()).hexdigest()[:16]
        return {
            "provider": self.provider,
            "target": self.target,
            "version": self.version,
            "source_sha256": self.source_sha256,
            "kwargs_sha256": digest,
        }

    def describe(self) -> dict[str, Any]:
        """A ``load_model`` spec of this agent; kwargs whose names look secret (key, token, …) are left out."""
        out: dict[str, Any] = {"provider": self.provider, "target": self.target, "name": self.name}
        out.update(version=self.version, threaded=self.threaded, max_threads=self.max_threads)
        if self.kwargs:
            out["kwargs"] = self._public_kwargs()
        return out

    async def _in_thread(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the sync agent in this model's thread pool (like asyncio.to_thread, with its own bound)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.max_threads, thread_name_prefix="assay-agent")
        call = functools.partial(contextvars.copy_context().run, self._fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    async def aclose(self) -> None:
        """Shut the worker threads down (a new pool starts if the model is used again)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _public_kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.kwargs.items() if not looks_secret(k)}

    @staticmethod
    def _argument(request: Request, name: str) -> Any:
        if name == "request":
            return request
        return prompt_text(request) if name == "prompt" else getattr(request, name)

    async def generate(self, request: Request) -> Response:
        """Call the agent and convert what it returns; its exceptions become non-retryable ModelErrors."""
        if self._pass_request:
            args: tuple[Any, ...] = (request,)
            kwargs: dict[str, Any] = {}
        else:
            args, kwargs = (), {n: self._argument(request, n) for n in self._arguments}
        start = time.perf_counter()
        try:
            if self._async:
                result = await self._fn(*args, **kwargs)
            elif self.threaded:
                result = await self._in_thread(args, kwargs)
            else:
                result = self._fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        except ModelError:
            raise
        except Exception as err:
            raise ModelError(f"agent {self.target} raised {type(err).__name__}: {err}", retryable=False) from err
        latency = time.perf_counter() - start
        response = to_response(result, self.target)
        if not response.latency_s:
            response.latency_s = latency
        return response


def prompt_text(request: Request) -> str:
    """The text of the request's last user message (text parts joined), or "" when there is none."""
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts: keep the text ones
                return "".join(
                    str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
                )
            return "" if content is None else str(content)
    return ""


def to_response(result: Any, target: str = "agent") -> Response:
    """Convert an agent's return value (str, Response, dict or (text, tool_calls)) into a Response."""
    if isinstance(result, Response):
        return result.model_copy()
    if isinstance(result, str):
        return Response(text=result)
    if isinstance(result, tuple):
        if len(result) != 2:
            raise ModelError(f"agent {target} returned a tuple of {len(result)} items; expected (text, tool_calls)")
        result = {"text": result[0], "tool_calls": result[1]}
    if not isinstance(result, dict):
        raise ModelError(
            f"agent {target} returned {type(result).__name__}; expected a str, Response, dict or (text, tool_calls)"
        )
    unknown = sorted(set(result) - RESULT_KEYS)
    if unknown:
        raise ModelError(
            f"agent {target} returned unknown key {unknown[0]!r}; known keys: {', '.join(sorted(RESULT_KEYS))}"
        )
    text = result.get("text")
    if text is not None and not isinstance(text, str):
        raise ModelError(f"agent {target} returned 'text' of type {type(text).__name__}; expected a str or None")
    calls = [_tool_call(c, i, target) for i, c in enumerate(result.get("tool_calls") or [])]
    try:
        usage = _usage(result.get("usage"))
        return Response(
            text=text,
            tool_calls=calls,
            usage=usage,
            finish_reason=result.get("finish_reason"),
            metadata=dict(result.get("metadata") or {}),
            transcript=list(result.get("transcript") or []),
            stop_reason=result.get("stop_reason"),
            turns=list(result.get("turns") or []),
        )
    except (TypeError, ValueError) as err:
        raise ModelError(f"agent {target} returned an invalid result: {err}") from None


def _usage(value: Any) -> Usage:
    if value is None:
        return Usage()
    if isinstance(value, Usage):
        return value
    if isinstance(value, dict):
        return Usage(
            input_tokens=value.get("input_tokens", value.get("prompt_tokens", 0)),
            output_tokens=value.get("output_tokens", value.get("completion_tokens", 0)),
        )
    raise TypeError(f"'usage' must be a Usage or dict, got {type(value).__name__}")


def _tool_call(call: Any, index: int, target: str) -> ToolCall:
    """A ToolCall from a ToolCall, ``{name, arguments, result, id}`` or an OpenAI-shaped ``{function: {...}}``."""
    if isinstance(call, ToolCall):
        return call
    if not isinstance(call, dict):
        raise ModelError(f"agent {target}: tool_calls[{index}] is a {type(call).__name__}; expected a ToolCall or dict")
    if isinstance(call.get("function"), dict):  # OpenAI shape, arguments as a JSON string
        function = call["function"]
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {"_raw": arguments}
        call = {
            "name": function.get("name"),
            "arguments": arguments,
            "id": call.get("id"),
            "result": call.get("result"),
            "error": call.get("error"),
        }
    unknown = sorted(set(call) - {"name", "arguments", "result", "id", "error"})
    if unknown:
        raise ModelError(f"agent {target}: tool_calls[{index}] has unknown key {unknown[0]!r}")
    try:
        return ToolCall.model_validate(call)
    except ValidationError as err:
        msg = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ModelError(f"agent {target}: tool_calls[{index}] is invalid ({msg})") from None
