"""The HTML report: one self-contained file (styles, script and data inline; nothing loaded from the network).

Everything that comes from a run is untrusted. The page is rendered by Jinja2 with autoescaping; the sample
data is embedded as JSON in a ``<script type="application/json">`` block with ``<``, ``>``, ``&`` and the
JavaScript line separators escaped, so no text can close the block; the page script builds the DOM with
``textContent`` only; and a Content-Security-Policy allows nothing but the page's own script and style
(by hash), so even a bug could not run injected code or load anything.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from assay.report.pageselect import MAX_PAGE_SAMPLES

if TYPE_CHECKING:
    import jinja2

    from assay.results import Comparison, Run

TEMPLATES = Path(__file__).parent / "templates"

_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def _finite(value: Any) -> Any:
    """Replace NaN and infinities (which JSON cannot hold) with None, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def embed_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no text in it can end the element."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    return text.translate(_JSON_ESCAPES)


def csp_hash(source: str) -> str:
    """The CSP source expression that allows exactly this inline script or style."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing from anywhere, except this page's one script and one stylesheet (by hash) and data: images."""
    return (
        "default-src 'none'; "
        f"script-src {csp_hash(script)}; "
        f"style-src {csp_hash(style)}; "
        "img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def page_csp() -> str:
    """The Content-Security-Policy of every report page (its script and style never change per run)."""
    return content_security_policy(_asset("report.js"), _asset("report.css"))


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        keep_trailing_newline=True,
    )


@cache
def _asset(name: str) -> str:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    closing = "</script" if name.endswith(".js") else "</style"
    if closing in text.lower():
        raise RuntimeError(f"{name} must not contain {closing!r}")
    return text


def _load(runs: Sequence[Run | str | os.PathLike[str]]) -> list[Run]:
    from assay.results import Run, load_run

    return [r if isinstance(r, Run) else load_run(r) for r in runs]


def _comparisons(runs: list[Run], compare: Comparison | None) -> list[tuple[int, int, Any]]:
    """The given comparison placed on its runs (by folder name); without one, each later run against the first."""
    if compare is not None:
        names = [r.name for r in runs]
        a = names.index(compare.run_a) if compare.run_a in names else 0
        b = names.index(compare.run_b) if compare.run_b in names and names.index(compare.run_b) != a else 1
        return [(a, b, compare)] if len(runs) > max(a, b) else []
    if len(runs) < 2:
        return []
    from assay.results import compare_runs

    return [(0, i, compare_runs(runs[0], runs[i])) for i in range(1, len(runs))]


def _read_runs(runs: list[Run]) -> tuple[list[Any], list[dict[tuple[str, str], Any]]]:
    """Each run's failure themes (``assay.feedback.themes.group_failures``'s) and request latencies, gathered in
    the pass that reads its columns: one read of ``samples.jsonl`` instead of three (at 1M samples, each read
    parses 1.5 GB of records). Runs after the first are read by forked children (one per other CPU) while this
    process reads the first, where forking is safe; a child that fails leaves its run to be read here, with the
    errors of reading it alone."""
    from assay.forking import Forked, default_processes, may_fork

    folders = [run.path.resolve() for run in runs]
    helpers: list[Forked | None] = [None] * len(runs)
    themes, lat = [], []
    try:
        if len(runs) >= 2 and len(set(folders)) == len(folders) and may_fork():
            for i in range(1, min(len(runs), default_processes())):  # a child per other CPU; the rest in turn
                helpers[i] = Forked.start(_read_run, runs[i])
        for run, helper in zip(runs, helpers, strict=True):
            made = helper.result() if helper is not None else None
            if made is None:
                made = _read_run(run)
            else:  # what the child read, as reading it here would have left it
                run.loaded_index, run.__dict__["columns"] = made[0], made[1]
            themes.append(made[2])
            lat.append(made[3])
    finally:
        for helper in helpers:
            if helper is not None:
                helper.close()
    return themes, lat


def _read_run(run: Run) -> tuple[Any, Any, list[Any], dict[tuple[str, str], Any]]:
    """One run read for the page (here or in a forked child): its index, columns, themes and latencies."""
    from assay.feedback.themes import ThemeGrouper
    from assay.report.viewmodel import LatencyTally

    grouper, tally = ThemeGrouper(manifest=run.manifest), LatencyTally(run.manifest)
    run.read_records((grouper.add, tally.add))
    return run.index, run.columns, grouper.themes(), tally.values


_DATA_MARK = "\x00assay-sample-data\x00"  # where the data goes in the rendered page (never in a template)


def _page_parts(
    runs: Sequence[Run | str | os.PathLike[str]],
    compare: Comparison | None,
    title: str | None,
    max_samples: int | None = MAX_PAGE_SAMPLES,
) -> Iterator[str]:
    """The page in pieces: the HTML up to the data block, the data JSON one sample at a time, the rest.

    Samples are read from the run folders while the pieces are consumed, so writing a page holds one sample
    at a time (the page of a million samples is written in the memory of a few)."""
    from assay.report.viewmodel import build_page

    loaded = _load(runs)
    if not loaded:
        raise ValueError("render_html needs at least one run")
    themes, run_latencies = _read_runs(loaded)  # before the comparisons, which read the columns too
    page = build_page(
        loaded,
        _comparisons(loaded, compare),
        themes,
        title=title,
        max_samples=max_samples,
        run_latencies=run_latencies,
    )
    script, style = _asset("report.js"), _asset("report.css")
    html = (
        _environment()
        .get_template("report.html.j2")
        .render(
            page=page,
            csp=content_security_policy(script, style),
            script=Markup(script),
            style=Markup(style),
            data_json=Markup(_DATA_MARK),
        )
    )
    head, mark, tail = html.partition(_DATA_MARK)
    if not mark:
        raise RuntimeError("report.html.j2 must place data_json once")
    yield head
    meta = embed_json(page.data)
    yield '{"samples":['
    for i, sample in enumerate(page.samples()):
        yield ("," if i else "") + embed_json(sample)
    yield "]," + meta[1:]
    yield tail


def render_html(
    runs: Sequence[Run | str | os.PathLike[str]],
    compare: Comparison | None = None,
    *,
    title: str | None = None,
    max_samples: int | None = MAX_PAGE_SAMPLES,
) -> str:
    """The report page for one or more runs (loaded ``Run`` objects or run folders) as one HTML string.

    With two or more runs and no ``compare``, every run is compared with the first. The page holds at most
    ``max_samples`` samples of each run (None or 0: all of them), chosen as :mod:`assay.report.pageselect` says.
    A page of many samples is better written to a file with :func:`write_html`, which streams it.
    """
    return "".join(_page_parts(runs, compare, title, max_samples))


def write_html(
    runs: Sequence[Run | str | os.PathLike[str]],
    path: str | os.PathLike[str],
    compare: Comparison | None = None,
    *,
    max_samples: int | None = MAX_PAGE_SAMPLES,
) -> Path:
    """Write the report page to ``path`` (atomically, streamed; parent folders created) and return the path.
    ``max_samples`` as in :func:`render_html`."""
    from assay.atomicfile import atomic_file

    out = Path(path)
    with atomic_file(out) as fh:
        for part in _page_parts(runs, compare, None, max_samples):
            fh.write(part)
    return out
