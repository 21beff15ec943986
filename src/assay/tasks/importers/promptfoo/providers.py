"""promptfoo providers as assay model specs: ``openai:MODEL`` / ``openai:chat:MODEL`` (any OpenAI-compatible
server) with promptfoo's OpenAI provider settings and defaults (temperature 0 and max_tokens 1024 unless
``omitDefaults``; none of them for reasoning models), its base URL and organization from the config, the provider's
``env``, the config's ``env`` or the process environment, in promptfoo's order; and ``echo``. Every key of a
provider and of its ``config`` is honoured, ignored or refused naming the file, line and key (keys.OPENAI_CONFIG)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.tasks.importers.promptfoo.envs import check_env
from assay.tasks.importers.promptfoo.files import FILE, Files
from assay.tasks.importers.promptfoo.keys import OPENAI_CONFIG, check_keys
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import plain

ECHO = "assay.tasks.importers.promptfoo.echo:echo"
SENT = ("seed", "stop", "response_format", "service_tier", "user", "metadata", "store", "prompt_cache_key",
        "prompt_cache_options", "prompt_cache_retention", "tools", "functions", "function_call", "tool_choice",
        "parallel_tool_calls")  # fmt: skip
_FLOAT_ENV = {"top_p": "OPENAI_TOP_P", "presence_penalty": "OPENAI_PRESENCE_PENALTY",
              "frequency_penalty": "OPENAI_FREQUENCY_PENALTY"}  # fmt: skip


@dataclass
class Provider:
    """One provider of a config: its id and label, the assay model spec and generation settings, its prompts."""

    id: str
    label: str | None
    spec: dict[str, Any]
    generation: dict[str, Any]
    prompts: list[str] | None
    at: At
    price: dict[str, float] | None = None  # USD per 1M tokens (input, output) from the config's cost settings


def _reasoning(model: str) -> bool:
    """promptfoo's OpenAI isReasoningModel (o1/o3/o4, gpt-5, …): no temperature or max_tokens are sent."""
    m = re.sub(r"(^|/)ft:", r"\1", model)
    return (
        m.startswith(("o1", "o3", "o4", "gpt-5", "gpt-6-astra"))
        or any(f"/{p}" in m for p in ("o1", "o3", "o4", "gpt-5"))
        or re.search(r"(^|/)gpt-daybreak-(?:blue|red)-latest$", m) is not None
    )


def _number(env: Mapping[str, str], name: str, kind: type, at: At) -> Any:
    text = env.get(name, "")
    try:
        return kind(text)
    except ValueError:
        raise at.error(f"the environment variable {name}={text!r} is not a number") from None


def openai_settings(
    model: str, config: Mapping[str, Any], env: Mapping[str, str], at: At, files: Files
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(client settings, generation settings) of promptfoo's OpenAI chat provider for ``model``."""
    check_keys(config, "openai config", at, table=OPENAI_CONFIG)
    if config.get("showThinking") is True:
        raise at.key(config, "showThinking").error(
            "not supported by assay's promptfoo reader: a reasoning model's thinking is never part of the answer "
            "assay scores (set showThinking: false)"
        )
    client: dict[str, Any] = {}
    base = (
        f"https://{config['apiHost']}/v1" if config.get("apiHost")
        else config.get("apiBaseUrl")
        or (f"https://{env['OPENAI_API_HOST']}/v1" if env.get("OPENAI_API_HOST") else None)
        or env.get("OPENAI_API_BASE_URL") or env.get("OPENAI_BASE_URL")
    )  # fmt: skip
    if base:
        client["base_url"] = str(base)
    if config.get("apiKeyEnvar"):
        client["api_key_env"] = str(config["apiKeyEnvar"])
    headers = {str(k): str(v) for k, v in (config.get("headers") or {}).items()}
    organization = config.get("organization") or env.get("OPENAI_ORGANIZATION")
    if organization and not any(k.lower() == "openai-organization" for k in headers):
        headers = {"OpenAI-Organization": str(organization), **headers}
    if headers:
        client["headers"] = headers
    reasoning, gpt5 = _reasoning(model), model.replace("ft:", "").startswith("gpt-5") or "/gpt-5" in model
    gen: dict[str, Any] = {}
    omit = bool(config.get("omitDefaults"))
    if not reasoning:
        if "temperature" in config:
            gen["temperature"] = config["temperature"]
        elif env.get("OPENAI_TEMPERATURE"):
            gen["temperature"] = _number(env, "OPENAI_TEMPERATURE", float, at)
        elif not omit:
            gen["temperature"] = 0
    if not (reasoning or gpt5):
        if "max_tokens" in config:
            gen["max_tokens"] = config["max_tokens"]
        elif env.get("OPENAI_MAX_TOKENS"):
            gen["max_tokens"] = _number(env, "OPENAI_MAX_TOKENS", int, at)
        elif not omit:
            gen["max_tokens"] = 1024
    if reasoning:
        if "max_completion_tokens" in config:
            gen["max_completion_tokens"] = config["max_completion_tokens"]
        elif env.get("OPENAI_MAX_COMPLETION_TOKENS"):
            gen["max_completion_tokens"] = _number(env, "OPENAI_MAX_COMPLETION_TOKENS", int, at)
        if config.get("reasoning_effort"):
            gen["reasoning_effort"] = config["reasoning_effort"]
    elif config.get("reasoning_effort") and "gpt-oss" in model:
        gen["reasoning_effort"] = config["reasoning_effort"]
    for key, name in _FLOAT_ENV.items():
        if config.get(key) is not None:
            gen[key] = config[key]
        elif env.get(name):
            gen[key] = _number(env, name, float, at)
    for key in SENT:
        if config.get(key) is not None and (key != "stop" or config[key]):
            gen[key] = config[key]
    if gpt5 and config.get("verbosity"):
        gen["verbosity"] = config["verbosity"]
    for key in ("response_format", "tools", "functions"):
        if isinstance(gen.get(key), str) and gen[key].startswith(FILE):
            path = files.paths(gen[key], at.key(config, key))[0]
            gen[key] = files.load(path, at.key(config, key))
        if key != "response_format" and key in gen and "{{" in json.dumps(plain(gen[key])):
            raise at.key(config, key).error(
                f"not supported by assay's promptfoo reader: {key} rendered with each test's vars"
            )
    gen.update(config.get("passthrough") or {})
    return client, plain(gen)


def provider_spec(raw: Any, at: At, env: Mapping[str, str], files: Files, *, section: str = "provider") -> Provider:
    """A provider (``'openai:chat:MODEL'``, ``echo``, ``{id, label, config, env, prompts}``) as an assay model."""
    options: Mapping[str, Any] = {}
    if isinstance(raw, dict):
        check_keys(raw, "provider", at)
        options = raw
        raw = raw.get("id")
    if not isinstance(raw, str):
        raise at.error(f"a provider is 'openai:chat:MODEL', 'echo' or {{id, config}}, got {raw!r}")
    id_at = at.key(options, "id") if "id" in options else at
    label = options.get("label")
    prompts = options.get("prompts")
    config = options.get("config") or {}
    if not isinstance(config, dict):
        raise at.key(options, "config").error(f"a provider's config is a mapping, got {config!r}")
    own_env = {**env, **check_env(options.get("env"), at.key(options, "env"))}
    if raw == "echo":
        check_keys(config, "echo config", at.key(options, "config"), table={})
        return Provider(raw, label, {"provider": "python", "target": ECHO}, {}, prompts, at)
    parts = raw.split(":")
    if parts[0] != "openai" or len(parts) < 2 or (len(parts) == 3 and parts[1] != "chat") or len(parts) > 3:
        raise id_at.error(
            f"provider {raw!r} is not supported: assay reads OpenAI-compatible chat providers ('openai:MODEL', "
            "'openai:chat:MODEL'; any server, by apiBaseUrl or OPENAI_BASE_URL) and 'echo'"
        )
    model = parts[-1]
    client, generation = openai_settings(model, config, own_env, at.key(options, "config"), files)
    price = None
    if any(config.get(k) is not None for k in ("cost", "inputCost", "outputCost")):
        per_token = {
            "input": config.get("inputCost", config.get("cost")),
            "output": config.get("outputCost", config.get("cost")),
        }
        for kind, value in per_token.items():
            if not isinstance(value, int | float) or isinstance(value, bool):
                key = "inputCost" if kind == "input" and "inputCost" in config else "outputCost"
                key = key if key in config else "cost"
                raise at.key(options, "config").key(config, key).error(f"a cost is USD per token, got {value!r}")
        price = {k: float(v or 0) * 1_000_000 for k, v in per_token.items()}
    spec = {"provider": "openai", "model": model, **client}
    return Provider(raw, label, spec, generation, prompts, at, price)


# The environment variables an openai provider's spec is made from (none holds a credential): recorded with a
# promptfoo task's row_checks at load, so a grader resolved later (a resume typed in another shell) is the same.
PROVIDER_ENV = (
    "OPENAI_BASE_URL", "OPENAI_API_BASE_URL", "OPENAI_API_HOST", "OPENAI_ORGANIZATION", "OPENAI_TEMPERATURE",
    "OPENAI_MAX_TOKENS", "OPENAI_MAX_COMPLETION_TOKENS", "OPENAI_TOP_P", "OPENAI_PRESENCE_PENALTY",
    "OPENAI_FREQUENCY_PENALTY",
)  # fmt: skip
_recorded_env: ContextVar[Mapping[str, str] | None] = ContextVar("promptfoo_provider_env", default=None)


def provider_env() -> dict[str, str]:
    """The provider settings of the process environment (``PROVIDER_ENV``), to record at load."""
    return {k: os.environ[k] for k in PROVIDER_ENV if os.environ.get(k)}


@contextmanager
def recorded_env(env: Mapping[str, str] | None) -> Iterator[None]:
    """Within: :func:`model_spec` reads the provider settings recorded at load instead of the process's."""
    token = _recorded_env.set(env)
    try:
        yield
    finally:
        _recorded_env.reset(token)


def model_spec(provider: Any, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An assay model spec and generation settings for a promptfoo provider with the process environment's
    settings, or those recorded at load (:func:`recorded_env`) (``key`` names it in errors); row_checks builds its
    graders with this."""
    env = dict(os.environ)
    recorded = _recorded_env.get()
    if recorded is not None:
        env = {k: v for k, v in env.items() if k not in PROVIDER_ENV} | dict(recorded)
    found = provider_spec(provider, At("", None, key), env, Files(Path.cwd(), env))
    return found.spec, found.generation


def read_providers(raw: Any, at: At, env: Mapping[str, str], files: Files) -> list[Provider]:
    """The config's providers: a string, a list of strings and mappings, or ``{id: options}`` mappings."""
    items = [raw] if isinstance(raw, str | dict) else raw if isinstance(raw, list) else None
    if items is None:
        raise at.error(f"providers are a list of 'openai:chat:MODEL', 'echo' or {{id, config}}, got {raw!r}")
    out = []
    for i, item in enumerate(items):
        item_at = at.key(raw, i) if isinstance(raw, list) else at
        if isinstance(item, str) and item.startswith(FILE):
            for path in files.paths(item, item_at):
                loaded = files.load(path, item_at)
                for k, one in enumerate(loaded if isinstance(loaded, list) else [loaded]):
                    out.append(provider_spec(one, At.of(one, f"{path.name}[{k}]", item_at), env, files))
            continue
        if isinstance(item, dict) and "id" not in item and len(item) == 1:  # {openai:chat:m: {config, label}}
            ((pid, options),) = item.items()
            options = options if isinstance(options, dict) else {}
            merged = {"id": pid, **options}
            out.append(provider_spec(_like(options, merged), item_at.key(item, pid), env, files))
            continue
        out.append(provider_spec(item, item_at, env, files))
    return out


def _like(template: Any, data: dict[str, Any]) -> Any:
    from assay.tasks.importers.promptfoo.yaml12 import LineDict

    out = LineDict(data, source=getattr(template, "source", ""), line=getattr(template, "line", None))
    out.lines.update(getattr(template, "lines", {}))
    return out


EMBEDDING = ("openai:embedding:", "openai:embeddings:")


def check_grader(raw: Any, at: At, env: Mapping[str, str], files: Files) -> None:
    """A grading provider (options.provider, an assertion's provider) checked at load: an OpenAI-compatible chat
    or embedding provider, or ``{text, embedding}`` of them; row_checks reads it as promptfoo has it."""
    if isinstance(raw, dict) and "id" not in raw:
        if not raw or not set(raw) <= {"text", "embedding"}:
            raise at.error(f"a grader is a provider or {{text: provider, embedding: provider}}, got {raw!r}")
        for key, item in raw.items():
            check_grader(item, at.key(raw, key), env, files)
        return
    ident = raw.get("id") if isinstance(raw, dict) else raw
    if isinstance(ident, str) and ident.startswith(EMBEDDING):
        renamed = "openai:" + ident.split(":", 2)[2]
        provider_spec(_like(raw, {**raw, "id": renamed}) if isinstance(raw, dict) else renamed, at, env, files)
        return
    provider_spec(raw, at, env, files)


def grader(raw: Any, at: At, env: Mapping[str, str], files: Files) -> dict[str, Any]:
    """A text grading provider (defaultTest.options.provider: row_checks' judge) as an assay model spec."""
    if isinstance(raw, dict) and "id" not in raw and "text" in raw:
        return grader(raw["text"], at.key(raw, "text"), env, files)
    provider = provider_spec(raw, at, env, files)
    spec = dict(provider.spec)
    if provider.generation and spec.get("provider") == "openai":
        spec["params"] = provider.generation
    return spec


def ref_matches(ref: str, label: str | None, ident: str | None) -> bool:
    """promptfoo's doesPromptRefMatch / doesProviderRefMatch: a label or id, ``Group:*``, or the ``Group`` prefix."""
    names = [n for n in (label, ident, _canonical(ident)) if n]
    if ref in names:
        return True
    if ref.endswith("*") and any(n.startswith(ref[:-1]) for n in names):
        return True
    return any(n.startswith(f"{ref}:") for n in names)


def _canonical(ident: str | None) -> str | None:
    if ident and ident.startswith("openai:") and not ident.startswith("openai:chat:"):
        return "openai:chat:" + ident[len("openai:") :]
    return ident
