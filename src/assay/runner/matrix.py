"""A matrix: every model with every prompt variant over the same samples, one ordinary run folder per cell.

Each cell's run folder (with its ``run.json``) is made before any cell runs, then the cells run one after the other
through the one runner (:func:`assay.runner.session.execute`), each with its own cache use, lock and resume; so a
killed matrix resumes cell by cell and asks nothing again that a cell already has. ``matrix.json`` in the parent
folder names the cells (:mod:`assay.store.matrixindex`).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import AssayError, ConfigError
from assay.runner.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_STOPPED, EXIT_TOO_MANY_ERRORS, EXIT_USAGE, exit_code
from assay.runner.session import start_manifest
from assay.runner.settings import RunOutcome, RunSettings
from assay.store.matrixindex import MatrixCell, MatrixIndex, write_matrix
from assay.store.rundir import write_manifest

if TYPE_CHECKING:
    from assay.models.base import Model
    from assay.tasks import Task

# the most severe first: an interrupted matrix, a cell that could not run at all, a cell stopped (resumable), a
# cell past its error limit
_SEVERITY = (EXIT_INTERRUPTED, EXIT_USAGE, EXIT_STOPPED, EXIT_TOO_MANY_ERRORS)


def _slug(text: str) -> str:
    """A folder name from a cell or task name (as run folders are named)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60] or "cell"


@dataclass
class CellPlan:
    """What one cell runs: a named model, with one prompt variant of the tasks (None: their own prompt)."""

    model_name: str
    variant: str | None
    tasks: list[Task]
    model: Model

    @property
    def name(self) -> str:
        """``model`` or ``model/variant``: the cell's run name."""
        return self.model_name if self.variant is None else f"{self.model_name}/{self.variant}"


@dataclass
class CellOutcome:
    """How one cell ended: its run's outcome, or the error that kept it from running (a bad prompt, a model)."""

    cell: MatrixCell
    outcome: RunOutcome | None = None
    error: str | None = None

    @property
    def exit_code(self) -> int:
        """What ``assay run`` of this cell alone would exit with."""
        return EXIT_USAGE if self.outcome is None else exit_code(self.outcome)


def plan_cells(
    models: Sequence[tuple[str, Model]], variants: Sequence[tuple[str | None, list[Task]]]
) -> list[CellPlan]:
    """Every model with every variant, model by model; model names must be unique."""
    seen: set[str] = set()
    for name, _ in models:
        if name in seen:
            raise ConfigError(f"two models are named {name!r}; name them apart: --model NAME=SPEC")
        seen.add(name)
    return [CellPlan(name, variant, tasks, model) for name, model in models for variant, tasks in variants]


def create_matrix(
    plans: Sequence[CellPlan], settings: RunSettings, name: str | None = None
) -> tuple[Path, MatrixIndex]:
    """The matrix folder under ``settings.output_dir``: each cell's run folder with its ``run.json``, then
    ``matrix.json``. Returns the folder and its index."""
    if not plans:
        raise ConfigError("a matrix needs at least one model")
    tasks = [task.name for task in plans[0].tasks]
    label = name or (tasks[0] if len(tasks) == 1 else f"{tasks[0]}+{len(tasks) - 1}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    matrix_dir = settings.output_dir / f"{_slug(label)}-matrix-{stamp}-{secrets.token_hex(3)}"
    matrix_dir.mkdir(parents=True, exist_ok=False)
    cells: list[MatrixCell] = []
    used: set[str] = set()
    for plan in plans:
        folder = _slug(plan.name.replace("/", "__"))
        while folder in used:  # two names that slug alike ("a b" and "a-b")
            folder += "_"
        used.add(folder)
        cell_dir = matrix_dir / folder
        cell_dir.mkdir()
        manifest = start_manifest(plan.tasks, plan.model, cell_settings(settings, plan), cell_dir)
        write_manifest(cell_dir, manifest)
        cells.append(MatrixCell(name=plan.name, model=plan.model_name, variant=plan.variant, run_dir=folder))
    variants = list(dict.fromkeys(p.variant for p in plans if p.variant is not None))
    models = list(dict.fromkeys(p.model_name for p in plans))
    index = MatrixIndex(name=name, created_at=time.time(), tasks=tasks, models=models, variants=variants, cells=cells)
    write_matrix(matrix_dir, index)
    return matrix_dir, index


def cell_settings(settings: RunSettings, plan: CellPlan) -> RunSettings:
    """The run settings of one cell: the matrix's, named after the cell, with the cache switch decided (recorded)."""
    return settings.model_copy(update={"name": plan.name, "cache": settings.use_cache(plan.tasks)})


async def run_cells(
    index: MatrixIndex,
    matrix_dir: Path,
    run_cell: Callable[[MatrixCell, Path], Awaitable[RunOutcome]],
    on_done: Callable[[CellOutcome], None] | None = None,
) -> list[CellOutcome]:
    """Run (or resume) every cell in order; a cell that cannot run is recorded and the next one goes on. An
    interrupted cell (Ctrl-C) ends the matrix: its finished samples, and every other cell's, are kept."""
    out: list[CellOutcome] = []
    for cell in index.cells:
        try:
            done = CellOutcome(cell, outcome=await run_cell(cell, index.cell_dir(matrix_dir, cell)))
        except AssayError as err:
            done = CellOutcome(cell, error=str(err))
        out.append(done)
        if on_done is not None:
            on_done(done)
        if done.outcome is not None and done.outcome.status == "interrupted":
            break
    return out


def matrix_exit_code(outcomes: Sequence[CellOutcome]) -> int:
    """The most severe of the cells' exit codes (interrupted, could not run, stopped, too many errors), else 0."""
    codes = {o.exit_code for o in outcomes}
    return next((code for code in _SEVERITY if code in codes), EXIT_OK)
