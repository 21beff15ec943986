"""Python functions as tools: the JSON schema comes from the signature, type hints and the docstring's Args."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import typing
from collections.abc import Callable
from typing import Any

from assay.tools.base import SampleTools, Tool, ToolError, as_text


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The function's description and each parameter's (docstring_parser reads Google, NumPy, reST styles)."""
    doc = inspect.getdoc(fn) or ""
    if not doc:
        return "", {}
    try:
        import docstring_parser
    except ImportError:
        raise ToolError(
            "Python tools read their docstring with docstring-parser: pip install 'assay[agents]'"
        ) from None
    parsed = docstring_parser.parse(doc)
    parts = [p for p in (parsed.short_description, parsed.long_description) if p]
    params = {p.arg_name: p.description or "" for p in parsed.params}
    return "\n\n".join(parts), params


async def in_daemon_thread(fn: Callable[..., Any], kwargs: dict[str, Any], name: str) -> Any:
    """``fn(**kwargs)`` in a thread of its own, so that a slow sync tool does not stall other samples.

    The thread is a daemon and belongs to no pool: when the caller stops waiting (the tool timed out, the trajectory
    hit its time limit), the call is abandoned for good. Nothing joins it, neither ``asyncio.run`` (which waits for
    the default executor's threads) nor the interpreter at exit, so a tool that never returns cannot keep the
    command alive after the run is done, nor take a worker from a pool that other code needs."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # abandoned: nobody waits for it any more
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        try:
            value, error = context.run(fn, **kwargs), None
        except BaseException as err:  # handed to the awaiting task, as asyncio.to_thread does
            value, error = None, err
        with contextlib.suppress(RuntimeError):  # the event loop has closed: the run ended long ago
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"assay-tool-{name}", daemon=True).start()
    return await future


def _is_environment(name: str, hint: Any) -> bool:
    """A parameter that takes the sample's environment: annotated as an Environment, or named ``environment``."""
    from assay.environments.base import Environment

    return (inspect.isclass(hint) and issubclass(hint, Environment)) or (name == "environment" and hint is Any)


class PythonTool(Tool):
    """A sync or async Python function; its arguments are checked (and coerced) against its type hints. A parameter
    annotated :class:`~assay.environments.base.Environment` (or named ``environment``) is given the sample's
    environment, so the tool can read its files or run programs there; the model never sees it."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        from pydantic import TypeAdapter

        self.fn = fn
        self.name = name or fn.__name__
        self.description, described = _docstring(fn)
        hints = typing.get_type_hints(fn)
        properties: dict[str, Any] = {}
        required: list[str] = []
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        self._environment_arg: str | None = None  # the parameter given the sample's environment, not the model
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            hint = hints.get(pname, Any)
            if _is_environment(pname, hint):
                self._environment_arg = pname
                self.needs_environment = self.needs_workspace = True
                continue
            adapter: TypeAdapter[Any] = TypeAdapter(hint)
            self._adapters[pname] = adapter
            schema = adapter.json_schema() if hint is not Any else {}
            schema.pop("title", None)
            if described.get(pname):
                schema["description"] = described[pname]
            if param.default is param.empty:
                required.append(pname)
            properties[pname] = schema
        self.parameters = {"type": "object", "properties": properties, "required": required}
        self._async = inspect.iscoroutinefunction(fn)

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        from pydantic import ValidationError

        unknown = sorted(set(arguments) - set(self._adapters))
        if unknown:
            raise ToolError(f"{self.name} takes no argument(s) {unknown}; it takes {sorted(self._adapters)}")
        missing = [p for p in self.parameters["required"] if p not in arguments]
        if missing:
            raise ToolError(f"{self.name} needs argument(s) {missing}")
        try:
            kwargs = {k: self._adapters[k].validate_python(v) for k, v in arguments.items()}
        except ValidationError as err:
            raise ToolError(f"bad arguments for {self.name}: {err.errors()[0]['msg']}") from None
        if self._environment_arg is not None:
            kwargs[self._environment_arg] = state.require_environment(self.name)
        if self._async:
            value = await self.fn(**kwargs)
        else:
            value = await in_daemon_thread(self.fn, kwargs, self.name)
        return as_text(value)


def function_tool(fn: Callable[..., Any] | Tool, name: str | None = None) -> Tool:
    """A Tool for a function (a Tool is returned as is)."""
    return fn if isinstance(fn, Tool) else PythonTool(fn, name)


def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function as a tool (optional: any function named in ``tools:`` is one); returns it unchanged."""
    fn.__assay_tool__ = True  # type: ignore[attr-defined]
    return fn
