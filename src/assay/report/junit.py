"""JUnit XML for CI: one testcase per sample and metric; failures carry the reason, errors are ``<error>``."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.models.base import display_name

if TYPE_CHECKING:
    from assay.record import SampleRecord
    from assay.results.loader import Run

MAX_OUTPUT_CHARS = 4000
_INVALID_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: Any) -> str:
    """Text safe for XML 1.0: characters XML cannot carry (e.g. ESC, NUL) are shown as ``\\xNN``."""
    return _INVALID_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


def _outcome(rec: SampleRecord, filter_name: str, metric: str) -> tuple[str, str, str]:
    """("pass" | "failure" | "error", message, detail text) for one sample, filter and metric."""
    fr = rec.filters.get(filter_name)
    verdicts = fr.verdicts.get(metric) if fr is not None else None
    if not verdicts:
        if rec.error:
            return "error", f"model error: {rec.error}", ""
        passed = fr.passed.get(metric) if fr is not None else None
        if fr is not None and passed is not None and fr.scores.get(metric) is not None:
            return ("pass", "", "") if passed else ("failure", f"{metric} did not pass", "")
        what = f"no record for filter {filter_name!r}" if fr is None else f"no verdict for metric {metric!r}"
        return "error", what, ""
    many = len(verdicts) > 1
    errors, failures = [], []
    for i, v in enumerate(verdicts):
        prefix = f"repeat {i}: " if many else ""
        if v.get("error") is not None or v.get("score") is None:
            errors.append(prefix + str(v.get("error") or "verdict has no score"))
        elif not v.get("passed", False):
            line = prefix + str(v.get("reason") or f"{metric} did not pass (score {v.get('score')})")
            if v.get("feedback"):
                line += f"\n{'  ' if many else ''}feedback: {v['feedback']}"
            failures.append(line)
    if errors:
        return "error", errors[0], "\n".join(errors + failures)
    if failures:
        return "failure", failures[0].split("\n", 1)[0], "\n".join(failures)
    return "pass", "", ""


def _output(rec: SampleRecord, filter_name: str) -> str:
    fr = rec.filters.get(filter_name)
    values = fr.filtered if fr is not None else [r.text if r is not None else None for r in rec.responses]
    text = "\n---\n".join("" if v is None else str(v) for v in values)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… ({len(text) - MAX_OUTPUT_CHARS} more characters)"
    return text


def build_junit(run: Run) -> ET.Element:
    """The ``<testsuites>`` element: a suite per task, a testcase per sample, metric (and filter when several)."""
    root = ET.Element("testsuites", name=xml_text(f"assay run {run.manifest.run_id}"))
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for task in run.manifest.tasks:
        cols = run.columns.get(task.name)  # declared filters and metrics, then those found in the records
        keys = cols.keys if cols is not None else [(f, m.name) for f in task.filters for m in task.metrics]
        filters = list(dict.fromkeys(f for f, _ in keys))
        metrics = list(dict.fromkeys(m for _, m in keys))
        records = run.task_records(task.name)  # read one at a time
        suite = ET.SubElement(root, "testsuite", name=xml_text(task.name))
        props = ET.SubElement(suite, "properties")
        for prop, text in (("task_hash", task.task_hash), ("model", display_name(run.manifest.model))):
            ET.SubElement(props, "property", name=prop, value=xml_text(text))
        counts = {"tests": 0, "failures": 0, "errors": 0}
        suite_time = 0.0
        for rec in records:
            seconds = rec.model_seconds + rec.eval_seconds
            suite_time += seconds
            for filter_name in filters:
                for metric in metrics:
                    name = f"{rec.sample_id}::{metric}" + (f"::{filter_name}" if len(filters) > 1 else "")
                    case = ET.SubElement(
                        suite, "testcase", classname=xml_text(task.name), name=xml_text(name), time=f"{seconds:.3f}"
                    )
                    counts["tests"] += 1
                    kind, message, detail = _outcome(rec, filter_name, metric)
                    if kind != "pass":
                        counts["failures" if kind == "failure" else "errors"] += 1
                        el = ET.SubElement(case, kind, message=xml_text(message), type=metric)
                        el.text = xml_text(detail or message)
                        out = ET.SubElement(case, "system-out")
                        out.text = xml_text(_output(rec, filter_name))
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("skipped", "0")
        suite.set("time", f"{suite_time:.3f}")
        total_time += suite_time
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    return root


def write_junit(run: Run, path: str | os.PathLike[str]) -> dict[str, int]:
    """Write JUnit XML for a run (atomically) and return the counts of tests, failures and errors."""
    from assay.runner.rundir import atomic_write_text

    root = build_junit(run)
    ET.indent(root)
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    atomic_write_text(Path(path), text)
    return {k: int(root.get(k, "0")) for k in ("tests", "failures", "errors")}
