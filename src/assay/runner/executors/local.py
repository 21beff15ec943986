"""The local executor: the asyncio request loop in this process (the default; it never imports Ray)."""

from __future__ import annotations

from assay.runner.scheduler import Scheduler


class LocalExecutor(Scheduler):
    """Runs every sample in this process: bounded concurrency, cache, retries, scoring off the request path."""


__all__ = ["LocalExecutor"]
