"""A size-limited tmpfs per sandbox, where assay may mount one: the limit on a sample's files together.

RLIMIT_FSIZE bounds each file, not how many a program writes. As root (with the right to mount, as on a plain
Linux machine or VM, not in a container without CAP_SYS_ADMIN) each sandbox's directory is a tmpfs of
``disk_mb`` and ``max_files`` inodes holding its work directory, ``/tmp`` and ``/dev/shm``, so all the files a
sample writes share one limit; it is unmounted when the sandbox closes (and, if assay was killed before that, by
the next run that finds it). Elsewhere the work directory is a plain directory, and only the per-file limit holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import shutil
import tempfile

MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2
PARTS = ("work", "tmp", "shm")  # /sandbox, /tmp and /dev/shm, in one tmpfs
_STALE = re.compile(r"^assay-sandbox-(\d+)-")


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def mount_tmpfs(path: str, size_mb: int, inodes: int, uid: int | None) -> None:
    """Mount a tmpfs of ``size_mb`` MB and ``inodes`` files at ``path`` with PARTS in it, owned by ``uid``."""
    owner = "" if uid is None else f",uid={uid},gid={uid}"
    options = f"size={size_mb}m,nr_inodes={inodes},mode=0700{owner}".encode()
    if _libc().mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {path}: {os.strerror(err)}")
    try:
        for part in PARTS:
            os.mkdir(os.path.join(path, part), 0o700)
            if uid is not None:
                os.chown(os.path.join(path, part), uid, uid)
    except OSError:
        unmount(path)
        raise


def unmount(path: str) -> None:
    """Detach the tmpfs at ``path`` (its memory is freed once no process uses it any more)."""
    if _libc().umount2(path.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {path}: {os.strerror(err)}")


def can_mount(base: str | None) -> bool:
    """Whether this process may mount a tmpfs (tried once on a scratch directory); removes stale ones first."""
    if os.geteuid() != 0:
        return False
    sweep(base)
    scratch = tempfile.mkdtemp(prefix=f"assay-sandbox-{os.getpid()}-probe-", dir=base)
    try:
        mount_tmpfs(scratch, 1, 64, None)
        unmount(scratch)
        return True
    except OSError:
        return False
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sweep(base: str | None) -> None:
    """Unmount and remove sandbox tmpfs mounts left by processes that were killed before closing them."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base or tempfile.gettempdir()):
            found = _STALE.match(entry.name)
            if not (found and os.path.ismount(entry.path)):
                continue
            try:
                os.kill(int(found.group(1)), 0)
                continue  # its process is alive
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
            with contextlib.suppress(OSError):
                unmount(entry.path)
                shutil.rmtree(entry.path, ignore_errors=True)
