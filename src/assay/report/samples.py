"""The HTML report's sample browser data: each sample packed compactly (short keys, capped texts), read from
the run folders one record at a time, and where each sample sits in the page's list (for themes and links)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from assay.record import SampleRecord
    from assay.report.pageselect import PageSelection
    from assay.results import Run

TEXT_CAP = 20_000  # characters of one text kept for the detail view; the rest is cut with a note
RUN_CSS = ("run-0", "run-1", "run-2", "run-3")


def cap_text(value: Any) -> Any:
    """A text for the page: as is up to TEXT_CAP characters, else ``[first TEXT_CAP chars, full length]``."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TEXT_CAP else [text[:TEXT_CAP], len(text)]


def clip(value: Any) -> str | None:
    """A short text (reason, feedback, error, details) cut at TEXT_CAP with a marker."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, indent=1)
    return text if len(text) <= TEXT_CAP else f"{text[:TEXT_CAP]}… [{len(text) - TEXT_CAP:,} more characters]"


def _trim(items: list[Any]) -> list[Any]:
    while items and items[-1] is None:
        items.pop()
    return items


def _tri(value: bool | None) -> int | None:
    return None if value is None else int(bool(value))


def _score(value: Any) -> float | int | None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return None
    return int(value) if float(value).is_integer() else round(float(value), 6)


class MetricIndex:
    """Numbers the (metric, filter) pairs of all runs, so samples refer to them by position."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self._pos: dict[tuple[str, str], int] = {}

    def __call__(self, metric: str, filter_name: str) -> int:
        key = (metric, filter_name)
        pos = self._pos.get(key)
        if pos is None:
            pos = self._pos[key] = len(self.keys)
            self.keys.append(key)
        return pos

    def as_data(self) -> list[dict[str, str]]:
        """The list the page script reads: metric, filter and the results key."""
        return [{"m": m, "f": f, "k": f"{m},{f}"} for m, f in self.keys]


_NO_FIELD: Any = object()


def input_field(task_config: Mapping[str, Any]) -> str | None:
    """The dataset field a task reads its input from (``fields.input`` of its config), if it names one."""
    fields = task_config.get("fields")
    value = fields.get("input") if isinstance(fields, Mapping) else None
    return value if isinstance(value, str) and value else None


def sample_input(rec: SampleRecord, field_path: str | None = None) -> Any:
    """What a person calls the sample's input: the task's input field of the doc (``fields.input``, else the doc's
    ``input``), else the last user message, else the whole prompt; never the prompt's fixed template lines."""
    from assay.tasks.sample import get_path

    value = get_path(rec.doc, field_path, _NO_FIELD) if field_path else rec.doc.get("input", _NO_FIELD)
    if value is not _NO_FIELD and value is not None and value != "":
        return value
    for message in reversed(rec.messages):
        if isinstance(message, Mapping) and message.get("role") == "user" and message.get("content") is not None:
            content = message["content"]
            if isinstance(content, list):  # content parts: their text
                texts = [str(p["text"]) for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
                return "\n".join(texts) if texts else content
            return content
    return rec.prompt


def pack_transcript(transcript: list[dict[str, Any]]) -> list[list[Any]]:
    """An agent's transcript for the page's drawer, one entry per message, texts capped:
    ``[role, text, calls, seconds, [in, out], error, changes]`` where ``calls`` are an assistant's ``[[name, args]]``
    and a tool message's ``[[name]]``, ``seconds`` the model call's latency or the tool's duration, ``error`` 1 when
    a tool failed, ``changes`` what a tool call did to the environment (files written and deleted, exit code)."""
    from assay.agents.transcript import content_text

    out: list[list[Any]] = []
    for m in transcript:
        role = str(m.get("role") or "")
        calls: list[list[Any]] | None = None
        if role == "assistant" and m.get("tool_calls"):
            calls = [
                [
                    clip(str((c.get("function") or {}).get("name") or "")),
                    clip((c.get("function") or {}).get("arguments")),
                ]
                for c in m["tool_calls"]
                if isinstance(c, dict)
            ]
        elif role == "tool":
            calls = [[clip(str(m.get("name") or ""))]]
        seconds = m.get("latency_s", m.get("duration_s"))
        usage = m.get("usage") if isinstance(m.get("usage"), dict) else None
        tokens = [usage.get("input_tokens", 0), usage.get("output_tokens", 0)] if usage else None
        error = 1 if m.get("error") else None
        out.append(_trim([role, cap_text(content_text(m)), calls, seconds, tokens, error, _changes(m.get("changes"))]))
    return out


def _changes(changes: Any) -> str | None:
    """A tool call's effect on the environment in one line: ``exit 1 · wrote a.py, b.py · deleted c.txt``."""
    if not isinstance(changes, dict):
        return None
    parts = []
    if changes.get("timed_out"):
        parts.append("timed out")
    elif changes.get("exit_code") is not None:
        parts.append(f"exit {changes['exit_code']}")
    for key, label in (("written", "wrote"), ("deleted", "deleted")):
        names = changes.get(key) or []
        if names:
            shown = ", ".join(str(n) for n in names[:20])
            parts.append(f"{label} {shown}" + (f" (+{len(names) - 20} more)" if len(names) > 20 else ""))
    return clip(" · ".join(parts)) if parts else None


MAX_ASSERTIONS = 200  # of one verdict's checks (nested ones included) listed in the drawer; the rest are counted


def pack_assertions(details: Any) -> list[list[Any]] | None:
    """A verdict's own checks (``details.checks``, as ``row_checks`` records a promptfoo test's assertions) for the
    drawer, one entry each: ``[type, passed (1/0, null unknown), score, reason, metric, weight, [nested checks]]``
    (an assert-set's checks nested), texts clipped; None when the details list no checks. Past MAX_ASSERTIONS the
    last entry is ``["…", null, null, "N more checks not shown"]``."""
    checks = details.get("checks") if isinstance(details, Mapping) else None
    if not isinstance(checks, list) or not checks:
        return None
    budget = [MAX_ASSERTIONS]

    def pack(items: list[Any]) -> list[list[Any]]:
        out: list[list[Any]] = []
        for i, c in enumerate(items):
            if budget[0] <= 0:
                out.append(["…", None, None, f"{len(items) - i} more checks not shown (they are in samples.jsonl)"])
                break
            if not isinstance(c, Mapping):
                continue
            budget[0] -= 1
            passed = c.get("passed", c.get("pass"))
            nested = c.get("checks")
            weight = c.get("weight")
            out.append(
                _trim(
                    [
                        clip(str(c.get("type") or "?")),
                        None if not isinstance(passed, bool | int) else int(bool(passed)),
                        _score(c.get("score")),
                        clip(c.get("reason")),
                        clip(c.get("metric")) if c.get("metric") is not None else None,
                        _score(weight) if weight is not None and weight != 1 else None,
                        pack(nested) if isinstance(nested, list) and nested else None,
                    ]
                )
            )
        return out

    return pack(checks)


def pack_sample(
    rec: SampleRecord, run_index: int, task_index: int, metrics: MetricIndex, field_path: str | None = None
) -> dict[str, Any]:
    """One sample for the page: short keys, texts capped, verdicts as positional lists, empty fields left out.

    ``{r: run, t: task, i: sample_id, d: doc_id, n: input, p: prompt, g: target, o: [response], v: [verdicts],
    fl, md}`` where ``n`` (see :func:`sample_input`) is left out when it is the prompt itself, a response is
    ``{x: text, c: [[tool, args, result]], l: latency, u: [in, out], k: cached, f: finish, m: model, e: error,
    rz: reasoning taken out of the text before scoring, rs: reasoning the server returned apart (never scored)}``
    and a verdict entry is ``[metric, score, passed, [[score, passed, reason, feedback, error, details, assertions]
    per repeat]]`` (``passed`` 1/0, null when errored; ``assertions``: :func:`pack_assertions`).
    """
    out: dict[str, Any] = {"r": run_index, "t": task_index, "i": rec.sample_id, "d": rec.doc_id}
    given = sample_input(rec, field_path)
    if given != rec.prompt:
        out["n"] = cap_text(given)
    out["p"] = cap_text(rec.prompt)
    if rec.target is not None:
        out["g"] = cap_text(rec.target)
    responses: list[dict[str, Any]] = []
    n = max(len(rec.responses), len(rec.response_errors))
    raw_texts: list[Any] = []
    for i in range(n):
        resp = rec.responses[i] if i < len(rec.responses) else None
        err = rec.response_errors[i] if i < len(rec.response_errors) else None
        item: dict[str, Any] = {}
        if resp is not None:
            raw_texts.append(resp.text)
            if resp.text is not None:
                item["x"] = cap_text(resp.text)
            taken = rec.reasoning[i] if i < len(rec.reasoning) else None
            if taken is not None:
                item["rz"] = cap_text(taken)
            apart = resp.metadata.get("reasoning")
            if apart:
                item["rs"] = cap_text(apart)
            if resp.tool_calls:
                item["c"] = [
                    _trim(
                        [
                            clip(tc.name) or "",
                            clip(json.dumps(tc.arguments, ensure_ascii=False, default=str)),
                            clip(tc.result),
                        ]
                    )
                    for tc in resp.tool_calls
                ]
            item["l"] = round(resp.latency_s, 4)
            if resp.usage.input_tokens or resp.usage.output_tokens:
                item["u"] = [resp.usage.input_tokens, resp.usage.output_tokens]
            if resp.cached:
                item["k"] = 1
            if resp.finish_reason:
                item["f"] = resp.finish_reason
            if resp.model:
                item["m"] = resp.model
            if resp.transcript:
                item["h"] = pack_transcript(resp.transcript)
                item["s"] = resp.stop_reason
            env = resp.metadata.get("environment") if isinstance(resp.metadata, dict) else None
            if isinstance(env, dict) and env.get("diff"):
                item["wd"] = cap_text(str(env["diff"]))  # the workspace's final diff (runner.envdiff)
        if err:
            item["e"] = clip(err)
        responses.append(item)
    if responses:
        out["o"] = responses
    verdicts: list[list[Any]] = []
    filtered: dict[str, list[Any]] = {}
    for filter_name, fr in rec.filters.items():
        if list(fr.filtered) != raw_texts:
            filtered[filter_name] = [cap_text(v) for v in fr.filtered]
        for metric, vs in fr.verdicts.items():
            per_repeat = [
                _trim(
                    [
                        _score(v.get("score")),
                        _tri(None if v.get("error") else bool(v.get("passed"))),
                        clip(v.get("reason")),
                        clip(v.get("feedback")),
                        clip(v.get("error")),
                        clip(v.get("details")) if v.get("details") else None,
                        pack_assertions(v.get("details")),
                    ]
                )
                for v in vs
            ]
            verdicts.append(
                [metrics(metric, filter_name), _score(fr.scores.get(metric)), _tri(fr.passed.get(metric)), per_repeat]
            )
    if verdicts:
        out["v"] = verdicts
    if filtered:
        out["fl"] = filtered
    if rec.metadata:
        md = json.dumps(rec.metadata, ensure_ascii=False, default=str)
        out["md"] = rec.metadata if len(md) <= TEXT_CAP else {"note": f"metadata of {len(md):,} characters not shown"}
    return out


class SamplePositions:
    """The position of each (run, task, sample id) in the page's sample list, from the runs' columns (no record
    is read): runs in order, then tasks in manifest order, then doc_id order, as :func:`iter_samples` packs them;
    only the samples ``selection`` keeps (all without one)."""

    def __init__(self, runs: Sequence[Run], selection: PageSelection | None = None) -> None:
        self._tasks: dict[tuple[int, str], tuple[int, Any, Any, Any]] = {}
        self._picks: dict[tuple[int, str], Any] = {}
        start = 0
        for r, run in enumerate(runs):
            for name in run.task_names:
                cols = run.columns.get(name)
                if cols is None or cols.id_hashes is None:
                    continue
                order = np.argsort(cols.id_hashes, kind="stable")
                self._tasks[(r, name)] = (start, cols, order, cols.id_hashes[order])  # sorted once, looked up often
                picked = selection.picks.get((r, name)) if selection is not None else None
                if picked is not None:
                    self._picks[(r, name)] = picked
                start += len(cols) if picked is None else int(picked.size)
        self.total = start

    def get(self, key: tuple[int, str, str]) -> int | None:
        """The position of ``(run index, task, sample_id)``, or None when that run has no such sample."""
        from assay.results.accumulators import hash64

        found = self._tasks.get((key[0], key[1]))
        if found is None:
            return None
        start, cols, order, ranked = found
        h = hash64(key[2])
        lo, hi = np.searchsorted(ranked, h, "left"), np.searchsorted(ranked, h, "right")
        for i in order[lo:hi]:
            if cols.sample_ids[int(i)] == key[2]:
                return self._placed(key, start, int(i))
        return None

    def _placed(self, key: tuple[int, str, str], start: int, i: int) -> int | None:
        """Where sample ``i`` of its task's columns sits in the page, None when the page leaves it out."""
        picked = self._picks.get((key[0], key[1]))
        if picked is None:
            return start + i
        at = int(np.searchsorted(picked, i))
        return start + at if at < picked.size and int(picked[at]) == i else None


def sample_meta(runs: Sequence[Run], labels: Sequence[str]) -> tuple[dict[str, Any], MetricIndex]:
    """The browser's data for all runs except the samples themselves (see :func:`iter_samples`), and the index of
    (metric, filter) pairs the samples refer to (every pair of every run's columns, so it is complete up front)."""
    tasks: list[str] = []
    metrics = MetricIndex()
    for run in runs:
        for info in run.manifest.tasks:
            if info.name not in tasks:
                tasks.append(info.name)
            for m in info.metrics:
                for f in info.filters:
                    metrics(m.name, f)
            cols = run.columns.get(info.name)
            for f, m_name in cols.keys if cols is not None else []:
                metrics(m_name, f)
    data = {
        "runs": [{"label": label, "css": RUN_CSS[i % len(RUN_CSS)]} for i, label in enumerate(labels)],
        "tasks": tasks,
        "metrics": metrics.as_data(),
        "cap": TEXT_CAP,
        "themes": [],
    }
    return data, metrics


def iter_samples(
    runs: Sequence[Run], tasks: Sequence[str], metrics: MetricIndex, selection: PageSelection | None = None
) -> Iterator[dict[str, Any]]:
    """Every sample of every run (those ``selection`` keeps) packed for the page (:func:`pack_sample`), read from
    disk one at a time: runs in order, tasks in manifest order, doc_id order (records of a task run.json does not
    list are left out)."""
    task_pos = {name: i for i, name in enumerate(tasks)}
    for r, run in enumerate(runs):
        inputs = {info.name: input_field(info.config) for info in run.manifest.tasks}
        for name in run.task_names:
            picked = selection.picks.get((r, name)) if selection is not None else None
            for rec in run.task_records(name, picked):
                yield pack_sample(rec, r, task_pos[name], metrics, inputs.get(name))


def sample_data(runs: Sequence[Run], labels: Sequence[str]) -> tuple[dict[str, Any], SamplePositions]:
    """The browser's data for all runs with every sample in memory (small runs and tests; pages are written
    streaming by :mod:`assay.report.html`), and the positions of the samples."""
    data, metrics = sample_meta(runs, labels)
    data["samples"] = list(iter_samples(runs, data["tasks"], metrics))
    return data, SamplePositions(runs)
