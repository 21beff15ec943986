"""How a file's writer tells a reader following it how far the file holds whole lines: a results pass reads
``samples.jsonl`` while the run writes it, and waits here instead of polling the file."""

from __future__ import annotations

import threading
import time

LINGER_S = 0.02  # Growth.wait: how long a follower lets lines gather once the file grew


class Abandoned(Exception):
    """The writer of a followed file stopped without finishing it (the run failed or was interrupted)."""


class Growth:
    """What the writer of ``samples.jsonl`` tells a reader following it: how far the file holds whole, committed
    lines (a block cut back after a failed write is never in it), that it is complete, or that it was abandoned."""

    def __init__(self, size: int = 0) -> None:
        self._cond = threading.Condition()
        self.size = size  # bytes of whole lines written so far
        self.state: str | None = None  # None while written; "complete" or "abandoned" once the writer is done
        self.completed_at: float | None = None  # time.perf_counter() when marked complete

    def opened(self, size: int) -> None:
        """The writer opened the file, holding ``size`` bytes (a resumed run's lines); not an append."""
        with self._cond:
            self.size = size
            self._cond.notify_all()

    def appended(self, size: int) -> None:
        """The file now holds ``size`` bytes of whole lines."""
        with self._cond:
            self.size = size
            self._cond.notify_all()

    def complete(self) -> None:
        """Nothing more will be appended: a follower reads the rest and ends."""
        self._finish("complete")

    def abandon(self) -> None:
        """The run stopped without finishing: a follower ends at once (:class:`Abandoned`)."""
        self._finish("abandoned")

    def _finish(self, state: str) -> None:
        with self._cond:
            if self.state is None:
                self.state = state
                self.completed_at = time.perf_counter()
            self._cond.notify_all()

    def wait(self, seen: int, linger_s: float = LINGER_S) -> int | None:
        """Wait until the file holds more than ``seen`` bytes (the new size) or is complete (None); raises
        :class:`Abandoned` when the writer gave up. Once it has grown, lines written in the next ``linger_s``
        seconds come too (unless the writer finishes sooner): a run writing a line a sample wakes its follower for
        a batch of lines, not for each."""
        with self._cond:
            while self.size == seen and self.state is None:
                self._cond.wait()
            if self.state is None and linger_s > 0:
                self._cond.wait_for(lambda: self.state is not None, timeout=linger_s)
            if self.state == "abandoned":
                raise Abandoned("the samples file was abandoned by its writer")
            return None if self.state == "complete" else self.size
