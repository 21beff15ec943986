"""File access confined to one folder: every path component opened relative to its parent with ``O_NOFOLLOW``,
so a symbolic link an agent planted (``notes -> /etc``) is never followed by the host-side code that reads or
writes the workspace, and a FIFO or device is never opened for a blocking read."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import PurePosixPath

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def relative_parts(path: str, root_inside: str, what: str = "path") -> tuple[str, ...]:
    """The components of ``path`` (relative, or absolute under ``root_inside``) inside the folder; ValueError for
    one that is empty, absolute elsewhere, or leaves the folder (``..``)."""
    if not isinstance(path, str) or not path or "\0" in path:
        raise ValueError(f"{what} {path!r} is not a file path")
    pure = PurePosixPath(path)
    if pure.is_absolute():
        root = PurePosixPath(root_inside)
        if pure != root and root not in pure.parents:
            raise ValueError(f"{what} {path!r} is outside {root_inside}")
        pure = pure.relative_to(root)
    parts = tuple(p for p in pure.parts if p != ".")
    if ".." in parts:
        raise ValueError(f"{what} {path!r} leaves {root_inside} ('..')")
    if not parts:
        raise ValueError(f"{what} {path!r} names {root_inside} itself, not a file in it")
    return parts


def _link_error(err: OSError, dir_fd: int, name: str, shown: str) -> Exception:
    """ValueError when ``name`` is a symbolic link (the reason the open failed), else the OSError itself."""
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return ValueError(f"{shown!r} goes through a symbolic link (not followed)")
    return err


@contextlib.contextmanager
def parent_fd(root: str, parts: tuple[str, ...], *, make: bool = False, uid: int | None = None) -> Iterator[int]:
    """An open descriptor of the folder holding ``parts[-1]``, reached without following links (made, owned by
    ``uid``, when ``make``)."""
    shown = "/".join(parts)
    fd = os.open(root, _DIR)
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not make:
                    raise
                os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(name, _DIR, dir_fd=fd)
                if uid is not None:
                    os.fchown(child, uid, uid)
            except OSError as err:
                raise _link_error(err, fd, name, shown) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def read(root: str, parts: tuple[str, ...]) -> bytes:
    """A regular file's bytes (FileNotFoundError, or ValueError for a link or a file that is not regular)."""
    shown = "/".join(parts)
    with parent_fd(root, parts) as dir_fd:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError as err:
            raise _link_error(err, dir_fd, parts[-1], shown) from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ValueError(f"{shown!r} is not a regular file")
        return fh.read()


def write(root: str, parts: tuple[str, ...], data: bytes, uid: int | None, mode: int = 0o644) -> None:
    """Create or replace a regular file (parents made; an existing file keeps its mode), owned by ``uid``."""
    shown = "/".join(parts)
    with parent_fd(root, parts, make=True, uid=uid) as dir_fd:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, mode, dir_fd=dir_fd)
        except OSError as err:
            raise _link_error(err, dir_fd, parts[-1], shown) from None
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ValueError(f"{shown!r} is not a regular file")
        fh.truncate(0)
        fh.write(data)
        if uid is not None:
            os.fchown(fh.fileno(), uid, uid)


def regular_files(root: str) -> list[str]:
    """Every regular file under ``root``, relative and sorted (links neither listed nor followed)."""
    found = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel = os.path.relpath(folder, root)
        for name in files:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.stat(os.path.join(folder, name), follow_symlinks=False).st_mode):
                    found.append(name if rel == "." else f"{rel}/{name}")
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return sorted(found)


def signatures(root: str) -> dict[str, str]:
    """Every regular file under ``root`` (relative) -> its size, modification time and inode: one ``lstat`` a file,
    no read, so comparing two of them finds what a program wrote (links neither listed nor followed)."""
    found = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel = os.path.relpath(folder, root)
        for name in files:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(folder, name), follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    found[name if rel == "." else f"{rel}/{name}"] = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return found


def links(root: str) -> list[str]:
    """Every symbolic link under ``root`` (to files or folders), relative and sorted; none is followed."""
    found = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        rel = os.path.relpath(folder, root)
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(folder, name)):
                found.append(name if rel == "." else f"{rel}/{name}")
    return sorted(found)


def remove(root: str, parts: tuple[str, ...]) -> None:
    """Remove a file, a link (not what it points to) or a folder with all it holds; nothing when it is not there.
    The way there is opened without following links, as for reads and writes."""
    import shutil

    try:
        with parent_fd(root, parts) as fd:
            name = parts[-1]
            try:
                mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            except FileNotFoundError:
                return
            if stat.S_ISDIR(mode):
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return


def chown_tree(root: str, uid: int | None) -> None:
    """Give every file and folder under ``root`` (links themselves, not their targets) to ``uid``."""
    if uid is None:
        return
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                os.lchown(os.path.join(folder, name), uid, uid)
