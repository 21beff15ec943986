"""``matrix.json``: the index of a matrix folder (several models x prompt variants, one run folder per cell).

It names each cell (its model name, its prompt variant, its run folder, relative to the matrix folder) and is
written once, atomically, after every cell's run folder exists; how each cell ended is its own ``run.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from assay.atomicfile import atomic_write_text
from assay.errors import ConfigError

MATRIX = "matrix.json"
KIND = "assay-matrix"


class MatrixCell(BaseModel):
    """One cell: a model (by the name the user gave it) with one prompt variant (None: the task's own prompt)."""

    name: str  # "model" or "model/variant": the cell's run is named so, and reports and compare label it by it
    model: str
    variant: str | None = None
    run_dir: str  # relative to the matrix folder


class MatrixIndex(BaseModel):
    """What ``assay run`` with several ``--model`` (or a task with ``variants:``) ran, cell by cell."""

    kind: str = KIND
    version: int = 1
    name: str | None = None
    created_at: float
    tasks: list[str]
    models: list[str]
    variants: list[str] = Field(default_factory=list)
    cells: list[MatrixCell]

    def cell_dir(self, matrix_dir: Path, cell: MatrixCell) -> Path:
        """The run folder of ``cell``."""
        return matrix_dir / cell.run_dir


def is_matrix(path: Path) -> bool:
    """True when ``path`` is a matrix folder (it holds ``matrix.json``)."""
    return (Path(path) / MATRIX).is_file()


def write_matrix(matrix_dir: Path, index: MatrixIndex) -> None:
    """Write ``matrix.json`` atomically."""
    atomic_write_text(matrix_dir / MATRIX, index.model_dump_json(indent=2) + "\n")


def read_matrix(matrix_dir: Path) -> MatrixIndex:
    """Read ``matrix.json``; a damaged or foreign file is a ConfigError naming it."""
    path = Path(matrix_dir) / MATRIX
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ConfigError(f"{path}: not an assay matrix index (kind {KIND!r})")
    try:
        index = MatrixIndex.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
    if not index.cells:
        raise ConfigError(f"{path}: a matrix without cells")
    return index
