"""One document scored as lm-eval scores it: the answers become lm-eval's responses, each of the task's filter
ensembles filters them, and the task's own ``process_results`` gives the document's value of every metric. Each
value is kept as it is (``details["value"]``: a number, or the pair a perplexity or F1 aggregates) for lm-eval's
aggregation (:mod:`assay.tasks.importers.lmeval.figures`); the verdict's score is that value, or lm-eval's
aggregation of the document alone where the value is not a number."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from assay.models.base import Response
from assay.record import FilterRecord
from assay.tasks.importers.lmeval.requests import lmeval_responses
from assay.tasks.importers.lmeval.suite import Document
from assay.verdict import Verdict


def jsonable(value: Any) -> Any:
    """A per-document value or filtered answer as JSON can hold it (tuples become lists, numpy scalars numbers)."""
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # a numpy array
        return jsonable(value.tolist())
    return str(value)


def restored(details: Mapping[str, Any]) -> Any:
    """A verdict's per-document value as ``process_results`` gave it (a tuple stays a tuple)."""
    value = details.get("value")
    if details.get("tuple") and isinstance(value, list):
        return tuple(tuple(v) if isinstance(v, list) else v for v in value)
    return value


def value_verdict(
    value: Any, aggregate: Callable[[list[Any]], Any] | None, higher_is_better: bool, shown: str = ""
) -> Verdict:
    """The verdict of one document's value of one metric, on the metric's own scale; ``shown`` says what was judged
    (the filtered answer and the target), for the reason of a value that is not above 0."""
    details: dict[str, Any] = {"value": jsonable(value)}
    if isinstance(value, tuple):
        details["tuple"] = True
    if isinstance(value, bool) or (isinstance(value, numbers.Real) and not isinstance(value, bool)):
        score = float(value)
    else:
        try:  # a pair (perplexity's, F1's, BLEU's): the aggregation of this document alone
            score = float(aggregate([value])) if aggregate is not None else math.nan
        except Exception:
            score = math.nan
        if not math.isfinite(score):
            details["note"] = "the value is not a number and has no figure of its own; lm-eval aggregates it"
            score = 0.0
    if not math.isfinite(score):
        return Verdict.errored(f"process_results gave {value!r}, not a finite number", details)
    passed = score > 0 if higher_is_better else True
    reason = None if passed else f"the value is {score:.4g}{shown}"
    return Verdict(score, passed, reason, details, None, own_scale=True)


def score_document(
    task: Any, document: Document, responses: list[Response | None], failure: str
) -> dict[str, FilterRecord]:
    """Every filter's record of one document: its filtered answers and each metric's verdict."""
    from lm_eval.api.instance import Instance  # type: ignore[import-untyped]

    from assay.tasks.importers.lmeval.suite import filter_names, templates_compiled_once

    aggregations = _aggregations(task)
    better = task.higher_is_better() or {}
    declared = list(aggregations) or list(better)
    try:
        resps = lmeval_responses(document, responses)
        problem = None if resps is not None else f"no response to evaluate: {failure}"
    except Exception as err:
        resps, problem = None, f"the answer cannot be read as lm-eval's: {type(err).__name__}: {err}"
    out: dict[str, FilterRecord] = {}
    ensembles = {f.name: f for f in getattr(task, "_filters", None) or ()}
    for filter_name in filter_names(task):
        if resps is None:
            out[filter_name] = _errored(declared, problem or failure)
            continue
        instances = [
            Instance(
                request_type=i.request_type,
                doc=i.doc,
                arguments=i.arguments,
                idx=i.idx,
                metadata=i.metadata,
                resps=list(r),
            )
            for i, r in zip(document.instances, resps, strict=True)
        ]
        try:
            ensemble = ensembles.get(filter_name)
            if ensemble is not None:
                ensemble.apply(instances)
                filtered = [inst.filtered_resps[filter_name] for inst in instances]
            else:
                filtered = [inst.resps[0] for inst in instances]
            with templates_compiled_once():
                values = task.process_results(document.doc_for(filter_name), filtered)
            if not isinstance(values, Mapping):
                raise TypeError(f"process_results returned {type(values).__name__}, not a dict of metric values")
        except Exception as err:  # the task's own code: its failure is this document's error, the run goes on
            record = _errored(declared, f"lm-eval's filters or process_results raised {type(err).__name__}: {err}")
            out[filter_name] = record
            continue
        record = FilterRecord(filtered=[jsonable(v) for v in filtered])
        shown = _shown(task, document, filter_name, filtered)
        for metric, value in values.items():
            verdict = value_verdict(value, aggregations.get(metric), bool(better.get(metric, True)), shown)
            record.verdicts[metric] = [verdict.to_dict()]
            record.scores[metric] = None if verdict.is_error else verdict.score
            record.passed[metric] = None if verdict.is_error else verdict.passed
        out[filter_name] = record
    return out


def _shown(task: Any, document: Document, filter_name: str, filtered: list[Any]) -> str:
    """`` for the answer ... (target ...)``: what a failing value judged (a generated answer only)."""
    if document.instances[0].request_type != "generate_until":
        return ""
    try:
        target = task.doc_to_target(document.doc_for(filter_name))
    except Exception:
        return f" for the answer {filtered[0]!r:.120}"
    return f" for the answer {filtered[0]!r:.120} (target {target!r:.120})"


def _aggregations(task: Any) -> dict[str, Callable[[list[Any]], Any]]:
    try:
        return dict(task.aggregation() or {})
    except Exception:
        return {}


def _errored(metrics: list[str], message: str) -> FilterRecord:
    record = FilterRecord(filtered=[None])
    for metric in metrics:
        record.verdicts[metric] = [Verdict.errored(message).to_dict()]
        record.scores[metric] = None
        record.passed[metric] = None
    return record
