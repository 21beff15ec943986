"""What a sandbox's filesystem and network look like: where its work directory appears, whose ``/`` it sees (the
host's OS read-only, or a root filesystem directory of the task's), extra read-only binds, and the network.

``code_exec`` uses the default (the host's OS, the work directory at ``/sandbox``, no network); environments put the
work directory at ``/workspace``, may give a ``rootfs`` (then no host OS path is visible: its top-level entries are
bound read-only into the sandbox's own root, and the per-process limits are set by the host's ``prlimit`` run
through the host's dynamic loader from ``/.assay-host``, which holds that program and its libraries only), bind
check files and Python packages read-only, and may share the host's network.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

HOME = "/sandbox"  # the work directory, as the program sees it (code_exec's default)
HELPER_DIR = "/.assay-host"  # in a rootfs sandbox: the host's prlimit and the libraries it needs, read-only
_OWN_TOP = ("proc", "dev", "tmp")  # a rootfs's own entries replaced by the sandbox's


@dataclass(frozen=True)
class Layout:
    """Where things are inside a sandbox (see the module docstring); the defaults are code_exec's sandbox."""

    home: str = HOME  # the work directory inside: HOME and the default cwd
    rootfs: str | None = None  # a host directory seen read-only as / instead of the host's OS
    binds: tuple[tuple[str, str], ...] = ()  # (host path, path inside), read-only
    network: bool = False  # share the host's network namespace (else only a loopback of its own)
    env: tuple[tuple[str, str], ...] = ()  # variables added to (or replacing) the sandbox's own
    cwd: str | None = None  # the program's working directory (default: home)

    def for_call(
        self, cwd: str | None = None, env: Mapping[str, str] | None = None, binds: Iterable[tuple[str, str]] = ()
    ) -> Layout:
        """This layout with one program's own working directory, variables and extra read-only binds."""
        if cwd is None and not env and not binds:
            return self
        return replace(
            self,
            cwd=cwd if cwd is not None else self.cwd,
            env=(*self.env, *(env or {}).items()),
            binds=(*self.binds, *binds),
        )


def host_os_mounts(python_binds: Iterable[str], hidden: Iterable[str], network: bool) -> list[str]:
    """bwrap options showing the host's OS read-only, the Python's prefix, and its package folders covered."""
    b = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = "/" + name
        if os.path.islink(path):
            b += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            b += ["--ro-bind", path, path]
    etc = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime", *(("/etc/resolv.conf",) if network else ()))
    for path in etc:
        b += ["--ro-bind-try", path, path]
    for path in python_binds:
        b += ["--ro-bind", path, path]
    for path in hidden:
        b += ["--perms", "0555", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
    return b


def rootfs_mounts(rootfs: str, targets: Iterable[str]) -> list[str]:
    """bwrap options binding each top-level entry of ``rootfs`` read-only into the sandbox's root (its links kept
    as links), except those the sandbox mounts afresh (``/proc``, ``/dev``, ``/tmp``, ``targets``); a folder on
    the way to a target (``/opt`` for ``/opt/assay-packages``) is made and its other entries bound one by one."""
    if not os.path.isdir(rootfs):
        raise ValueError(f"rootfs {rootfs!r} is not a directory")
    wanted = {os.path.normpath(t) for t in (*targets, HELPER_DIR, *("/" + name for name in _OWN_TOP))}
    return _bind_tree(rootfs, "", wanted)


def _bind_tree(folder: str, inside: str, targets: set[str]) -> list[str]:
    b: list[str] = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = f"{inside}/{entry.name}"
        if path in targets:
            continue
        if entry.is_symlink():
            b += ["--symlink", os.readlink(entry.path), path]
        elif entry.is_dir() and any(t.startswith(path + "/") for t in targets):
            b += ["--dir", path, *_bind_tree(entry.path, path, targets)]
        else:
            b += ["--ro-bind", entry.path, path]
    return b


def present_in_rootfs(rootfs: str, paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` (absolute, inside) that are regular files in ``rootfs`` (a made-up file can cover them)."""
    return [p for p in paths if os.path.isfile(os.path.join(rootfs, p.lstrip("/")))]


@functools.cache
def _libraries(program: str) -> tuple[tuple[str, str], ...]:
    """``(host file, name)`` of the dynamic loader and each library ``program`` loads, as ``ldd`` lists them."""
    done = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=30, check=False)
    found = []
    for line in done.stdout.splitlines():
        name, _, rest = line.strip().partition(" => ")
        path = (rest if rest else name).split(" (")[0].strip()
        if path.startswith("/"):
            found.append((os.path.realpath(path), os.path.basename(name if rest else path)))
    if not any(n.startswith("ld-") for _, n in found):
        raise OSError(f"cannot find the dynamic loader of {program} (ldd: {done.stdout.strip() or done.stderr})")
    return tuple(found)


def rootfs_limiter(prlimit: str | None) -> tuple[list[str], list[str]]:
    """``(bwrap binds, argv prefix)`` running the host's ``prlimit`` inside a rootfs sandbox through the host's
    loader, so the limits are set inside the sandbox's user namespace whatever the rootfs holds."""
    if prlimit is None:
        raise OSError("a rootfs sandbox needs util-linux's prlimit on the host (apt-get install util-linux)")
    libraries = _libraries(prlimit)
    loader = next(name for _, name in libraries if name.startswith("ld-"))
    binds = ["--ro-bind", prlimit, f"{HELPER_DIR}/prlimit"]
    for path, name in libraries:
        binds += ["--ro-bind", path, f"{HELPER_DIR}/{name}"]
    prefix = [f"{HELPER_DIR}/{loader}", "--inhibit-cache", "--library-path", HELPER_DIR, f"{HELPER_DIR}/prlimit"]
    return binds, prefix
