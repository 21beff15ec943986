"""What an evaluation that falls short raises in a test, from ``assert_eval`` or from the process it ran in
(:mod:`assay.testing.isolation`); its message goes through :func:`assay.secrets.redact_text`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.secrets import redact_text


class EvalAssertionError(AssertionError):
    """An evaluation fell short; the message lists the metrics below their thresholds and the failing samples."""

    def __init__(self, message: str, run_dir: Path | None = None) -> None:
        super().__init__(redact_text(message))
        self.run_dir = run_dir

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.run_dir))
