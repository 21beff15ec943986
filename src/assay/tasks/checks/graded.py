"""promptfoo's model-graded checks on assay's judges: llm-rubric, model-graded-closedqa, factuality, g-eval,
answer-relevance, context-faithfulness, context-recall, context-relevance and select-best, as promptfoo 0.123.1
judges them.

Each check sends promptfoo's own grading prompt (:mod:`~assay.tasks.checks.graded_prompts`, or the check's or
test's ``rubricPrompt``, rendered with ``{{output}}``, ``{{rubric}}``, the vars... as promptfoo renders it:
:mod:`~assay.tasks.checks.graded_render`) to the grader promptfoo would pick (the check's ``provider``, the test's
``options.provider``, else the default grader: :mod:`~assay.tasks.checks.graded_client`), reads the reply as
promptfoo reads it, and gives promptfoo's score, pass and reason, with promptfoo's default thresholds (g-eval 0.7;
answer-relevance and the context checks 0.5; llm-rubric none unless the check sets one). The calls go through
assay's judge client: retried, counted in ``details["judge"]``/``details["judges"]`` like every judge call, and
answered from the SQLite response cache when the run caches (:func:`use_run_cache`; off by default, as for every
judge). ``details["identity"]`` names the judge (type, grader models, a hash of the prompts and value, options)
the way :mod:`assay.evaluators.judge.calibration.identity` names one, so judgements can be calibrated against
people's labels.

**promptfoo's prompt, assay's delimiting.** promptfoo pastes the model's output straight into its prompt, where an
output can pose as the rubric, close ``</Output>`` or hand the grader a verdict; assay's judges put every untrusted
text inside a random boundary tag it cannot close and tell the judge that blocks are data
(:mod:`assay.evaluators.judge.prompt`). Keeping promptfoo's exact text would keep the hole; rewriting the prompt would
make a user's grader see something promptfoo's never did. The choice here: promptfoo's template word for word,
with each untrusted value (the output, every output of select-best, the statements drawn from the output, and the
context, which a contextTransform draws from the response) inserted *inside* assay's delimiting at the place the
template puts it, and assay's standing rules about the blocks put before promptfoo's first system message (or as a
system message of their own). The rules are only added when a block was inserted; everything else the grader reads
is promptfoo's. The output is printed as promptfoo prints it (``tryParse``: a JSON output as compact JSON, ``"x"``
as ``x``).

**Errors.** A grader that fails (after the retries), an empty reply, and a reply promptfoo cannot read are *error*
verdicts naming the check and quoting the reply's head; promptfoo fails such a check with score 0 (its
``graderError``), but an error is no judgement, and assay never counts one as a zero. A missing ``query`` var, a
missing context or a non-string value is an error too (promptfoo's invariants throw).

**What the caller gives and gets.** ``check`` is the assertion as promptfoo's handler sees it: its ``value`` is
promptfoo's ``renderedValue`` (rendered over the vars and its ``file://`` read by the caller), its ``provider``,
``rubricPrompt`` and ``threshold`` as written. ``ctx.outputs`` serves select-best, which grades all the test's
outputs in one call shared by whichever of them asks first (``details["judge_shared"]`` marks the others, so the call
is counted once). The verdict's ``score`` is promptfoo's clipped into [0, 1] (an llm-rubric grader may say 8; an
answer-relevance mean cosine may be below 0); ``details["score"]``, ``["pass"]`` and ``["reason"]`` are promptfoo's
own (its reason also when the check passes, where ``Verdict.reason`` is None as for every assay verdict).

``kind`` is the base type (``model-graded-factuality`` is promptfoo's other name of factuality), and the caller
inverts ``not-`` checks; given a ``not-`` type, judge_graded inverts as promptfoo's handlers do instead: llm-rubric
(score ``clamp(1 - score)``), g-eval and answer-relevance and the context checks (``1 - score``) flip pass and
score, while promptfoo's factuality, model-graded-closedqa and select-best handlers ignore the prefix (so the
verdict is the base type's, marked ``details["inverse"] = "ignored"``). An error is never inverted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from assay.errors import ConfigError
from assay.tasks.checks.graded_client import Graders
from assay.tasks.checks.graded_job import GradedContext, GradedError, Job
from assay.tasks.checks.graded_rag import answer_relevance, context_faithfulness, context_recall, context_relevance
from assay.tasks.checks.graded_types import closed_qa, factuality, g_eval, llm_rubric, select_best
from assay.verdict import Verdict, unit_score

CACHE_KEY = "assay.tasks.checks.graded"  # where the graders live in the caller's cache dict

HANDLERS: dict[str, Callable[[Job], Awaitable[Verdict]]] = {
    "llm-rubric": llm_rubric,
    "model-graded-closedqa": closed_qa,
    "factuality": factuality,
    "model-graded-factuality": factuality,
    "g-eval": g_eval,
    "answer-relevance": answer_relevance,
    "context-faithfulness": context_faithfulness,
    "context-recall": context_recall,
    "context-relevance": context_relevance,
    "select-best": select_best,
}
GRADED_TYPES: frozenset[str] = frozenset(HANDLERS)
CLAMPED = frozenset({"llm-rubric"})  # promptfoo's invertScore: 1 - score, clamped into [0, 1]
NOT_INVERTED = frozenset({"factuality", "model-graded-factuality", "model-graded-closedqa", "select-best"})


def graders_of(cache: dict[str, Any]) -> Graders:
    """The graders kept in the caller's cache dict (built on first use): the model-graded checks' and similar's."""
    graders = cache.get(CACHE_KEY)
    if not isinstance(graders, Graders):
        graders = cache[CACHE_KEY] = Graders()
    return graders


async def judge_graded(kind: str, check: Mapping[str, Any], output: str, ctx: GradedContext) -> Verdict:
    """Judge ``output`` by the model-graded check ``check`` (promptfoo type ``kind``, without ``not-``)."""
    inverse = kind.startswith("not-")
    base = kind[4:] if inverse else kind
    handler = HANDLERS.get(base)
    if handler is None:
        return Verdict.errored(f"{kind!r} is not a model-graded type; these are: {', '.join(sorted(HANDLERS))}")
    job = Job(base, check, output if isinstance(output, str) else str(output), ctx, graders_of(ctx.cache))
    try:
        verdict = await handler(job)
    except (GradedError, ConfigError) as err:
        return job.error(str(err))
    return _inverted(base, verdict) if inverse and not verdict.is_error else verdict


def _inverted(base: str, verdict: Verdict) -> Verdict:
    """A ``not-`` check's verdict as promptfoo's handler makes it."""
    details = dict(verdict.details)
    if base in NOT_INVERTED:
        details["inverse"] = "ignored"
        return Verdict(verdict.score, verdict.passed, verdict.reason, details)
    raw = float(details.get("score", verdict.score))
    score = min(1.0, max(0.0, 1.0 - raw)) if base in CLAMPED else 1.0 - raw
    passed = not verdict.passed
    details |= {"score": score, "pass": passed, "inverse": True}
    unit = unit_score(score)
    unit = unit if unit is not None else (1.0 if score > 1 else 0.0)
    return Verdict(unit, passed, None if passed else str(details.get("reason")), details)


def use_run_cache(cache: dict[str, Any], enabled: bool, path: Any = None) -> None:
    """Follow the run's response-cache switch (row_checks' ``use_run_cache`` hands it on): off by default."""
    graders_of(cache).use_run_cache(enabled, None if path is None else str(path))


async def aclose_graded(cache: dict[str, Any]) -> None:
    """Close what judge_graded built in ``cache`` (the running loop's connections, the response cache)."""
    graders = cache.get(CACHE_KEY)
    if isinstance(graders, Graders):
        await graders.aclose()


__all__ = ["GRADED_TYPES", "GradedContext", "aclose_graded", "graders_of", "judge_graded", "use_run_cache"]
