"""The matrix page: one self-contained HTML file with a column per cell (metrics and samples as rows), and beside
it each cell's run page, which the page links to.

As the run report does (:mod:`assay.report.html`): rendered by Jinja2 with autoescaping, so no model answer, prompt
or sample text becomes markup; no script at all; a Content-Security-Policy that allows only the page's own
stylesheet (by hash) and nothing from the network. Each cell's run page is the page ``assay report CELL_DIR --html``
writes, in ``<page stem>-runs/<cell folder>.html`` next to the matrix page; the matrix page links every cell (its
column heads) to it by a relative link, and every sample outcome to that sample on it (``#sample=task/id``) when the
run page holds the sample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from markupsafe import Markup

from assay.atomicfile import atomic_write_text
from assay.errors import AssayError
from assay.report.html import TEMPLATES, csp_hash
from assay.report.matrix import notes

if TYPE_CHECKING:
    import jinja2

    from assay.report.matrix import MatrixView, SampleLine


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )


def matrix_csp(style: str) -> str:
    """Nothing from anywhere and no script; only this page's stylesheet (by hash)."""
    return f"default-src 'none'; script-src 'none'; style-src {csp_hash(style)}; base-uri 'none'; form-action 'none'"


@dataclass
class RunPages:
    """Where each cell's run page is, relative to the matrix page (None: no page, e.g. it could not be written),
    and which samples each page holds (per task, their doc ids; None: all of them)."""

    hrefs: list[str | None]
    held: list[dict[str, set[int] | None]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def cell(self, j: int) -> str | None:
        """The link to cell ``j``'s run page."""
        return self.hrefs[j] if j < len(self.hrefs) else None

    def sample(self, j: int, line: SampleLine) -> str | None:
        """The link to a sample on cell ``j``'s run page (the page itself when it does not hold the sample)."""
        href = self.cell(j)
        if href is None:
            return None
        held = self.held[j].get(line.task, set()) if j < len(self.held) else set()
        if held is not None and line.doc_id not in held:
            return href
        return f"{href}#sample={quote(line.task, safe='')}/{quote(line.sample_id, safe='')}"


NO_PAGES = RunPages(hrefs=[])


def pages_folder(path: Path) -> Path:
    """The folder of the run pages a matrix page at ``path`` links to: ``<stem>-runs`` beside it."""
    return path.parent / f"{path.stem}-runs"


def _held(run: Any, budget: int | None) -> dict[str, set[int] | None]:
    """The doc ids of each task's samples a run page holds (as :mod:`assay.report.pageselect` chooses them)."""
    from assay.report.pageselect import select_samples

    selection = select_samples([run], budget)
    out: dict[str, set[int] | None] = {}
    for (_, task), picks in selection.picks.items():
        out[task] = None if picks is None else {int(d) for d in run.columns[task].doc_ids[picks]}
    return out


def write_run_pages(view: MatrixView, path: Path) -> RunPages:
    """Each cell's run page (as ``assay report CELL_DIR --html`` writes it, with the view's sample budget) in
    :func:`pages_folder`; a cell whose page cannot be written (a corrupt samples.jsonl) gets no link and a note."""
    from assay.report.html import write_html

    folder = pages_folder(path)
    pages = RunPages(hrefs=[])
    for cell, run in zip(view.cells, view.runs, strict=True):
        page = folder / f"{cell.run_dir}.html"
        try:
            write_html([run], page, max_samples=view.max_samples)  # None: every sample, as --html-samples 0
            held = _held(run, view.max_samples)
        except AssayError as err:
            pages.hrefs.append(None)
            pages.held.append({})
            pages.problems.append(f"{cell.name}: its run page could not be written: {err}")
            continue
        pages.hrefs.append(f"{quote(folder.name)}/{quote(page.name)}")
        pages.held.append(held)
    return pages


def render_matrix_html(view: MatrixView, pages: RunPages = NO_PAGES) -> str:
    """The page of a matrix view; ``pages``: the cells' run pages it links to (none by default)."""
    from assay.version import __version__

    style = (TEMPLATES / "matrix.css").read_text(encoding="utf-8")
    if "</style" in style.lower():
        raise RuntimeError("matrix.css must not contain '</style'")
    title = f"assay matrix {view.index.name or view.path.name}"
    return (
        _environment()
        .get_template("matrix.html.j2")
        .render(
            view=view,
            title=title,
            notes=notes(view) + pages.problems,
            pages=pages,
            csp=matrix_csp(style),
            style=Markup(style),
            version=__version__,
            generated_at=time.strftime("%Y-%m-%d %H:%M"),
        )
    )


def write_matrix_html(view: MatrixView, path: Path, *, run_pages: bool = True) -> None:
    """Write the page atomically, after each cell's run page it links to (``run_pages``; :func:`write_run_pages`)."""
    path = Path(path)
    pages = write_run_pages(view, path) if run_pages else NO_PAGES
    atomic_write_text(path, render_matrix_html(view, pages))
