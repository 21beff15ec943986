"""Recurring themes of a run's failures: failing verdicts grouped by metric and cause, with counts, examples and one
suggested change per theme.

The cause of a verdict (:mod:`assay.feedback.causes`) is the kind of check that failed — the check an evaluator
names, a judge's stated problem and grade, or the head of the reason with its values masked — so failures that
differ only in their values, or in the specifics listed after the check, fall into one theme. Error verdicts (the
evaluator could not judge) form themes of their own. Records are read one at a time and each theme keeps counts, a
few examples and sample ids, and bounded tallies of its feedback, so a run of millions of samples is grouped in
constant memory per theme.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import AssayError, DataError
from assay.feedback.causes import Cause, SlotStats, causes_of, clip, reason_pattern, roles_of, slotted
from assay.record import SampleRecord

if TYPE_CHECKING:
    from assay.record import RunManifest

MAX_SAMPLE_IDS = 20  # sample ids kept per theme (the count is exact)
MAX_TALLIES = 64  # distinct feedback texts / patterns tallied per theme; later new ones are only counted as "other"
_SPACE_LIMIT = 160


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
    """Failing (or errored) verdicts of one metric that share a cause."""

    id: str
    metric: str  # the metric key, with ",filter" when the filter is not "none"
    evaluator: str  # the evaluator's registered name
    kind: Literal["failure", "error"]
    pattern: str  # the cause's key
    grade: str | None
    count: int = 0  # verdicts
    samples: list[tuple[str, str]] = field(default_factory=list)  # the first MAX_SAMPLE_IDS (task, sample_id)
    examples: list[Example] = field(default_factory=list)
    feedback: list[tuple[str, int]] = field(default_factory=list)  # most common feedback texts with their counts
    n_samples: int = 0  # distinct samples (exact, unlike ``samples``)
    title: str = ""  # the cause in words, with the values every failure shares
    criteria: str | None = None  # llm_judge: what the judge checked
    suggestion: str | None = None  # one concrete change, from the theme's most common feedback
    suggestion_count: int = 0  # verdicts whose feedback has the suggestion's form
    also: list[tuple[str, int]] = field(default_factory=list)  # other themes failing on the same samples, shared

    @property
    def label(self) -> str:
        """The theme in one line: metric (and evaluator), grade and cause."""
        evaluator = f" ({self.evaluator})" if self.evaluator != self.metric.split(",")[0] else ""
        grade = f" [grade {self.grade}]" if self.grade is not None else ""
        prefix = "error" if self.kind == "error" else "fails"
        return f"{self.metric}{evaluator}{grade} {prefix}: {self.title or self.pattern}"

    @property
    def example_ids(self) -> list[str]:
        """``task/sample_id`` of the first samples of the theme."""
        return [f"{task}/{sid}" for task, sid in self.samples[:10]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        out = asdict(self)
        out["label"] = self.label
        out["samples"] = [{"task": t, "sample_id": s} for t, s in self.samples]
        out["example_ids"] = self.example_ids
        out["feedback"] = [{"text": text, "count": n} for text, n in self.feedback]
        out["also"] = [{"theme": label, "shared_samples": n} for label, n in self.also]
        return out


@dataclass
class _Tally:
    """A theme's growing state: the theme itself plus bounded feedback tallies."""

    theme: Theme
    texts: Counter[str] = field(default_factory=Counter)
    patterns: dict[str, SlotStats] = field(default_factory=dict)
    title: SlotStats | None = None


ThemeKey = tuple[str, str, str, str | None]


class ThemeGrouper:
    """Groups the failing verdicts of records fed one at a time (:meth:`add`); :meth:`themes` gives the result."""

    def __init__(
        self,
        *,
        examples: int = 3,
        include_errors: bool = True,
        tasks: Iterable[str] | None = None,
        manifest: RunManifest | None = None,
    ) -> None:
        self.examples = examples
        self.include_errors = include_errors
        self.wanted = set(tasks) if tasks is not None else None
        self.configs = _evaluator_configs(manifest)
        self.n_samples = self.n_failing = self.n_errored = 0
        self.seen_tasks: set[str] = set()
        self._tallies: dict[ThemeKey, _Tally] = {}
        self._shared: Counter[tuple[ThemeKey, ThemeKey]] = Counter()

    def add(self, record: SampleRecord | Mapping[str, Any]) -> None:
        """Count one sample's verdicts (a SampleRecord or its JSON dict)."""
        task, sample_id, target, filters = _parts(record)
        self.seen_tasks.add(task)
        if self.wanted is not None and task not in self.wanted:
            return
        self.n_samples += 1
        failing = errored = False
        hit: set[ThemeKey] = set()
        for filter_name, metric, verdicts, outputs in filters:
            key_metric = metric if filter_name == "none" else f"{metric},{filter_name}"
            for repeat, verdict in enumerate(verdicts):
                error = verdict.get("error")
                if verdict.get("passed"):
                    continue
                failing |= not error
                errored |= bool(error)
                if error and not self.include_errors:
                    continue
                output = outputs[min(repeat, len(outputs) - 1)] if outputs else None
                roles = roles_of(target, output)
                for cause in causes_of(verdict):
                    key = self._count(task, sample_id, metric, key_metric, repeat, verdict, cause, hit, roles)
                    hit.add(key)
        self.n_failing += failing
        self.n_errored += errored
        ordered = sorted(hit, key=repr)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                self._shared[(a, b)] += 1

    def _count(
        self,
        task: str,
        sample_id: str,
        metric: str,
        key_metric: str,
        repeat: int,
        verdict: Mapping[str, Any],
        cause: Cause,
        hit: set[ThemeKey],
        roles: Mapping[str, str],
    ) -> ThemeKey:
        error = verdict.get("error")
        kind: Literal["failure", "error"] = "error" if error else "failure"
        key: ThemeKey = (key_metric, kind, cause.key, cause.grade)
        tally = self._tallies.get(key)
        if tally is None:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:10]
            config = self.configs.get((task, metric), {})
            evaluator = str(config.get("name", metric))
            criteria = config.get("criteria") if evaluator == "llm_judge" else None
            theme = Theme(digest, key_metric, evaluator, kind, cause.key, cause.grade)
            theme.criteria = criteria
            tally = self._tallies[key] = _Tally(theme, title=SlotStats.of(cause.text))
        theme = tally.theme
        theme.count += 1
        if tally.title is not None:
            tally.title.add(cause.text, roles)
        if key not in hit:
            theme.n_samples += 1
            if len(theme.samples) < MAX_SAMPLE_IDS:
                theme.samples.append((task, sample_id))
            if len(theme.examples) < self.examples:
                reason = error if error else verdict.get("reason")
                theme.examples.append(Example(task, sample_id, repeat, reason, verdict.get("feedback")))
        text = verdict.get("feedback")
        if text:
            _tally_feedback(tally, str(text), roles)
        return key

    def themes(self) -> list[Theme]:
        """The themes, most samples first, each with its title, suggested change and co-failing themes."""
        for tally in self._tallies.values():
            theme = tally.theme
            if tally.title is not None:
                theme.title = tally.title.render()
            theme.feedback = tally.texts.most_common(3)
            if tally.patterns:
                best = max(tally.patterns.values(), key=lambda s: s.count)  # the first seen among equals
                theme.suggestion, theme.suggestion_count = best.render(), best.count
        self._link()
        return sorted(
            (t.theme for t in self._tallies.values()),
            key=lambda t: (-t.n_samples, -t.count, t.kind != "failure", t.metric, t.pattern),
        )

    def _link(self) -> None:
        """For each theme, the other themes that fail on at least half of its samples."""
        also: dict[ThemeKey, list[tuple[str, int]]] = {}
        for (a, b), n in self._shared.items():
            for mine, other in ((a, b), (b, a)):
                theme = self._tallies[mine].theme
                if n * 2 >= theme.n_samples:
                    also.setdefault(mine, []).append((self._tallies[other].theme.label, n))
        for key, tally in self._tallies.items():
            tally.theme.also = sorted(also.get(key, []), key=lambda x: (-x[1], x[0]))[:3]


def _tally_feedback(tally: _Tally, text: str, roles: Mapping[str, str]) -> None:
    if text in tally.texts or len(tally.texts) < MAX_TALLIES:
        tally.texts[text] += 1
    s = slotted(text)
    pattern = s.pattern
    stats = tally.patterns.get(pattern)
    if stats is None:
        if len(tally.patterns) >= MAX_TALLIES:
            return
        stats = tally.patterns[pattern] = SlotStats.of(s)
    stats.add(s, roles)


Verdicts = Iterator[tuple[str, str, list[Any], list[Any]]]  # (filter, metric, verdict dicts, filtered outputs)


def _parts(record: SampleRecord | Mapping[str, Any]) -> tuple[str, str, Any, Verdicts]:
    """(task, sample_id, target, verdicts by filter and metric) of a record or its JSON form."""
    if isinstance(record, SampleRecord):
        items = (
            (f, m, vs, list(fr.filtered or [])) for f, fr in record.filters.items() for m, vs in fr.verdicts.items()
        )
        return record.task, record.sample_id, record.target, items
    filters = record.get("filters") or {}
    items = (
        (str(f), str(m), list(vs or []), list((fr or {}).get("filtered") or []))
        for f, fr in filters.items()
        for m, vs in ((fr or {}).get("verdicts") or {}).items()
    )
    return str(record.get("task")), str(record.get("sample_id")), record.get("target"), items


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
            lines += ["", f"{i}. {theme.label}"]
            n = theme.n_samples
            lines.append(f"   {theme.count} verdict{'s' * (theme.count != 1)} in {n} sample{'s' * (n != 1)}")
            if theme.criteria:
                lines.append(f"   criteria: {_one_line(theme.criteria)}")
            if theme.suggestion and theme.kind == "failure":
                share = f" (the feedback of {theme.suggestion_count} of {theme.count})" if theme.count > 1 else ""
                lines.append(f"   suggested change{share}: {_one_line(theme.suggestion, 300)}")
            for ex in theme.examples:
                lines.append(f"   e.g. {ex.task}/{ex.sample_id}: {_one_line(ex.reason or '(no reason)')}")
                if ex.feedback:
                    lines.append(f"        feedback: {_one_line(ex.feedback)}")
                if ex.model_feedback:
                    lines.append(f"        model feedback: {_one_line(ex.model_feedback)}")
            for label, shared in theme.also:
                lines.append(f"   the same samples also fail: {_one_line(label, 120)} ({shared} of {n})")
            shown = ", ".join(f"{t}/{s}" for t, s in theme.samples[:max_samples])
            more = f" (+{n - min(max_samples, len(theme.samples))} more)" if n > max_samples else ""
            lines.append(f"   samples: {shown}{more}")
        if self.summary:
            lines += ["", f"Summary ({self.summary_model}):", self.summary.strip()]
        return "\n".join(lines) + "\n"


def _one_line(text: str, limit: int = _SPACE_LIMIT) -> str:
    return clip(" ".join(text.split()), limit)


def _evaluator_configs(manifest: RunManifest | None) -> dict[tuple[str, str], dict[str, Any]]:
    if manifest is None:
        return {}
    return {(t.name, m.name): dict(m.evaluator) for t in manifest.tasks for m in t.metrics}


def iter_record_dicts(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The sample records of a run folder as JSON dicts, one line at a time (a torn last line is skipped)."""
    from assay.store.sampleindex import SAMPLES, iter_sample_lines

    path = run_dir / SAMPLES
    if not path.is_file():
        return
    for lineno, obj in iter_sample_lines(path):
        if not isinstance(obj, dict) or "task" not in obj or "sample_id" not in obj:
            raise DataError(f"{path}:{lineno}: not a sample record (it needs 'task' and 'sample_id')")
        yield obj


def group_failures(
    source: Any,
    *,
    examples: int = 3,
    include_errors: bool = True,
    tasks: Iterable[str] | None = None,
) -> list[Theme]:
    """The themes of a run's failing verdicts, most frequent first.

    ``source`` is a run folder (path), a loaded run (anything with ``records`` and ``manifest``), or an iterable of
    :class:`SampleRecord` (or their JSON dicts), read once. ``examples`` caps the examples kept per theme; ``tasks``
    keeps only those tasks.
    """
    records, manifest = _source(source)
    grouper = ThemeGrouper(examples=examples, include_errors=include_errors, tasks=tasks, manifest=manifest)
    for record in records:
        grouper.add(record)
    return grouper.themes()


def _source(source: Any) -> tuple[Iterable[SampleRecord | Mapping[str, Any]], RunManifest | None]:
    if isinstance(source, str | Path):
        from assay.store.rundir import read_manifest

        run_dir = Path(source)
        return iter_record_dicts(run_dir), read_manifest(run_dir)
    if hasattr(source, "iter_record_dicts"):  # a loaded Run: its records streamed from disk as JSON objects
        return source.iter_record_dicts(), getattr(source, "manifest", None)
    if hasattr(source, "iter_records"):
        return source.iter_records(), getattr(source, "manifest", None)
    if hasattr(source, "records"):
        return source.records, getattr(source, "manifest", None)
    return source, None


def build_report(
    run_dir: str | Path,
    *,
    examples: int = 3,
    include_errors: bool = True,
    tasks: Iterable[str] | None = None,
) -> ThemeReport:
    """The themes of a run folder with the sample counts they come from, in one streaming pass over its samples;
    AssayError names an unknown task."""
    from assay.store.rundir import read_manifest

    path = Path(run_dir)
    manifest = read_manifest(path)
    grouper = ThemeGrouper(examples=examples, include_errors=include_errors, tasks=tasks, manifest=manifest)
    for record in iter_record_dicts(path):
        grouper.add(record)
    if tasks is not None:
        known = {t.name for t in manifest.tasks} | grouper.seen_tasks
        unknown = sorted(set(tasks) - known)
        if unknown:
            raise AssayError(
                f"no task {', '.join(map(repr, unknown))} in run {manifest.run_id}; "
                f"its tasks are {', '.join(sorted(known)) or 'none'}"
            )
    return ThemeReport(manifest.run_id, grouper.n_samples, grouper.n_failing, grouper.n_errored, grouper.themes())


__all__ = ["Example", "Theme", "ThemeGrouper", "ThemeReport", "build_report", "group_failures", "reason_pattern"]
