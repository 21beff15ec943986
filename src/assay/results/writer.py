"""Build ``results.json`` (lm-eval schema + the ``assay`` key) from a run, and write it and the sample logs.

Everything streams: one pass over ``samples.jsonl`` parses each record once into a dict and builds per-sample
columns (:mod:`assay.results.columns`) while it encodes the sample logs (:mod:`assay.results.samplelog`); the
figures come from the columns, so memory stays flat in the size of the run (no list of records).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.atomicfile import atomic_write_text
from assay.errors import AssayError, ConfigError
from assay.metricnames import metric_name_problem
from assay.record import RunManifest, SampleRecord
from assay.results import corpus, schema
from assay.results.accumulators import TaskColumns
from assay.results.aggregate import (
    ERROR_POLICIES,
    GROUP_WEIGHTINGS,
    REPEAT_REDUCTIONS,
    MetricSummary,
    check_choice,
    summarize_metric,
    task_rng,
)
from assay.results.columns import ScanResult, scan
from assay.results.document import groups_figures, json_safe, lm_eval_document, put_metric
from assay.results.independence import independence_warning
from assay.results.operational import validate_prices
from assay.results.runfigures import RunFigures
from assay.results.samplelog import SampleLogSpool
from assay.results.sources import ListSource, RecordSource, SampleLogSink
from assay.results.testfigures import tests_block

if TYPE_CHECKING:
    from assay.results.scanahead import ScanAhead
    from assay.results.shardscan import Sharded
    from assay.store.growth import Growth

ASSAY_SCHEMA_VERSION = 1


class ErroredVerdictsError(AssayError):
    """``error_policy="fail"`` and some verdicts errored; the message counts them and shows examples."""


@dataclass
class _Computed:
    """A built results document with what the sample logs need: each task's columns (positions and values)."""

    doc: dict[str, Any]
    columns: dict[str, TaskColumns]


def build_results(
    manifest: RunManifest,
    records: Iterable[SampleRecord],
    *,
    error_policy: str = "exclude",
    bootstrap_iters: int = 10_000,
    seed: int = 1234,
    cluster_key: str | None = None,
    prices: Mapping[str, Any] | None = None,
    repeat_reduction: str = "mean",
    group_weighting: str = "size",
    confidence: float = 0.95,
    torn_lines: int = 0,
) -> dict[str, Any]:
    """The whole ``results.json`` document for a run: lm-eval keys plus the ``assay`` key.

    Raises :class:`ErroredVerdictsError` under ``error_policy="fail"`` when any verdict errored.
    """
    return compute_results(
        manifest,
        ListSource(records),
        error_policy=error_policy,
        bootstrap_iters=bootstrap_iters,
        seed=seed,
        cluster_key=cluster_key,
        prices=prices,
        repeat_reduction=repeat_reduction,
        group_weighting=group_weighting,
        confidence=confidence,
        torn_lines=torn_lines,
    ).doc


def _reductions(manifest: RunManifest, repeat_reduction: str) -> dict[str, str]:
    """Each task's repeat reduction: its own setting, else the run's."""
    reductions: dict[str, str] = {}
    for task in manifest.tasks:
        reduction = str(task.config.get("repeat_reduction", repeat_reduction))
        reductions[task.name] = check_choice(f"task {task.name!r}: repeat_reduction", reduction, REPEAT_REDUCTIONS)
    return reductions


def _check_options(error_policy: str, repeat_reduction: str, group_weighting: str, iters: Any, conf: float) -> None:
    check_choice("error_policy", error_policy, ERROR_POLICIES)
    check_choice("repeat_reduction", repeat_reduction, REPEAT_REDUCTIONS)
    check_choice("group_weighting", group_weighting, GROUP_WEIGHTINGS)
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 0:
        raise ConfigError(f"bootstrap_iters: expected a whole number >= 0 (0 skips the bootstrap), got {iters!r}")
    if not 0.0 < conf < 1.0:
        raise ConfigError(f"confidence: expected a number in (0, 1), got {conf!r}")


def compute_results(
    manifest: RunManifest,
    source: RecordSource,
    *,
    error_policy: str = "exclude",
    bootstrap_iters: int = 10_000,
    seed: int = 1234,
    cluster_key: str | None = None,
    prices: Mapping[str, Any] | None = None,
    repeat_reduction: str = "mean",
    group_weighting: str = "size",
    confidence: float = 0.95,
    torn_lines: int = 0,
    sample_logs: SampleLogSink | None = None,
    prescanned: tuple[ScanResult, RunFigures] | None = None,
    final_manifest: Callable[[], RunManifest] | None = None,
) -> _Computed:
    """The results document of the records of ``source``, from one streamed scan (two if undeclared metrics);
    ``sample_logs`` gets each record with its values as the scan passes it (see :mod:`assay.results.samplelog`).
    ``prescanned``: the columns and run figures of a scan already made (by several processes): ``source`` is
    not read. ``final_manifest``: the run.json the figures are written with, asked for once the scan is over (a
    scan that followed a run as it was written began before the run's ending was recorded)."""
    _check_options(error_policy, repeat_reduction, group_weighting, bootstrap_iters, confidence)
    price_table = validate_prices(prices if prices is not None else manifest.config.get("prices"))
    reductions = _reductions(manifest, repeat_reduction)
    if prescanned is None:
        run_figures = RunFigures(manifest, price_table)
        scanned = scan(
            manifest,
            source,
            error_policy=error_policy,
            repeat_reduction=repeat_reduction,
            reductions=reductions,
            cluster_key=cluster_key,
            observers=(run_figures.observe,),
            sample_logs=sample_logs,
        )
    else:
        scanned, run_figures = prescanned
    if final_manifest is not None:
        manifest = run_figures.ops.manifest = final_manifest()
    ops, facts, judging, shared = run_figures.ops, run_figures.facts, run_figures.judging, run_figures.shared
    corpus_stats = run_figures.corpus_stats
    warnings = [
        f"{n} sample(s) of task {t!r}, which is not in run.json, were ignored" for t, n in scanned.unknown.items()
    ]
    results: dict[str, Any] = {}
    assay_tasks: dict[str, Any] = {}
    summaries: dict[str, dict[tuple[str, str], MetricSummary]] = {}
    errored_total = 0
    fail_examples: list[str] = []
    for task in manifest.tasks:
        cols = scanned.tasks[task.name]
        hib = {m.name: m.higher_is_better for m in task.metrics}
        independence = independence_warning(task.name, shared[task.name], cluster_key)
        if independence is not None:
            warnings.append(independence)
        for _, metric in cols.keys:
            problem = metric_name_problem(metric)
            if problem:
                raise ConfigError(f"task {task.name!r}: {problem}")
        task_result: dict[str, Any] = {
            "name": task.name,
            "alias": str(task.config.get("alias", task.name)),
            "sample_len": len(cols),
        }
        filters_out: dict[str, dict[str, Any]] = {}
        summaries[task.name] = {}
        corpus_infos = {m.name: m for m in task.metrics if m.aggregation == "corpus"}
        n_eval_errors = n_model_error_verdicts = 0
        eval_example: str | None = None
        for filter_name, metric in cols.keys:
            sv = cols.values[(filter_name, metric)]
            errored_total += sv.n_errored_verdicts
            n_eval_errors += sv.n_eval_errors
            n_model_error_verdicts += sv.n_model_errors
            fail_examples.extend(f"{task.name}/{metric},{filter_name} doc {d}: {e}" for d, e in sv.errors[:2])
            summary = summarize_metric(
                sv,
                task=task.name,
                filter_name=filter_name,
                metric=metric,
                higher_is_better=hib.get(metric, True),
                error_policy=error_policy,
                repeat_reduction=reductions[task.name],
                repeats=task.repeats,
                bootstrap_iters=bootstrap_iters,
                seed=seed,
                confidence=confidence,
                clusters=cols.clusters,
                cluster_key=cluster_key,
            )
            info = corpus_infos.get(metric)
            if info is not None:  # corpus BLEU/chrF/TER: the figure comes from summed per-sample statistics
                figures = corpus.corpus_figures(
                    info.evaluator,
                    corpus_stats.get((task.name, filter_name, metric)) or corpus.CorpusStats(),
                    bootstrap_iters=bootstrap_iters,
                    rng=task_rng(seed, task.name, 2),
                    confidence=confidence,
                )
                summary.bootstrap = corpus.apply_corpus(summary.entry, figures)
                summary.stderr = summary.entry["stderr"]
            if metric == run_figures.named.metrics.get(task.name):  # headline: tests (other entries keep their bytes)
                named = run_figures.named.figures(task.name, filter_name)
                summary.entry["tests"] = tests_block(summary.entry, named, confidence)
            summaries[task.name][(filter_name, metric)] = summary
            filters_out.setdefault(filter_name, {})[metric] = summary.entry
            put_metric(task_result, metric, filter_name, summary.entry)
            warnings.extend(_metric_warnings(task.name, filter_name, metric, sv, summary.entry))
            if eval_example is None and sv.n_eval_errors:
                eval_example = _eval_error_example(sv)
        results[task.name] = task_result
        assay_tasks[task.name] = {
            "n_docs": task.n_docs,
            "n_selected": task.n_selected,
            "n_records": len(cols),
            "n_missing": max(0, task.n_selected - len(cols)),
            "n_model_errors": cols.n_model_errors,
            "model_error_example": cols.model_error_example,
            "n_model_error_verdicts": n_model_error_verdicts,
            "n_eval_errors": n_eval_errors,
            "eval_error_example": eval_example,
            "unscorable": {
                schema.metric_key(m, f): e["unscorable"]
                for f, by_metric in filters_out.items()
                for m, e in by_metric.items()
                if e.get("unscorable")
            },
            "repeats": task.repeats,
            "filters": filters_out,
        }
        agents = run_figures.agents.task_figures(task.name)
        if agents is not None:  # an agent task: mean turns and tool calls, tool errors, stop reasons
            assay_tasks[task.name]["agent"] = agents
    if error_policy == "fail" and errored_total:
        shown = "; ".join(fail_examples[:5])
        raise ErroredVerdictsError(
            f"{errored_total} verdict(s) errored and error_policy is 'fail'"
            + (f" (e.g. {shown})" if shown else "")
            + "; use error_policy 'exclude' or 'as_zero' to report them instead"
        )

    groups, assay_groups, group_subtasks = groups_figures(manifest, summaries, results, group_weighting, confidence)
    doc = lm_eval_document(manifest, facts, results, groups, group_subtasks, error_policy, bootstrap_iters, seed)
    doc["assay"] = {
        "schema_version": ASSAY_SCHEMA_VERSION,
        "run_id": manifest.run_id,
        "status": manifest.status,
        "error_policy": error_policy,
        "bootstrap_iters": bootstrap_iters,
        "seed": seed,
        "confidence": confidence,
        "cluster_key": cluster_key,
        "repeat_reduction": repeat_reduction,
        "group_weighting": group_weighting,
        "torn_lines": torn_lines,
        "warnings": warnings,
        "tasks": assay_tasks,
        "groups": assay_groups,
        "operational": ops.figures(),
        "judging": judging.to_dict(),
    }
    if run_figures.agents.tasks:  # a run with agent trajectories (other runs' results stay byte for byte)
        doc["assay"]["agent_limit_stops"] = run_figures.agents.limit_stops()
    if run_figures.lmeval.settings:  # lm-eval tasks: lm-eval's own aggregations, stderrs and groups
        from assay.results.lmevaldoc import apply_lmeval
        from assay.tasks.importers.lmeval.figures import lmeval_documents

        aggregations = {
            t.name: {m.name: str(m.evaluator.get("aggregation", "mean")) for m in t.metrics}
            for t in manifest.tasks
            if t.name in run_figures.lmeval.settings
        }
        apply_lmeval(doc, lmeval_documents(run_figures.lmeval), aggregations)
    return _Computed(json_safe(doc), scanned.tasks)


def _eval_error_example(sv: Any) -> str | None:
    main = sv.main_error()
    if main is None:
        return None
    return next((m for m, _ in sorted(sv.error_counts.items(), key=lambda kv: -kv[1]) if not _is_model(m)), main[0])


def _is_model(message: str) -> bool:
    return message.startswith(("model error: ", "no response to evaluate: "))


def _metric_warnings(task: str, filter_name: str, metric: str, sv: Any, entry: Mapping[str, Any]) -> list[str]:
    """What a reader must not miss about one metric: it has no value, or some verdicts errored in the evaluator."""
    key = f"{task}/{schema.metric_key(metric, filter_name)}"
    if entry.get("unscorable"):
        return [f"{key} has no value: {entry['unscorable']} (left out of lm-eval's results[{task!r}])"]
    if sv.n_eval_errors:
        example = _eval_error_example(sv)
        return [
            f"{key}: {sv.n_eval_errors} evaluator error(s) ({entry['error_policy']} policy)"
            + (f", e.g. {example}" if example else "")
        ]
    return []


RESULTS_DEFAULTS: dict[str, Any] = {
    "error_policy": "exclude",
    "bootstrap_iters": 10_000,
    "seed": 1234,
    "cluster_key": None,
    "prices": None,
    "repeat_reduction": "mean",
    "group_weighting": "size",
    "confidence": 0.95,
}  # write_results' options and their defaults


def results_options(**given: Any) -> dict[str, Any]:
    """Every option of :func:`write_results`: those ``given``, the defaults for the rest."""
    unknown = set(given) - set(RESULTS_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown results option(s): {', '.join(sorted(unknown))}")
    return {**RESULTS_DEFAULTS, **given}


def scan_settings(manifest: RunManifest, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the options of a results scan, the price table) for :func:`write_results`' ``options``: what a scan made
    by other processes (ranges of the file, chunks as they are scored) is given, to build what its own would."""
    _check_options(
        options["error_policy"],
        options["repeat_reduction"],
        options["group_weighting"],
        options["bootstrap_iters"],
        options["confidence"],
    )
    prices = options["prices"]
    scan_options = {
        "error_policy": options["error_policy"],
        "repeat_reduction": options["repeat_reduction"],
        "reductions": _reductions(manifest, options["repeat_reduction"]),
        "cluster_key": options["cluster_key"],
    }
    return scan_options, validate_prices(prices if prices is not None else manifest.config.get("prices"))


def _scan_sharded(
    root: Path, manifest: RunManifest, logs: SampleLogSpool, processes: int | None, options: dict[str, Any]
) -> Sharded | None:
    """The scan of a large samples file by several processes (None: scan in this one; see ``shardscan``)."""
    from assay.forking import default_processes
    from assay.results.shardscan import scan_sharded

    scan_options, prices = scan_settings(manifest, options)
    return scan_sharded(
        root, manifest, logs, processes=processes or default_processes(), prices=prices, scan_options=scan_options
    )


def write_results(
    run_dir: str | os.PathLike[str],
    *,
    error_policy: str = "exclude",
    bootstrap_iters: int = 10_000,
    seed: int = 1234,
    cluster_key: str | None = None,
    prices: Mapping[str, Any] | None = None,
    repeat_reduction: str = "mean",
    group_weighting: str = "size",
    confidence: float = 0.95,
    processes: int | None = None,
    ahead: ScanAhead | None = None,
    follow: Growth | None = None,
) -> dict[str, Any]:
    """Read ``run.json`` + ``samples.jsonl``, write ``results.json`` and ``samples_<task>.jsonl`` atomically.

    Streams over the samples: one pass indexes and parses each line, computes the figures and encodes the sample
    logs (a second when records hold metrics run.json does not declare, or a sample was written twice). A large
    file is read in ranges by ``processes`` forked processes (None: one per CPU; see
    :mod:`assay.results.shardscan`). ``ahead``: the scan an offline run made as it scored (see
    :mod:`assay.results.scanahead`), used instead of reading the file when it covers all of it with these
    options.

    ``follow``: the pass reads ``samples.jsonl`` while the run writes it (:class:`~assay.store.growth.Growth`), in
    this process, and ends once the writer marks it complete; then it re-reads run.json (the run's ending is
    recorded by then), and ``results_seconds`` counts from that moment. Raises
    :class:`~assay.store.growth.Abandoned` when the writer gives up, before anything is written."""
    from assay.results.sources import FileSource, SamplesRewritten, StreamSource
    from assay.store.jsonlfiles import LABELS
    from assay.store.rundir import read_manifest
    from assay.store.sampleindex import SampleStream

    root = Path(run_dir)
    started = time.perf_counter()
    manifest = read_manifest(root)
    options = results_options(
        error_policy=error_policy,
        bootstrap_iters=bootstrap_iters,
        seed=seed,
        cluster_key=cluster_key,
        prices=prices,
        repeat_reduction=repeat_reduction,
        group_weighting=group_weighting,
        confidence=confidence,
    )
    stream = SampleStream(root, follow=follow)
    final: list[RunManifest] = []

    def final_manifest() -> RunManifest:  # followed: run.json as the run's ending left it
        if not final:
            final.append(read_manifest(root))
        return final[0]

    after = final_manifest if follow is not None else None
    scanned = ahead.result(manifest) if ahead is not None and ahead.options == options else None
    # the sample logs: spooled as the records were scanned ahead, else as this process's scan reads them
    logs = (
        ahead.logs
        if ahead is not None and scanned is not None
        else SampleLogSpool(root, [t.name for t in manifest.tasks])
    )
    try:
        if scanned is not None:
            computed = compute_results(manifest, ListSource([]), prescanned=scanned, **options)
            computed.doc["assay"]["torn_lines"] = 0  # a new file, every line of it scanned
        elif follow is None and (sharded := _scan_sharded(root, manifest, logs, processes, options)) is not None:
            prescanned = (sharded.scanned, sharded.figures)
            computed = compute_results(manifest, ListSource([]), prescanned=prescanned, **options)
            computed.doc["assay"]["torn_lines"] = sharded.torn
        else:
            try:
                computed = compute_results(
                    manifest, StreamSource(stream), sample_logs=logs, final_manifest=after, **options
                )
            except SamplesRewritten:  # a sample written twice (a resume): read again, keeping its last copy
                computed = compute_results(
                    manifest, FileSource(stream.index()), sample_logs=logs, final_manifest=after, **options
                )
            computed.doc["assay"]["torn_lines"] = stream.torn
            if follow is not None:
                manifest = final_manifest()
                started = follow.completed_at or started
        logs.commit()
    finally:
        logs.discard()
        if ahead is not None:
            ahead.discard()
    doc = computed.doc
    if any("require_calibration" in m.evaluator for t in manifest.tasks for m in t.metrics):
        from assay.evaluators.judge.calibration.gate import apply_marks, run_marks

        apply_marks(doc, run_marks(manifest, root))  # judges with require_calibration: marked uncalibrated or not
    if (root / LABELS).is_file():  # people's labels: the judge figures they correct (no labels, nothing to load)
        from assay.results.judgecorrected import apply_judge_corrections, judge_corrections

        apply_judge_corrections(doc, judge_corrections(manifest, root, confidence=options["confidence"]))
    doc["assay"]["results_seconds"] = time.perf_counter() - started
    atomic_write_text(root / "results.json", json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return doc
