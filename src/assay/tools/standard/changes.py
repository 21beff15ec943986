"""What one tool call changed in the sample's workspace, recorded for the transcript.

Each call of ``bash``, ``python`` and ``text_editor`` appends exactly one record (also when it fails) to
``sample_tools.resources["changes"]``::

    {"tool": "bash", "call_id": "call_1_0" | None, "written": ["src/a.py"], "deleted": [], "exit_code": 0,
     "timed_out": False}

``written`` are the workspace files (relative, sorted) created or modified, ``deleted`` those removed; both are None
when the workspace had more than :data:`MAX_TRACKED_FILES` files (not compared, to keep calls cheap). ``call_id``
is :data:`assay.tools.base.CALL_ID` when the loop sets it. Calls running at the same time see each other's changes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from assay.environments.base import Environment
from assay.tools.base import CALL_ID, SampleTools

CHANGES = "changes"  # the resources key of the list of records
MAX_TRACKED_FILES = 2_000  # above this, a call's changes are not compared (a snapshot reads every file)


def changes_of(state: SampleTools) -> list[dict[str, Any]]:
    """The change records of one trajectory so far, in the order the calls ended."""
    return list(state.resources.get(CHANGES, []))


async def snapshot(env: Environment | None) -> dict[str, str] | None:
    """The workspace's file digests, or None when there is no environment or too many files to compare cheaply."""
    if env is None:
        return None

    def take() -> dict[str, str] | None:
        try:
            taken = env.snapshot()
        except (OSError, ValueError, NotImplementedError):
            return None
        return taken if len(taken) <= MAX_TRACKED_FILES else None

    return await asyncio.to_thread(take)


def diff(before: dict[str, str] | None, after: dict[str, str] | None) -> tuple[list[str] | None, list[str] | None]:
    """The files written (new or changed) and deleted between two snapshots; (None, None) when one is missing."""
    if before is None or after is None:
        return None, None
    written = sorted(name for name, digest in after.items() if before.get(name) != digest)
    deleted = sorted(name for name in before if name not in after)
    return written, deleted


@dataclass
class Change:
    """One call's record, filled in while it runs and appended when it ends."""

    tool: str
    written: list[str] | None = field(default_factory=list)
    deleted: list[str] | None = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False

    def record(self, state: SampleTools) -> None:
        """Append this record to the trajectory's list."""
        entry = {
            "tool": self.tool,
            "call_id": CALL_ID.get(),
            "written": self.written,
            "deleted": self.deleted,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
        }
        state.resources.setdefault(CHANGES, []).append(entry)


@contextlib.asynccontextmanager
async def tracking(state: SampleTools, tool: str) -> AsyncIterator[Change]:
    """Record what the call inside changed: the workspace is compared before and after, and the record appended
    however the call ends (the body may set ``exit_code`` and ``timed_out``)."""
    env = state.environment
    change = Change(tool)
    before = await snapshot(env)
    try:
        yield change
    finally:
        after = None
        if before is not None:
            with contextlib.suppress(Exception):
                after = await snapshot(env)
        change.written, change.deleted = diff(before, after)
        change.record(state)
