"""The workspace's diff over a trajectory: its files as the agent found them, against how it left them, as one
unified diff (what the HTML drawer shows and a reviewer reads); bounded, so a huge workspace costs little."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field

from assay.environments.base import Environment

MAX_FILES = 2000  # a workspace with more files is diffed by name and digest only
MAX_FILE_BYTES = 256 * 1024  # a larger file is compared by digest, not line by line
MAX_DIFF_CHARS = 64 * 1024  # of the diff kept in the record


@dataclass
class Before:
    """The workspace when the agent started: text of small files, digests of the rest."""

    texts: dict[str, str] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)
    complete: bool = True  # False when the workspace had more than MAX_FILES files


def _read(env: Environment, name: str) -> tuple[str | None, str]:
    """A file's text (None when binary or large) and digest."""
    try:
        data = env.read_file(name)
    except (OSError, ValueError):
        return None, ""
    digest = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
        return None, digest
    try:
        return data.decode("utf-8"), digest
    except UnicodeDecodeError:
        return None, digest


def capture(env: Environment) -> Before:
    """The workspace's files now (the first MAX_FILES, in name order)."""
    names = env.list_files()
    before = Before(complete=len(names) <= MAX_FILES)
    for name in names[:MAX_FILES]:
        text, digest = _read(env, name)
        before.digests[name] = digest
        if text is not None:
            before.texts[name] = text
    return before


def unified_diff(before: Before, env: Environment) -> str:
    """What changed in the workspace since ``before``: a unified diff per changed text file, a line per changed
    binary or large one; empty when nothing changed. Cut at MAX_DIFF_CHARS with a line saying so."""
    names = env.list_files()[:MAX_FILES]
    parts: list[str] = []
    for name in sorted(set(names) | set(before.digests)):
        old_text = before.texts.get(name)
        if name not in names:
            if old_text is not None:
                parts.append(_diff(name, old_text, None))
            else:
                parts.append(f"deleted: {name} (binary or large)\n")
            continue
        new_text, digest = _read(env, name)
        if before.digests.get(name) == digest:
            continue
        if (old_text is None and name in before.digests) or new_text is None:
            parts.append(f"changed: {name} (binary or large)\n")
        else:
            parts.append(_diff(name, old_text, new_text))
    text = "".join(parts)
    if len(text) > MAX_DIFF_CHARS:
        text = text[:MAX_DIFF_CHARS] + f"\n[cut: the diff is {len(text)} characters long]\n"
    return text


def _diff(name: str, old: str | None, new: str | None) -> str:
    """One file's unified diff, git-style names; /dev/null for a created or deleted file."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=f"a/{name}" if old is not None else "/dev/null",
        tofile=f"b/{name}" if new is not None else "/dev/null",
    )
    out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return out
