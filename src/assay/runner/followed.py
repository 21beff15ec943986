"""The results pass of a run made while the run writes ``samples.jsonl``: the figures are ready a moment after
the last sample is written, instead of a whole pass later."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.runner.settings import RunSettings

__all__ = ["FollowedResults"]


class FollowedResults:
    """The run's results pass (:func:`assay.results.write_results`) in a thread of this process, reading
    samples.jsonl while the run appends to it, so that when the last reply is written only the last lines remain
    to be read. One pass, as after the run; results.json and the sample logs are written only once the run
    finished (:meth:`finish`), else the pass is stopped (:meth:`stop`) before writing anything. Not for offline
    runs on this machine, whose records are scanned where they are scored (:mod:`assay.results.scanahead`)."""

    def __init__(self, run_dir: Path, settings: RunSettings) -> None:
        from assay.store.growth import Growth

        followed = self

        class _Started(Growth):  # the pass starts with the first append, not before: see start
            def appended(self, size: int) -> None:
                super().appended(size)
                followed.start()

        self.growth = _Started()
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(run_dir, settings.results_options()), name="assay-results", daemon=True
        )

    def start(self) -> None:
        """Start the pass (once): at the first append, when the run is under way (nothing is forked after it)."""
        if self._thread.ident is None:
            self._thread.start()

    def _run(self, run_dir: Path, options: dict[str, Any]) -> None:
        from assay.results import write_results
        from assay.store.growth import Abandoned

        try:
            write_results(run_dir, follow=self.growth, **options)
        except Abandoned:
            pass
        except BaseException as err:  # raised in the run's thread by finish()
            self.error = err

    def finish(self) -> None:
        """The run finished and run.json holds its ending: the pass reads the rest and writes; its error raised."""
        self.growth.complete()
        self.start()  # nothing was appended: the pass reads the file as it is
        self._thread.join()
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def stop(self) -> None:
        """The run is over (any way): a pass still reading ends without writing; waited for."""
        self.growth.abandon()
        if self._thread.ident is not None:  # started
            self._thread.join()
