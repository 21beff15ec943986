"""Files written whole: replaced so a reader sees the old file or the new one, never half of either, with the mode
an ordinary write would give them (mkstemp's private 0600 would hide results from others); and one file's bytes
appended to another in the kernel (:func:`kernel_copy`), never passing through Python."""

from __future__ import annotations

import errno
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


NO_COPY_RANGE = frozenset({errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF})


def kernel_copy(src: int, dst: Path, size: int, at: int) -> int:
    """Copy ``size`` bytes of the file ``src`` to ``dst`` at offset ``at`` in the kernel; the bytes copied (fewer
    where copy_file_range cannot: another file system, an old kernel; the caller copies the rest)."""
    copy = getattr(os, "copy_file_range", None)
    if copy is None:
        return 0
    out = os.open(dst, os.O_WRONLY)  # without O_APPEND, which copy_file_range refuses
    done = 0
    try:
        while done < size:
            n = copy(src, out, size - done, done, at + done)
            if n == 0:
                break
            done += n
    except OSError as err:
        if err.errno not in NO_COPY_RANGE:
            raise  # a full disk: the caller cuts the file back
    finally:
        os.close(out)
    return done
