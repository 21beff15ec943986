"""A config's environment as promptfoo sees it: the process environment under the config's ``env`` overrides
(whose own ``{{ env.X }}`` are rendered from the process environment first), and ``{{ env.NAME }}`` rendered in
every string of the config at load (promptfoo's renderConfigEnvTemplates): a template naming an unset variable
stays as written, other templates (the vars) are left for the prompt."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from assay.tasks.importers.promptfoo.keys import REFUSED, env_decision
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList

_TEMPLATE = re.compile(r"\{\{(?:[^}]|\}(?!\}))*\}\}")
_ENV_NAME = re.compile(r"env\.(\w+)|env\[['\"]([^'\"]+)['\"]\]")
_ENV_USE = re.compile(r"\benv\.|env\[")


def check_env(env: Any, at: At) -> dict[str, str]:
    """A config's (or a provider's) ``env`` mapping, each key decided (a refused one names its line)."""
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise at.error(f"env is a mapping of NAME: value, got {env!r}")
    for name in env:
        decision, reason = env_decision(str(name))
        if decision == REFUSED:
            raise at.key(env, name).error(f"not supported by assay's promptfoo reader: {reason}")
    return {str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for k, v in env.items()}


def config_env(env: Mapping[str, str], process: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the config sees: the process's, under the config's ``env`` (rendered from the process's)."""
    base = dict(os.environ if process is None else process)
    return {**base, **{k: render_env(v, base) for k, v in env.items()}}


def render_env(text: str, env: Mapping[str, str]) -> str:
    """``text`` with its ``{{ env.NAME }}`` templates rendered (those naming an unset variable stay as written)."""
    if "{{" not in text or "env" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        source = match.group(0)
        if not _ENV_USE.search(source):
            return source
        name = _ENV_NAME.search(source)
        var = (name.group(1) or name.group(2)) if name else None
        if "|" not in source and (var is None or var not in env):
            return source
        try:
            from assay.tasks.template import environment

            return str(environment().from_string(source).render(env=dict(env)))
        except Exception:  # promptfoo keeps a template it cannot render as written
            return source

    return _TEMPLATE.sub(one, text)


def render_env_in(value: Any, env: Mapping[str, str]) -> Any:
    """Every string of a config with its env templates rendered (containers keep their lines)."""
    if isinstance(value, str):
        return render_env(value, env)
    if isinstance(value, dict):
        out = LineDict(source=getattr(value, "source", ""), line=getattr(value, "line", None))
        out.lines.update(getattr(value, "lines", {}))
        for k, v in value.items():
            out[k] = render_env_in(v, env)
        return out
    if isinstance(value, list):
        seq = LineList(source=getattr(value, "source", ""), line=getattr(value, "line", None))
        seq.lines.extend(getattr(value, "lines", []))
        seq.extend(render_env_in(v, env) for v in value)
        return seq
    return value


def flag(env: Mapping[str, str], name: str) -> bool:
    """promptfoo's getEnvBool: 1, true, yes (any case) are true."""
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "yup", "yeppers")
