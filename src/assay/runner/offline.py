"""Offline scoring: when no model is called (a predictions file, a re-score), score chunks of samples through the
evaluators' columnar batch paths and write their records in bulk.

The records are those the per-sample path writes (``SampleRecord``, timings aside; a test proves it).
:func:`score_records` is the unit of work, a plain (async) function of a task and a chunk of answered samples
returning finished records, so that other executors (Ray) can run it where the data is; the driver stays the one
writer of the run folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from itertools import groupby
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from assay.environments.base import EnvironmentEvaluator
from assay.evaluators.base import BatchResult, Evaluator
from assay.gcpause import gc_paused
from assay.models.base import Message, Model, ModelError, Request, Response
from assay.record import judge_cache_hits
from assay.runner.executors.shards import Scored, encode, scored
from assay.runner.pending import PendingWork, runs
from assay.runner.scheduler import Scheduler, _cap, stored_response
from assay.runner.scoring import LIMIT_STOPS, _judge, judge_environment, limit_stop, nothing_to_judge
from assay.runner.turns import judge_turns
from assay.tasks.applicable import expected_or_absent, needs_expected
from assay.tasks.filters import NoMatch, explain_no_match, unmark
from assay.tasks.lazy_samples import unsure_positions
from assay.verdict import Verdict

if TYPE_CHECKING:
    from assay.models.predictions import PredictionsModel
    from assay.results.scanahead import ChunkScan, ScanAhead
    from assay.runner.scheduler import RunStats
    from assay.tasks import Sample, Task
    from assay.tasks.metrics import MetricSpec

CHUNK = 8192  # samples scored and written together
JUDGE_CONCURRENCY = 32
# packages/modules whose evaluators read a Response only through ``as_text``: their batch paths are given the texts,
# which they vectorise (a Response would send them pair by pair)
TEXT_EVALUATORS = ("assay.evaluators.text.", "assay.evaluators._numeric")


@dataclass(slots=True)
class Answered:
    """One sample with its answers (one per repeat; None where the model failed), ready to be scored.

    ``logged`` is the record being re-scored (its JSON form): everything but its filters and scoring time is kept.
    Without it (a predictions run) the prompt is rendered and a new record made.
    """

    sample: Sample
    responses: list[Response | None]
    errors: list[str | None]
    logged: dict[str, Any] | None = None


def is_offline(model: Model, feedback_model: object = None) -> bool:
    """True when a run needs no model call at all (a predictions file) and can be scored in chunks."""
    from assay.models.predictions import PredictionsModel

    return isinstance(model, PredictionsModel) and feedback_model is None


def has_fast_batch(evaluator: Evaluator) -> bool:
    """An evaluator whose verdicts depend on the pair alone and whose ``evaluate_batch`` is its own (columnar)."""
    cls = type(evaluator)
    return (
        cls.evaluate_batch is not Evaluator.evaluate_batch
        and cls.evaluate is Evaluator.evaluate
        and cls.aevaluate is Evaluator.aevaluate
    )


def reads_text(evaluator: Evaluator) -> bool:
    """True for the built-in evaluators that judge a Response by its text alone."""
    module = type(evaluator).__module__
    return module.startswith(TEXT_EVALUATORS[0]) or module in TEXT_EVALUATORS[1:]


def _raised(evaluator: Evaluator, err: Exception) -> Verdict:
    return Verdict.errored(f"{evaluator.name} raised {type(err).__name__}: {err}")


async def _one(evaluator: Evaluator, value: Any, expected: Any, context: Mapping[str, Any]) -> Verdict:
    """One verdict as the per-sample path gives it (with the sample's context); an evaluator that raises errors."""
    try:
        if type(evaluator).aevaluate is not Evaluator.aevaluate:
            return await evaluator.aevaluate(value, expected, context=context)
        return evaluator.evaluate(value, expected, context=context)
    except Exception as err:
        return _raised(evaluator, err)


async def _verdicts(
    evaluator: Evaluator, values: list[Any], expecteds: list[Any], contexts: Callable[[], list[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """Verdicts (their JSON form, :meth:`Verdict.to_dict`) for many pairs: through ``evaluate_batch`` where it is
    columnar (its :meth:`BatchResult.to_dicts` builds the dicts in bulk), else one by one with each pair's context
    (made only then; judges run concurrently). A batch that raises is redone pair by pair, so only the pairs that
    fail get error verdicts."""
    if not values:
        return []
    if has_fast_batch(evaluator):
        if reads_text(evaluator):  # they judge a Response by its text (as_text)
            values = [(v.text or "") if isinstance(v, Response) else v for v in values]
        try:
            batch = evaluator.evaluate_batch(values, expecteds)
        except Exception:
            batch = None
        if batch is not None and len(batch) == len(values):
            if SCORES_ONLY.get():
                return _scores_only(batch)
            try:
                return batch.to_dicts()
            except Exception:  # a verdict that cannot be built: those pairs get error verdicts, one by one
                return [_built(evaluator, batch, i) for i in range(len(values))]
    pairs = zip(values, expecteds, contexts(), strict=True)
    if type(evaluator).aevaluate is Evaluator.aevaluate:
        return [(await _one(evaluator, v, e, c)).to_dict() for v, e, c in pairs]
    slots = asyncio.Semaphore(JUDGE_CONCURRENCY)

    async def bounded(v: Any, e: Any, c: Mapping[str, Any]) -> dict[str, Any]:
        async with slots:
            return (await _one(evaluator, v, e, c)).to_dict()

    return list(await asyncio.gather(*(bounded(v, e, c) for v, e, c in pairs)))


# Set by callers that read only each verdict's score and pass (``assay audit``): a columnar batch's verdicts then
# come from its columns, without the reasons and feedback a failing verdict builds (the scores are the same)
SCORES_ONLY: ContextVar[bool] = ContextVar("assay_scores_only", default=False)


def _scores_only(batch: BatchResult) -> list[dict[str, Any]]:
    """Verdict dicts with the batch's score and pass alone; a pair the batch could not judge keeps its full verdict."""
    lean = Verdict(0.0, False).to_dict()  # the keys a verdict's JSON form has, every other one empty
    out: list[dict[str, Any]] = []
    for i, (score, ok) in enumerate(zip(batch.scores.tolist(), batch.passed.tolist(), strict=True)):
        if score != score:  # NaN: an error verdict, with its message
            out.append(batch[i].to_dict())
        else:
            out.append({**lean, "score": score, "passed": bool(ok), "details": {}})
    return out


def _built(evaluator: Evaluator, batch: Sequence[Verdict], i: int) -> dict[str, Any]:
    try:
        return batch[i].to_dict()
    except Exception as err:
        return _raised(evaluator, err).to_dict()


def _no_match(verdict: dict[str, Any], mark: NoMatch | None) -> dict[str, Any]:
    """:func:`explain_no_match` on a verdict's JSON form."""
    if mark is None or verdict["passed"] or verdict["error"] is not None:
        return verdict
    return explain_no_match(Verdict.from_dict(verdict), mark).to_dict()


def errored(message: str) -> dict[str, Any]:
    """An error verdict's JSON form."""
    return Verdict.errored(message).to_dict()


def _jsonable(value: Any) -> Any:
    """How a filtered value is stored: a Response by its text (the full response is logged once)."""
    return value.text if isinstance(value, Response) else value


def _context(item: Answered, prompt: str) -> dict[str, Any]:
    """What a pair-by-pair evaluator sees of the sample, as the per-sample path gives it (an agent's transcript
    when the sample has one response)."""
    s = item.sample
    context = {"input": s.input, "prompt": prompt, "doc": s.doc, "metadata": s.metadata, "target": s.target}
    only = item.responses[0] if len(item.responses) == 1 else None
    if only is not None and only.transcript:
        context["transcript"] = only.transcript
    return context


def _every(contexts: Callable[[], list[dict[str, Any]]]) -> list[Mapping[str, Any]]:
    """The context of every pair (made when first needed)."""
    return list(contexts())


def _picked(contexts: Callable[[], list[dict[str, Any]]], todo: list[tuple[int, int]]) -> list[Mapping[str, Any]]:
    """The context of each pair to judge (made when first needed)."""
    made = contexts()
    return [made[i] for i, _ in todo]


def _expecteds(task: Task, metric: MetricSpec, chunk: Sequence[Answered]) -> list[tuple[Any, str | None]]:
    """What each sample's answers are compared with for ``metric``, or why the metric is not applicable to it (the
    row gives it nothing to check: :func:`assay.tasks.applicable.expected_or_absent`)."""
    if metric.expected == "target" and not needs_expected(metric.evaluator):  # the usual case: nothing is absent
        return [(item.sample.target, None) for item in chunk]
    return [expected_or_absent(task, item.sample, metric) for item in chunk]


async def score_chunk(task: Task, chunk: Sequence[Answered], prompts: Sequence[str]) -> list[dict[str, Any]]:
    """Every filter pipeline's record (``FilterRecord`` JSON form) of each answered sample, in chunk order.

    The same verdicts as :func:`assay.runner.scoring.score_sample` per sample: filters applied per sample, each
    metric's pairs judged together, errors (failed request, broken filter, an evaluator that raises) recorded per
    sample and never fatal; a metric the row gives nothing to check gets no verdicts (not applicable).
    """
    n = len(chunk)
    failures = [next((e for e in item.errors if e), "the model request failed") for item in chunk]
    if task.external:  # e.g. an lm-eval task: its own filters and process_results, sample by sample
        return [
            {name: fr.model_dump() for name, fr in task.score_responses(item.sample, item.responses, f).items()}
            for item, f in zip(chunk, failures, strict=True)
        ]
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    made: list[dict[str, Any]] = []

    def contexts() -> list[dict[str, Any]]:  # for evaluators judging pair by pair (custom ones may read them)
        if not made:
            made.extend(_context(item, prompt) for item, prompt in zip(chunk, prompts, strict=True))
        return made

    for pipeline in task.pipelines:
        reduces = pipeline.reduces
        values: list[list[Any]] = []
        marks: list[list[NoMatch | None]] = []
        broken: list[str | None] = [None] * n
        for i, item in enumerate(chunk):
            try:
                filtered = pipeline.apply(item.responses)
            except Exception as err:  # a (custom) filter step that fails errors this sample's verdicts
                filtered = [None] * (1 if reduces else len(item.responses))
                broken[i] = f"{type(err).__name__}: {err}"
            plain, mark = unmark(filtered)
            values.append(plain)
            marks.append(mark)
        records: list[dict[str, Any]] = [
            {"filtered": [_jsonable(v) for v in vals], "verdicts": {}, "scores": {}, "passed": {}} for vals in values
        ]
        # the usual shape: one answer a sample, every one present and filtered without error
        single = all(len(vals) == 1 and vals[0] is not None for vals in values) and not any(broken)
        stops = _limit_stops(chunk, values, reduces)  # trajectories cut off by a limit fail, as in score_sample
        single = single and stops is None
        for metric in task.metrics:
            if metric.filters and pipeline.name not in metric.filters:
                continue
            expected_pairs = _expecteds(task, metric, chunk)
            in_env = isinstance(metric.evaluator, EnvironmentEvaluator)
            if single and not in_env and metric.scope != "turn" and not any(m for _, m in expected_pairs):
                await _judge_singles(metric, values, marks, [e for e, _ in expected_pairs], records, contexts)
                continue
            slots: list[list[dict[str, Any] | None]] = []
            todo: list[tuple[int, int]] = []
            judged_values: list[Any] = []
            expecteds: list[Any] = []
            for i, (expected, missing) in enumerate(expected_pairs):
                row: list[dict[str, Any] | None] = []
                if missing is not None:  # not applicable to this row: no verdicts (as score_sample records it)
                    slots.append(row)
                    continue
                for j, value in enumerate(values[i]):
                    if in_env and broken[i] is None:  # scored on what the environment recorded (score_sample)
                        item = chunk[i]
                        in_place = await judge_environment(
                            metric.evaluator, item.responses, j, reduces, value, expected, contexts()[i], failures[i]
                        )
                        row.append(in_place.to_dict())
                    elif broken[i] is not None:
                        row.append(errored(f"filter pipeline {pipeline.name!r} failed: {broken[i]}"))
                    elif stops is not None and stops[i][j] is not None:
                        row.append(Verdict(0.0, False, stops[i][j], {"stopped": stops[i][j]}).to_dict())
                    elif value is None:
                        why = nothing_to_judge(pipeline.name, reduces, chunk[i].responses, j, failures[i])
                        row.append(errored(why))
                    elif metric.scope == "turn":  # each turn judged on its own, as score_sample does
                        item = chunk[i]
                        by_turn = await judge_turns(
                            metric.evaluator,
                            pipeline,
                            item.responses,
                            j,
                            expected,
                            metric.expected,
                            item.sample.doc,
                            contexts()[i],
                            _judge,
                        )
                        row.append(by_turn.to_dict())
                    else:
                        row.append(None)
                        todo.append((i, j))
                        judged_values.append(value)
                        expecteds.append(expected)
                slots.append(row)
            judged = await _verdicts(metric.evaluator, judged_values, expecteds, partial(_picked, contexts, todo))
            for (i, j), verdict in zip(todo, judged, strict=True):
                flag = marks[i][j]
                slots[i][j] = verdict if flag is None else _no_match(verdict, flag)
            name = metric.name
            for row, record in zip(slots, records, strict=True):
                verdicts = cast(list[dict[str, Any]], row)
                record["verdicts"][name] = verdicts
                if len(verdicts) == 1:  # the usual case: one answer
                    only = verdicts[0]
                    ok = only["error"] is None
                    record["scores"][name] = only["score"] if ok else None
                    record["passed"][name] = only["passed"] if ok else None
                    continue
                scored = [v for v in verdicts if v["error"] is None]
                record["scores"][name] = sum(v["score"] for v in scored) / len(scored) if scored else None
                record["passed"][name] = all(v["passed"] for v in scored) if scored else None
        name = pipeline.name
        for scored_sample, record in zip(out, records, strict=True):
            scored_sample[name] = record
    return out


def _limit_stops(chunk: Sequence[Answered], values: list[list[Any]], reduces: bool) -> list[list[str | None]] | None:
    """Why each value is a scored failure (its trajectory reached a limit), None when no sample's did."""
    if not any(r is not None and r.stop_reason in LIMIT_STOPS for item in chunk for r in item.responses):
        return None
    return [
        [limit_stop(item.responses, j, reduces) for j in range(len(vals))]
        for item, vals in zip(chunk, values, strict=True)
    ]


async def _judge_singles(
    metric: MetricSpec,
    values: list[list[Any]],
    marks: list[list[NoMatch | None]],
    expecteds: list[Any],
    records: list[dict[str, Any]],
    contexts: Callable[[], list[dict[str, Any]]],
) -> None:
    """:func:`score_chunk`'s judging of one metric when every sample has one value to judge and an expected one:
    the same verdicts, scores and passes, without the per-answer bookkeeping of the general case."""
    judged = await _verdicts(metric.evaluator, [vals[0] for vals in values], expecteds, partial(_every, contexts))
    name = metric.name
    for verdict, mark, record in zip(judged, marks, records, strict=True):
        flag = mark[0]
        if flag is not None:
            verdict = _no_match(verdict, flag)
        ok = verdict["error"] is None
        record["verdicts"][name] = [verdict]
        record["scores"][name] = verdict["score"] if ok else None
        record["passed"][name] = verdict["passed"] if ok else None


def prompt_of(messages: list[Message]) -> str:
    """The prompt as one text, as :meth:`Task.prompt_text` makes it from a request's messages (a lone user
    message's text read off at once: the usual case, a million times)."""
    if len(messages) == 1:
        only = messages[0]
        content = only.get("content")
        if only.get("role") == "user" and isinstance(content, str):
            return str(content)
    from assay.tasks import Task

    return Task.prompt_text(cast(Request, SimpleNamespace(messages=messages)))


def render(task: Task, sample: Sample) -> list[Message]:
    """The messages of a sample's request, without building the Request (a render error names the row, as
    :meth:`Task.build_request` does)."""
    try:
        return task.prompt.render(sample, task.fewshot_for(sample))
    except Exception:
        task.build_request(sample, 0)  # raises the error that names file, line and template
        raise


def check_renders(work: Iterable[tuple[Task, Sample]]) -> None:
    """Render every pending sample's prompt before anything is written (the offline form of check_requests); a
    plain template shown no few-shot examples is only checked to render (:meth:`Prompt.cannot_fail`), since
    scoring renders it again. Samples made on demand from a large file were screened so as the file was read:
    only those the screen was unsure of are made and rendered here."""
    if isinstance(work, PendingWork):
        for task, samples, finished in work.parts():
            unsure = unsure_positions(samples)
            picked: Iterable[Sample] = samples if unsure is None else (samples[i] for i in unsure)
            if finished:
                picked = (s for s in picked if s.id not in finished)
            _check_renders(task, picked)
        return
    for task, group in groupby(work, key=lambda pair: pair[0]):
        _check_renders(task, (sample for _, sample in group))


def _check_renders(task: Task, samples: Iterable[Sample]) -> None:
    if task.external:  # its requests were built when it was loaded
        return
    prompt = task.prompt if task.config.fewshot is None else None
    for sample in samples:
        if prompt is None or not prompt.cannot_fail(sample):
            render(task, sample)


def response_json(response: Response | None) -> dict[str, Any] | None:
    """A Response's JSON form (``model_dump``'s), read off its fields: a record holding plain dicts encodes in
    half the time of one holding the models (measured), and a million records pay for that."""
    if response is None:
        return None
    out = dict(response.__dict__)  # the fields, in their order (Response, Usage and ToolCall have no serialisers)
    out["usage"] = dict(response.usage.__dict__)
    out["tool_calls"] = [dict(call.__dict__) for call in response.tool_calls]
    return out


async def score_records(
    task: Task,
    chunk: Sequence[Answered],
    *,
    started_at: float = 0.0,
    model_seconds: float = 0.0,
    max_response_chars: int | None = None,
) -> list[dict[str, Any]]:
    """The finished records (SampleRecord's JSON form, ready for :func:`~assay.runner.executors.shards.encode`) of a
    chunk of answered samples.

    The unit of offline work, for any executor: a re-scored record (``logged``) keeps everything but its filters,
    task hash, reasoning taken out and scoring time; a new one gets its prompt rendered and the timings given. As in
    the per-sample path, answers are scored whole and stored cut to ``max_response_chars`` (filtered texts and the
    reasoning taken out too).
    """
    if not chunk:
        return []
    fresh = [item.logged is None for item in chunk]
    messages = [render(task, item.sample) if new else None for item, new in zip(chunk, fresh, strict=True)]
    prompts = [
        prompt_of(m) if m is not None else str((item.logged or {}).get("prompt") or "")
        for item, m in zip(chunk, messages, strict=True)
    ]
    t0 = time.perf_counter()
    filters = await score_chunk(task, chunk, prompts)
    eval_seconds = (time.perf_counter() - t0) / len(chunk)
    if max_response_chars is not None:
        for scored in filters:
            for record in scored.values():
                record["filtered"] = [_cap(v, max_response_chars) for v in record["filtered"]]
    task_hash, gen_kwargs = task.hash, task.params_for(0)
    out: list[dict[str, Any]] = []
    for item, msgs, prompt, scored in zip(chunk, messages, prompts, filters, strict=True):
        reasoning = task.reasoning_of(item.responses)  # [] for nearly every record: nothing to cap
        if reasoning and max_response_chars is not None:
            reasoning = [_cap(r, max_response_chars) for r in reasoning]
        if item.logged is not None:
            out.append(
                {
                    **item.logged,
                    "task_hash": task_hash,
                    "reasoning": reasoning,
                    "filters": scored,
                    "eval_seconds": eval_seconds,
                }
            )
            continue
        s = item.sample
        out.append(
            {
                "task": task.name,
                "task_hash": task_hash,
                "doc_id": s.doc_id,
                "sample_id": s.id,
                "doc": s.doc,
                "prompt": prompt,
                "messages": msgs,
                "gen_kwargs": gen_kwargs,
                "target": s.target,
                "metadata": s.metadata,
                "responses": [response_json(stored_response(r, max_response_chars)) for r in item.responses],
                "response_errors": item.errors,
                "reasoning": reasoning,
                "cache_hits": 0,
                "filters": scored,
                "started_at": started_at,
                "model_seconds": model_seconds,
                "eval_seconds": eval_seconds,
            }
        )
    return out


class OfflineScheduler(Scheduler):
    """The request loop's stand-in when answers already exist: answers looked up, scored and written per chunk."""

    chunk_size: int = CHUNK
    scan_ahead: ScanAhead | None = None  # the results scan, made as chunks are scored (a new run folder's)

    async def run(self, work: Sequence[tuple[Task, Sample]]) -> RunStats:
        """Score every (task, sample) pair from the predictions file and append the records chunk by chunk."""
        started = time.perf_counter()
        # what is loaded (rows, samples, the work list) stays: no collection need walk it again (and what someone
        # else froze is never thawed here)
        freeze = gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
        try:
            for task, samples in runs(work, self.chunk_size):
                with gc_paused():
                    await self._run_chunk(task, samples)
                await asyncio.sleep(0)  # let Ctrl-C and other tasks in
            self._check_error_rate(final=True)
        finally:
            if freeze:
                gc.unfreeze()
            self.stats.seconds = time.perf_counter() - started
        return self.stats

    def _answer_predictions(self, task: Task, samples: list[Sample]) -> list[Answered]:
        answered, requests = answer_all(cast("PredictionsModel", self.model), task, samples)
        self.stats.requests += requests
        return answered

    async def _run_chunk(self, task: Task, samples: list[Sample]) -> None:
        ahead = self.scan_ahead
        before = ahead.reserve(task.name, len(samples)) if ahead is not None else 0
        started_at, t0 = time.time(), time.perf_counter()
        answered = self._answer_predictions(task, samples)
        model_seconds = (time.perf_counter() - t0) / len(samples)
        limit = self.config.max_response_chars
        records = await score_records(
            task, answered, started_at=started_at, model_seconds=model_seconds, max_response_chars=limit
        )
        if any(callable(getattr(m.evaluator, "judges", None)) for m in task.metrics):  # judges may answer from a cache
            self.stats.judge_cache_hits += sum(judge_cache_hits(record["filters"]) for record in records)
        lines, part = ahead.encode_and_scan(records, encode, before) if ahead is not None else (None, None)
        done = scored(records, lines)
        self.write_scored(task.name, [item.sample.id for item in answered], first_errors(answered), done, ahead=part)

    def write_scored(
        self,
        task_name: str,
        sample_ids: Sequence[str],
        model_errors: Sequence[str | None],
        done: Scored,
        spool: str | None = None,
        ahead: ChunkScan | None = None,
    ) -> None:
        """Append a scored chunk's records and count them: a sample's model error first, else its first error
        verdict (the per-sample path's order). The records are ``done``'s lines, or the file ``spool`` a worker
        wrote them to (copied, then removed); ``ahead``: their results scan, for :attr:`scan_ahead`."""
        if spool is None:
            self.writer.write_lines(done.lines)
        else:
            try:
                self.writer.append_file(spool, len(sample_ids))
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(spool)
        if self.scan_ahead is not None:
            self.scan_ahead.add(ahead)
        elif ahead is not None:
            ahead.delete()
        stats, failed = self.stats, 0
        stats.truncated += sum(done.truncated)
        for sample_id, model_error, evaluator_error in zip(
            sample_ids, model_errors, done.evaluator_errors, strict=True
        ):
            if model_error is not None or evaluator_error is not None:  # the usual sample has neither
                failed += stats.count_errors(f"{task_name}/{sample_id}", model_error, evaluator_error)
        stats.written += len(sample_ids)
        self.progress.advance_many(len(sample_ids), errors=failed)
        self._check_error_rate()


def first_errors(answered: Sequence[Answered]) -> list[str | None]:
    """Each sample's first model error (None where every repeat was answered): what the runner counts."""
    return [next((e for e in item.errors if e), None) for item in answered]


def answer_all(model: PredictionsModel, task: Task, samples: list[Sample]) -> tuple[list[Answered], int]:
    """Each sample with its answers from the predictions file (None and the error where a repeat has none), and
    how many requests that made."""
    answered, requests = [], 0
    for sample, entry in zip(samples, model.entries([s.id for s in samples]), strict=True):
        responses: list[Response | None] = []
        errors: list[str | None] = []
        for repeat in range(task.repeats):
            requests += 1
            try:
                responses.append(model.answer(entry, sample.id, repeat))
                errors.append(None)
            except ModelError as err:
                responses.append(None)
                errors.append(str(err))
        answered.append(Answered(sample, responses, errors))
    return answered, requests
