"""``assay audit RUN``: a finished run's answers that won without solving, each linked to its sample in the HTML
report (``report.html#sample=<task>/<id>``).

- **degenerate**: a verdict passed on an answer that is empty, a constant (``{}``, ``null``, ``NaN``, ``0``...) that
  is not the target, final-answer markers with nothing in them, or the prompt sent back;
- **same answer, different targets**: one answer passed samples whose targets differ (a scorer that accepts it
  whatever the question);
- **tools claimed, none called**: an agent's answer says it ran or looked something up, and its transcript holds no
  tool call;
- **scorer touched**: an agent's tool call names the checker's files or the expected answers.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.audit.probes import legitimate, target_texts

CONSTANTS = {"", "{}", "[]", "null", "none", "nan", "0", "-1", "undefined"}
BAIT = re.compile(r"^\s*(?:####\s*0?|\\boxed\{\s*\}|(?:the )?answer(?: is)?\s*:?)\s*$", re.IGNORECASE)
CLAIMS = re.compile(
    r"\b(?:I (?:ran|called|used|executed|checked|searched|looked up|queried)|the (?:tool|search|api|query) "
    r"(?:returned|says|shows|gave)|according to the (?:tool|search|api|database))\b",
    re.IGNORECASE,
)
SCORER_FILES = re.compile(
    r"(?:^|[\s/'\"=])(?:tests?/|test_\w+\.py|conftest\.py|expected[_-]?(?:answers?|outputs?)|answer[_-]?key|grader)",
    re.IGNORECASE,
)
EXAMPLES = 5
MIN_SHARED = 3  # samples with different targets one answer must pass to be a finding


@dataclass
class Finding:
    """One kind of finding in one task, with the samples it concerns (the first few linked)."""

    kind: str
    task: str
    what: str
    count: int = 0
    samples: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)

    def add(self, sample_id: str) -> None:
        self.count += 1
        if len(self.samples) < EXAMPLES:
            from assay.report.fmt import sample_href

            self.samples.append(sample_id)
            self.links.append("report.html" + sample_href(self.task, sample_id))


def _answer(fr: Mapping[str, Any], responses: list[Any]) -> str | None:
    filtered = fr.get("filtered")
    if isinstance(filtered, list) and filtered and isinstance(filtered[0], str):
        return filtered[0]
    first = responses[0] if responses else None
    return first.get("text") if isinstance(first, Mapping) and isinstance(first.get("text"), str) else None


def _passed(fr: Mapping[str, Any]) -> bool:
    return any(p is True for p in (fr.get("passed") or {}).values())


def _tool_calls(response: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = list(response.get("tool_calls") or [])
    for message in response.get("transcript") or ():
        calls.extend(message.get("tool_calls") or ())
    return calls


def scan_records(records: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """Every finding in a run's record dicts (see the module docstring)."""
    found: dict[tuple[str, str, str], Finding] = {}
    by_answer: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def note(kind: str, task: str, what: str, sample_id: str) -> None:
        found.setdefault((kind, task, what), Finding(kind, task, what)).add(sample_id)

    for rec in records:
        task, sample_id = str(rec.get("task")), str(rec.get("sample_id"))
        target = rec.get("target")
        responses = [r for r in rec.get("responses") or () if isinstance(r, Mapping)]
        for fr in (rec.get("filters") or {}).values():
            if not _passed(fr):
                continue
            answer = _answer(fr, responses)
            if answer is None:
                continue
            plain = answer.strip().casefold()
            if (plain in CONSTANTS or BAIT.match(answer)) and not legitimate(answer, target):
                note("degenerate", task, f"passed on the answer {answer.strip()[:40]!r}", sample_id)
            elif answer.strip() and answer.strip() == str(rec.get("prompt") or "").strip():
                note("degenerate", task, "passed on the prompt sent back", sample_id)
            texts = target_texts(target)
            if plain and texts:
                by_answer[(task, plain)][texts[0].strip().casefold()].append(sample_id)
            break  # one answer a sample is enough
        for response in responses:
            calls = _tool_calls(response)
            if response.get("transcript") and not calls and CLAIMS.search(str(response.get("text") or "")):
                note(
                    "tools claimed, none called", task, "the answer says it used a tool; no tool was called", sample_id
                )
            for call in calls:
                inner = call.get("function")
                function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
                arguments = str(function.get("arguments") or "") + " " + str(function.get("name") or "")
                if SCORER_FILES.search(arguments):
                    note("scorer touched", task, "a tool call names the checker's files or answers", sample_id)
                    break
    for (task, answer), targets in by_answer.items():
        if len(targets) >= MIN_SHARED:
            what = f"the answer {answer[:40]!r} passed samples with {len(targets)} different targets"
            for ids in targets.values():
                for sample_id in ids:
                    note("same answer, different targets", task, what, sample_id)
    return sorted(found.values(), key=lambda f: (f.kind, f.task, -f.count))


def scan_run(path: Any) -> list[Finding]:
    """The findings in a finished run folder."""
    from assay.results.loader import load_run

    return scan_records(load_run(path).iter_record_dicts())


def findings_as_dicts(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """JSON-safe findings."""
    return [asdict(f) for f in findings]
