"""What the three environment evaluators share: the observation key, reading the observation back from the scoring
context, the row's values, and workspace paths and globs."""

from __future__ import annotations

import hashlib
import json
import re
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from assay.environments.base import WORKSPACE, EnvironmentEvaluator
from assay.errors import EvaluationInputError
from assay.evaluators.base import Evaluator
from assay.verdict import Verdict


class ObservingEvaluator(Evaluator, EnvironmentEvaluator):
    """An evaluator scored from its observation of the sample's environment (``context["environment"]``), never
    from the answer alone: without an observation the verdict is an error that says why, never a zero."""

    def observation_key(self) -> str:
        """The name, plus a digest of the options when any differ from the defaults (two metrics never collide)."""
        config = {k: v for k, v in self.to_config().items() if k != "name"}
        if not config:
            return self.name
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
        return f"{self.name}:{digest}"

    def check(self, actual: Any, expected: Any) -> Verdict:
        """Called without a context (a bare pair): there is no observation to score."""
        raise EvaluationInputError(self._no_environment())

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Score the recorded observation; an exception becomes an error verdict, as in :meth:`Evaluator.evaluate`."""
        try:
            observation = self._observation(context)
            doc = (context or {}).get("doc")
            return self.score(observation, doc if isinstance(doc, Mapping) else {}, expected)
        except EvaluationInputError as exc:
            return Verdict.errored(str(exc))
        except Exception as exc:
            return Verdict.errored(f"{self.name} raised {type(exc).__name__}: {exc}")

    @abstractmethod
    def score(self, observation: Any, doc: Mapping[str, Any], expected: Any) -> Verdict:
        """The verdict on one observation (``doc`` is the sample's row, ``expected`` its target)."""

    def _observation(self, context: Mapping[str, Any] | None) -> Any:
        environment = (context or {}).get("environment")
        observations = environment.get("observations") if isinstance(environment, Mapping) else None
        if not isinstance(observations, Mapping) or self.observation_key() not in observations:
            raise EvaluationInputError(self._no_environment())
        observation = observations[self.observation_key()]
        if isinstance(observation, Mapping) and observation.get("error"):
            raise EvaluationInputError(f"{self.name}: {observation['error']}")
        return observation

    def _no_environment(self) -> str:
        return (
            f"{self.name} needs the environment: run it in a task with an `environment:` (the sample's record has "
            f"no observation {self.observation_key()!r} of it)"
        )


def row_value(doc: Mapping[str, Any], *keys: str) -> Any:
    """The row's value under the first of ``keys`` it has (None when it has none)."""
    for key in keys:
        if key in doc:
            return doc[key]
    return None


def string_list(value: Any, what: str) -> list[str]:
    """A list of strings from a row: a list, or a JSON-encoded list as SWE-bench's rows hold them."""
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise EvaluationInputError(f"{what} is a string but not a JSON list: {value[:80]!r}") from None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    raise EvaluationInputError(f"{what} must be a list of strings, got {type(value).__name__}")


def text_map(value: Any, what: str, *, allow_none: bool = False) -> dict[str, str | None]:
    """A mapping of workspace path -> text (None, where allowed, meaning the file must not exist)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise EvaluationInputError(f"{what} must be a mapping of path -> text, got {type(value).__name__}")
    out: dict[str, str | None] = {}
    for path, text in value.items():
        if not (isinstance(text, str) or (allow_none and text is None)):
            allowed = "text or null" if allow_none else "text"
            raise EvaluationInputError(f"{what}[{path!r}] must be {allowed}, got {type(text).__name__}")
        out[workspace_path(str(path), what)] = text
    return out


def file_texts(value: Any, what: str) -> dict[str, str]:
    """A mapping of workspace path -> text (no nulls): files a check writes in."""
    return {path: text for path, text in text_map(value, what).items() if text is not None}


def workspace_path(path: str, what: str = "path") -> str:
    """A path relative to the workspace (``/workspace/a`` and ``./a`` become ``a``); one leaving it is refused."""
    rel = path.removeprefix(WORKSPACE + "/") if path.startswith(WORKSPACE + "/") else path
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if rel.startswith("/") or not parts or ".." in parts:
        raise EvaluationInputError(f"{what}: {path!r} is not a path inside the workspace")
    return "/".join(parts)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A workspace glob as a regex: ``*`` and ``?`` stay in one folder, ``**/`` is any number of folders."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            char = pattern[i]
            out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
            i += 1
    return re.compile("".join(out) + r"\Z")


def tail(text: str, limit: int = 4000) -> str:
    """The end of a program's output, where its verdict is."""
    return text if len(text) <= limit else "…" + text[-limit:]
