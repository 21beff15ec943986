"""The HTML report's failure themes of a run (from :mod:`assay.feedback.themes`), with each theme's samples
located in the page's sample list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.report.samples import SamplePositions
    from assay.results import Run

MAX_THEMES = 50  # failure themes listed per run


@dataclass
class ThemeView:
    """One failure theme: its label, how many samples it covers and the link that filters to them."""

    index: int
    kind: str  # "failure" or "error"
    label: str
    count: int  # samples
    verdicts: int
    href: str
    example: str | None
    feedback: str | None  # the most common feedback with its count


def theme_section(
    themes: Sequence[Any] | None, run: Run, run_index: int, where: SamplePositions
) -> tuple[list[ThemeView], list[dict[str, Any]], str]:
    """The themes of one run (``assay.feedback.Theme`` objects) for the page, their sample positions for the
    browser, and a note for when there are none. Only the MAX_THEMES most frequent themes are listed."""
    if themes is None:
        return [], [], "Failure themes were not computed for this run."
    if not themes:
        return [], [], "No failing or errored verdict: nothing to group."
    views: list[ThemeView] = []
    data: list[dict[str, Any]] = []
    for n, theme in enumerate(themes[:MAX_THEMES]):
        found = (where.get((run_index, t, sid)) for t, sid in theme.samples)
        positions = [p for p in found if p is not None]
        example = next((e.reason or e.feedback for e in theme.examples if e.reason or e.feedback), None)
        common = theme.feedback[0] if theme.feedback else None
        views.append(
            ThemeView(
                index=n,
                kind=theme.kind,
                label=_short(theme.label, 300),
                count=theme.n_samples,
                verdicts=theme.count,
                href=f"#theme={run_index}.{n}",
                example=_short(example, 300) if example else None,
                feedback=f"{_short(common[0], 300)} (×{common[1]})" if common else None,
            )
        )
        data.append({"r": run_index, "n": n, "label": _short(theme.label, 120), "idx": positions})
    more = len(themes) - len(views)
    note = f"{more} less frequent theme(s) not listed; `assay feedback` prints them all." if more > 0 else ""
    return views, data, note


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
