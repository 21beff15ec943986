"""The git commit a run was made from, asked of ``git`` once per process and working directory (a run of
``assay optimize`` starts many runs; a ``git`` child per run costs ~10 ms of fork and exec each time)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# working directory -> (repository state stamp, short hash); a new commit or checkout changes the stamp
_CACHE: dict[str, tuple[tuple[int, ...], str | None]] = {}


def _git_dir(start: Path) -> Path | None:
    """The git directory of the repository holding ``start`` (``.git``, or the one a worktree's ``.git`` names)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            try:
                text = dot.read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                found = Path(text.removeprefix("gitdir:").strip())
                return found if found.is_absolute() else folder / found
            return None
    return None


def state_stamp(cwd: str) -> tuple[int, ...]:
    """Sizes and modification times of the files a commit, checkout or reset rewrites (``HEAD``, its reflog, the
    index): when they are unchanged, so is the commit ``git rev-parse HEAD`` would print."""
    git_dir = _git_dir(Path(cwd))
    if git_dir is None:
        return ()
    stamp: list[int] = []
    for name in ("HEAD", "logs/HEAD", "index"):
        try:
            st = os.stat(git_dir / name)
        except OSError:
            stamp += [-1, -1]
        else:
            stamp += [st.st_mtime_ns, st.st_size]
    return tuple(stamp)


class GitHash:
    """The current git commit of the working directory, asked for at once and read when needed, so ``git`` runs
    while the tasks load instead of before the first request; a known answer for this directory and repository
    state is reused without running ``git``."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._value: str | None = None
        try:
            self._cwd: str | None = os.getcwd()
        except OSError:  # the working directory was removed
            self._cwd = None
            return
        self._stamp = state_stamp(self._cwd)
        known = _CACHE.get(self._cwd)
        if known is not None and known[0] == self._stamp:
            self._value = known[1]
            return
        try:
            self._proc = subprocess.Popen(
                ["git", "rev-parse", "--short", "HEAD"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError:
            self._proc = None

    def result(self) -> str | None:
        """The short commit hash, or None outside a repository (waits for git once; later calls are free)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                out, _ = proc.communicate(timeout=5)
            except subprocess.SubprocessError:
                proc.kill()
                proc.wait()
            else:
                self._value = (out.strip() or None) if proc.returncode == 0 else None
                if self._cwd is not None:
                    _CACHE[self._cwd] = (self._stamp, self._value)
        return self._value


def git_hash() -> str | None:
    """The current git commit of the working directory, when there is one."""
    return GitHash().result()
