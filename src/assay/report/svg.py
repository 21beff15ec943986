"""Small inline SVG charts drawn in Python: a bar with its confidence-interval whiskers, a latency histogram.

Every chart is a complete ``<svg>`` string with its text escaped, styled only through CSS classes (the page's
Content-Security-Policy forbids inline ``style`` attributes), so it can be inserted into the page as markup.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


def _fmt(x: float) -> str:
    """A coordinate with two decimals and no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _num(x: float) -> str:
    """A value for a label: short but exact enough to read."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.3g}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: a value with an optional interval, a label and a CSS class (e.g. ``run-0``, ``run-1``)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    label: str = ""
    css: str = "run-0"


def bar_domain(bars: Sequence[Bar]) -> tuple[float, float]:
    """The axis of a set of bars: [0, 1] for scores in [0, 1], widened to fit any value or interval end."""
    points = [p for b in bars for p in (b.value, b.low, b.high) if p is not None and math.isfinite(p)]
    lo = min([0.0, *points])
    hi = max([1.0, *points])
    return lo, hi


def bar_chart(bars: Sequence[Bar], *, width: int = 200, bar_height: int = 12, title: str = "") -> str:
    """Horizontal bars on a shared axis, each with whiskers for its interval; a missing value draws "n/a"."""
    lo, hi = bar_domain(bars)
    pad = 2.0
    span = (hi - lo) or 1.0
    inner = width - 2 * pad

    def x_of(v: float) -> float:
        return pad + (v - lo) / span * inner

    gap = 4
    height = len(bars) * (bar_height + gap) + gap
    parts = [
        f'<svg class="chart bar-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
    ]
    if title:
        parts.append(f"<title>{escape(title)}</title>")
    parts.append(f'<rect class="track" x="{_fmt(pad)}" y="0" width="{_fmt(inner)}" height="{height}"/>')
    grid = "".join(f"M{_fmt(x_of(lo + k * span / 4))} 0V{height}" for k in (1, 2, 3))
    parts.append(f'<path class="grid" d="{grid}"/>')
    for i, bar in enumerate(bars):
        y = gap + i * (bar_height + gap)
        mid = y + bar_height / 2
        tip = f"{bar.label}: " if bar.label else ""
        if bar.value is None or not math.isfinite(bar.value):
            parts.append(f'<text class="na" x="{_fmt(pad + 4)}" y="{_fmt(mid + 4)}">{escape(tip)}n/a</text>')
            continue
        x0, x1 = sorted((x_of(max(lo, min(0.0, hi))), x_of(bar.value)))
        desc = f"{tip}{_num(bar.value)}"
        if bar.low is not None and bar.high is not None:
            desc += f" [{_num(bar.low)}, {_num(bar.high)}]"
        parts.append(
            f'<g class="bar {escape(bar.css)}"><title>{escape(desc)}</title>'
            f'<rect x="{_fmt(x0)}" y="{y}" width="{_fmt(max(x1 - x0, 1.0))}" height="{bar_height}" rx="2"/>'
        )
        if bar.low is not None and bar.high is not None and math.isfinite(bar.low) and math.isfinite(bar.high):
            a, b = x_of(bar.low), x_of(bar.high)
            parts.append(
                f'<path class="whisker" d="M{_fmt(a)} {_fmt(mid)}H{_fmt(b)}'
                f"M{_fmt(a)} {_fmt(y + 2)}V{_fmt(y + bar_height - 2)}"
                f'M{_fmt(b)} {_fmt(y + 2)}V{_fmt(y + bar_height - 2)}"/>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Histogram:
    """Counts of values in equal-width bins from ``start``; the last bin also holds everything above its end."""

    start: float
    width: float
    counts: list[int]
    overflow_from: float | None  # the last bin is "≥ this" when values were clipped at a high percentile


def histogram(values: Sequence[float], *, bins: int = 24, clip_quantile: float = 0.99) -> Histogram | None:
    """Bin latencies linearly from 0 up to their ``clip_quantile`` (a long tail goes into the last bin)."""
    import numpy as np

    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if arr.size == 0:
        return None
    top = float(arr.max())
    cap = float(np.quantile(arr, clip_quantile)) if arr.size >= 50 else top
    clipped = cap < top
    upper = cap if cap > 0 else max(top, 1e-9)
    start = 0.0 if float(arr.min()) >= 0 else float(arr.min())
    width = (upper - start) / bins or 1e-9
    idx = np.clip(((arr - start) / width).astype(int), 0, bins - 1)
    counts = np.bincount(idx, minlength=bins).tolist()
    return Histogram(start, width, [int(c) for c in counts], upper if clipped else None)


def histogram_chart(
    values: Sequence[float],
    *,
    unit: str = "s",
    width: int = 360,
    height: int = 120,
    title: str = "",
    bins: int = 24,
) -> str:
    """A histogram of ``values`` with median and p95 marked and the axis labelled; "no data" when empty.

    With ``unit="s"`` values under a second read in milliseconds.
    """
    import numpy as np

    hist = histogram(values, bins=bins)

    def fmt(v: float) -> str:
        if unit == "s" and 0 < abs(v) < 1:
            return f"{v * 1000:.0f} ms"
        return f"{_num(v)} {unit}" if unit else _num(v)

    label_h, top_pad, side = 16, 6, 4
    plot_h = height - label_h - top_pad
    head = (
        f'<svg class="chart histogram" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
        + (f"<title>{escape(title)}</title>" if title else "")
    )
    if hist is None:
        return head + f'<text class="na" x="{side}" y="{height // 2}">no data</text></svg>'
    arr = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    p50, p95 = (float(q) for q in np.quantile(arr, [0.5, 0.95]))
    inner = width - 2 * side
    n = len(hist.counts)
    bw = inner / n
    peak = max(hist.counts) or 1
    parts = [
        head,
        f'<line class="axis" x1="{side}" y1="{top_pad + plot_h}" x2="{width - side}" y2="{top_pad + plot_h}"/>',
    ]
    for i, count in enumerate(hist.counts):
        if not count:
            continue
        h = max(count / peak * plot_h, 1.0)
        lo_edge = hist.start + i * hist.width
        hi_edge = lo_edge + hist.width
        last_open = hist.overflow_from is not None and i == n - 1
        rng = f"≥ {fmt(lo_edge)}" if last_open else f"{fmt(lo_edge)} – {fmt(hi_edge)}"
        parts.append(
            f'<rect class="hbar{" overflow" if last_open else ""}" x="{_fmt(side + i * bw + 0.5)}" '
            f'y="{_fmt(top_pad + plot_h - h)}" width="{_fmt(max(bw - 1, 0.5))}" height="{_fmt(h)}">'
            f"<title>{escape(rng)}: {count}</title></rect>"
        )
    span = hist.width * n

    def x_of(v: float) -> float:
        return side + min(max((v - hist.start) / span, 0.0), 1.0) * inner

    for name, v in (("p50", p50), ("p95", p95)):
        x = x_of(v)
        parts.append(
            f'<line class="marker {name}" x1="{_fmt(x)}" y1="{top_pad}" x2="{_fmt(x)}" y2="{top_pad + plot_h}">'
            f"<title>{name} {escape(fmt(v))}</title></line>"
        )
    base = height - 3
    end_label = fmt(hist.start + span) + ("+" if hist.overflow_from is not None else "")
    parts.append(f'<text class="tick" x="{side}" y="{base}">{escape(fmt(hist.start))}</text>')
    parts.append(
        f'<text class="tick mid" x="{_fmt(width / 2)}" y="{base}" text-anchor="middle">'
        f"p50 {escape(fmt(p50))} · p95 {escape(fmt(p95))}</text>"
    )
    parts.append(f'<text class="tick" x="{width - side}" y="{base}" text-anchor="end">{escape(end_label)}</text>')
    parts.append("</svg>")
    return "".join(parts)
