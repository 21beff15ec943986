"""Showing a matrix folder (``assay run`` of a matrix, ``assay report MATRIX_DIR``): the table, and the HTML page."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import AssayError


def print_matrix(matrix_dir: Path, fmt: str, *, alpha: float = 0.05, baseline: str | None = None) -> None:
    """The matrix table: metrics and samples as rows, cells as columns."""
    from assay.report.matrix import load_matrix, render_matrix

    out = render_matrix(load_matrix(matrix_dir, alpha=alpha, baseline=baseline), fmt)
    if isinstance(out, str):
        click.echo(out)
    else:
        import sys

        from rich.console import Console

        Console(highlight=False, width=None if sys.stdout.isatty() else 200).print(*out)


def report_matrix(
    matrix_dir: Path,
    fmt: str,
    html_path: Path | None,
    html_samples: int,
    alpha: float,
    gated: list[str],
    baseline: str | None = None,
) -> None:
    """``assay report MATRIX_DIR``: the table, and with ``--html`` a page with one column per cell. Bad input (a
    damaged matrix.json, a cell folder that is not a run) is a usage error, exit 2."""
    from assay.commands.usage import UsageFailure

    if gated:
        raise UsageFailure(
            f"{', '.join(gated)} apply to one run: give a cell's run folder (listed in {matrix_dir}/matrix.json)"
        )
    try:
        print_matrix(matrix_dir, fmt, alpha=alpha, baseline=baseline)
        if html_path is not None:
            from assay.report.matrix import load_matrix
            from assay.report.matrixhtml import write_matrix_html

            view = load_matrix(matrix_dir, alpha=alpha, max_samples=html_samples or None, baseline=baseline)
            write_matrix_html(view, html_path)
            click.echo(f"HTML report -> {html_path}", err=True)
    except AssayError as err:
        raise UsageFailure(str(err)) from None
