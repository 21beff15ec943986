"""How the HTML report writes numbers, intervals, durations, times and sample links."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from urllib.parse import quote


def fmt_value(value: float | None) -> str:
    """A metric value as shown in tables: four decimals, an em dash when undefined."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.4f}"


def fmt_interval(ci: Sequence[float] | None) -> str:
    """``[lo, hi]`` with four decimals, an em dash when undefined."""
    if not ci or len(ci) != 2 or any(v is None or not math.isfinite(v) for v in ci):
        return "—"
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def fmt_percent(value: float | None) -> str:
    """A share as a percentage with one decimal."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{100 * value:.1f}%"


def fmt_seconds(seconds: float | None) -> str:
    """A duration for people: 850 ms, 4.2 s, 3m 05s, 2h 01m."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def fmt_time(epoch: float | None) -> str:
    """A timestamp in UTC."""
    if not epoch:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def fmt_int(n: int | None) -> str:
    """An integer with thousands separators."""
    return "—" if n is None else f"{n:,}"


def raw(value: float | None) -> str:
    """A number exactly as Python's ``repr`` (for data attributes that tests and scripts read), '' if none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value))


def sample_href(task: str, sample_id: str, run: int | None = None) -> str:
    """The deep link to one sample: ``#sample=<task>/<id>`` (each part percent-encoded), ``&run=<n>`` optional."""
    href = f"#sample={quote(task, safe='')}/{quote(sample_id, safe='')}"
    return href if run is None else f"{href}&run={run}"
