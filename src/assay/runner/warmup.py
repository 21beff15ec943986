"""Imports a run needs only at its end (numpy, for the results), made in a background thread once the first answer
is in: the first request goes out without waiting for them, and the results do not wait for them either.

Only third-party modules that import no assay code are warmed (numpy), so the thread never waits for a module
the run's own thread is importing. The run's thread calls :meth:`Warmup.wait` before it needs them, outside any
import, so it never starts importing a module the warm-up thread is half-way through.
"""

from __future__ import annotations

import importlib
import sys
import threading

RESULTS_MODULES = ("numpy",)


class Warmup:
    """Imports ``modules`` in a daemon thread when :meth:`start` is called; :meth:`wait` joins it."""

    def __init__(self, modules: tuple[str, ...] = RESULTS_MODULES) -> None:
        self.modules = modules
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin importing the modules not yet imported (once; later calls do nothing)."""
        if self._thread is not None:
            return
        missing = tuple(name for name in self.modules if name not in sys.modules)
        if not missing:
            return
        thread = threading.Thread(target=_import_all, args=(missing,), name="assay-warmup", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: the code that needs the modules imports them when it does
            return
        self._thread = thread

    def wait(self) -> None:
        """Wait for the imports started (an import that failed is left to the code that needs it, which reports it)."""
        if self._thread is not None:
            self._thread.join()


def _import_all(names: tuple[str, ...]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # the code that needs the module imports it again and reports the error
            return
