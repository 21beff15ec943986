"""How a run ended: its status, what stopped it, the message a user reads and the command that resumes it, taken
from what the request loop raised. One place maps errors to endings, so every way a run stops says the same."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assay.runner.outcomes import (
    BudgetSpent,
    BudgetUnmeasured,
    Decided,
    ErrorRateExceeded,
    ModelAccessError,
    OutOfScale,
    ToolsUnavailable,
    WorkerLost,
)
from assay.runner.scheduler import RunStats, Scheduler

if TYPE_CHECKING:
    from assay.tasks import Sample, Task

DISK_FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


def is_disk_full(err: BaseException) -> bool:
    """A write failed for want of space (or a file size limit): the run stops and can be resumed."""
    return isinstance(err, OSError) and err.errno in DISK_FULL


@dataclass
class Ending:
    """What the manifest and the outcome say of a run; until the loop returns, an unexpected failure."""

    run_dir: Path
    status: str = "failed"
    stopped_by: str | None = "error"
    message: str | None = "the run stopped on an unexpected error"
    resume: str = field(default="", init=False)

    def __post_init__(self) -> None:
        self.resume = f"assay run --resume {self.run_dir}"

    @property
    def resume_command(self) -> str | None:
        """The command to resume a run that stopped before its end (None for one that finished)."""
        return self.resume if self.stopped_by is not None or self.status == "interrupted" else None

    def stop(self, status: str, stopped_by: str | None, message: str | None) -> None:
        self.status, self.stopped_by, self.message = status, stopped_by, message

    def disk_full(self, err: OSError) -> None:
        what = "the disk is full" if err.errno != errno.EFBIG else "a file size limit was reached"
        self.stop(
            "failed",
            "disk_full",
            f"{what} ({err.strerror}) while writing {self.run_dir}; every sample finished before it is saved. "
            f"Free some space, then resume with: assay run --resume {self.run_dir}",
        )


async def drive(scheduler: Scheduler, work: Sequence[tuple[Task, Sample]], ending: Ending) -> RunStats:
    """Run the loop over ``work`` and record in ``ending`` how it ended. A stop the user can act on (the error
    limit, a model that refuses access, a lost worker, tools that cannot start, a full disk) returns the figures so
    far; an interruption or an unexpected error is recorded and raised again."""
    try:
        stats = await scheduler.run(work)
    except ErrorRateExceeded as err:
        stats = scheduler.stats
        complete = stats.written == len(work)  # the end-of-run check: every sample is in
        message = str(err)
        if stats.evaluator_errors:
            message += f"; once the evaluator works, `assay score {ending.run_dir}` scores the answers again"
        ending.stop("finished" if complete else "failed", "error_rate", message)
        if stats.errors:
            ending.resume += " --retry-errors"  # the failed samples are what must be asked again
        return stats
    except ModelAccessError as err:
        ending.stop("failed", "model_access", f"{err}; after fixing it, resume the run")
        return scheduler.stats
    except WorkerLost as err:
        ending.stop("failed", "worker_lost", str(err))
        return scheduler.stats
    except ToolsUnavailable as err:
        ending.stop("failed", "tools", str(err))  # it ends with the server's own words: nothing said after them
        return scheduler.stats
    except Decided as err:  # --decide: the evidence decided the claim; the samples so far are the run
        ending.stop("finished", None, str(err))
        return scheduler.stats
    except OutOfScale as err:
        ending.stop("failed", "decide", str(err))
        return scheduler.stats
    except (BudgetSpent, BudgetUnmeasured) as err:  # --budget-usd: resumable with a larger (or measurable) budget
        ending.stop("failed", "budget", str(err))
        return scheduler.stats
    except (asyncio.CancelledError, KeyboardInterrupt):
        ending.stop("interrupted", None, f"interrupted; finished samples are saved in {ending.run_dir}")
        raise
    except OSError as err:
        if not is_disk_full(err):
            ending.message = f"{ending.message}: {type(err).__name__}: {err}"
            raise
        ending.disk_full(err)
        return scheduler.stats
    except BaseException as err:
        ending.message = f"{ending.message}: {type(err).__name__}: {err}"
        raise
    ending.stop("finished", None, None)
    return stats
