"""Results: per-sample values, statistics, ``results.json`` in lm-eval's schema, loading and comparing runs.

``results.json`` carries lm-eval's keys (see :mod:`assay.results.schema`) and one more, ``"assay"``,
which lm-eval's readers ignore and which holds the figures that schema has no room for::

    "assay": {
      "schema_version": 1, "run_id": str, "status": "finished" | "interrupted" | ...,
      "error_policy": "exclude" | "as_zero", "bootstrap_iters": int, "seed": int, "confidence": 0.95,
      "cluster_key": str | null, "repeat_reduction": "mean" | "max" | "min" | "majority",
      "group_weighting": "size" | "equal", "torn_lines": int, "warnings": [str], "results_seconds": float,
      "tasks": {task: {"n_docs", "n_selected", "n_records", "n_missing",
                       "n_model_errors" (samples with a failed model request),
                       "model_error_example" ("sample_id: error" of the first, or null),
                       "n_model_error_verdicts", "n_eval_errors" (verdicts the evaluator or filter failed),
                       "eval_error_example", "unscorable": {"metric,filter": reason}, "repeats",
                       "filters": {filter: {metric: METRIC}}}},
      "groups": {group: {"subtasks": [task], "weighting": str, "filters": {filter: {metric: GROUP_METRIC}}}},
      "operational": {"roles": {"model" | "judge": {model_name: {"requests", "errors", "cache_hits",
                       "input_tokens", "output_tokens", "latency_s": {"p50", "p95", "p99", "mean", "max"},
                       "cost_usd"}}}, "samples", "total_seconds", "samples_per_second",
                       "prices_configured", "cost_usd", "unpriced_models"}
    }

    METRIC = {"metric", "filter", "higher_is_better", "mean", "stderr" (ddof=1), "confidence",
              "ci": [lo, hi] (the headline interval), "ci_method" ("wilson" | "bca_expanded" | "wilson_bounded" |
              "t"; "bootstrap_t" in results written before the coverage table chose BCa),
              "ci_t": [lo, hi], "ci_bootstrap": [lo, hi] (percentile), "bootstrap_iters",
              "bootstrap_method" ("exact" | "binned", see stats.bootstrap_method), "seed",
              "n_total", "n_scored", "n_errored" (samples), "n_errored_verdicts" = "n_model_errors" (no response
              to judge) + "n_eval_errors" (the evaluator or filter failed), "unscorable" (why there is no value,
              e.g. "all 300 verdicts errored: judge unreachable"; null when there is one), "error_policy",
              "pass_rate" (mean share of passing repeats), "n_passed" (scored samples whose every judged repeat
              passed), "binary", "repeats", "repeat_reduction",
              "error_examples": [{"doc_id", "error"}],
              "pass_at_k" / "pass_hat_k": {k: {"value", "stderr", "n", "n_excluded"}}   (repeats > 1),
              "clustered": {"key", "n_clusters", "stderr", "ci", "ci_method" ("cluster_bootstrap" |
                            "cluster_t"), "ci_t", "ci_bootstrap"}                          (with a cluster key),
              "tests": {"passed", "failed", "errored", "pass_rate", "ci" (Wilson), "mean_score", "named_scores", …}
                       (the metric of a ``headline: tests`` task: see :mod:`assay.results.testfigures`)}
    GROUP_METRIC = {"metric", "filter", "mean", "stderr" (pooled), "ci", "ci_method" ("stratified_bootstrap" |
                    "pooled_t"), "ci_t", "ci_bootstrap" (stratified),
                    "weighting", "weights": {task: w}, "subtasks", "n_total", "n_scored", "n_errored",
                    "higher_is_better"}

``ci`` is the interval reports lead with (see :mod:`assay.results.intervals`): Wilson for pass/fail scores, the
expanded BCa bootstrap (of the same resamples as ``ci_bootstrap``) for other scores, inside [0, 1] and the observed
scores' range, the Wilson interval at the mean for scores with no spread; ``ci_t`` and ``ci_bootstrap`` are kept
beside it, clipped to the score range too. Undefined figures (no scored sample, fewer than two values) are ``null``
here and absent from the lm-eval keys (whose readers expect numbers); a metric without a value is still listed here
with its ``unscorable`` reason and named in ``warnings``. When a cluster key is given, the stderr under lm-eval's
``"metric_stderr,filter"`` key is the clustered one (absent with fewer than two clusters, never replaced by the iid
one), and groups pool the clustered stderrs and combine the cluster bootstrap distributions. Bootstrap resamples of
task ``t`` use ``numpy.random.default_rng([seed, crc32(t), 0])`` (``1`` for the cluster bootstrap), so tasks
resample independently and every figure is reproducible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazyexports import lazy_exports

_EXPORTS: dict[str, str] = {
    "write_results": "assay.results.writer",
    "build_results": "assay.results.writer",
    "ErroredVerdictsError": "assay.results.writer",
    "load_run": "assay.results.loader",
    "Run": "assay.results.loader",
    "MetricRow": "assay.results.loader",
    "compare_runs": "assay.results.compare",
    "Comparison": "assay.results.compare",
    "operational_figures": "assay.results.operational",
    "sample_values": "assay.results.aggregate",
}

__all__ = [
    "Comparison",
    "ErroredVerdictsError",
    "MetricRow",
    "Run",
    "build_results",
    "compare_runs",
    "load_run",
    "operational_figures",
    "sample_values",
    "write_results",
]

if TYPE_CHECKING:
    from assay.results.aggregate import sample_values
    from assay.results.compare import Comparison, compare_runs
    from assay.results.loader import MetricRow, Run, load_run
    from assay.results.operational import operational_figures
    from assay.results.writer import ErroredVerdictsError, build_results, write_results

__getattr__ = lazy_exports(__name__, _EXPORTS)
