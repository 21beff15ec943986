"""The run-wide figures a results scan gathers beside the columns: requests and judge calls, what the lm-eval
document needs, shared fields (independence), pairwise-judge position bias and corpus statistics. One instance
observes records in the order written; instances that observed consecutive runs of records merge in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.record import RunManifest
from assay.results import corpus
from assay.results.agentfigures import AgentTally
from assay.results.document import RecordFacts
from assay.results.independence import OBSERVED_RECORDS, SharedContext
from assay.results.judging import JudgingFigures
from assay.results.operational import OperationalTally
from assay.results.testfigures import NamedScores
from assay.tasks.importers.lmeval.figures import LmevalItems


class RunFigures:
    """Everything but the columns that results.json takes from the records, summed one record at a time."""

    def __init__(
        self,
        manifest: RunManifest,
        prices: Mapping[str, Any],
        *,
        mergeable: bool = False,
        before: Mapping[str, int] | None = None,
    ) -> None:
        """``before``: records of each task that come before those this instance will observe (those observed by
        the instances it will be merged into), so that the shared fields are looked for in the same first ones."""
        self.ops, self.facts, self.judging = OperationalTally(manifest, prices), RecordFacts(), JudgingFigures()
        seen = before or {}
        self.shared = {
            task.name: SharedContext(max(0, OBSERVED_RECORDS - seen.get(task.name, 0)), keep=mergeable)
            for task in manifest.tasks
        }
        self.corpus_metrics = {t.name: [m.name for m in t.metrics if m.aggregation == "corpus"] for t in manifest.tasks}
        self.corpus_stats: dict[tuple[str, str, str], corpus.CorpusStats] = {}
        self.agents = AgentTally()  # trajectories' turns, tool calls, stop reasons
        self.lmeval = LmevalItems({t.name: t.config for t in manifest.tasks})  # lm-eval tasks' per-document values
        self.named = NamedScores(manifest)  # headline: tests tasks' named scores per test

    def observe(self, rec: dict[str, Any]) -> None:
        """Take one record dict (every record once, in the order written) into account."""
        task = rec["task"]
        ops = self.ops
        ops.add_requests(rec)
        self.facts.add(rec)
        self.agents.observe(rec)
        self.lmeval.observe(rec)
        if self.named.metrics:
            self.named.observe(rec)
        detector = self.shared.get(task)
        if detector is not None and detector.seen < detector.limit:  # the first records of each task
            detector.observe(rec)
        for filter_name, fr in (rec.get("filters") or {}).items():
            by_metric = fr.get("verdicts") or {}
            for metric, verdicts in by_metric.items():
                for v in verdicts:
                    details = v.get("details")
                    if details:  # judge calls, pairwise judgements
                        ops.add_judge_calls(details)
                        if isinstance(details, Mapping) and details.get("mode") == "pairwise":
                            self.judging.add_pairwise(task, filter_name, metric, v)
        for metric in self.corpus_metrics.get(task, ()):  # corpus metrics: each sample's sufficient statistics
            for filter_name, fr in (rec.get("filters") or {}).items():
                key = (task, filter_name, metric)
                stats = self.corpus_stats.get(key)
                if stats is None:
                    stats = self.corpus_stats[key] = corpus.CorpusStats()
                stats.add((fr.get("verdicts") or {}).get(metric))

    def merge(self, later: RunFigures) -> None:
        """Add what ``later`` observed: records written after the ones this instance observed (``later`` must
        have been made ``mergeable``, so its shared-field detector kept what it saw)."""
        self.ops.merge(later.ops)
        self.facts.merge(later.facts)
        self.judging.merge(later.judging)
        self.agents.merge(later.agents)
        self.lmeval.merge(later.lmeval)
        self.named.merge(later.named)
        for task, detector in later.shared.items():
            self.shared[task].merge(detector)
        for key, stats in later.corpus_stats.items():
            mine = self.corpus_stats.get(key)
            if mine is None:
                mine = self.corpus_stats[key] = corpus.CorpusStats()
            mine.merge(stats)
