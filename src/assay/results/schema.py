"""The lm-evaluation-harness on-disk format: key names, hashes and per-sample log lines.

``results.json`` follows lm-eval's result schema, so its readers (lm-eval's own table code, leaderboards)
can read it: ``results[task]`` holds ``name``, ``alias``, ``sample_len`` and only numbers under
``"metric,filter"`` / ``"metric_stderr,filter"`` keys. Our richer figures live under the top-level
``"assay"`` key, described in :mod:`assay.results`.

``samples_<task>.jsonl`` holds one line per sample and filter in lm-eval's ``SampleResult`` shape::

    {"doc_id": int, "doc": {...}, "target": str,
     "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}},
     "resps": [[text per repeat]], "filtered_resps": [value] or [[value per repeat]],
     "filter": str, "metrics": [names], "doc_hash": sha256, "prompt_hash": sha256, "target_hash": sha256,
     "<metric>": float, ...}

A metric whose verdicts all errored has no value under the ``exclude`` policy: it is then left out of
that line (name and value), never written as NaN or null.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from assay.record import FilterRecord, SampleRecord

RESERVED_TASK_KEYS = frozenset({"name", "alias", "sample_len", "sample_count"})


def metric_key(metric: str, filter_name: str) -> str:
    """``"acc,none"``: a metric's key inside ``results[task]``."""
    return f"{metric},{filter_name}"


def stderr_key(metric: str, filter_name: str) -> str:
    """``"acc_stderr,none"``: the key of a metric's standard error."""
    return f"{metric}_stderr,{filter_name}"


def split_metric_key(key: str) -> tuple[str, str]:
    """``"acc,none"`` -> ``("acc", "none")`` (the filter is '' when the key has no comma)."""
    metric, _, filter_name = key.partition(",")
    return metric, filter_name


def hash_string(text: str) -> str:
    """sha256 hex digest of UTF-8 text, as lm-eval's ``hash_string``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def doc_hash(doc: Any) -> str:
    """lm-eval's ``doc_hash``: sha256 of ``json.dumps(doc, indent=2, ensure_ascii=False)``."""
    return hash_string(json.dumps(doc, indent=2, ensure_ascii=False, default=str))


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``model_name_sanitized``: path-unsafe runs of characters become ``__``."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def samples_filename(task: str) -> str:
    """``samples_<task>.jsonl``, with characters unsafe in a file name replaced by ``_``."""
    return f"samples_{re.sub(r'[^A-Za-z0-9_.-]', '_', task)}.jsonl"


def as_text(value: Any) -> str:
    """A response or filtered value as the text lm-eval logs: strings as they are, JSON for containers."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _filtered_resps(fr: FilterRecord | None) -> list[Any]:
    if fr is None:
        return []
    values = [as_text(v) for v in fr.filtered]
    return values if len(values) == 1 else [values]


def sample_log_line(record: SampleRecord, filter_name: str, metric_values: dict[str, float]) -> dict[str, Any]:
    """One line of ``samples_<task>.jsonl`` for a sample and filter; ``metric_values`` has only real floats."""
    target = str(record.target)
    line: dict[str, Any] = {
        "doc_id": int(record.doc_id),
        "doc": record.doc,
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": record.prompt, "arg_1": dict(record.gen_kwargs)}},
        "resps": [[as_text(r.text) if r is not None else "" for r in record.responses]],
        "filtered_resps": _filtered_resps(record.filters.get(filter_name)),
        "filter": filter_name,
        "metrics": list(metric_values),
        "doc_hash": doc_hash(record.doc),
        "prompt_hash": hash_string(record.prompt),
        "target_hash": hash_string(target),
    }
    for name, value in metric_values.items():
        line[name] = float(value)
    return line


def sample_log_line_raw(obj: dict[str, Any], filter_name: str, metric_values: dict[str, float]) -> dict[str, Any]:
    """:func:`sample_log_line` from a record's parsed JSON (already validated), without building the model:
    the same line, at a fraction of the cost, for runs of millions of samples."""
    target = str(obj.get("target"))
    prompt = obj["prompt"]
    doc = obj["doc"]
    fr = (obj.get("filters") or {}).get(filter_name)
    filtered: list[Any] = []
    if fr is not None:
        values = [as_text(v) for v in fr.get("filtered") or []]
        filtered = values if len(values) == 1 else [values]
    line: dict[str, Any] = {
        "doc_id": int(obj["doc_id"]),
        "doc": doc,
        "target": target,
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": dict(obj.get("gen_kwargs") or {})}},
        "resps": [[as_text(r.get("text")) if r is not None else "" for r in obj.get("responses") or []]],
        "filtered_resps": filtered,
        "filter": filter_name,
        "metrics": list(metric_values),
        "doc_hash": doc_hash(doc),
        "prompt_hash": hash_string(prompt),
        "target_hash": hash_string(target),
    }
    for name, value in metric_values.items():
        line[name] = float(value)
    return line
