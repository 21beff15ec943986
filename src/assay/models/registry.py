"""Models by spec: ``"openai:gpt-4o-mini"``, ``"python:pkg.mod:agent"``, ``"predictions:preds.jsonl"``, or a dict.

A dict spec names its ``provider`` and the constructor's options; options are validated against the provider's
constructor signature, so a misspelt or mistyped key is reported by name. Third-party providers register a Model
class with :func:`register_provider` or through the ``assay.models`` entry-point group.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from assay.errors import ConfigError
from assay.models.base import Model
from assay.secrets import looks_secret

ENTRY_POINT_GROUP = "assay.models"
_BUILTIN: dict[str, str] = {
    "openai": "assay.models.openai_compat:OpenAIModel",
    "python": "assay.models.python:PythonModel",
    "predictions": "assay.models.predictions:PredictionsModel",
    "hf": "assay.models.hf:HFModel",
    "openai-completions": "assay.models.completions:CompletionsModel",
    "vllm": "assay.models.vllm:VLLMModel",
}
_REGISTERED: dict[str, type[Model]] = {}
_entry_points_loaded = False


def register_provider(name: str, cls: type[Model]) -> type[Model]:
    """Make ``cls`` loadable as ``"<name>:<first constructor argument>"`` or ``{"provider": name, ...}``."""
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise ConfigError(f"provider {name!r}: {cls!r} is not a Model subclass")
    _REGISTERED[name] = cls
    return cls


def providers() -> list[str]:
    """Names of every known provider."""
    _load_entry_points()
    return sorted({*_BUILTIN, *_REGISTERED})


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in _REGISTERED and ep.name not in _BUILTIN:
            register_provider(ep.name, ep.load())


def provider_class(name: str) -> type[Model]:
    """The Model class of provider ``name``; ConfigError listing the known ones if there is none."""
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _BUILTIN:
        module, attr = _BUILTIN[name].split(":")
        cls: type[Model] = getattr(importlib.import_module(module), attr)
        return cls
    _load_entry_points()
    if name in _REGISTERED:
        return _REGISTERED[name]
    raise ConfigError(f"unknown model provider {name!r} (known providers: {', '.join(providers())})")


def _parameters(cls: type[Model]) -> list[inspect.Parameter]:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@cache
def _options_model(cls: type[Model]) -> type[BaseModel]:
    """A pydantic model of ``cls``'s constructor options: unknown keys are rejected, values type-checked."""
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # unresolvable annotations: accept any value
        hints = {}
    fields: dict[str, Any] = {
        p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default) for p in _parameters(cls)
    }
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    return create_model(f"{cls.__name__}Options", __config__=config, **fields)


def _build(provider: str, options: dict[str, Any]) -> Model:
    cls = provider_class(provider)
    options_model = _options_model(cls)
    try:
        validated = options_model.model_validate(options)
    except ValidationError as err:
        raise ConfigError(_explain(provider, options_model, err)) from None
    return cls(**{name: getattr(validated, name) for name in validated.model_fields_set})


def _explain(provider: str, options_model: type[BaseModel], err: ValidationError) -> str:
    problems = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(options)"
        if e["type"] == "extra_forbidden":
            known = ", ".join(sorted(options_model.model_fields))
            problems.append(f"unknown option {key!r} (known options: {known})")
        elif e["type"] == "missing":
            problems.append(f"missing option {key!r}")
        elif looks_secret(key):
            problems.append(f"option {key!r}: {e['msg']}")  # never echo what may be a secret
        else:
            problems.append(f"option {key!r}: {e['msg']} (got {e.get('input')!r})")
    return f"model {provider!r}: " + "; ".join(problems)


def accepts_option(spec: Any, option: str) -> bool:
    """True when ``spec`` (``"provider:arg"`` or a dict with ``provider``) names a provider taking ``option``."""
    if isinstance(spec, str):
        provider: Any = spec.partition(":")[0]
    elif isinstance(spec, dict):
        provider = spec.get("provider")
    else:
        return False
    try:
        cls = provider_class(str(provider))
    except ConfigError:
        return False
    return any(p.name == option for p in _parameters(cls))


def load_model(spec: str | dict[str, Any] | Model | Callable[..., Any], **overrides: Any) -> Model:
    """A Model from a spec: ``"provider:arg"``, ``{"provider": ..., **options}``, a Model, a Model class or any
    callable (which becomes a PythonModel). ``overrides`` are options that take precedence over the spec's."""
    if isinstance(spec, Model):
        if overrides:
            raise ConfigError(f"cannot apply options {sorted(overrides)} to an already built model {spec!r}")
        return spec
    if isinstance(spec, str):
        provider, sep, rest = spec.partition(":")
        if not sep or not provider or not rest:
            raise ConfigError(
                f"model spec {spec!r} must look like 'provider:argument', e.g. 'openai:gpt-4o-mini', "
                f"'python:pkg.module:agent' or 'predictions:preds.jsonl' (known providers: {', '.join(providers())})"
            )
        params = _parameters(provider_class(provider))
        if not params:
            raise ConfigError(f"provider {provider!r} takes no options; use the dict form {{'provider': {provider!r}}}")
        return _build(provider, {params[0].name: rest, **overrides})
    if isinstance(spec, dict):
        options = {**spec, **overrides}
        provider = options.pop("provider", None)
        if not isinstance(provider, str):
            keys = ", ".join(map(repr, sorted(spec))) or "none"
            raise ConfigError(f"model spec needs a 'provider' key (one of: {', '.join(providers())}); it has {keys}")
        return _build(provider, options)
    if isinstance(spec, type) and issubclass(spec, Model):
        return spec(**overrides)
    if callable(spec) or callable(getattr(spec, "generate", None)):
        return _build("python", {"target": spec, **overrides})
    raise ConfigError(f"cannot make a model from {type(spec).__name__} {spec!r}")
