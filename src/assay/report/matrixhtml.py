"""The matrix page: one self-contained HTML file with a column per cell (metrics and samples as rows).

As the run report does (:mod:`assay.report.html`): rendered by Jinja2 with autoescaping, so no model answer or
sample text becomes markup; no script at all; a Content-Security-Policy that allows only the page's own
stylesheet (by hash) and nothing from the network.
"""

from __future__ import annotations

import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from assay.atomicfile import atomic_write_text
from assay.report.html import TEMPLATES, csp_hash
from assay.report.matrix import notes

if TYPE_CHECKING:
    import jinja2

    from assay.report.matrix import MatrixView


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
    )


def matrix_csp(style: str) -> str:
    """Nothing from anywhere and no script; only this page's stylesheet (by hash)."""
    return f"default-src 'none'; script-src 'none'; style-src {csp_hash(style)}; base-uri 'none'; form-action 'none'"


def render_matrix_html(view: MatrixView) -> str:
    """The page of a matrix view."""
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
            notes=notes(view),
            csp=matrix_csp(style),
            style=Markup(style),
            version=__version__,
            generated_at=time.strftime("%Y-%m-%d %H:%M"),
        )
    )


def write_matrix_html(view: MatrixView, path: Path) -> None:
    """Write the page atomically."""
    atomic_write_text(Path(path), render_matrix_html(view))
