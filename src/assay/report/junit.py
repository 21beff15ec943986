"""JUnit XML for CI: one testcase per sample and metric; failures carry the reason, errors are ``<error>``."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import xml.etree.ElementTree as ET
from array import array
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from assay.models.base import display_name

if TYPE_CHECKING:
    from assay.results.loader import Run

MAX_OUTPUT_CHARS = 4000
FORK_MIN_RECORDS = 20_000  # a task with fewer records is written by this process alone
_INVALID_XML = re.compile("[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: Any) -> str:
    """Text safe for XML 1.0: characters XML cannot carry (e.g. ESC, NUL) are shown as ``\\xNN``."""
    return _INVALID_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


def _outcome(rec: dict[str, Any], filter_name: str, metric: str) -> tuple[str, str, str]:
    """("pass" | "failure" | "error", message, detail text) for one sample (its record's JSON object), filter and
    metric."""
    fr = (rec.get("filters") or {}).get(filter_name)
    verdicts = (fr.get("verdicts") or {}).get(metric) if fr is not None else None
    if not verdicts:
        error = _model_error(rec)
        if error:
            return "error", f"model error: {error}", ""
        passed = _passed(fr, metric) if fr is not None else None
        if fr is not None and passed is not None and (fr.get("scores") or {}).get(metric) is not None:
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


def _passed(fr: dict[str, Any], metric: str) -> bool | None:
    """A filter record's pass of ``metric`` read as :class:`FilterRecord` reads it (``"false"`` is False), None
    when it has none or an unreadable one."""
    value = (fr.get("passed") or {}).get(metric)
    if value is None or type(value) is bool:
        return value
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        return None


def _model_error(rec: dict[str, Any]) -> str | None:
    """The first model error of a record (:attr:`SampleRecord.error`)."""
    return next((e for e in rec.get("response_errors") or () if e), None)


def _output(rec: dict[str, Any], filter_name: str) -> str:
    fr = (rec.get("filters") or {}).get(filter_name)
    if fr is not None:
        values = fr.get("filtered") or []
    else:
        values = [r.get("text") if r is not None else None for r in rec.get("responses") or ()]
    text = "\n---\n".join("" if v is None else str(v) for v in values)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… ({len(text) - MAX_OUTPUT_CHARS} more characters)"
    return text


class _Case(NamedTuple):
    """One testcase (a sample, metric and filter), its texts made safe for XML (:func:`xml_text`)."""

    classname: str
    name: str
    time: str
    kind: str  # "pass", "failure" or "error"
    message: str = ""
    metric: str = ""
    detail: str = ""
    output: str = ""

    def element(self) -> ET.Element:
        """The ``<testcase>`` element of :func:`build_junit`'s tree."""
        case = ET.Element("testcase", classname=self.classname, name=self.name, time=self.time)
        if self.kind != "pass":
            el = ET.SubElement(case, self.kind, message=self.message, type=self.metric)
            el.text = self.detail
            ET.SubElement(case, "system-out").text = self.output
        return case

    def xml(self, level: int) -> str:
        """The element's lines as ``ET.indent`` at ``level`` and ``ET.tostring`` write them (a test proves it),
        put together directly: a million samples make two million testcases."""
        pad = "  " * level
        head = f'{pad}<testcase classname="{_attr(self.classname)}" name="{_attr(self.name)}" time="{self.time}"'
        if self.kind == "pass":
            return head + " />\n"
        inner = pad + "  "
        return (
            f'{head}>\n{inner}<{self.kind} message="{_attr(self.message)}" type="{_attr(self.metric)}"'
            f"{_body(self.kind, self.detail)}\n{inner}<system-out{_body('system-out', self.output)}\n"
            f"{pad}</testcase>\n"
        )


_TEXT_ESCAPES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"))  # ElementTree's, in its order
_ATTR_ESCAPES = (*_TEXT_ESCAPES, ('"', "&quot;"), ("\r", "&#13;"), ("\n", "&#10;"), ("\t", "&#09;"))
_TEXT_SPECIAL = re.compile("[&<>]").search  # one C call finds that most texts need nothing
_ATTR_SPECIAL = re.compile('[&<>"\r\n\t]').search


def _escaped(text: str, escapes: tuple[tuple[str, str], ...]) -> str:
    for char, entity in escapes:
        if char in text:
            text = text.replace(char, entity)
    return text


def _cdata(text: str) -> str:
    """Text escaped as ElementTree escapes an element's text."""
    return _escaped(text, _TEXT_ESCAPES) if _TEXT_SPECIAL(text) else text


def _attr(text: str) -> str:
    """An attribute value escaped as ElementTree escapes it."""
    return _escaped(text, _ATTR_ESCAPES) if _ATTR_SPECIAL(text) else text


def _body(tag: str, text: str) -> str:
    """The rest of an element holding only ``text`` after its attributes, as ElementTree writes it."""
    return f">{_cdata(text)}</{tag}>" if text else " />"


@dataclass
class _Suite:
    """One task's testsuite: its attributes and properties; its testcases are made as its records are read."""

    name: str
    keys: list[tuple[str, str]]  # (filter, metric) of each testcase of a sample
    properties: ET.Element
    counts: dict[str, int] = field(default_factory=lambda: {"tests": 0, "failures": 0, "errors": 0})
    time: float = 0.0

    def header(self) -> ET.Element:
        """The ``<testsuite>`` element without children; complete once every case was made."""
        el = ET.Element("testsuite", name=xml_text(self.name))
        for key, value in self.counts.items():
            el.set(key, str(value))
        el.set("skipped", "0")
        el.set("time", f"{self.time:.3f}")
        return el

    def cases(self, run: Run, picks: Any = None, seconds: array[float] | None = None) -> Iterator[_Case]:
        """The testcases of the task's records (by doc_id; only those at ``picks``, indices in its columns, when
        given), counted as they are made; each record's seconds are added to :attr:`time`, or to ``seconds``."""
        filters = list(dict.fromkeys(f for f, _ in self.keys))
        metrics = list(dict.fromkeys(m for _, m in self.keys))
        classname = xml_text(self.name)
        counts = self.counts
        for rec in run.task_record_dicts(self.name, picks):  # read one at a time
            took = rec.get("model_seconds", 0.0) + rec.get("eval_seconds", 0.0)
            if seconds is None:
                self.time += took
            else:
                seconds.append(took)
            time = f"{took:.3f}"
            sample_id = rec["sample_id"]
            for filter_name in filters:
                for metric in metrics:
                    name = xml_text(f"{sample_id}::{metric}" + (f"::{filter_name}" if len(filters) > 1 else ""))
                    counts["tests"] += 1
                    kind, message, detail = _outcome(rec, filter_name, metric)
                    if kind == "pass":
                        yield _Case(classname, name, time, kind)
                        continue
                    counts["failures" if kind == "failure" else "errors"] += 1
                    output = xml_text(_output(rec, filter_name))
                    yield _Case(
                        classname, name, time, kind, xml_text(message), metric, xml_text(detail or message), output
                    )


def _suites(run: Run) -> Iterator[_Suite]:
    """A suite per task, with the testcases of a sample (its metrics and filters) its records will have."""
    for task in run.manifest.tasks:
        cols = run.columns.get(task.name)  # declared filters and metrics, then those found in the records
        keys = cols.keys if cols is not None else [(f, m.name) for f in task.filters for m in task.metrics]
        props = ET.Element("properties")
        for prop, text in (("task_hash", task.task_hash), ("model", display_name(run.manifest.model))):
            ET.SubElement(props, "property", name=prop, value=xml_text(text))
        yield _Suite(task.name, keys, props)


def _write_cases(run: Run, suite: _Suite, body: IO[str]) -> None:
    """Write a suite's testcases to ``body``: the second half of a large task's by a forked child while this
    process writes the first (both cores at work on a run of a million samples); in turn where forking is not
    safe, or the child failed. The same bytes, counts and time either way (a test proves it)."""
    import numpy as np

    from assay.forking import Forked, may_fork

    cols = run.columns.get(suite.name)
    n = 0 if cols is None else len(cols.positions)
    half, helper, spill = n // 2, None, None
    try:
        if n >= FORK_MIN_RECORDS and may_fork():
            fd, spill = tempfile.mkstemp(prefix="assay-junit-", suffix=".xml")
            os.close(fd)
            helper = Forked.start(_write_part, run, suite, np.arange(half, n), spill)
        if helper is None:
            body.writelines(case.xml(2) for case in suite.cases(run))
            return
        body.writelines(case.xml(2) for case in suite.cases(run, np.arange(half)))
        made = helper.result()
        if made is None:  # the child failed: its half is written here (with the errors of reading it here)
            body.writelines(case.xml(2) for case in suite.cases(run, np.arange(half, n)))
            return
        counts, seconds = made
        for key, value in counts.items():
            suite.counts[key] += value
        for took in seconds:  # added in order: the float sum of one pass
            suite.time += took
        assert spill is not None  # made with the child
        with open(spill, encoding="utf-8", newline="") as part:
            shutil.copyfileobj(part, body, 1 << 20)
    finally:
        if helper is not None:
            helper.close()
        if spill is not None:
            os.unlink(spill)


def _write_part(run: Run, suite: _Suite, picks: Any, path: str) -> tuple[dict[str, int], array[float]]:
    """In a forked child: the testcases at ``picks`` written to ``path``; their counts and each record's seconds."""
    seconds: array[float] = array("d")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.writelines(case.xml(2) for case in suite.cases(run, picks, seconds))
    return suite.counts, seconds


def _root(run: Run, suites: list[_Suite]) -> ET.Element:
    root = ET.Element("testsuites", name=xml_text(f"assay run {run.manifest.name or run.manifest.run_id}"))
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
        cases = [case.element() for case in suite.cases(run)]
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
            body = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8", newline=""))
            body.write(_indented(suite.properties, 2))
            _write_cases(run, suite, body)
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
