"""What the text editor shows: a file's lines numbered as ``cat -n`` numbers them, a directory's files and folders
two levels deep, long files clipped with a note saying how to see the rest."""

from __future__ import annotations

import posixpath

MAX_VIEW_CHARS = 16_000  # of a file's text shown in one reply
CLIPPED_NOTE = (
    "<response clipped><NOTE>Only part of this file was shown, to save context. Search it with `grep -n` and view "
    "the lines you need with `view_range`.</NOTE>"
)


def clipped(content: str) -> str:
    """The content, cut at :data:`MAX_VIEW_CHARS` with a note when longer."""
    return content if len(content) <= MAX_VIEW_CHARS else content[:MAX_VIEW_CHARS] + CLIPPED_NOTE


def numbered(content: str, descriptor: str, init_line: int = 1) -> str:
    """``content`` as ``cat -n`` shows it (a 6-wide line number, a tab, the line), first numbered ``init_line``."""
    lines = clipped(content).split("\n")
    body = "\n".join(f"{i + init_line:6}\t{line}" for i, line in enumerate(lines))
    return f"Here's the result of running `cat -n` on {descriptor}:\n{body}\n"


def directory_listing(files: list[str], relative: str, absolute: str) -> str:
    """The non-hidden files and folders up to two levels below ``relative`` (a workspace folder; "" for its root),
    given every workspace file, as ``find DIR -maxdepth 2 -not -path '*/.*'`` lists them (sorted, absolute)."""
    prefix = relative + "/" if relative else ""
    entries = {absolute}
    for name in files:
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix) :].split("/")
        if any(part.startswith(".") for part in parts):
            continue
        for depth in range(1, min(len(parts), 2) + 1):
            entries.add(posixpath.join(absolute, *parts[:depth]))
    listing = "\n".join(sorted(entries))
    return f"Here are the files and directories up to 2 levels deep in {absolute}, excluding hidden items:\n{listing}\n"
