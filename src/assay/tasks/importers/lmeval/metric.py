"""``lmeval_metric``: one metric of an lm-eval task, its value for a document computed by the task's own
``process_results`` (after lm-eval's filters). A run scores a document's metrics together
(:func:`assay.tasks.importers.lmeval.scoring.score_document`); this evaluator gives the same value for one answer
on its own, e.g. from Python."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from assay.evaluators.base import Evaluator, Options
from assay.evaluators.registry import register
from assay.verdict import Verdict


class LmevalMetricOptions(Options):
    """Which lm-eval task and metric, and the settings the task was built with."""

    task: str = Field(description="the lm-eval task's name")
    metric: str = Field(description="the metric's name in the task's metric_list (a key process_results returns)")
    filter: str = Field("none", description="the lm-eval filter ensemble the answer goes through")
    aggregation: str = Field("mean", description="how lm-eval aggregates the metric over documents (recorded)")
    settings: dict[str, Any] = Field(default_factory=dict, description="the lm-eval settings that built the task")


@register("lmeval_metric")
class LmevalMetric(Evaluator):
    """One value of an lm-eval task's ``process_results``, on the metric's own scale."""

    Options = LmevalMetricOptions
    options: LmevalMetricOptions

    def check(self, actual: Any, expected: Any) -> Verdict:
        return self.evaluate(actual, expected)  # without the document: an error verdict that says so

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        from assay.tasks.importers.lmeval.scoring import score_document
        from assay.tasks.importers.lmeval.settings import LmevalSettings
        from assay.tasks.importers.lmeval.suite import load_suite

        doc_id = (context or {}).get("doc_id")
        if not isinstance(doc_id, int):
            return Verdict.errored("lmeval_metric: the document's doc_id was not given (context['doc_id'])")
        try:
            suite = load_suite(LmevalSettings.model_validate(self.options.settings))
            task = suite.tasks[self.options.task]
            document = next(d for d in suite.documents[self.options.task] if d.doc_id == doc_id)
        except Exception as err:
            return Verdict.errored(f"lmeval_metric: the task cannot be had: {type(err).__name__}: {err}")
        from assay.models.base import Response

        response = actual if isinstance(actual, Response) else Response(text=None if actual is None else str(actual))
        records = score_document(task, document, [response], "no answer")
        record = records.get(self.options.filter)
        verdicts = record.verdicts.get(self.options.metric) if record is not None else None
        if not verdicts:
            return Verdict.errored(f"process_results gave no {self.options.metric!r} under {self.options.filter!r}")
        v = verdicts[0]
        if v.get("error") is not None:
            return Verdict.errored(str(v["error"]), v.get("details") or {})
        return Verdict(
            float(v["score"]), bool(v["passed"]), v.get("reason"), v.get("details") or {}, None, own_scale=True
        )
