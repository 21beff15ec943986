"""lm-eval's ``doc_to_text`` / ``doc_to_target`` / ``doc_to_choice`` with lm-eval's meaning: a field name, a Jinja
template (strict undefined, its ``regex_replace`` filter), a list, a number or a ``!function`` hook."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.lmeval.hooks import resolve
from assay.tasks.importers.lmeval.yamlfile import FunctionRef, TaskFile


def _regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    return re.sub(pattern, repl, string, count=count)


@lru_cache(maxsize=1)
def _env() -> Any:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True)
    env.filters["regex_replace"] = _regex_replace
    return env


@dataclass(frozen=True)
class DocFunction:
    """One ``doc_to_*`` key compiled: call it on a document."""

    key: str
    raw: Any
    fn: Callable[[dict[str, Any]], Any] | None
    template: Any  # a compiled Jinja template, or None
    has_choices: bool  # the task has doc_to_choice: a rendered digit string is an index (lm-eval)
    where: str

    @classmethod
    def build(cls, tf: TaskFile, key: str, default: Any = None) -> DocFunction | None:
        """The task file's ``key``, or None when it is not given and has no default."""
        raw = tf.data.get(key, default)
        if raw is None:
            return None
        where = tf.where(key)
        fn = resolve(raw) if isinstance(raw, FunctionRef) else None
        template = None
        if isinstance(raw, str):
            try:
                template = _env().from_string(raw)
            except Exception as err:
                raise ConfigError(f"{where}: template syntax error: {err}") from None
        elif fn is None and not isinstance(raw, int | list | dict):
            raise ConfigError(f"{where}: a field name, a Jinja template, a list or !function, got {raw!r}")
        return cls(key, raw, fn, template, tf.data.get("doc_to_choice") is not None, where)

    def __call__(self, doc: dict[str, Any]) -> Any:
        try:
            return self._apply(doc)
        except ConfigError:
            raise
        except Exception as err:
            raise ConfigError(f"{self.where}: {type(err).__name__}: {err} (on document {_brief(doc)})") from None

    def _apply(self, doc: dict[str, Any]) -> Any:
        if self.fn is not None:
            return self.fn(doc)
        raw = self.raw
        if isinstance(raw, int | list):
            return raw
        if isinstance(raw, dict):
            return list(raw.values())
        if raw in doc:  # a field name (lm-eval: a column of the dataset)
            return doc[raw]
        text = self.template.render(**doc)
        if self.key == "doc_to_choice":
            try:
                return ast.literal_eval(text)
            except (SyntaxError, ValueError):
                raise ConfigError(f"{self.where}: rendered {text[:80]!r}, which is not a list literal") from None
        if text.isdigit() and self.has_choices:
            return ast.literal_eval(text)
        if self.key == "doc_to_target" and len(text) >= 2 and text[0] == "[" and text[-1] == "]":
            try:
                return ast.literal_eval(text)
            except (SyntaxError, ValueError):
                return text
        return text


def _brief(doc: dict[str, Any]) -> str:
    text = repr(doc)
    return text if len(text) <= 120 else text[:117] + "..."
