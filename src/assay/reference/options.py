"""Options documented from the code: pydantic fields and function signatures, with their descriptions.

A description comes from the field's ``description`` when it has one, else from the class docstring's bullet for
the option (``- ``name``: meaning``, the style assay's Options docstrings use) or a Google-style ``Args:`` entry.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from assay.reference.entries import OptionDoc

_BULLET = re.compile(r"^(?P<indent>\s*)[-*]\s+(?P<head>``[^`]+``(?:[^:]*?``[^`]+``)*)\s*:\s*(?P<text>.*)$")
_ARG = re.compile(r"^(?P<indent>\s+)(?P<name>\w+)(?:\s*\([^)]*\))?:\s*(?P<text>.*)$")
_ARGS_HEADINGS = ("Args:", "Arguments:", "Parameters:")


def docstring_descriptions(*docs: str | None) -> dict[str, str]:
    """Option name -> description, read from bullets (``- ``name``: ...``) and ``Args:`` sections of ``docs``.

    The first docstring that describes a name wins (pass a class's own docstring before its bases')."""
    found: dict[str, str] = {}
    for doc in docs:
        if doc:
            for name, text in _described(inspect.cleandoc(doc)).items():
                found.setdefault(name, text)
    return found


def _described(doc: str) -> dict[str, str]:
    """The bullets and Args entries of one docstring, each with its continuation lines joined."""
    found: dict[str, str] = {}
    names: list[str] = []
    parts: list[str] = []
    indent = -1
    in_args = False

    def close() -> None:
        for name in names:
            found[name] = " ".join(parts)

    for line in doc.splitlines():
        stripped = line.strip()
        width = len(line) - len(line.lstrip())
        if names and stripped and width > indent and not _BULLET.match(line):
            parts.append(stripped)  # the entry goes on
            continue
        close()
        names, parts = [], []
        if stripped in _ARGS_HEADINGS:
            in_args = True
            continue
        bullet = _BULLET.match(line)
        arg = _ARG.match(line) if in_args else None
        if bullet:
            names = [n.strip() for n in re.findall(r"``([^`]+)``", bullet.group("head"))]
            parts, indent = [bullet.group("text").strip()], len(bullet.group("indent"))
        elif arg:
            names, parts, indent = [arg.group("name")], [arg.group("text").strip()], len(arg.group("indent"))
        elif stripped and width == 0:
            in_args = False
    close()
    return found


def type_name(annotation: Any) -> str:
    """A readable name of a type annotation: ``int``, ``list[str]``, ``'all' | 'any'``, ``float | None``."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return "any"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_name(a) for a in args)}]" if args else name
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def default_text(value: Any) -> str:
    """A default as a user would write it; required options say so."""
    if value is PydanticUndefined or value is inspect.Parameter.empty:
        return "required"
    if isinstance(value, str):
        return repr(value)
    return "null" if value is None else str(value).replace("True", "true").replace("False", "false")


def pydantic_options(model: type[BaseModel], *, skip: Iterable[str] = ()) -> list[OptionDoc]:
    """The documented options of a pydantic Options class (aliases as written in task files)."""
    docs = docstring_descriptions(*(cls.__doc__ for cls in model.__mro__ if issubclass(cls, BaseModel)))
    skipped = set(skip)
    out = []
    for name, info in model.model_fields.items():
        if name in skipped or name.startswith("_"):
            continue
        shown = info.alias or name
        default = info.get_default(call_default_factory=True) if not info.is_required() else PydanticUndefined
        description = info.description or docs.get(shown) or docs.get(name) or ""
        out.append(OptionDoc(shown, type_name(info.annotation), default_text(default), description))
    return out


def signature_options(function: Any, doc: str | None = None, *, skip: Iterable[str] = ("self",)) -> list[OptionDoc]:
    """The keyword options of a constructor or function, described from ``doc`` (e.g. the class docstring)."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations: show them unnamed
        hints = {}
    docs = docstring_descriptions(doc, getattr(function, "__doc__", None))
    skipped = set(skip)
    out = []
    for p in inspect.signature(function).parameters.values():
        if p.name in skipped or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        shown = type_name(hints.get(p.name, p.annotation))
        out.append(OptionDoc(p.name, shown, default_text(p.default), docs.get(p.name, "")))
    return out
