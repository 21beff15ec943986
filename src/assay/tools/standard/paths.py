"""The text editor's paths: absolute under the workspace or relative to it, as the environment's file methods take
them (relative), and as the model is told them (absolute)."""

from __future__ import annotations

import posixpath

from assay.environments.base import WORKSPACE
from assay.tools.base import ToolError


def workspace_path(path: str) -> tuple[str, str]:
    """``(relative, absolute)`` for a path the model gave; a path leaving the workspace is a ToolError."""
    given = path.strip()
    if not given:
        raise ToolError("The path is empty: give a file or directory under /workspace, e.g. `/workspace/main.py`.")
    full = posixpath.normpath(given if given.startswith("/") else posixpath.join(WORKSPACE, given))
    if full.startswith("//"):  # normpath keeps a leading double slash
        full = "/" + full.lstrip("/")
    if full != WORKSPACE and not full.startswith(WORKSPACE + "/"):
        raise ToolError(
            f"The path {given} is outside the workspace: give a path under {WORKSPACE} (or relative to it)."
        )
    relative = full[len(WORKSPACE) + 1 :]
    return relative, full
