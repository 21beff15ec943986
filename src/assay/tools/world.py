"""Stateful tool worlds (tau-bench style): ``environment: {python: "my_world:make"}`` names a factory that builds
one state object per sample from its row; the object's methods are the agent's tools and its final state is what
gets scored.

- The factory is a class (called with the row; a pydantic model is validated from it) or a function whose return
  annotation names the class (the way to build a dataclass, or anything needing more than the row).
- The tools are the class's public methods (names not starting with ``_``; ``state`` and ``to_dict``, which record
  the state, are left out). When any method is marked with :func:`assay.tools.tool`, only the marked ones are.
  Static and class methods and properties are never tools. Schemas come from signatures and docstrings as for
  Python function tools (:mod:`assay.tools.python`).
- Each call runs the method on the sample's state object (``SampleTools.environment.state``); sync methods run in a
  thread of their own, async ones are awaited; an exception becomes the tool's error message to the model.
- :func:`world_state` turns the final object into JSON for the record (see its docstring for the order).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import enum
import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from assay.tools.base import SampleTools, Tool, ToolError
from assay.tools.python import PythonTool

RECORDERS = ("state", "to_dict")  # methods that record a world's state, never offered as tools
_CURRENT: ContextVar[Any] = ContextVar("assay_world")  # the state object of the call running now


class WorldError(Exception):
    """A world factory cannot give tools or a state object (no class known, no methods, a wrong object)."""


def resolve_factory(factory: Callable[..., Any] | str) -> Callable[..., Any]:
    """The factory itself, or the object a ``"module:name"`` reference names."""
    if not isinstance(factory, str):
        return factory
    from assay.importing import import_object

    try:
        target = import_object(factory)
    except (ValueError, ImportError, AttributeError) as err:
        raise WorldError(f"cannot import the world factory {factory!r}: {err}") from None
    if not callable(target):
        raise WorldError(f"the world factory {factory!r} is not a class or function")
    return typing.cast(Callable[..., Any], target)


def world_class(factory: Callable[..., Any] | str) -> type:
    """The class of the objects ``factory`` makes: itself, or a function's return annotation."""
    factory = resolve_factory(factory)
    if inspect.isclass(factory):
        return factory
    name = getattr(factory, "__qualname__", repr(factory))
    try:
        returned = typing.get_type_hints(factory).get("return")
    except Exception as err:
        raise WorldError(f"cannot read the return annotation of the world factory {name}: {err}") from None
    if not inspect.isclass(returned):
        raise WorldError(
            f"the world factory {name} must be a class, or a function annotated with the class it returns "
            f"(def {getattr(factory, '__name__', 'make')}(row: dict) -> MyWorld), to know its tools"
        )
    return returned


def _library_class(klass: type) -> bool:
    """Bases whose methods are never a world's tools (object, pydantic's BaseModel, typing's Generic)."""
    module = klass.__module__ or ""
    return module in ("builtins", "typing", "abc") or module.split(".")[0] == "pydantic"


def tool_methods(cls: type) -> dict[str, Callable[..., Any]]:
    """The methods of ``cls`` offered as tools, by name, in definition order (base classes first)."""
    found: dict[str, Callable[..., Any]] = {}
    for klass in reversed(cls.__mro__):
        if _library_class(klass):
            continue
        for name, attr in vars(klass).items():
            if inspect.isfunction(attr) and not name.startswith("_"):
                found[name] = attr
            elif name in found:  # overridden by a non-method
                del found[name]
    marked = {name: fn for name, fn in found.items() if getattr(fn, "__assay_tool__", False)}
    return marked or {name: fn for name, fn in found.items() if name not in RECORDERS}


def _on_current(method: Callable[..., Any]) -> Callable[..., Any]:
    """A function of the method's arguments but ``self`` (same name, docstring and hints), calling it on the state
    object of the call running now."""
    if inspect.iscoroutinefunction(method):

        async def bound_async(**kwargs: Any) -> Any:
            return await method(_CURRENT.get(), **kwargs)

        call: Callable[..., Any] = bound_async
    else:

        def bound(**kwargs: Any) -> Any:
            return method(_CURRENT.get(), **kwargs)

        call = bound
    functools.update_wrapper(call, method)
    signature = inspect.signature(method)
    call.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
    return call


class WorldTool(PythonTool):
    """One method of a world class, run on the sample's state object."""

    needs_environment = True

    def __init__(self, cls: type, name: str, method: Callable[..., Any]) -> None:
        if not list(inspect.signature(method).parameters):
            raise WorldError(f"{cls.__name__}.{name} takes no self: make it a static method, or give it self")
        super().__init__(_on_current(method), name)
        self.world = cls

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        world = state.require_environment(self.name).state
        if not isinstance(world, self.world):
            got = "no world" if world is None else f"a {type(world).__name__}"
            raise ToolError(f"{self.name} acts on a {self.world.__name__} world, and this sample has {got}")
        token = _CURRENT.set(world)
        try:
            return await super().call(arguments, state)
        except ToolError:
            raise
        except Exception as err:  # the world refused (an unknown order, a rule): the model reads why
            raise ToolError(str(err) or type(err).__name__) from None
        finally:
            _CURRENT.reset(token)


def world_tools(factory: Callable[..., Any] | str) -> list[Tool]:
    """The tools of the world ``factory`` makes (a class, a function annotated with it, or ``"module:name"``)."""
    cls = world_class(factory)
    methods = tool_methods(cls)
    if not methods:
        raise WorldError(f"the world class {cls.__name__} has no public methods to offer as tools")
    tools: list[Tool] = []
    for name, method in methods.items():
        try:
            tools.append(WorldTool(cls, name, method))
        except WorldError:
            raise
        except Exception as err:
            raise WorldError(f"cannot make a tool of {cls.__name__}.{name}: {err}") from None
    return tools


def make_world(factory: Callable[..., Any] | str, row: Mapping[str, Any]) -> Any:
    """One sample's state object: ``factory(row)`` (a pydantic model class: ``model_validate(row)``) on a deep copy
    of the row (the world may change what it is given, the record's row stays as it was)."""
    factory = resolve_factory(factory)
    cls = world_class(factory)
    given = copy.deepcopy(dict(row))
    validate = getattr(factory, "model_validate", None) if inspect.isclass(factory) else None
    made = validate(given) if callable(validate) else factory(given)
    if inspect.isawaitable(made):
        if inspect.iscoroutine(made):
            made.close()
        raise WorldError("the world factory must return the world, not a coroutine (make it a plain function)")
    if not isinstance(made, cls):
        raise WorldError(f"the world factory returned a {type(made).__name__}, not the {cls.__name__} it declares")
    return made


_SKIP = object()  # a value world_state leaves out (strict mode: not plain data)


def _plain(value: Any, strict: bool) -> Any:
    """``value`` as JSON data: containers converted, models dumped, dates as ISO text; anything else as text, or
    :data:`_SKIP` when ``strict``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return _plain(value.value, strict)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Mapping):
        items = {str(k): _plain(v, strict) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not _SKIP}
    if isinstance(value, list | tuple | set | frozenset):
        items_list = [_plain(v, strict) for v in value]
        if isinstance(value, set | frozenset):
            items_list.sort(key=lambda v: json.dumps(v, sort_keys=True, default=str))
        return [v for v in items_list if v is not _SKIP]
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return _plain(value.model_dump(mode="json"), strict)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value), strict)
    return _SKIP if strict else str(value)


def world_state(obj: Any) -> Any:
    """A world's state as JSON data, for the record and ``state_match``. The first that applies: its ``state()``
    method, its ``to_dict()`` method, a pydantic model's ``model_dump``, a dataclass's fields (``asdict``), else its
    public attributes (``vars``, names not starting with ``_``) whose values are plain data (others left out).
    Whatever the first four give is made JSON-able (sets as sorted lists, dates as ISO text, other objects as
    text)."""
    for recorder in RECORDERS:
        method = getattr(obj, recorder, None)
        if inspect.ismethod(method):
            return _plain(method(), strict=False)
    if hasattr(obj, "model_dump") and callable(obj.model_dump):
        return _plain(obj.model_dump(mode="json"), strict=False)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain(dataclasses.asdict(obj), strict=False)
    public = {k: v for k, v in getattr(obj, "__dict__", {}).items() if not k.startswith("_")}
    return _plain(public, strict=True)


__all__ = ["WorldError", "WorldTool", "make_world", "tool_methods", "world_class", "world_state", "world_tools"]
