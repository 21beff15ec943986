"""How an optimisation ended, as :func:`assay.optimize` returns it and ``summary.json`` records it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class OptimizationResult:
    """How an optimisation ended: the best candidate against the original on the test split, and what it cost."""

    folder: Path
    strategy: str
    status: str
    baseline: str
    best: str
    val: dict[str, float | None]
    test: dict[str, Any]
    improved: bool
    summary: str
    calls: dict[str, Any]
    cost_usd: dict[str, float | None] = field(default_factory=dict)
    pareto: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # things the user must know (e.g. a bootstrap fallback)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict."""
        out = asdict(self)
        out["folder"] = str(self.folder)
        return out
