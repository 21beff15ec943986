"""JUnit XML for CI: one testcase per sample and metric; failures carry the reason, errors are ``<error>``."""

from __future__ import annotations

import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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


@dataclass
class _Suite:
    """One task's testsuite: its attributes and properties, and its testcases as they are made (a stream)."""

    name: str
    properties: ET.Element
    cases: Iterator[ET.Element]
    counts: dict[str, int] = field(default_factory=lambda: {"tests": 0, "failures": 0, "errors": 0})
    time: float = 0.0

    def header(self) -> ET.Element:
        """The ``<testsuite>`` element without children; complete once :attr:`cases` is exhausted."""
        el = ET.Element("testsuite", name=xml_text(self.name))
        for key, value in self.counts.items():
            el.set(key, str(value))
        el.set("skipped", "0")
        el.set("time", f"{self.time:.3f}")
        return el


def _suites(run: Run) -> Iterator[_Suite]:
    """A suite per task, whose testcases (a sample, metric and filter each) are made one record at a time."""
    for task in run.manifest.tasks:
        cols = run.columns.get(task.name)  # declared filters and metrics, then those found in the records
        keys = cols.keys if cols is not None else [(f, m.name) for f in task.filters for m in task.metrics]
        props = ET.Element("properties")
        for prop, text in (("task_hash", task.task_hash), ("model", display_name(run.manifest.model))):
            ET.SubElement(props, "property", name=prop, value=xml_text(text))
        suite = _Suite(task.name, props, iter(()))
        suite.cases = _cases(run, task.name, keys, suite)
        yield suite


def _cases(run: Run, task: str, keys: list[tuple[str, str]], suite: _Suite) -> Iterator[ET.Element]:
    filters = list(dict.fromkeys(f for f, _ in keys))
    metrics = list(dict.fromkeys(m for _, m in keys))
    for rec in run.task_records(task):  # read one at a time
        seconds = rec.model_seconds + rec.eval_seconds
        suite.time += seconds
        for filter_name in filters:
            for metric in metrics:
                name = f"{rec.sample_id}::{metric}" + (f"::{filter_name}" if len(filters) > 1 else "")
                case = ET.Element("testcase", classname=xml_text(task), name=xml_text(name), time=f"{seconds:.3f}")
                suite.counts["tests"] += 1
                kind, message, detail = _outcome(rec, filter_name, metric)
                if kind != "pass":
                    suite.counts["failures" if kind == "failure" else "errors"] += 1
                    el = ET.SubElement(case, kind, message=xml_text(message), type=metric)
                    el.text = xml_text(detail or message)
                    out = ET.SubElement(case, "system-out")
                    out.text = xml_text(_output(rec, filter_name))
                yield case


def _root(run: Run, suites: list[_Suite]) -> ET.Element:
    root = ET.Element("testsuites", name=xml_text(f"assay run {run.manifest.run_id}"))
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(s.counts[key] for s in suites)))
    root.set("time", f"{sum(s.time for s in suites):.3f}")
    return root


def build_junit(run: Run) -> ET.Element:
    """The ``<testsuites>`` element in memory: a suite per task, a testcase per sample, metric (and filter when
    several). :func:`write_junit` writes the same document without holding it."""
    suites = list(_suites(run))
    built = []
    for suite in suites:
        cases = list(suite.cases)
        el = suite.header()
        el.extend([suite.properties, *cases])
        built.append(el)
    root = _root(run, suites)
    root.extend(built)
    return root


def _opening(el: ET.Element) -> str:
    """``<tag attr="…">`` of an element, escaped as ElementTree escapes it."""
    text = ET.tostring(el, encoding="unicode", short_empty_elements=False)
    return text[: -len(f"</{el.tag}>")]


def _indented(el: ET.Element, level: int) -> str:
    ET.indent(el, space="  ", level=level)
    return "  " * level + ET.tostring(el, encoding="unicode") + "\n"


def write_junit(run: Run, path: str | os.PathLike[str]) -> dict[str, int]:
    """Write JUnit XML for a run (atomically) and return the counts of tests, failures and errors.

    Streamed: each suite's testcases go to a temporary file as the records are read (a suite's counts head it, so
    they are known only at its end), then the document is assembled; the bytes are those of ``ET.indent`` +
    ``ET.tostring`` on :func:`build_junit`'s tree (a test proves it), with memory flat in the size of the run."""
    from assay.atomicfile import atomic_file

    with ExitStack() as stack:
        suites: list[_Suite] = []
        bodies: list[IO[str]] = []
        for suite in _suites(run):
            body = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))
            body.write(_indented(suite.properties, 2))
            for case in suite.cases:
                body.write(_indented(case, 2))
            suites.append(suite)
            bodies.append(body)
        root = _root(run, suites)
        with atomic_file(Path(path)) as out:
            out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
            if not suites:
                out.write(ET.tostring(root, encoding="unicode") + "\n")
            else:
                out.write(_opening(root) + "\n")
                for suite, written in zip(suites, bodies, strict=True):
                    out.write("  " + _opening(suite.header()) + "\n")
                    written.seek(0)
                    out.writelines(written)  # line by line: a text file read in blocks decodes big chunks
                    out.write("  </testsuite>\n")
                out.write("</testsuites>\n")
    return {k: int(root.get(k, "0")) for k in ("tests", "failures", "errors")}
