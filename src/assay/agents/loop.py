"""The tool loop as a Model: call the wrapped model, run the tools it asks for, send back their results, until it
answers, submits or reaches a limit. One trajectory is one sample; each model call is one request (its whole
history), which the runner caches and retries as any other."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from assay.agents.config import MAX_TOOL_RESULT_CHARS, SUBMIT_TOOL, AgentConfig
from assay.models.base import Message, Model, ModelError, Request, Response, ToolCall, Usage
from assay.tools.base import CALL_ID, SampleTools, ToolSet, ToolStartError

# one model call of a trajectory: the request (its whole history) -> (response, answered from the cache)
Turn = Callable[[Request], Awaitable[tuple[Response, bool]]]


class TurnFailed(Exception):
    """A model call of the trajectory failed after its retries: the sample is an error sample."""


@dataclass
class _State:
    """What a trajectory has done so far."""

    history: list[Message]  # what is sent: OpenAI messages only
    transcript: list[Message]  # what is kept: the same with assay's extra keys (latency, usage, errors)
    executed: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model_calls: int = 0
    turn_calls: int = 0  # model calls since the current user turn began
    tool_errors: int = 0
    all_cached: bool = True
    last: Response | None = None
    text: str | None = None
    stop: str | None = None
    turns: list[int] = field(default_factory=list)


def cap_result(content: str, limit: int | None) -> tuple[str, int | None]:
    """A tool's message content as the model is sent it and the record keeps it: its first ``limit`` characters and
    a line saying it was cut, at what cap, from what length; with that full length (None when nothing was cut)."""
    if limit is None or len(content) <= limit:
        return content, None
    note = f"\n[cut: the result was {len(content)} characters long; tool results are capped at {limit} characters]"
    return content[:limit] + note, len(content)


def _arguments_json(arguments: dict[str, Any]) -> str:
    """The arguments as sent back in the history (unparsed arguments as the model wrote them)."""
    if set(arguments) == {"_raw"} and isinstance(arguments["_raw"], str):
        return arguments["_raw"]
    return json.dumps(arguments, ensure_ascii=False)


def _changes_by_call(tools: SampleTools) -> dict[str, dict[str, Any]]:
    """The standard tools' change records of this trajectory by call id, without the keys the message has."""
    if not tools.resources:
        return {}
    from assay.tools.standard.changes import CHANGES

    records = tools.resources.get(CHANGES)
    if not records:
        return {}
    out = {}
    for record in records:
        call_id = record.get("call_id")
        if call_id is not None:
            out[call_id] = {k: v for k, v in record.items() if k not in ("call_id", "tool") and v is not None}
    return out


class AgentLoop(Model):
    """A model and tools run as a loop (``agent:`` limits), answering one request with a whole trajectory."""

    provider = "agent"

    def __init__(
        self,
        model: Model,
        tools: ToolSet,
        config: AgentConfig | None = None,
        *,
        max_result_chars: int | None = MAX_TOOL_RESULT_CHARS,
    ) -> None:
        self.inner = model
        self.tools = tools
        self.config = config or AgentConfig()
        self.max_result_chars = max_result_chars  # a run's --max-response-chars; None sends results whole
        self.name = model.name
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._start_error: ToolStartError | None = None  # why the tools could not start: said again, not retried

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def _direct(self, request: Request) -> tuple[Response, bool]:
        """A model call outside the runner: retried by the default policy."""
        from assay.models.retry import RetryPolicy, call_with_retries

        try:
            response, _ = await call_with_retries(lambda: self.inner.generate(request), RetryPolicy())
        except ModelError as err:
            raise TurnFailed(str(err)) from None
        return response, False

    async def generate(self, request: Request) -> Response:
        try:
            return await self.run(request, self._direct)
        except TurnFailed as err:
            raise ModelError(f"model call failed mid-trajectory: {err}") from None

    async def start(self) -> None:
        """Start run-long tools (MCP servers) once, before the first trajectory. When they cannot start, every
        trajectory (those waiting now and later ones) gets the same :class:`ToolStartError` at once: the start, and
        its time-out, is tried once."""
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._start_error is not None:
                raise ToolStartError(str(self._start_error))
            if not self._started:
                try:
                    await self.tools.start()
                except ToolStartError as err:
                    self._start_error = err
                    raise
                self._started = True

    async def aclose(self) -> None:
        await self.tools.aclose()
        self._started = False

    async def run(
        self,
        request: Request,
        call: Turn,
        user_turns: list[str] | None = None,
        *,
        user: Any = None,
        environment: Any = None,
    ) -> Response:
        """One trajectory for ``request``: its messages open the conversation; ``user_turns`` are later user messages
        (scripted), each answered by the loop in turn; ``user`` (a simulated user) writes them instead. Tools act in
        ``environment`` (an :class:`~assay.environments.base.Environment`), when the task has one."""
        await self.start()
        started = time.perf_counter()
        history = [dict(m) for m in request.messages]
        state = _State(history=history, transcript=[dict(m) for m in history])
        state.turns = [i for i, m in enumerate(history) if m.get("role") == "user"][-1:]
        sample_tools = self.tools.for_sample(environment=environment)
        limit = self.config.time_limit_s
        try:
            async with asyncio.timeout(limit):
                await self._answer_turn(request, call, state, sample_tools)
                pending = list(user_turns or [])
                while state.stop in ("answer", "submit") and (pending or user is not None):
                    if pending:
                        text, simulated = pending.pop(0), False
                    else:
                        said = await user.next_message(state.transcript)
                        if said is None:
                            state.stop = user.why or "user_done"
                            break
                        text, simulated = said, True
                    message: Message = {"role": "user", "content": text}
                    state.history.append(dict(message))
                    state.turns.append(len(state.transcript))
                    state.transcript.append({**message, "simulated": True} if simulated else message)
                    state.turn_calls = 0
                    await self._answer_turn(request, call, state, sample_tools)
                else:
                    if user_turns and state.stop in ("answer", "submit"):
                        state.stop = "turns_done"
        except TimeoutError:
            state.stop = "time_limit"
        finally:
            await sample_tools.aclose()
        return self._response(state, time.perf_counter() - started)

    async def _answer_turn(self, request: Request, call: Turn, state: _State, tools: SampleTools) -> None:
        """Model calls and tool runs until this user turn is answered, submitted or a limit is reached."""
        cfg = self.config
        schemas = self.tools.schemas() + ([cfg.submit_schema()] if cfg.submit else [])
        runnable = self.tools.by_name
        declared = self.tools.declared_names()
        while True:
            if state.turn_calls >= cfg.max_turns:
                state.stop = "max_turns"
                return
            if (
                cfg.token_budget is not None
                and state.usage.input_tokens + state.usage.output_tokens >= cfg.token_budget
            ):
                state.stop = "token_budget"
                return
            turn_request = request.model_copy(update={"messages": list(state.history), "tools": schemas or None})
            response, cached = await call(turn_request)
            state.model_calls += 1
            state.turn_calls += 1
            state.all_cached = state.all_cached and cached
            state.last = response
            state.usage = Usage(
                input_tokens=state.usage.input_tokens + response.usage.input_tokens,
                output_tokens=state.usage.output_tokens + response.usage.output_tokens,
            )
            message: Message = {"role": "assistant", "content": response.text}
            calls = response.tool_calls
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c.id or f"call_{state.model_calls}_{k}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": _arguments_json(c.arguments)},
                    }
                    for k, c in enumerate(calls)
                ]
            state.history.append(dict(message))
            usage = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens}
            kept: Message = {**message, "latency_s": round(response.latency_s, 6), "usage": usage}
            if cached:
                kept["cached"] = True  # operational figures count each call, billed or from the cache
            state.transcript.append(kept)
            state.text = response.text
            if not calls:
                state.stop = "answer"
                return
            if any(c.name in declared and c.name not in runnable for c in calls):
                state.executed.extend(calls)  # a declared-only tool: recorded as asked, never run (result None)
                state.stop = "answer"
                return
            submitted = next((c for c in calls if cfg.submit and c.name == SUBMIT_TOOL), None)
            if submitted is not None:
                answer = submitted.arguments.get("answer")
                state.text = answer if isinstance(answer, str) else _arguments_json(submitted.arguments)
                state.executed.append(submitted.model_copy(update={"result": state.text}))
                state.stop = "submit"
                return
            if cfg.max_tool_calls is not None and len(state.executed) + len(calls) > cfg.max_tool_calls:
                state.stop = "max_tool_calls"
                return
            ids = [m["id"] for m in message["tool_calls"]]
            await self._run_calls(calls, ids, state, tools)
            if (
                cfg.token_budget is not None
                and state.usage.input_tokens + state.usage.output_tokens >= cfg.token_budget
            ):
                state.stop = "token_budget"
                return

    async def _run_calls(self, calls: list[ToolCall], ids: list[str], state: _State, tools: SampleTools) -> None:
        """Run one reply's tool calls, at most ``parallel_tool_calls`` at once; append their messages in order."""
        bound = asyncio.Semaphore(self.config.parallel_tool_calls)

        async def one(c: ToolCall, call_id: str) -> tuple[str, str | None, float]:
            async with bound:
                t0 = time.perf_counter()
                token = CALL_ID.set(call_id)  # a standard tool's change record names its call
                try:
                    content, error = await self._run_one(c, tools)
                finally:
                    CALL_ID.reset(token)
                return content, error, time.perf_counter() - t0

        outcomes = await asyncio.gather(*(one(c, i) for c, i in zip(calls, ids, strict=True)))
        changed = _changes_by_call(tools)
        limit = self.max_result_chars
        for c, call_id, (whole, error, seconds) in zip(calls, ids, outcomes, strict=True):
            content, full = cap_result(whole, limit)
            message: Message = {"role": "tool", "tool_call_id": call_id, "name": c.name, "content": content}
            state.history.append(dict(message))
            extra: dict[str, Any] = {"duration_s": round(seconds, 6)}
            update: dict[str, Any] = {"id": call_id, "result": content, "error": error}
            if full is not None:
                extra["truncated_from"] = update["truncated_from"] = full
            if call_id in changed:  # what the call did to the environment: files written, exit code
                extra["changes"] = changed[call_id]
            if error is not None:
                extra["error"] = True
                state.tool_errors += 1
                update["error"] = cap_result(error, limit)[0]
            state.transcript.append({**message, **extra})
            state.executed.append(c.model_copy(update=update))

    async def _run_one(self, c: ToolCall, tools: SampleTools) -> tuple[str, str | None]:
        """A tool's message content and, when it failed, why (the content is then the error, for the model)."""
        tool = self.tools.by_name.get(c.name)
        if tool is None:
            error = f"there is no tool named {c.name!r}; the tools are {sorted(self.tools.by_name)}"
            return f"Error: {error}", error
        if "_raw" in c.arguments and len(c.arguments) == 1:
            error = f"the arguments are not a JSON object: {c.arguments['_raw']!r:.200}"
            return f"Error: {error}", error
        timeout = self.config.tool_timeout_s
        try:
            async with asyncio.timeout(timeout):
                return await tool.call(c.arguments, tools), None
        except TimeoutError:
            error = f"{c.name} did not finish within {timeout:g}s"
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the model hears of it and goes on
            error = f"{type(err).__name__}: {err}" if type(err).__name__ != "ToolError" else str(err)
        return f"Error: {error}", error

    def _response(self, state: _State, seconds: float) -> Response:
        last = state.last
        return Response(
            text=state.text,
            tool_calls=state.executed,
            usage=state.usage,
            latency_s=seconds,
            finish_reason=last.finish_reason if last is not None else None,
            model=last.model if last is not None else None,
            cached=state.all_cached and state.model_calls > 0,
            transcript=state.transcript,
            stop_reason=state.stop,
            turns=state.turns if len(state.turns) > 1 else [],
            metadata={
                "agent": {
                    "model_calls": state.model_calls,
                    "tool_calls": len(state.executed),
                    "tool_errors": state.tool_errors,
                }
            },
        )
