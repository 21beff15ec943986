"""Files replaced whole: a reader sees the old file or the new one, never half of either, and the new file gets
the mode an ordinary write would give it (mkstemp's private 0600 would hide results from others)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


NEW_FILE_MODE = 0o666 & ~_umask()  # what open() gives a new file under this process's umask


def file_mode(path: Path) -> int:
    """The mode an ordinary write would give ``path``: the existing file's, else a new file's."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return NEW_FILE_MODE


@contextmanager
def atomic_file(path: Path, *, binary: bool = False, durable: bool = True) -> Iterator[IO[Any]]:
    """A file written in pieces that appears at ``path`` complete or not at all (UTF-8 text, or bytes with
    ``binary``). ``durable`` fsyncs it before it replaces the old one, so it also survives a power cut; without it a
    killed process still leaves the old or the new file, but a power cut may leave an empty one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` whole (see :func:`atomic_file`)."""
    with atomic_file(path, durable=durable) as fh:
        fh.write(text)
