"""Recurring themes of a run's failures: failing verdicts grouped by metric and reason pattern, with examples.

The grouping is deterministic: a reason's pattern is the reason with its quoted values and numbers masked
(``output '7' does not equal expected '8'`` → ``output <text> does not equal expected <text>``), so failures that
differ only in their values fall into one theme; a judge's grade (``details["grade"]``) is kept apart, so "partial"
and "incorrect" are separate themes. Error verdicts (the evaluator could not judge) form themes of their own.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import AssayError
from assay.record import SampleRecord

if TYPE_CHECKING:
    from assay.record import RunManifest

_QUOTED = re.compile(r"""(?<![\w'"])'(?:[^'\\\n]|\\.)*'(?![\w])|(?<![\w"'])"(?:[^"\\\n]|\\.)*"(?![\w])""")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:e[-+]?\d+)?%?(?![\w])", re.IGNORECASE)
_HEX = re.compile(r"\b[0-9a-f]{8,}\b", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
PATTERN_LIMIT = 200


def reason_pattern(text: str) -> str:
    """``text`` with quoted values, numbers and long hex ids masked and whitespace collapsed: the theme key."""
    text = _QUOTED.sub("<text>", text)
    text = _HEX.sub("<id>", text)
    text = _NUMBER.sub("<n>", text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= PATTERN_LIMIT else text[: PATTERN_LIMIT - 1] + "…"


@dataclass
class Example:
    """One failing verdict shown as an example of its theme."""

    task: str
    sample_id: str
    repeat: int
    reason: str | None
    feedback: str | None
    model_feedback: str | None = None  # filled by ``assay feedback --write-with``


@dataclass
class Theme:
    """Failing (or errored) verdicts of one metric that share a reason pattern."""

    id: str
    metric: str  # the metric key, with ",filter" when the filter is not "none"
    evaluator: str  # the evaluator's registered name
    kind: Literal["failure", "error"]
    pattern: str
    grade: str | None
    count: int = 0  # verdicts
    samples: list[tuple[str, str]] = field(default_factory=list)  # (task, sample_id), in order of appearance
    examples: list[Example] = field(default_factory=list)
    feedback: list[tuple[str, int]] = field(default_factory=list)  # most common feedback texts with their counts
    _seen: set[tuple[str, str]] = field(default_factory=set, repr=False, compare=False)  # = set(samples), for speed

    @property
    def label(self) -> str:
        """The theme in one line: metric, grade and pattern."""
        grade = f" [grade {self.grade}]" if self.grade is not None else ""
        prefix = "error" if self.kind == "error" else "fails"
        return f"{self.metric}{grade} {prefix}: {self.pattern}"

    @property
    def example_ids(self) -> list[str]:
        """``task/sample_id`` of the first samples of the theme."""
        return [f"{task}/{sid}" for task, sid in self.samples[:10]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        out = asdict(self)
        out.pop("_seen")
        out["label"] = self.label
        out["n_samples"] = len(self.samples)
        out["samples"] = [{"task": t, "sample_id": s} for t, s in self.samples]
        out["example_ids"] = self.example_ids
        out["feedback"] = [{"text": text, "count": n} for text, n in self.feedback]
        return out


@dataclass
class ThemeReport:
    """The themes of one run and the counts they come from."""

    run: str
    n_samples: int
    n_failing: int  # samples with at least one failing verdict
    n_errored: int  # samples with at least one error verdict
    themes: list[Theme]
    summary: str | None = None
    summary_model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (what ``assay feedback --format json`` prints)."""
        return {
            "run": self.run,
            "n_samples": self.n_samples,
            "n_failing_samples": self.n_failing,
            "n_errored_samples": self.n_errored,
            "themes": [t.to_dict() for t in self.themes],
            "summary": self.summary,
            "summary_model": self.summary_model,
        }

    def to_text(self, max_samples: int = 5) -> str:
        """The themes as plain text, most frequent first."""
        lines = [
            f"Failure themes of {self.run}: {self.n_failing} of {self.n_samples} samples failing"
            + (f", {self.n_errored} with errors" if self.n_errored else "")
        ]
        if not self.themes:
            lines.append("No failing sample.")
        for i, theme in enumerate(self.themes, 1):
            lines.append("")
            n = len(theme.samples)
            lines.append(f"{i}. {theme.label}")
            lines.append(f"   {theme.count} verdict{'s' * (theme.count != 1)} in {n} sample{'s' * (n != 1)}")
            for ex in theme.examples:
                lines.append(f"   e.g. {ex.task}/{ex.sample_id}: {_one_line(ex.reason or '(no reason)')}")
                if ex.feedback:
                    lines.append(f"        feedback: {_one_line(ex.feedback)}")
                if ex.model_feedback:
                    lines.append(f"        model feedback: {_one_line(ex.model_feedback)}")
            repeated = [(t, c) for t, c in theme.feedback if c > 1]
            if repeated:
                common = "; ".join(f"{_one_line(t, 80)} (×{c})" for t, c in repeated)
                lines.append(f"   recurring feedback: {common}")
            shown = ", ".join(f"{t}/{s}" for t, s in theme.samples[:max_samples])
            more = f" (+{n - max_samples} more)" if n > max_samples else ""
            lines.append(f"   samples: {shown}{more}")
        if self.summary:
            lines += ["", f"Summary ({self.summary_model}):", self.summary.strip()]
        return "\n".join(lines) + "\n"


def _one_line(text: str, limit: int = 160) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _evaluator_names(manifest: RunManifest | None) -> dict[tuple[str, str], str]:
    if manifest is None:
        return {}
    return {(t.name, m.name): str(m.evaluator.get("name", m.name)) for t in manifest.tasks for m in t.metrics}


def _grade(details: Mapping[str, Any]) -> str | None:
    grade = details.get("result", details.get("grade"))
    return None if grade is None or isinstance(grade, dict | list) else str(grade)


def group_failures(
    source: Any,
    *,
    examples: int = 3,
    include_errors: bool = True,
    tasks: Iterable[str] | None = None,
) -> list[Theme]:
    """The themes of a run's failing verdicts, most frequent first.

    ``source`` is a run folder (path), a loaded run (anything with ``records`` and ``manifest``), or an iterable of
    :class:`SampleRecord`. ``examples`` caps the examples kept per theme; ``tasks`` keeps only those tasks.
    """
    records, manifest = _records(source)
    return _group(records, manifest, examples=examples, include_errors=include_errors, tasks=tasks)


def _records(source: Any) -> tuple[list[SampleRecord], RunManifest | None]:
    if isinstance(source, str | Path):
        from assay.runner.rundir import read_manifest, read_records

        run_dir = Path(source)
        return read_records(run_dir), read_manifest(run_dir)
    if hasattr(source, "records"):
        return list(source.records), getattr(source, "manifest", None)
    return list(source), None


def _group(
    records: list[SampleRecord],
    manifest: RunManifest | None,
    *,
    examples: int,
    include_errors: bool,
    tasks: Iterable[str] | None,
) -> list[Theme]:
    names = _evaluator_names(manifest)
    wanted = set(tasks) if tasks is not None else None
    themes: dict[tuple[str, str, str, str | None], Theme] = {}
    feedback: dict[tuple[str, str, str, str | None], Counter[str]] = {}
    for record in records:
        if wanted is not None and record.task not in wanted:
            continue
        for filter_name, filtered in record.filters.items():
            for metric, verdicts in filtered.verdicts.items():
                key_metric = metric if filter_name == "none" else f"{metric},{filter_name}"
                for repeat, verdict in enumerate(verdicts):
                    error = verdict.get("error")
                    if verdict.get("passed") or (error and not include_errors):
                        continue
                    kind: Literal["failure", "error"] = "error" if error else "failure"
                    text = error if error else verdict.get("reason") or verdict.get("feedback") or "(no reason given)"
                    grade = None if error else _grade(verdict.get("details") or {})
                    pattern = reason_pattern(str(text))
                    key: tuple[str, str, str, str | None] = (key_metric, kind, pattern, grade)
                    theme = themes.get(key)
                    if theme is None:
                        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
                        evaluator = names.get((record.task, metric), metric)
                        theme = themes[key] = Theme(digest, key_metric, evaluator, kind, pattern, grade)
                        feedback[key] = Counter()
                    theme.count += 1
                    ref = (record.task, record.sample_id)
                    if ref not in theme._seen:
                        theme._seen.add(ref)
                        theme.samples.append(ref)
                    if verdict.get("feedback"):
                        feedback[key][str(verdict["feedback"])] += 1
                    if len(theme.examples) < examples and all((e.task, e.sample_id) != ref for e in theme.examples):
                        reason = error if error else verdict.get("reason")
                        theme.examples.append(
                            Example(record.task, record.sample_id, repeat, reason, verdict.get("feedback"))
                        )
    for key, theme in themes.items():
        theme.feedback = feedback[key].most_common(3)
    return sorted(themes.values(), key=lambda t: (-len(t.samples), -t.count, t.kind != "failure", t.metric, t.pattern))


def build_report(
    run_dir: str | Path,
    *,
    examples: int = 3,
    include_errors: bool = True,
    tasks: Iterable[str] | None = None,
) -> ThemeReport:
    """The themes of a run folder with the sample counts they come from; AssayError names an unknown task."""
    from assay.runner.rundir import read_manifest, read_records

    path = Path(run_dir)
    manifest = read_manifest(path)
    records = read_records(path)
    if tasks is not None:
        keep = set(tasks)
        known = {t.name for t in manifest.tasks} | {r.task for r in records}
        unknown = sorted(keep - known)
        if unknown:
            raise AssayError(
                f"no task {', '.join(map(repr, unknown))} in run {manifest.run_id}; "
                f"its tasks are {', '.join(sorted(known)) or 'none'}"
            )
        records = [r for r in records if r.task in keep]
    themes = _group(records, manifest, examples=examples, include_errors=include_errors, tasks=None)
    failing = errored = 0
    for record in records:
        verdicts = [v for f in record.filters.values() for vs in f.verdicts.values() for v in vs]
        failing += any(not v.get("passed") and not v.get("error") for v in verdicts)
        errored += any(v.get("error") for v in verdicts)
    return ThemeReport(manifest.run_id, len(records), failing, errored, themes)
