"""Corpus-level aggregation (corpus BLEU, chrF, TER): the figure is a function of sufficient statistics summed over
samples, not a mean of sentence scores; its bootstrap resamples samples and recomputes the figure from the sums.

Columnar: each sample contributes one row of statistics (summed over its judged repeats), so the results code can
feed rows as it streams the records and nothing else is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from assay.errors import ConfigError
from assay.results import stats

if TYPE_CHECKING:
    from assay.evaluators.generation import CorpusEvaluator
    from assay.record import SampleRecord

AGGREGATIONS = ("mean", "corpus")
_CHUNK_CELLS = 4_000_000  # bootstrap resamples are drawn in chunks of at most this many (iterations x samples)


@dataclass
class CorpusStats:
    """Per-sample sufficient statistics of one metric, one row per sample that has any judged verdict."""

    rows: list[npt.NDArray[np.float64]] = field(default_factory=list)
    nrefs: set[int] = field(default_factory=set)
    n_without_stats: int = 0  # judged verdicts that carried no statistics (a run scored by another evaluator)

    def add(self, verdicts: Iterable[Mapping[str, Any]] | None) -> None:
        """Add one sample: its verdict dicts (one per repeat); errored verdicts contribute nothing."""
        row: npt.NDArray[np.float64] | None = None
        for v in verdicts or ():
            if v.get("error") is not None or v.get("score") is None:
                continue
            details = v.get("details") or {}
            st = details.get("stats")
            if st is None:
                self.n_without_stats += 1
                continue
            arr = np.asarray(st, dtype=np.float64)
            row = arr if row is None else row + arr
            if "nrefs" in details:
                self.nrefs.add(int(details["nrefs"]))
        if row is not None:
            self.rows.append(row)

    def merge(self, other: CorpusStats) -> None:
        """Append the rows of another instance (of records read after this one's)."""
        self.rows.extend(other.rows)
        self.nrefs |= other.nrefs
        self.n_without_stats += other.n_without_stats

    def matrix(self) -> npt.NDArray[np.float64]:
        """The statistics as an (n_samples, k) array."""
        if not self.rows:
            return np.zeros((0, 0))
        widths = {r.size for r in self.rows}
        if len(widths) != 1:
            raise ConfigError(
                f"corpus statistics of different widths {sorted(widths)}: the run mixes evaluator settings"
            )
        return np.vstack(self.rows)


def collect(records: Iterable[SampleRecord], filter_name: str, metric: str) -> CorpusStats:
    """The statistics of ``metric`` under ``filter_name`` from the run's records."""
    acc = CorpusStats()
    for rec in records:
        fr = rec.filters.get(filter_name)
        acc.add(fr.verdicts.get(metric) if fr is not None else None)
    return acc


def bootstrap_corpus(
    evaluator: CorpusEvaluator, matrix: npt.NDArray[np.float64], iters: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """``iters`` corpus figures, each from a resample (with replacement) of the samples' statistic rows."""
    n = matrix.shape[0]
    out = np.empty(iters)
    chunk = max(1, min(iters, _CHUNK_CELLS // max(n, 1)))
    done = 0
    while done < iters:
        m = min(chunk, iters - done)
        idx = rng.integers(0, n, size=(m, n))
        idx += np.arange(m)[:, None] * n  # resample j's draws land in row j of the counts
        counts = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n).astype(np.float64)
        sums = counts @ matrix  # (m, k): each resample's summed statistics
        for j in range(m):
            out[done + j] = evaluator.corpus_value(sums[j])
        done += m
    return out


def corpus_figures(
    evaluator_config: Mapping[str, Any],
    acc: CorpusStats,
    *,
    bootstrap_iters: int,
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Any]:
    """The corpus figure of a metric with its bootstrap interval and the library's signature."""
    from assay.evaluators.generation import CorpusEvaluator
    from assay.evaluators.registry import from_config

    out: dict[str, Any] = {"aggregation": "corpus", "value": None, "ci_bootstrap": None, "stderr": None}
    out["n_without_stats"] = acc.n_without_stats
    try:  # e.g. reading a run on a machine without assay[metrics]: no figure, and the reason, never a wrong one
        evaluator = from_config(dict(evaluator_config))
        if not isinstance(evaluator, CorpusEvaluator):
            raise ConfigError(f"evaluator {evaluator.name!r} has no corpus aggregation (use aggregation: mean)")
        matrix = acc.matrix()
    except ConfigError as err:
        out["error"] = f"corpus figure not computed: {err}"
        out["n_corpus"] = len(acc.rows)
        return out
    n = int(matrix.shape[0])
    out["n_corpus"] = n
    if n == 0:
        return out
    total = matrix.sum(axis=0)
    out["value"] = evaluator.corpus_value(total)
    nrefs = next(iter(acc.nrefs)) if len(acc.nrefs) == 1 else -1
    out.update(evaluator.corpus_details(total, nrefs))
    if bootstrap_iters > 0 and n >= 2:
        dist = bootstrap_corpus(evaluator, matrix, bootstrap_iters, rng)
        out["ci_bootstrap"] = [float(x) for x in stats.percentile_interval(dist, confidence)]
        out["stderr"] = float(np.std(dist, ddof=1))
        out["_distribution"] = dist
    return out


def apply_corpus(entry: dict[str, Any], figures: dict[str, Any]) -> npt.NDArray[np.float64] | None:
    """Make the corpus figure the metric's headline in a results entry (``mean`` is what every reader shows);
    keep the mean of sentence scores as ``sentence_mean``. Returns the bootstrap distribution (or None)."""
    dist = figures.pop("_distribution", None)
    entry["sentence_mean"] = entry.get("mean")
    if "clustered" in entry:  # a cluster key's figures describe the sentence mean, not the corpus figure
        entry["sentence_clustered"] = entry.pop("clustered")
    entry["mean"] = figures["value"]
    entry["stderr"] = figures["stderr"]
    entry["ci_t"] = None  # no t interval for a ratio of sums: the bootstrap one is the interval
    entry["ci_bootstrap"] = figures["ci_bootstrap"]
    entry["ci"] = figures["ci_bootstrap"]  # the headline interval: resample samples, recompute the corpus figure
    entry["ci_method"] = "corpus_bootstrap" if dist is not None else None
    entry["bootstrap_method"] = "corpus_resample" if dist is not None else None
    entry["aggregation"] = "corpus"
    entry["corpus"] = {k: v for k, v in figures.items() if k not in ("value", "ci_bootstrap", "stderr")}
    return dist
