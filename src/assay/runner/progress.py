"""The progress display: done/total, rate, ETA, errors and cache hits (rich), or nothing in quiet mode.

rich is imported only when the bar is shown, so a quiet or CI run does not pay for it before its first request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def _progress(console: Console | None) -> Progress:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.1f}/s" if speed else "–/s", style="progress.data.speed")

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TextColumn("errors {task.fields[errors]}  cache hits {task.fields[cache_hits]}"),
        console=console,
        transient=False,
        refresh_per_second=8,
    )


class RunProgress:
    """Tracks finished samples; shows a live bar when enabled."""

    def __init__(self, total: int, *, enabled: bool, description: str = "samples", console: Console | None = None):
        self.total = total
        self.done = 0
        self.errors = 0
        self.cache_hits = 0
        self._progress: Progress | None = None
        if enabled:
            self._progress = _progress(console)
            self._task = self._progress.add_task(description, total=total, errors=0, cache_hits=0)

    def start(self, already_done: int = 0) -> None:
        self.done = already_done
        if self._progress is not None:
            self._progress.start()
            self._progress.update(self._task, completed=already_done)

    def advance(self, *, error: bool, cache_hits: int) -> None:
        self.done += 1
        self.errors += int(error)
        self.cache_hits += cache_hits
        if self._progress is not None:
            self._progress.update(self._task, advance=1, errors=self.errors, cache_hits=self.cache_hits)

    def advance_many(self, count: int, *, errors: int, cache_hits: int = 0) -> None:
        """``count`` samples done at once (the offline scorer's chunks): one update, not one per sample."""
        self.done += count
        self.errors += errors
        self.cache_hits += cache_hits
        if self._progress is not None:
            self._progress.update(self._task, advance=count, errors=self.errors, cache_hits=self.cache_hits)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
