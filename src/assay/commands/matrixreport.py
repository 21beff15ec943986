"""Printing a matrix folder's figures (``assay run`` of a matrix, ``assay report MATRIX_DIR``)."""

from __future__ import annotations

from pathlib import Path

import click


def print_matrix(matrix_dir: Path, fmt: str) -> None:
    """The matrix table: metrics (and samples) as rows, cells as columns."""
    from assay.report.matrix import load_matrix, render_matrix

    out = render_matrix(load_matrix(matrix_dir), fmt)
    if isinstance(out, str):
        click.echo(out)
    else:
        from rich.console import Console

        Console().print(*out)
