"""The table of judge figures corrected by people's labels (:mod:`assay.results.judgecorrected`), shown after the
results table beside the judge's own figure, for the metrics people labelled."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

    from assay.results.loader import MetricRow

CORRECTED_HEADERS = ["Task", "Metric", "Of", "Judge", "Corrected", "CI", "Labelled", "Unlabelled", "λ", "Method"]


def corrected_cells(rows: Sequence[MetricRow]) -> list[list[str]]:
    """One row per metric with a corrected figure (refusals are notes, not rows)."""
    out: list[list[str]] = []
    for r in rows:
        fig: Any = r.entry.get("judge_corrected")
        if not isinstance(fig, dict) or "refused" in fig:
            continue
        lo, hi = fig["ci"]
        out.append(
            [
                r.alias or r.task,
                r.metric,
                str(fig["of"]),
                f"{fig['judge_mean']:.4f}",
                f"{fig['estimate']:.4f}",
                f"[{lo:.4f}, {hi:.4f}]",
                str(fig["n_labelled"]),
                str(fig["n_unlabelled"]),
                f"{fig['lam']:.2f}",
                str(fig["method"]).upper(),
            ]
        )
    return out


def corrected_table(rows: Sequence[MetricRow], confidence: float) -> Table | None:
    """The rich table, or None when no metric has a corrected figure."""
    cells = corrected_cells(rows)
    if not cells:
        return None
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Judge figures corrected by people's labels", header_style="bold")
    for h in CORRECTED_HEADERS:
        table.add_column(
            f"{confidence * 100:g}% CI" if h == "CI" else h,
            justify="left" if h in ("Task", "Metric", "Of", "Method") else "right",
        )
    for row in cells:
        table.add_row(*(Text(c) for c in row))
    return table
