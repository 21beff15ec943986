"""Load a run folder (``run.json``, ``samples.jsonl``, ``results.json``) into a :class:`Run`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from assay.errors import DataError
from assay.record import RunManifest, SampleRecord
from assay.results.accumulators import Int64Array, TaskColumns
from assay.results.aggregate import SampleValues, sample_values
from assay.store.rundir import MANIFEST, read_manifest
from assay.store.sampleindex import SAMPLES, SampleIndex, index_samples

RESULTS = "results.json"


def run_root(path: str | os.PathLike[str]) -> Path:
    """The run folder for a path that is the folder or one of its files."""
    p = Path(path)
    if p.is_file() and p.name in {MANIFEST, SAMPLES, RESULTS}:
        return p.parent
    return p


@dataclass
class MetricRow:
    """One row of a results table: a task's (or group's) metric under one filter, with its uncertainty."""

    task: str
    filter: str
    metric: str
    mean: float | None
    stderr: float | None
    ci_t: list[float] | None
    ci_bootstrap: list[float] | None
    n_total: int
    n_scored: int
    n_errored: int
    higher_is_better: bool | None
    version: Any = None
    n_shot: Any = None
    alias: str | None = None
    is_group: bool = False
    pass_rate: float | None = None
    error_policy: str | None = None
    entry: dict[str, Any] = field(default_factory=dict)
    ci: list[float] | None = None  # the headline interval (Wilson for pass/fail, else bootstrap-t / t), clipped
    ci_method: str | None = None

    @property
    def key(self) -> str:
        """``task/metric,filter``."""
        return f"{self.task}/{self.metric},{self.filter}"


@dataclass
class Run:
    """A run folder: its manifest, an index of its sample records and its results (computed on the fly if
    results.json is missing). Records are read from disk when needed, one at a time: nothing here holds them
    all, so a run of millions of samples loads in a few tens of MB. The index is made when first needed: the
    results table alone (printed after every run) reads only results.json."""

    path: Path
    manifest: RunManifest
    loaded_index: SampleIndex | None = None  # None: samples.jsonl is indexed when first needed
    stored_results: dict[str, Any] | None = None

    @property
    def index(self) -> SampleIndex:
        """Where each finished sample's record is in samples.jsonl (read the first time it is asked for)."""
        if self.loaded_index is None:
            self.loaded_index = index_samples(self.path)
        return self.loaded_index

    @property
    def torn_lines(self) -> int:
        """Unfinished lines (a crash mid-write) skipped at the end of samples.jsonl."""
        return self.index.torn

    @property
    def n_records(self) -> int:
        """How many finished samples the run has."""
        return len(self.index)

    @property
    def records(self) -> list[SampleRecord]:
        """Every record in a list, in the order written: for small runs and scripts (use :meth:`iter_records`)."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[SampleRecord]:
        """Every record, in the order written, read one at a time."""
        from assay.store.sampleindex import iter_records

        return iter_records(self.index)

    def iter_record_dicts(self) -> Iterator[dict[str, Any]]:
        """Every record's JSON object, in the order written, one at a time, not validated as a SampleRecord
        (several times faster, for code that reads a few fields of each record)."""
        from assay.store.sampleindex import iter_dicts

        return (record for _, record in iter_dicts(self.index))

    def _settings_for_scan(self) -> tuple[str, str, dict[str, str]]:
        policy = str(self.settings.get("error_policy", "exclude"))
        reduction = str(self.settings.get("repeat_reduction", "mean"))
        per_task = {t.name: str(t.config.get("repeat_reduction", reduction)) for t in self.manifest.tasks}
        return policy, reduction, per_task

    @cached_property
    def columns(self) -> dict[str, TaskColumns]:
        """Per task, the per-sample values of every metric (under the settings the results were computed with),
        with sample ids and input hashes, from one streamed pass (see :mod:`assay.results.columns`)."""
        return self._scan_columns(())

    def read_records(self, observers: Sequence[Callable[[dict[str, Any]], None]]) -> None:
        """Show every record's JSON object, in the order written, to each of ``observers``: in the pass that
        reads :attr:`columns`, when they are not read yet (one read of ``samples.jsonl`` serves both)."""
        if "columns" in self.__dict__:
            for record in self.iter_record_dicts():
                for observe in observers:
                    observe(record)
            return
        self.__dict__["columns"] = self._scan_columns(observers)  # what the cached property would have read

    def _scan_columns(self, observers: Sequence[Callable[[dict[str, Any]], None]]) -> dict[str, TaskColumns]:
        from assay.results.columns import scan
        from assay.results.sources import FileSource

        policy, reduction, per_task = self._settings_for_scan()
        return scan(
            self.manifest,
            FileSource(self.index),
            error_policy=policy if policy in ("exclude", "as_zero") else "exclude",
            repeat_reduction=reduction,
            reductions=per_task,
            with_ids=True,
            observers=observers,
        ).tasks

    @cached_property
    def results(self) -> dict[str, Any]:
        """The parsed ``results.json``, or results computed now with the run's configured settings."""
        if self.stored_results is not None:
            return self.stored_results
        from assay.results.sources import FileSource
        from assay.results.writer import compute_results

        cfg = self.manifest.config
        seed = cfg.get("bootstrap_seed", cfg.get("seed"))
        return compute_results(
            self.manifest,
            FileSource(self.index),
            error_policy=str(cfg.get("error_policy", "exclude")),
            bootstrap_iters=int(cfg.get("bootstrap_iters", 10_000)),
            seed=1234 if seed is None else int(seed),
            cluster_key=cfg.get("cluster_key"),
            repeat_reduction=str(cfg.get("repeat_reduction", "mean")),
            group_weighting=str(cfg.get("group_weighting", "size")),
            confidence=float(cfg.get("confidence", 0.95)),
            torn_lines=self.torn_lines,
        ).doc

    @property
    def computed(self) -> bool:
        """True when results were computed from the samples because results.json was missing."""
        return self.stored_results is None

    @property
    def name(self) -> str:
        """A short label: the run's name (``assay run --name``) when it has one, else the folder name."""
        return self.manifest.name or self.path.name

    @property
    def settings(self) -> dict[str, Any]:
        """The ``assay`` section of the results (error policy, seed, tasks, groups, operational figures…)."""
        section = self.results.get("assay")
        return section if isinstance(section, dict) else {}

    @property
    def task_names(self) -> list[str]:
        """Tasks in manifest order."""
        return [t.name for t in self.manifest.tasks]

    def task_records(self, task: str, picks: Int64Array | None = None) -> Iterator[SampleRecord]:
        """The records of one task, by doc_id, read one at a time; only those at ``picks`` (ascending indices in
        the task's columns) when given."""
        from assay.store.sampleindex import iter_indexed

        positions = self._task_positions(task, picks)
        return iter(()) if positions is None else (rec for _, rec in iter_indexed(self.index, positions))

    def task_record_dicts(self, task: str, picks: Int64Array | None = None) -> Iterator[dict[str, Any]]:
        """The JSON objects of one task's records, as :meth:`task_records` gives them, not validated as
        SampleRecords (several times faster, for code that reads a few fields of each)."""
        from assay.store.sampleindex import iter_dicts_at

        positions = self._task_positions(task, picks)
        return iter(()) if positions is None else (rec for _, rec in iter_dicts_at(self.index, positions))

    def _task_positions(self, task: str, picks: Int64Array | None) -> Int64Array | None:
        """Positions in the index of a task's records by doc_id (those at ``picks`` only); None: no such task."""
        cols = self.columns.get(task)
        if cols is None:
            return None
        return cols.positions if picks is None else cols.positions[picks]

    def sample_values(self, task: str, filter_name: str, metric: str) -> SampleValues:
        """Per-sample values of a metric under the settings the results were computed with."""
        cols = self.columns.get(task)
        if cols is not None and (filter_name, metric) in cols.values:
            return cols.values[(filter_name, metric)]
        policy, reduction, per_task = self._settings_for_scan()
        return sample_values(
            list(self.task_records(task)),
            filter_name,
            metric,
            error_policy=policy,
            repeat_reduction=per_task.get(task, reduction),
        )

    def metric_rows(self, *, groups: bool = True) -> list[MetricRow]:
        """Every (task, filter, metric) with its figures, then every group's (see :func:`metric_rows`)."""
        return metric_rows(self.results, groups=groups)

    def row(self, task: str, metric: str, filter_name: str | None = None) -> MetricRow | None:
        """The row of one task's (or group's) metric; the first filter when none is given."""
        for r in self.metric_rows():
            if r.task == task and r.metric == metric and (filter_name is None or r.filter == filter_name):
                return r
        return None

    @property
    def operational(self) -> dict[str, Any]:
        """Operational figures per role and model (requests, tokens, latency, cache hits, errors, cost)."""
        figures = self.settings.get("operational")
        if isinstance(figures, dict):
            return figures
        from assay.results.operational import operational_figures

        return operational_figures(self.iter_records(), self.manifest)


def metric_rows(results: dict[str, Any], *, groups: bool = True) -> list[MetricRow]:
    """Rows of a results document: from its ``assay`` section when present, otherwise from the lm-eval keys
    alone (no intervals or error counts), so results.json files written by lm-eval itself can be shown too."""
    section = results.get("assay")
    settings: dict[str, Any] = section if isinstance(section, dict) else {}
    rows: list[MetricRow] = []
    sections = [("tasks", "results", False)] + ([("groups", "groups", True)] if groups else [])
    for assay_key, lm_key, is_group in sections:
        detailed = settings.get(assay_key) or {}
        for name, lm in (results.get(lm_key) or {}).items():
            alias = str(lm.get("alias", name)) if isinstance(lm, dict) else name
            figures = (detailed.get(name) or {}).get("filters")
            if figures:
                for filter_name, metrics in figures.items():
                    for metric, e in metrics.items():
                        rows.append(_row(results, settings, name, filter_name, metric, e, alias, is_group))
            else:
                rows.extend(_rows_from_lm_eval(results, name, lm, alias, is_group))
    return rows


def _row(
    res: dict[str, Any],
    settings: dict[str, Any],
    task: str,
    filter_name: str,
    metric: str,
    e: dict[str, Any],
    alias: str,
    is_group: bool,
) -> MetricRow:
    raw_clustered = e.get("clustered")
    use_clustered = isinstance(raw_clustered, dict)  # under a cluster key its figures are the headline ones
    clustered: dict[str, Any] = raw_clustered if isinstance(raw_clustered, dict) else {}
    return MetricRow(
        task=task,
        filter=filter_name,
        metric=metric,
        mean=e.get("mean"),
        stderr=clustered["stderr"] if use_clustered else e.get("stderr"),
        ci_t=clustered.get("ci_t") if use_clustered else e.get("ci_t"),
        ci_bootstrap=clustered.get("ci_bootstrap") if use_clustered else e.get("ci_bootstrap"),
        ci=clustered.get("ci") if use_clustered else e.get("ci"),
        ci_method=clustered.get("ci_method") if use_clustered else e.get("ci_method"),
        n_total=int(e.get("n_total", 0)),
        n_scored=int(e.get("n_scored", 0)),
        n_errored=int(e.get("n_errored", 0)),
        higher_is_better=e.get("higher_is_better"),
        version=(res.get("versions") or {}).get(task),
        n_shot=(res.get("n-shot") or {}).get(task),
        alias=alias,
        is_group=is_group,
        pass_rate=e.get("pass_rate"),
        error_policy=e.get("error_policy", settings.get("error_policy")),
        entry=e,
    )


def _rows_from_lm_eval(res: dict[str, Any], name: str, lm: Any, alias: str, is_group: bool) -> list[MetricRow]:
    from assay.results.schema import RESERVED_TASK_KEYS, split_metric_key, stderr_key

    if not isinstance(lm, dict):
        return []
    rows = []
    hib = (res.get("higher_is_better") or {}).get(name, {})
    for key, value in lm.items():
        metric, filter_name = split_metric_key(key)
        if key in RESERVED_TASK_KEYS or metric.endswith("_stderr") or not isinstance(value, int | float):
            continue
        se = lm.get(stderr_key(metric, filter_name))
        rows.append(
            MetricRow(
                task=name,
                filter=filter_name,
                metric=metric,
                mean=float(value),
                stderr=float(se) if isinstance(se, int | float) else None,
                ci_t=None,
                ci_bootstrap=None,
                n_total=int(lm.get("sample_len", 0) or 0),
                n_scored=int(lm.get("sample_len", 0) or 0),
                n_errored=0,
                higher_is_better=hib.get(metric),
                version=(res.get("versions") or {}).get(name),
                n_shot=(res.get("n-shot") or {}).get(name),
                alias=alias,
                is_group=is_group,
            )
        )
    return rows


def read_columns(runs: Sequence[Run]) -> None:
    """Read the :attr:`Run.columns` of several run folders at once: each but the first is indexed and scanned by a
    forked child while this process scans the first (comparing two runs of a million samples reads two 1.5 GB
    files). Where forking is not safe, or a child fails (a bad line), its run is read here when first asked for,
    with the errors of reading it alone."""
    from assay.forking import Forked, may_fork

    pending = [run for run in runs if "columns" not in run.__dict__]
    folders = [run.path.resolve() for run in pending]
    if len(pending) < 2 or len(set(folders)) < len(folders) or not may_fork():
        return
    helpers = [(run, Forked.start(_index_and_columns, run)) for run in pending[1:]]
    try:
        _ = pending[0].columns
        for run, helper in helpers:
            made = helper.result() if helper is not None else None
            if made is not None:
                run.loaded_index, run.__dict__["columns"] = made
    finally:
        for _, helper in helpers:
            if helper is not None:
                helper.close()


def _index_and_columns(run: Run) -> tuple[SampleIndex, dict[str, TaskColumns]]:
    """In a forked child: the run's index and columns, sent back to the parent."""
    return run.index, run.columns


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load a run folder (or any of its files): manifest, results.json if present and an index of its samples
    (made when first needed if results.json is there: the results table reads nothing else).

    An lm-eval output folder (``lm_eval --output_path OUT --log_samples``: OUT, its model folder or a results file)
    is loaded as the run folder it converts into (:mod:`assay.results.lmevalout`), so every command that reads a
    run reads an lm-eval run too."""
    root = run_root(path)
    if not (root / MANIFEST).is_file() and root.exists():
        root = _lmeval_output(root)
    manifest = read_manifest(root)
    stored = None
    results_path = root / RESULTS
    if results_path.is_file():
        try:
            stored = json.loads(results_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise DataError(f"{results_path}:{err.lineno}: invalid JSON: {err.msg}") from None
        if not isinstance(stored, dict):
            raise DataError(f"{results_path}: expected a JSON object")
    return Run(root, manifest, None if stored is not None else index_samples(root), stored)


def _lmeval_output(path: Path) -> Path:
    """The run folder converted from the lm-eval output ``path`` names; a DataError saying what was expected when it
    is neither a run folder nor an lm-eval output."""
    from assay.results.lmevalout import lmeval_run_folder

    converted = lmeval_run_folder(path)
    if converted is None:
        raise DataError(
            f"{path} is not a run folder (no {MANIFEST} in it) nor an lm-eval output folder (no results_<date>.json "
            "in it or in a model folder below it, as `lm_eval --output_path OUT --log_samples` writes)"
        )
    return converted
