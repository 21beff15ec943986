"""What ``assay run`` exits with, and its one-line summary; kept free of heavy imports (the CLI loads it at once).

Exit codes (documented in the README, consistent with ``assay compare`` and ``assay report``):

- 0: the run finished and its failed samples (model or evaluator errors) are within ``--max-error-rate``;
- 1: too many samples failed: the run finished, or stopped early, above ``--max-error-rate``;
- 2: nothing was run: a bad task, option or parameter, or another process holds the run folder;
- 3: the run stopped before its end and can be resumed once the cause is fixed (the model refused the key or
  does not exist: 401/403/404; the disk is full; scoring processes or Ray workers died; an unexpected error);
- 4: ``--decide``'s claim is undecided: the data ran out before the evidence decided it (0 when it holds, 1 when it
  fails);
- 130: interrupted (Ctrl-C); finished samples are kept.

``assay score`` applies the same limit to the re-scored samples (:func:`error_rate_problem`; by default the limit
the run recorded): 0 within it; 1 above it (the re-scored folder is written whole, as a finished run's is); 2
nothing was re-scored (a bad task file or option, not a run folder, a corrupt samples file); 3 scoring processes
or Ray workers died (the original run is untouched).
"""

from __future__ import annotations

import time
from typing import Any

EXIT_OK = 0
EXIT_TOO_MANY_ERRORS = 1
EXIT_USAGE = 2
EXIT_STOPPED = 3
EXIT_UNDECIDED = 4  # --decide: the data ran out first
EXIT_CLAIM_FAILS = 1  # --decide: the claim fails (as a missed --fail-under)
EXIT_INTERRUPTED = 130

# A run whose share of failed samples (model or evaluator errors) is above this fails (exit 1). 10 %: a few flaky
# samples still give usable figures, while a broken setup (no server, a rejected key, a judge that is down) never
# passes as a result.
DEFAULT_MAX_ERROR_RATE = 0.1
# Characters of each answer kept in samples.jsonl. 256 Ki characters hold about 64k tokens, more than the output
# limit of today's models, so only runaway or garbage answers are cut; a 20 MB answer costs 256 KB on disk.
DEFAULT_MAX_RESPONSE_CHARS = 256 * 1024


def error_rate_problem(
    done: int, model_errors: int, evaluator_errors: int, limit: float | None, first: str | None, *, final: bool = True
) -> str | None:
    """Why ``done`` samples with these failures (a sample counts once: its model error, else its error verdict) are
    past ``--max-error-rate`` ``limit`` (None: no limit), or None within it: the one rule of run and score."""
    failed = model_errors + evaluator_errors
    if limit is None or not done or failed / done <= limit:
        return None
    return (
        f"{'failed' if final else 'stopped'}: {failed} of {done} samples failed ({model_errors} model errors, "
        f"{evaluator_errors} evaluator errors), above the allowed error rate {limit:.0%} of --max-error-rate"
        + (f" (first error: {first})" if first else "")
    )


def exit_code(outcome: Any) -> int:
    """The exit code for a :class:`assay.runner.session.RunOutcome`."""
    if outcome.status == "interrupted":
        return EXIT_INTERRUPTED
    if outcome.stopped_by == "error_rate":
        return EXIT_TOO_MANY_ERRORS
    if outcome.stopped_by is not None or outcome.status != "finished":
        return EXIT_STOPPED
    decision = getattr(outcome, "decision", None)
    if decision:  # --decide: the exit code is the decision
        return {"holds": EXIT_OK, "fails": EXIT_CLAIM_FAILS}.get(decision["state"], EXIT_UNDECIDED)
    return EXIT_OK


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def _answers(count: int) -> str:
    return "answer" if count == 1 else "answers"


def cache_phrase(hits: int, oldest: float | None, newest: float | None, judge_hits: int = 0) -> str:
    """ "3 answers from the cache (written 2026-11-30 05:17 – 2026-12-01 04:02)", "3 model answers and 12 judge
    answers from the cache (…)", "12 judge answers from the cache", or "no answers from the cache"."""
    if not hits and not judge_hits:
        return "no answers from the cache"
    span = None
    if hits and oldest is not None and newest is not None:
        span = _when(oldest) if _when(oldest) == _when(newest) else f"{_when(oldest)} – {_when(newest)}"
    if not judge_hits:
        return f"{hits} {_answers(hits)} from the cache" + (f" (written {span})" if span else "")
    judged = f"{judge_hits} judge {_answers(judge_hits)}"
    if not hits:
        return f"{judged} from the cache"
    return f"{hits} model {_answers(hits)} and {judged} from the cache" + (
        f" (model answers written {span})" if span else ""
    )


def summary_line(outcome: Any) -> str:
    """The run's one-line summary: its name, samples, model and evaluator errors, cache (model and judge answers),
    retries, time."""
    parts = [
        f"{outcome.skipped} already done",
        f"{outcome.errors} model error{'s' if outcome.errors != 1 else ''}",
        f"{outcome.evaluator_errors} evaluator error{'s' if outcome.evaluator_errors != 1 else ''}",
        cache_phrase(
            outcome.cache_hits, outcome.cache_oldest, outcome.cache_newest, getattr(outcome, "judge_cache_hits", 0)
        ),
        f"{outcome.retries} retries",
    ]
    stops = getattr(outcome, "limit_stops", 0)
    if stops:
        parts.append(f"{stops} agent trajectories stopped at a limit")
    if outcome.truncated:
        parts.append(f"{outcome.truncated} long answers stored shortened")
    name = getattr(outcome, "name", None)
    head = f"run {name!r}: " if name else ""
    return f"{head}{outcome.written} samples evaluated ({', '.join(parts)}) in {outcome.seconds:.2f}s"
