"""Evaluators by name: built-ins load lazily, third parties register by decorator or entry point."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from assay.errors import ConfigError
from assay.evaluators.base import Evaluator

ENTRY_POINT_GROUP = "assay.evaluators"

# Built-in evaluator name -> module that registers it (imported on first use to keep start-up quick).
_BUILTIN_MODULES: dict[str, str] = {
    "exact_match": "assay.evaluators.text.exact_match",
    "fuzzy_match": "assay.evaluators.text.fuzzy_match",
    "contains": "assay.evaluators.text.contains",
    "regex": "assay.evaluators.text.regex",
    "token_f1": "assay.evaluators.text.token_f1",
    "numeric": "assay.evaluators._numeric",
    "json_match": "assay.evaluators.structured",
    "schema": "assay.evaluators._schema",
    "tool_usage": "assay.evaluators.agent",
    "custom": "assay.evaluators._custom",
    "llm_judge": "assay.evaluators.judge.evaluator",
    "faithfulness": "assay.evaluators.rag.faithfulness",
    "answer_relevancy": "assay.evaluators.rag.answer_relevancy",
    "context_precision": "assay.evaluators.rag.context_precision",
    "context_recall": "assay.evaluators.rag.context_recall",
    "hallucination": "assay.evaluators.rag.hallucination",
    "bleu": "assay.evaluators.generation",
    "chrf": "assay.evaluators.generation",
    "ter": "assay.evaluators.generation",
    "rouge": "assay.evaluators.generation",
    "rouge1": "assay.evaluators.generation",
    "rouge2": "assay.evaluators.generation",
    "rougeL": "assay.evaluators.generation",
    "rougeLsum": "assay.evaluators.generation",
    "semantic_similarity": "assay.evaluators.semantic",
    "row_checks": "assay.tasks.rowchecks",  # per-row checks (promptfoo assert:)
    "lmeval_metric": "assay.tasks.importers.lmeval.metric",  # a metric of an lm-eval task, by its process_results
    "code_exec": "assay.evaluators.code.code_exec",
    "env_check": "assay.evaluators.environment.env_check",  # scored from the environment after an agent's loop
    "env_files": "assay.evaluators.environment.env_files",
    "state_match": "assay.evaluators.environment.state_match",
    "acc": "assay.evaluators.loglikelihood.choice",
    "acc_norm": "assay.evaluators.loglikelihood.choice",
    "acc_bytes": "assay.evaluators.loglikelihood.choice",
    "acc_mutual_info": "assay.evaluators.loglikelihood.choice",
    "mc1": "assay.evaluators.loglikelihood.choice",
    "mc2": "assay.evaluators.loglikelihood.choice",
    "perplexity": "assay.evaluators.loglikelihood.perplexity",
    "word_perplexity": "assay.evaluators.loglikelihood.perplexity",
    "byte_perplexity": "assay.evaluators.loglikelihood.perplexity",
    "bits_per_byte": "assay.evaluators.loglikelihood.perplexity",
}

_REGISTRY: dict[str, type[Evaluator]] = {}
_entry_points_loaded = False

E = TypeVar("E", bound=type[Evaluator])


def register(name: str) -> Callable[[E], E]:
    """Class decorator: make an Evaluator subclass available under ``name``."""

    def decorate(cls: E) -> E:
        existing = _REGISTRY.get(name)
        if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
            raise ConfigError(f"evaluator name {name!r} is already registered by {existing.__module__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, Evaluator) and ep.name not in _REGISTRY:
            register(ep.name)(obj)


def names() -> list[str]:
    """Every known evaluator name: built-ins, registered classes and entry points."""
    _load_entry_points()
    return sorted(set(_BUILTIN_MODULES) | set(_REGISTRY))


def get_class(name: str) -> type[Evaluator]:
    """The Evaluator class registered under ``name``; an unknown name lists the known ones."""
    if name not in _REGISTRY and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
    if name not in _REGISTRY:
        _load_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown evaluator {name!r}; known evaluators: {', '.join(names())}") from None


def get(name: str, **options: Any) -> Evaluator:
    """Build the evaluator registered under ``name`` with ``options``."""
    return get_class(name)(**options)


def from_config(config: dict[str, Any]) -> Evaluator:
    """Build an evaluator from ``{"name": ..., **options}`` (what :meth:`Evaluator.to_config` gives)."""
    if not isinstance(config, dict) or "name" not in config:
        raise ConfigError(f"evaluator config needs a 'name' key, got {config!r}")
    options = {k: v for k, v in config.items() if k != "name"}
    return get(config["name"], **options)
