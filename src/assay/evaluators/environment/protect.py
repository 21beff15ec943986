"""Readies the workspace for a check after the loop: files the agent must not decide (conftest.py, pytest's
configuration, a ``pytest.py``) go back to how the workspace was made, and the check's hidden files are written in
over whatever the agent left at their paths (as SWE-bench applies its test patch)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from assay.environments.base import Environment
from assay.evaluators.environment.observing import glob_regex

DEFAULT_PROTECT = [
    "**/conftest.py",
    "conftest.py",
    "pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/pytest.py",
    "**/_pytest/**",
]


async def prepare_workspace(
    env: Environment, protect: Iterable[str], files: Mapping[str, str], *, timeout_s: float
) -> dict[str, Any]:
    """Restore the protected files and write ``files`` (workspace path -> text); what changed, for the record.

    A protected path the agent created is removed; one it changed or deleted gets its first content back. Symbolic
    links the agent planted at a protected path, at a hidden file's path or at a folder above one are removed
    first, so nothing written here lands elsewhere. Protected files the agent deleted are found where a pattern
    names one file (``pytest.ini``) and for ``conftest.py`` in the folders above each hidden file."""
    patterns = [glob_regex(p) for p in protect]
    present = set(env.list_files())
    links = set(await env.list_links())

    def protected(path: str) -> bool:
        return any(p.match(path) for p in patterns)

    candidates = {p for p in present | links if protected(p) or (p in links and protected(p + "/x"))}
    literal = [p for p in protect if not re.search(r"[*?\[]", p)]
    candidates |= {p for p in literal if p not in present and env.initial_file(p) is not None}
    for path in files:
        folders = path.split("/")[:-1]
        for depth in range(len(folders) + 1):
            conftest = "/".join([*folders[:depth], "conftest.py"])
            if protected(conftest) and conftest not in present and env.initial_file(conftest) is not None:
                candidates.add(conftest)
    candidates = {p for p in candidates if p in links or _changed(env, p, p in present)}
    in_the_way = {p for p in links if any(f == p or f.startswith(p + "/") for f in files)}
    doomed = sorted((candidates | in_the_way | set(files)) & (present | links))
    if doomed:
        for path in doomed:
            await env.remove(path)
    restored, removed = [], []
    for path in sorted(candidates):
        initial = env.initial_file(path)
        if initial is None:
            removed.append(path)
        else:
            env.write_file(path, initial)
            restored.append(path)
    for path, text in files.items():
        env.write_file(path, text)
    return {"restored": restored, "removed": removed, "written": sorted(files)}


def _changed(env: Environment, path: str, present: bool) -> bool:
    """Whether a protected regular file differs from how the workspace was made (there or not)."""
    initial = env.initial_file(path)
    if not present:
        return initial is not None
    try:
        return env.read_file(path) != initial
    except (OSError, ValueError):
        return True
