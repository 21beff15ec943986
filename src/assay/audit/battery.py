"""Score the probe battery (:mod:`assay.audit.probes`) and the row's own target through a task's real scoring, with
no model: the filters, evaluators and batch paths a run uses (:func:`assay.runner.offline.score_chunk`).

Per (filter, metric, probe): how many samples the probe passed where its text is not itself a right answer, against
chance (0 for a degenerate answer; 1 / k for always answering one of k letters, flagged only when a one-sided
binomial test says it beats chance at 0.01). The oracle check scores each row's target as the answer: a correct
answer that fails points at a broken filter, regex or choice mapping. Judge metrics call a model and are left out
(listed as such); log-likelihood tasks score choices, not text, and are left out too.
"""

from __future__ import annotations

import asyncio
import math
import string
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from assay.audit.probes import Probe, ProbeContext, judge_probes, legitimate, letter_probes, probes, target_texts
from assay.models.base import Response

if TYPE_CHECKING:
    from assay.tasks import Sample, Task

CHUNK = 8_192
EXAMPLE_CHARS = 200


@dataclass
class ProbeFigure:
    """One probe against one metric under one filter."""

    probe: str
    about: str
    filter: str
    metric: str
    applicable: int  # samples the probe applied to and the metric judged
    legitimate: int  # of those, samples where the probe's text is a right answer (not counted)
    passed: int  # unearned passes
    mean_score: float | None  # over the counted samples
    chance: float
    flagged: bool = False
    example: dict[str, Any] | None = None  # the first unearned pass: sample id, answer, score, reason

    @property
    def share(self) -> float:
        """Unearned passes over the samples counted."""
        counted = self.applicable - self.legitimate
        return self.passed / counted if counted else 0.0


@dataclass
class OracleFigure:
    """The row's own target scored as the answer, under one filter and metric."""

    filter: str
    metric: str
    applicable: int
    failed: int
    examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TaskAudit:
    """What the battery found on one task."""

    task: str
    samples: int
    probes: list[ProbeFigure] = field(default_factory=list)
    oracle: list[OracleFigure] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> why it was not audited
    unchecked: dict[str, int] = field(default_factory=dict)  # metric -> samples it checks nothing of (left out)
    errored: dict[str, list[Any]] = field(default_factory=dict)  # metric -> [errored verdicts, the first error]
    note: str | None = None

    @property
    def unjudged(self) -> list[str]:
        """Metrics the audit could not judge at all: every probe's verdict errored (a judge that cannot be reached,
        an evaluator that raises), so no figure says anything about them."""
        judged = {p.metric for p in self.probes if p.applicable}
        return sorted(m for m in self.errored if m not in judged)

    @property
    def flagged(self) -> list[ProbeFigure]:
        """Probes that earned credit they should not."""
        return [p for p in self.probes if p.flagged]

    @property
    def broken_oracle(self) -> list[OracleFigure]:
        """Metrics under which a correct answer fails."""
        return [o for o in self.oracle if o.failed]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe, with each probe's share."""
        out = asdict(self)
        for fig, data in zip(self.probes, out["probes"], strict=True):
            data["share"] = fig.share
        return out


def _binomial_above(passes: int, n: int, p: float) -> float:
    """One-sided p-value of ``passes`` or more in ``n`` draws at chance ``p``."""
    if n == 0:
        return 1.0
    if n <= 2_000:
        return min(1.0, sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(passes, n + 1)))
    sd = math.sqrt(n * p * (1 - p)) or 1.0
    return 0.5 * math.erfc((passes - 0.5 - n * p) / (sd * math.sqrt(2)))


def _letters(samples: Sequence[Sample]) -> list[str]:
    """The letters of a letter-answer multiple-choice task (every target one capital letter, two or more seen)."""
    seen = {t.strip() for s in samples for t in target_texts(s.target)}
    if len(seen) < 2 or not all(len(t) == 1 and t in string.ascii_uppercase[:10] for t in seen):
        return []
    top = max(string.ascii_uppercase.index(t) for t in seen)
    return list(string.ascii_uppercase[: top + 1])


def _skipped(task: Task, judges: bool) -> dict[str, str]:
    from assay.evaluators.judge.calibration.identity import is_judge

    out = {}
    for metric in task.metrics:
        if not judges and is_judge(metric.evaluator.to_config()):
            out[metric.name] = "a judge metric calls a model: audit it with --judges"
        elif type(metric.evaluator).__module__.startswith("assay.evaluators.agent"):
            out[metric.name] = "it judges an agent's tool calls, not its text: the probes are text"
    return out


async def _score(
    task: Task, samples: Sequence[Sample], texts: Sequence[str], prompts: Sequence[str], *, lean: bool = True
) -> list[Any]:
    """Each sample's filter records with ``texts`` as its answers; ``lean``: the verdicts' scores and passes only
    (no reasons built for the many failing verdicts: the same scores, a fraction of the time)."""
    from assay.runner.offline import SCORES_ONLY, Answered, score_chunk

    repeats = range(task.repeats)
    answered = [
        Answered(s, [Response(text=t) for _ in repeats], [None] * task.repeats)
        for s, t in zip(samples, texts, strict=True)
    ]
    token = SCORES_ONLY.set(lean)
    try:
        return await score_chunk(task, answered, prompts)
    finally:
        SCORES_ONLY.reset(token)


def _unchecked(task: Task, chunk: Sequence[Sample], metrics: Sequence[Any]) -> dict[str, set[str]]:
    """Per metric, the samples it checks nothing of: an empty list of checks (a promptfoo test with no ``assert``)
    passes any answer, so no probe says anything about its scoring there."""
    out: dict[str, set[str]] = {}
    for metric in metrics:
        if metric.expected == "none":
            continue
        empty = {s.id for s in chunk if _is_empty(task.expected_for(s, metric))}
        if empty:
            out[metric.name] = empty
    return out


def _is_empty(expected: Any) -> bool:
    return isinstance(expected, list | tuple) and not expected


def _prompt(task: Task, sample: Sample) -> str:
    """The sample's prompt as text (an lm-eval task's from its own request: it has no assay template)."""
    from assay.runner.offline import prompt_of, render

    if getattr(task, "prompt", None) is None:
        return prompt_of(task.build_request(sample, 0).messages)
    return prompt_of(render(task, sample))


def _verdict(
    record: dict[str, Any], filter_name: str, metric: str, errored: dict[str, list[Any]] | None = None
) -> dict[str, Any] | None:
    """The first verdict of ``metric`` under ``filter_name``; an error verdict is counted in ``errored``, not read."""
    verdicts = ((record.get(filter_name) or {}).get("verdicts") or {}).get(metric)
    if not verdicts:
        return None
    first = verdicts[0]
    if first.get("error") is not None:
        if errored is not None:
            seen = errored.setdefault(metric, [0, str(first["error"])])
            seen[0] += 1
        return None
    return first


class _Tally:
    def __init__(self, probe: Probe, filter_name: str, metric: str, chance: float) -> None:
        self.fig = ProbeFigure(probe.name, probe.about, filter_name, metric, 0, 0, 0, None, chance)
        self.total = 0.0
        self.text = ""  # the example's whole answer

    def add(self, sample: Sample, text: str, verdict: dict[str, Any], earned: bool) -> None:
        """One judged sample; ``earned``: the probe's text is itself a right answer there (not counted)."""
        fig = self.fig
        fig.applicable += 1
        if earned:
            fig.legitimate += 1
            return
        score = verdict.get("score")
        self.total += float(score) if isinstance(score, int | float) else 0.0
        if verdict.get("passed"):
            fig.passed += 1
            if fig.example is None:  # its reason is filled in at the end (scores alone are read meanwhile)
                fig.example = {"sample_id": sample.id, "answer": text[:EXAMPLE_CHARS], "score": score, "reason": ""}
                self.text = text

    def finish(self, max_credit: float) -> ProbeFigure:
        fig = self.fig
        counted = fig.applicable - fig.legitimate
        fig.mean_score = self.total / counted if counted else None
        if fig.chance > 0:  # always one letter: flagged when it beats chance beyond doubt
            fig.flagged = fig.share > fig.chance and _binomial_above(fig.passed, counted, fig.chance) < 0.01
        else:
            fig.flagged = fig.share > max_credit
        return fig


def audit_task(task: Task, *, limit: int | None = None, max_credit: float = 0.0, judges: bool = False) -> TaskAudit:
    """Run the battery and the oracle check on ``task``'s samples (the first ``limit``)."""
    return asyncio.run(aaudit_task(task, limit=limit, max_credit=max_credit, judges=judges))


async def aaudit_task(
    task: Task, *, limit: int | None = None, max_credit: float = 0.0, judges: bool = False
) -> TaskAudit:
    """:func:`audit_task`, for a running event loop."""

    samples = list(task.samples(limit))
    audit = TaskAudit(task.name, len(samples), skipped=_skipped(task, judges))
    if getattr(task, "output_type", "generate_until") != "generate_until":
        audit.note = f"a {task.output_type} task scores choices, not text: the text battery does not apply"
        return audit
    from assay.audit.envprobes import MAX_SAMPLES, environment_battery, environment_metrics

    in_env = {m.name for m in environment_metrics(task)}  # scored by the environment probes, not the text battery
    metrics = [m for m in task.metrics if m.name not in audit.skipped and m.name not in in_env]
    letters = _letters(samples[:1_000])
    battery = [*probes(), *letter_probes(letters), *(judge_probes() if judges else ())]
    targets = list(dict.fromkeys(t for s in samples[:200] for t in target_texts(s.target)))[:50]
    candidates = tuple(dict.fromkeys(c for c in (*targets, *(str(i) for i in range(101))) if c))
    tallies: dict[tuple[str, str, str], _Tally] = {}
    oracle: dict[tuple[str, str], OracleFigure] = {}
    for start in range(0, len(samples), CHUNK):
        chunk = samples[start : start + CHUNK]
        prompts = [_prompt(task, s) for s in chunk]
        contexts = [ProbeContext(p, targets, letters, candidates) for p in prompts]
        unchecked = _unchecked(task, chunk, metrics)
        for name, ids in unchecked.items():
            audit.unchecked[name] = audit.unchecked.get(name, 0) + len(ids)
        for pr in battery:
            picked = [
                (s, t, p) for s, c, p in zip(chunk, contexts, prompts, strict=True) if (t := pr.fn(s, c)) is not None
            ]
            if not picked:
                continue
            records = await _score(task, [x[0] for x in picked], [x[1] for x in picked], [x[2] for x in picked])
            for (sample, text, _), record in zip(picked, records, strict=True):
                earned = pr.letter is None and legitimate(text, sample.target)
                for pipeline in task.pipelines:
                    for metric in metrics:
                        verdict = _verdict(record, pipeline.name, metric.name, audit.errored)
                        if verdict is None or sample.id in unchecked.get(metric.name, ()):
                            continue
                        key = (pr.name, pipeline.name, metric.name)
                        if key not in tallies:
                            chance = 1 / len(letters) if pr.letter else 0.0
                            tallies[key] = _Tally(pr, pipeline.name, metric.name, chance)
                        tallies[key].add(sample, text, verdict, earned)
        await _oracle(task, chunk, prompts, metrics, oracle)
    if in_env:
        shown = samples if limit is not None else samples[:MAX_SAMPLES]

        def tally(pr: Any, filter_name: str, metric: str) -> _Tally:
            key = (pr.name, filter_name, metric)
            if key not in tallies:
                tallies[key] = _Tally(pr, filter_name, metric, 0.0)
            return tallies[key]

        prompts = [_prompt(task, s) for s in shown]
        problems = await environment_battery(task, shown, prompts, tally, partial(_verdict, errored=audit.errored))
        if problems:
            audit.note = "environments that could not be made: " + "; ".join(problems)
    audit.probes = [t.finish(max_credit) for t in tallies.values()]
    audit.oracle = list(oracle.values())
    await _explain(task, samples, tallies.values())
    return audit


async def _explain(task: Task, samples: Sequence[Sample], tallies: Iterable[_Tally]) -> None:
    """The reason of each flagged probe's example verdict, judged again in full."""

    by_id = {s.id: s for s in samples}
    for tally in tallies:
        fig = tally.fig
        if not fig.flagged or fig.example is None or fig.example["reason"]:
            continue  # an environment probe's example keeps the reason it was scored with
        sample = by_id[fig.example["sample_id"]]
        (record,) = await _score(task, [sample], [tally.text], [_prompt(task, sample)], lean=False)
        verdict = _verdict(record, fig.filter, fig.metric) or {}
        fig.example["reason"] = str(verdict.get("reason") or "")[:EXAMPLE_CHARS]


async def _oracle(
    task: Task, chunk: Sequence[Sample], prompts: Sequence[str], metrics: Sequence[Any], out: dict[Any, OracleFigure]
) -> None:
    """Score each row's own target (its first acceptable answer) as the answer."""
    own = [(s, target_texts(s.target)[0], p) for s, p in zip(chunk, prompts, strict=True) if target_texts(s.target)]
    if not own:
        return
    records = await _score(task, [x[0] for x in own], [x[1] for x in own], [x[2] for x in own])
    for (sample, text, _), record in zip(own, records, strict=True):
        for pipeline in task.pipelines:
            for metric in metrics:
                if metric.expected != "target":
                    continue
                verdict = _verdict(record, pipeline.name, metric.name)
                if verdict is None:
                    continue
                fig = out.setdefault((pipeline.name, metric.name), OracleFigure(pipeline.name, metric.name, 0, 0))
                fig.applicable += 1
                if not verdict.get("passed"):
                    fig.failed += 1
                    if len(fig.examples) < 3:
                        reason = str(verdict.get("reason") or "")[:EXAMPLE_CHARS]
                        fig.examples.append({"sample_id": sample.id, "answer": text[:EXAMPLE_CHARS], "reason": reason})
