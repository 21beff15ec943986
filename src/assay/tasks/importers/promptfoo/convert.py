"""A read promptfoo config as assay task configs: one task per prompt over the same tests, each test a row with its
vars and its checks (judged by ``row_checks``), the first provider as the tasks' model; several providers are also
listed under ``models:``, which ``assay run`` runs as a matrix (prompts × providers, promptfoo's view)."""

from __future__ import annotations

import os
import re
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.reader import Prompt, PromptfooConfig
from assay.tasks.rowchecks import known_type

# reserved row fields (promptfoo reserves the ``__`` prefix too, so no var is shadowed)
ID, CHECKS, THRESHOLD, DESCRIPTION = "__id", "__assert", "__threshold", "__description"
ECHO = "assay.tasks.importers.promptfoo.echo:echo"
GENERATION_KEYS = {"temperature": "temperature", "max_tokens": "max_tokens", "top_p": "top_p", "seed": "seed"}


def model_spec(provider: Any, key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An assay model spec and generation settings for a promptfoo provider: ``openai:[chat:]MODEL`` (base URL from
    the provider's ``apiBaseUrl``/``apiHost``, else ``OPENAI_BASE_URL``/``OPENAI_API_HOST``) or ``echo``."""
    config: dict[str, Any] = {}
    if isinstance(provider, dict):
        config = dict(provider.get("config") or {})
        provider = provider.get("id")
    if not isinstance(provider, str):
        raise ConfigError(f"{key}: a provider is 'openai:chat:MODEL', 'echo' or {{id, config}}, got {provider!r}")
    generation = {ours: config[theirs] for theirs, ours in GENERATION_KEYS.items() if theirs in config}
    if provider == "echo":
        return {"provider": "python", "target": ECHO}, generation
    parts = provider.split(":")
    if parts[0] != "openai" or len(parts) < 2 or (len(parts) == 3 and parts[1] != "chat") or len(parts) > 3:
        raise ConfigError(
            f"{key}: provider {provider!r} is not supported; assay reads OpenAI-compatible chat providers "
            "('openai:MODEL', 'openai:chat:MODEL') and 'echo'"
        )
    spec: dict[str, Any] = {"provider": "openai", "model": parts[-1]}
    base_url = config.get("apiBaseUrl") or _host(config.get("apiHost"))
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or _host(os.environ.get("OPENAI_API_HOST"))
    if base_url:
        spec["base_url"] = str(base_url)
    if config.get("apiKeyEnvar"):
        spec["api_key_env"] = str(config["apiKeyEnvar"])
    return spec, generation


def _host(host: Any) -> str | None:
    return f"https://{host}/v1" if host else None


def _name(text: str) -> str:
    return re.sub(r"[^\w.\-]+", "-", text).strip("-.") or "promptfoo"


def check_types(config: PromptfooConfig) -> None:
    """Every check type has an assay equivalent; those that do not are named (with their tests), never dropped."""
    missing: dict[str, list[int]] = {}
    for i, test in enumerate(config.tests):
        for check in test.checks:
            kind = check.get("type") if isinstance(check, dict) else None
            if isinstance(kind, str) and not known_type(kind):
                missing.setdefault(kind, []).append(i)
    if missing:
        named = "; ".join(f"{kind!r} (tests {', '.join(map(str, tests))})" for kind, tests in missing.items())
        raise ConfigError(f"{config.path}: assertion types with no assay equivalent: {named}")


def task_configs(config: PromptfooConfig) -> list[dict[str, Any]]:
    """One assay task config per prompt; the tests are the rows, the checks judged by ``row_checks``."""
    check_types(config)
    model: dict[str, Any] | None = None
    generation: dict[str, Any] = {}
    if config.providers:  # the first provider; `assay run --model` evaluates another
        model, generation = model_spec(config.providers[0], "providers[0]")
    models = _named_models(config.providers) if len(config.providers) > 1 else None
    if models is not None:
        generation = {}  # each provider's own settings go with its model
    judge = model_spec(config.grader, "defaultTest.options.provider")[0] if config.grader else model
    rows = []
    for i, test in enumerate(config.tests):
        for reserved in (ID, CHECKS, THRESHOLD, DESCRIPTION):
            if reserved in test.vars:
                raise ConfigError(f"{config.path}: tests[{i}]: var {reserved!r} uses a name assay reserves")
        row: dict[str, Any] = {**test.vars, ID: f"test-{i + 1}", CHECKS: test.checks}
        if test.threshold is not None:
            row[THRESHOLD] = test.threshold
        row[DESCRIPTION] = test.description or ""
        rows.append(row)
    if not rows:
        raise ConfigError(f"{config.path}: tests: a promptfoo config needs at least one test to run")
    base = _name(config.description or config.path.resolve().parent.name)
    checks = {
        "name": "row_checks",
        "expected": f"doc.{CHECKS}",
        "threshold_field": THRESHOLD,
        "check_sets": config.templates,
        "judge": judge,
    }
    out = []
    for k, prompt in enumerate(config.prompts):
        task: dict[str, Any] = {
            "name": base if len(config.prompts) == 1 else f"{base}.prompt-{k + 1}",
            "alias": prompt.label[:80],
            "dataset": {"rows": rows},
            "fields": {"id": ID, "metadata": {"description": DESCRIPTION}},
            **_prompt(prompt),
            "evaluators": [checks],
        }
        if generation:
            task["generation"] = generation
        if model is not None:
            task["model"] = model
        if models is not None:
            task["models"] = models
        out.append(task)
    return out


def _named_models(providers: list[Any]) -> dict[str, dict[str, Any]]:
    """Each provider as a named model (its ``label``, else its model's name), its settings as the model's params."""
    out: dict[str, dict[str, Any]] = {}
    for i, provider in enumerate(providers):
        spec, generation = model_spec(provider, f"providers[{i}]")
        if generation and spec.get("provider") == "openai":
            spec["params"] = generation
        label = provider.get("label") if isinstance(provider, dict) else None
        name = _name(str(label or spec.get("model") or "echo"))
        while name in out:  # two providers of one model with different settings
            name += f"-{i + 1}"
        out[name] = spec
    return out


def _prompt(prompt: Prompt) -> dict[str, Any]:
    if prompt.messages is not None:
        return {"messages": prompt.messages}
    return {"template": prompt.text}
