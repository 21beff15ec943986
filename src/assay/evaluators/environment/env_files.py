"""``env_files``: workspace files after the loop against the content expected of them, with partial credit per file
and a short unified diff of each one that differs."""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from assay.environments.base import Environment
from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Options
from assay.evaluators.environment.observing import ObservingEvaluator, text_map
from assay.evaluators.registry import register
from assay.verdict import Verdict

MAX_TEXT = 256 * 1024  # bytes of a file kept in the observation; past it only its digest and size
DIFF_LINES = 40  # lines of one file's diff in the feedback
SHOWN_FILES = 10  # files whose diffs the feedback shows


class EnvFilesOptions(Options):
    expected: str = Field(
        "expected_files",
        description="the row key whose value maps workspace paths to their expected text (null: the file must "
        "not exist)",
    )
    files: dict[str, str | None] = Field(
        default_factory=dict,
        description="expected files for every sample (workspace path -> text, or null: must not exist); the "
        "row's entries win",
    )
    mode: Literal["exact", "contains", "regex"] = Field(
        "exact",
        description="'exact': the file equals the text; 'contains': the file contains it; 'regex': the text is a "
        "regular expression found in the file (multiline)",
    )
    strip: bool = Field(
        True,
        description="ignore whitespace at the ends of lines and blank lines at the ends of the file (line endings "
        "are always normalised)",
    )


def observe_file(env: Environment, path: str) -> dict[str, Any]:
    """One workspace file as the record keeps it: its text up to MAX_TEXT bytes, always its size and digest."""
    try:
        data = env.read_file(path)
    except FileNotFoundError:
        return {"exists": False}
    except (OSError, ValueError) as exc:  # a folder, or a link leading out of the workspace
        return {"exists": False, "unreadable": f"{type(exc).__name__}: {exc}"}
    out: dict[str, Any] = {"exists": True, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    if len(data) > MAX_TEXT:
        out["text"] = None
        return out
    try:
        out["text"] = data.decode("utf-8")
    except UnicodeDecodeError:
        out["text"], out["binary"] = None, True
    return out


def _normal(text: str, strip: bool) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n") if strip else text


def _diff(expected: str, actual: str, path: str) -> str:
    lines = list(
        difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), f"expected/{path}", f"workspace/{path}", n=2, lineterm=""
        )
    )
    shown = lines[:DIFF_LINES]
    if len(lines) > DIFF_LINES:
        shown.append(f"… {len(lines) - DIFF_LINES} more diff lines")
    return "\n".join(shown)


@register("env_files")
class EnvFiles(ObservingEvaluator):
    """Compares workspace files after the loop with the row's expected content (``expected_files``: path -> text,
    or null for a file that must not exist). The score is the share of files that match; passed when all do. The
    observation: ``{"files": {path: {"exists", "size", "sha256", "text"}}}`` (text null past 256 KiB or for a
    binary file; such a file matches only in ``exact`` mode without ``strip``, by digest)."""

    Options = EnvFilesOptions
    options: EnvFilesOptions

    def setup(self) -> None:
        try:
            self._files = text_map(self.options.files, "env_files option files", allow_none=True)
        except EvaluationInputError as exc:
            raise ConfigError(str(exc)) from None
        if self.options.mode == "regex":
            for path, text in self._files.items():
                try:
                    re.compile(text or "")
                except re.error as exc:
                    raise ConfigError(f"env_files: files[{path!r}] is not a regular expression: {exc}") from None

    def _expected(self, doc: Mapping[str, Any]) -> dict[str, str | None]:
        row = text_map(doc.get(self.options.expected), f"the row's {self.options.expected}", allow_none=True)
        expected = {**self._files, **row}
        if not expected:
            raise EvaluationInputError(
                f"env_files: nothing to compare: the row has no {self.options.expected!r} and the option files is empty"
            )
        return expected

    async def observe(self, env: Environment, doc: Mapping[str, Any]) -> Any:
        """The expected files as they are in the workspace now."""
        try:
            paths = sorted(self._expected(doc))
        except EvaluationInputError as exc:
            return {"error": str(exc)}
        return {"files": {path: observe_file(env, path) for path in paths}}

    def _matches(self, path: str, want: str | None, seen: Mapping[str, Any]) -> tuple[bool, str | None]:
        """Whether one file is as expected, and what differs when not."""
        if want is None:
            return (False, "exists but must not") if seen.get("exists") else (True, None)
        if not seen.get("exists"):
            return False, "missing" + (f" ({seen['unreadable']})" if seen.get("unreadable") else "")
        text = seen.get("text")
        if text is None:  # too large or binary: only its digest is known
            if self.options.mode == "exact" and not self.options.strip:
                same = hashlib.sha256(want.encode()).hexdigest() == seen.get("sha256")
                return same, None if same else f"differs ({seen.get('size')} bytes, not shown)"
            what = "binary" if seen.get("binary") else f"{seen.get('size')} bytes, past the {MAX_TEXT} kept"
            return False, f"cannot be compared as text ({what})"
        got, want_n = _normal(text, self.options.strip), _normal(want, self.options.strip)
        if self.options.mode == "exact":
            return (True, None) if got == want_n else (False, _diff(want_n, got, path))
        if self.options.mode == "contains":
            return (True, None) if want_n in got else (False, "does not contain the expected text")
        try:
            found = re.search(want, text, re.MULTILINE)
        except re.error as exc:
            raise EvaluationInputError(f"env_files: the text for {path!r} is not a regular expression: {exc}") from None
        return (True, None) if found else (False, f"no match for /{want}/")

    def score(self, observation: Any, doc: Mapping[str, Any], expected: Any) -> Verdict:
        """The share of expected files that match."""
        files = observation.get("files") if isinstance(observation, Mapping) else None
        if not isinstance(files, Mapping):
            raise EvaluationInputError(f"env_files: the recorded observation is not env_files': {observation!r:.200}")
        wanted = self._expected(doc)
        differing: dict[str, str] = {}
        for path, want in wanted.items():
            seen = files.get(path)
            if seen is None:
                raise EvaluationInputError(f"env_files: {path!r} was not observed (the row changed since the run?)")
            ok, why = self._matches(path, want, seen)
            if not ok:
                differing[path] = why or "differs"
        matched = len(wanted) - len(differing)
        details: dict[str, Any] = {"matched": matched, "total": len(wanted), "differing": sorted(differing)}
        if not differing:
            return Verdict.pass_(1.0, details)
        shown = sorted(differing)[:SHOWN_FILES]
        reason = f"{len(differing)} of {len(wanted)} files differ: {', '.join(shown)}"
        feedback = "\n".join(f"{p}: {differing[p]}" if "\n" not in differing[p] else differing[p] for p in shown)
        return Verdict.partial(matched / len(wanted), reason, threshold=1.0, feedback=feedback, details=details)
