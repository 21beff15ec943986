"""What ``assay run`` exits with, and its one-line summary; kept free of heavy imports (the CLI loads it at once).

Exit codes (documented in the README, consistent with ``assay compare`` and ``assay report``):

- 0: the run finished and its failed samples (model or evaluator errors) are within ``--max-error-rate``;
- 1: too many samples failed: the run finished, or stopped early, above ``--max-error-rate``;
- 2: nothing was run: a bad task, option or parameter, or another process holds the run folder;
- 3: the run stopped before its end and can be resumed once the cause is fixed (the model refused the key or
  does not exist: 401/403/404; the disk is full; scoring processes or Ray workers died; an unexpected error);
- 130: interrupted (Ctrl-C); finished samples are kept.
"""

from __future__ import annotations

import time
from typing import Any

EXIT_OK = 0
EXIT_TOO_MANY_ERRORS = 1
EXIT_USAGE = 2
EXIT_STOPPED = 3
EXIT_INTERRUPTED = 130

# A run whose share of failed samples (model or evaluator errors) is above this fails (exit 1). 10 %: a few flaky
# samples still give usable figures, while a broken setup (no server, a rejected key, a judge that is down) never
# passes as a result.
DEFAULT_MAX_ERROR_RATE = 0.1
# Characters of each answer kept in samples.jsonl. 256 Ki characters hold about 64k tokens, more than the output
# limit of today's models, so only runaway or garbage answers are cut; a 20 MB answer costs 256 KB on disk.
DEFAULT_MAX_RESPONSE_CHARS = 256 * 1024


def exit_code(outcome: Any) -> int:
    """The exit code for a :class:`assay.runner.session.RunOutcome`."""
    if outcome.status == "interrupted":
        return EXIT_INTERRUPTED
    if outcome.stopped_by == "error_rate":
        return EXIT_TOO_MANY_ERRORS
    if outcome.stopped_by is not None or outcome.status != "finished":
        return EXIT_STOPPED
    return EXIT_OK


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def cache_phrase(hits: int, oldest: float | None, newest: float | None) -> str:
    """ "3 answers from the cache (written 2026-11-30 05:17 – 2026-12-01 04:02)", or "no answers from the cache"."""
    if not hits:
        return "no answers from the cache"
    noun = "answer" if hits == 1 else "answers"
    if oldest is None or newest is None:
        return f"{hits} {noun} from the cache"
    span = _when(oldest) if _when(oldest) == _when(newest) else f"{_when(oldest)} – {_when(newest)}"
    return f"{hits} {noun} from the cache (written {span})"


def summary_line(outcome: Any) -> str:
    """The run's one-line summary: samples, model and evaluator errors, cache, retries, time."""
    parts = [
        f"{outcome.skipped} already done",
        f"{outcome.errors} model error{'s' if outcome.errors != 1 else ''}",
        f"{outcome.evaluator_errors} evaluator error{'s' if outcome.evaluator_errors != 1 else ''}",
        cache_phrase(outcome.cache_hits, outcome.cache_oldest, outcome.cache_newest),
        f"{outcome.retries} retries",
    ]
    if outcome.truncated:
        parts.append(f"{outcome.truncated} long answers stored shortened")
    return f"{outcome.written} samples evaluated ({', '.join(parts)}) in {outcome.seconds:.2f}s"
