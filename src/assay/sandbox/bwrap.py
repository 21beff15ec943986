"""The sandbox on this machine: bubblewrap, the Python it runs, and the ``bwrap`` command line for one program.

A program sees the OS read-only (``/usr``, ``/bin``, ``/lib*``, a few files of ``/etc``: no ``/etc/shadow``, no
home, no ``/sys``), its Python's standard library (site-packages and dist-packages covered over), a private work
directory, a small private ``/tmp``, its own ``/proc`` and no network. It runs in new user, PID, network, IPC, UTS
and cgroup namespaces with no capabilities and no new privileges; as root it runs as uid 65534 on the host. Its
Python is assay's own when that user can run it, else the first other CPython 3.8+ it can run (a root user's
pyenv or venv Python under ``/root`` is not one), recorded in every verdict's isolation details. What is found
here is probed once per process; when no sandbox can be made, :class:`SandboxUnavailable` says why and
how to fix it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.sandbox.cgroup import MemoryCgroups, find_memory_cgroups
from assay.sandbox.diskfs import can_mount
from assay.sandbox.layout import HOME, Layout, host_os_mounts, present_in_rootfs, rootfs_limiter, rootfs_mounts
from assay.sandbox.limits import Limits

BWRAP_ENV = "ASSAY_BWRAP"
PYTHON_ENV = "ASSAY_SANDBOX_PYTHON"
HOST_UID = 65534  # who a root user's sandboxes run as on the host (nobody)
INSIDE_UID = 1000  # who the program is inside (shown as "sandbox"; files it does not own show as nobody)
INSTALL = (
    "install bubblewrap: `apt-get install bubblewrap` (Debian, Ubuntu), `dnf install bubblewrap` (Fedora), "
    "or `make sandbox` in assay's checkout"
)
MIN_PYTHON = (3, 8)  # the oldest CPython the sandbox's program (wire.py + serve.py) runs on
_MIN = f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer"
INSTALL_PYTHON = "`apt-get install python3` (Debian, Ubuntu) or `dnf install python3` (Fedora)"
NAMESPACE_HINT = (
    "bubblewrap needs unprivileged user namespaces: `sysctl -w kernel.unprivileged_userns_clone=1` (older Debian), "
    "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (Ubuntu 23.10+); in a container, run it with "
    "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`"
)
_LIMITER = (  # used only where util-linux's prlimit is missing: set the limits, then become the command
    "import os, resource, sys\n"
    "i = sys.argv.index('--')\n"
    "for spec in sys.argv[1:i]:\n"
    "    name, soft, hard = spec.split(':')\n"
    "    resource.setrlimit(getattr(resource, name), (int(soft), int(hard)))\n"
    "os.execvp(sys.argv[i + 1], sys.argv[i + 1:])\n"
)


_OWN = ("/tmp", "/dev", "/proc", HOME)  # what a sandbox mounts afresh: a Python found under them is not there


_ENTER = 'echo 0 > "$0" && exec "$@"'  # move this process into the cgroup whose file is $0, then run the rest


class SandboxUnavailable(ConfigError):
    """No sandbox can be made here (bubblewrap missing, refused by the kernel, no usable Python); says the fix."""


@dataclass(frozen=True)
class Host:
    """What a sandbox is made of on this machine (found once by :func:`find_host`)."""

    bwrap: str
    version: str
    python: str  # the sandbox's interpreter (same path inside and out)
    python_version: str  # its "3.N": assay's own when the sandbox's user can run one, else any CPython >= 3.8
    binds: tuple[str, ...]  # read-only directories beyond the OS (the Python's prefix when outside /usr)
    hidden: tuple[str, ...]  # package directories covered with an empty read-only tmpfs
    prlimit: str | None
    run_as: int | None  # host uid and gid to start bwrap as (when assay runs as root)
    memory_cgroups: MemoryCgroups | None = None  # where a sandbox's memory cgroup is made, when it can be
    setpriv: str | None = None  # util-linux setpriv: drops root after a sandbox's first process entered its cgroup
    tmpfs: bool = False  # whether a sandbox's files go in a tmpfs of their own (assay may mount one)

    def isolation(self, limits: Limits | None = None) -> dict[str, str]:
        """What every sandboxed program gets, for verdict details and the run summary: the totals that hold here."""
        limits = limits or Limits()
        uid = f"uid {self.run_as}" if self.run_as is not None else f"uid {os.geteuid()} (the user running assay)"
        if self.memory_cgroups is not None:
            memory = (
                f"{limits.total_memory_mb} MB for all the sandbox's processes and files together "
                f"({self.memory_cgroups.describe()}); {limits.memory_mb} MB address space per process"
            )
        else:
            memory = (
                f"{limits.memory_mb} MB address space per process, no total (no memory cgroup can be made here): "
                f"up to {limits.max_processes} x {limits.memory_mb} MB + its files in memory"
            )
        if self.tmpfs:
            disk = (
                f"{limits.disk_mb} MB and {limits.max_files} files for all its files together (/sandbox, /tmp, "
                f"/dev/shm: one tmpfs); {limits.file_mb} MB per file"
            )
        else:
            disk = (
                f"{limits.file_mb} MB per file, no total for the work directory (no tmpfs can be mounted here); "
                f"/tmp and /dev/shm {limits.tmp_mb} MB each"
            )
        mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
        python = f"{self.python} (CPython {self.python_version})"
        if self.python_version != mine:
            python += f"; assay and the tests' process run {mine}"
        return {
            "sandbox": f"bubblewrap {self.version}",
            "python": python,
            "user": f"{uid} on the host, no capabilities, no new privileges",
            "network": "none (own network namespace)",
            "filesystem": "OS read-only, Python standard library only, private work directory",
            "processes": "own PID namespace; RLIMIT_NPROC per sandbox",
            "memory": memory,
            "disk": disk,
        }

    def workdir_base(self) -> str | None:
        """Where work directories go: the temp directory, unless the sandbox's host user cannot reach it."""
        if self.run_as is None:
            return None
        import tempfile

        base = Path(tempfile.gettempdir()).resolve()
        reachable = all(p.stat().st_mode & stat.S_IXOTH for p in (base, *base.parents))
        return None if reachable else "/tmp"

    def command(
        self,
        workdir: str,
        limits: Limits,
        argv: Sequence[str],
        data_fds: Mapping[str, int],
        *,
        scratch: tuple[str, str] | None = None,
        cgroup: str | None = None,
        layout: Layout | None = None,
    ) -> list[str]:
        """The full command line that runs ``argv`` in a sandbox over ``workdir`` (``data_fds``: file -> fd).

        ``scratch``: host directories for ``/tmp`` and ``/dev/shm`` (else a tmpfs of ``tmp_mb`` each). ``cgroup``:
        the file through which a process enters the sandbox's memory cgroup (``cgroup.py``): the command, started
        as root, first moves itself in (writing 0, its own pid, which spares the kernel the global lock that
        moving another process takes: ~10 ms), then becomes the sandbox's user (``setpriv``) and execs bwrap, so
        every process of the sandbox starts inside it. ``layout``: where things are inside (``layout.py``)."""
        layout = layout or Layout()
        b = [self.bwrap, "--unshare-all", *(["--share-net"] if layout.network else []), "--unshare-user"]
        b += ["--disable-userns", "--die-with-parent", "--new-session"]
        b += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--hostname", "sandbox"]
        limiter: list[str] | None = None
        if layout.rootfs is None:
            b += host_os_mounts(self.binds, self.hidden, layout.network)
        else:
            b += rootfs_mounts(layout.rootfs, [layout.home, *(inside for _, inside in layout.binds)])
            helper, limiter = rootfs_limiter(self.prlimit)
            b += helper
            data_fds = {p: data_fds[p] for p in present_in_rootfs(layout.rootfs, data_fds)}
        b += ["--proc", "/proc", "--dev", "/dev"]
        if scratch is None:
            b += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
            b += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]
        else:
            b += ["--bind", scratch[1], "/dev/shm", "--remount-ro", "/dev", "--bind", scratch[0], "/tmp"]
        b += ["--bind", workdir, layout.home]
        for host_path, inside in layout.binds:
            b += ["--ro-bind", host_path, inside]
        for path, fd in data_fds.items():
            b += ["--ro-bind-data", str(fd), path]
        b += ["--remount-ro", "/", "--chdir", layout.cwd or layout.home, "--clearenv"]
        for key, value in {**sandbox_env(layout.home), **dict(layout.env)}.items():
            b += ["--setenv", key, value]
        if limiter is not None:
            b += ["--", *limiter, *limits.prlimit_args(), "--"]
        elif self.prlimit is not None:
            b += ["--", self.prlimit, *limits.prlimit_args(), "--"]
        else:
            pairs = [f"{n}:{s}:{h}" for n, s, h in limits.setrlimit_pairs()]
            b += ["--", self.python, "-I", "-S", "-c", _LIMITER, *pairs, "--"]
        if cgroup is not None:
            if self.setpriv is None or self.run_as is None:
                raise ValueError("a sandbox's memory cgroup needs root and setpriv")
            uid = str(self.run_as)
            drop = [self.setpriv, "--reuid", uid, "--regid", uid, "--clear-groups", "--"]
            b = ["/bin/sh", "-c", _ENTER, cgroup, *drop, *b]
        return [*b, *argv]


def sandbox_env(home: str = HOME) -> dict[str, str]:
    """The whole environment a sandboxed program sees: nothing of the user's (no keys, tokens or proxies)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "PYTHONUTF8": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }


def data_files(home: str = HOME) -> dict[str, bytes]:
    """Small files of /etc the sandbox gets made up rather than the host's (the host's list its users)."""
    uid = INSIDE_UID
    return {
        "/etc/passwd": f"root:x:0:0::/:/bin/sh\nsandbox:x:{uid}:{uid}::{home}:/bin/sh\n".encode(),
        "/etc/group": f"root:x:0:\nsandbox:x:{uid}:\n".encode(),
        "/etc/hosts": b"127.0.0.1 localhost sandbox\n::1 localhost\n",
    }


def _run_as() -> int | None:
    return HOST_UID if os.geteuid() == 0 else None


def _as_sandbox_user() -> dict[str, Any]:
    uid = _run_as()
    return {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}


def _ask_python(python: str) -> tuple[str, str] | str:
    """``(version, prefix)`` of a CPython 3 the sandbox can run, as the sandbox's user runs it, or why it cannot."""
    code = "import sys; print(sys.implementation.name, '%d.%d' % sys.version_info[:2], sys.prefix)"
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", code],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
            **_as_sandbox_user(),
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"{type(err).__name__}: {err}"
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    name, version, prefix = [*done.stdout.strip().split(" ", 2), "", ""][:3]
    if name != "cpython":
        return f"{name or 'it'} {version}, not CPython".strip()
    try:
        major, minor = (int(part) for part in version.split("."))
    except ValueError:
        return f"an unreadable version {version!r}"
    if (major, minor) < MIN_PYTHON:
        return f"CPython {version}, older than {MIN_PYTHON[0]}.{MIN_PYTHON[1]}"
    for path in (python, prefix):
        covered = next((top for top in _OWN if path == top or path.startswith(top + "/")), None)
        if covered is not None:
            return f"{path} is under {covered}, which the sandbox replaces with its own"
    return version, prefix


def _version_key(path: str) -> tuple[int, ...]:
    """``python3.13`` before ``python3.9`` before ``python3`` (newest first; the bare name last)."""
    name = os.path.basename(path)
    tail = name[len("python3.") :]
    return (1, int(tail)) if name.startswith("python3.") and tail.isdigit() else (0, 0)


def _pythons(wanted: str | None) -> list[str]:
    """The interpreters to try, in order: ``wanted`` alone when set; else this one, the system's of this version,
    then any other ``python3.N`` or ``python3`` in /usr/local/bin, /usr/bin and this process's PATH, newest first.
    Found ones are resolved (a virtual environment's ``python`` is its base interpreter, whose prefix is bound)."""
    if wanted:
        return [wanted]
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    base = getattr(sys, "_base_executable", None) or sys.executable
    same = [base, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    dirs = ["/usr/local/bin", "/usr/bin", *os.environ.get("PATH", "").split(os.pathsep)]
    others = []
    for folder in dict.fromkeys(d for d in dirs if os.path.isabs(d)):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        others += [os.path.join(folder, n) for n in names if n == "python3" or _version_key(n) > (0, 0)]
    others.sort(key=_version_key, reverse=True)  # stable: within a version, the folders' order above
    found: dict[str, None] = {}
    for path in (*same, *others):
        if os.path.isfile(path):
            found.setdefault(os.path.realpath(path))
    return list(found)


def _hidden(prefix: str, version: str) -> tuple[str, ...]:
    dirs = [
        f"{prefix}/lib/python{version}/site-packages",
        f"{prefix}/lib/python{version}/dist-packages",
        f"{prefix}/local/lib/python{version}/dist-packages",
        f"/usr/lib/python{version}/site-packages",
        f"/usr/local/lib/python{version}/site-packages",
        f"/usr/local/lib/python{version}/dist-packages",
        "/usr/lib/python3/dist-packages",
        "/usr/local/lib/python3/dist-packages",
    ]
    return tuple(dict.fromkeys(d for d in dirs if os.path.isdir(d)))


def _choose_python(wanted: str | None) -> tuple[str, str, str]:
    """The first interpreter the sandbox's user can run: ours, else the system's of the same version, else any
    other CPython 3 (at least MIN_PYTHON) it can run; ``(path, version, prefix)``."""
    problems = []
    for python in _pythons(wanted):
        answer = _ask_python(python)
        if isinstance(answer, tuple):
            return python, *answer
        problems.append(f"{python}: {answer}")
    who = f"uid {HOST_UID}" if _run_as() is not None else "this user"
    tried = "; ".join(problems) or "none found"
    raise SandboxUnavailable(
        f"code sandbox: no CPython {_MIN} that {who} can run (tried {tried}); install one outside a private home: "
        f"{INSTALL_PYTHON}; or set {PYTHON_ENV} (or the evaluator's sandbox_python option) to a CPython {_MIN} "
        f"that {who} can run (not under /root or another private home)"
    )


@functools.lru_cache(maxsize=8)
def _find(bwrap_setting: str | None, python_setting: str | None, euid: int) -> Host:
    bwrap = shutil.which(bwrap_setting or "bwrap")
    if bwrap is None:
        where = f"{bwrap_setting!r} ({BWRAP_ENV})" if bwrap_setting else "bwrap on PATH"
        raise SandboxUnavailable(f"code sandbox: {where} not found; {INSTALL}")
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[-1]
    except (OSError, subprocess.SubprocessError, IndexError) as err:
        raise SandboxUnavailable(f"code sandbox: {bwrap} --version failed ({err}); {INSTALL}") from None
    python, python_version, prefix = _choose_python(python_setting)
    binds = () if prefix == "/usr" or prefix.startswith("/usr/") else (prefix,)
    host = Host(
        bwrap=bwrap,
        version=version,
        python=python,
        python_version=python_version,
        binds=binds,
        hidden=_hidden(prefix, python_version),
        prlimit=shutil.which("prlimit", path="/usr/bin:/bin"),
        run_as=_run_as(),
    )
    _probe(host)
    host = dataclasses.replace(host, setpriv=shutil.which("setpriv", path="/usr/bin:/bin"))
    return dataclasses.replace(host, memory_cgroups=_cgroups_probed(host), tmpfs=can_mount(host.workdir_base()))


def _cgroups_probed(host: Host) -> MemoryCgroups | None:
    """Where sandboxes' memory cgroups go, once a sandbox started in one worked (else None: no memory total)."""
    found = find_memory_cgroups() if host.setpriv is not None and host.run_as is not None else None
    if found is None:
        return None
    try:
        group = found.create(Limits().total_memory_mb << 20)
    except OSError:
        return None
    try:
        _probe(host, cgroup=group.enter_file)
    except SandboxUnavailable:
        return None
    finally:
        for _ in range(50):
            if group.remove():
                break
            time.sleep(0.02)
    return found


def _probe(host: Host, cgroup: str | None = None) -> None:
    """Start one sandbox (in a memory cgroup through its file ``cgroup``, when given) to see that this kernel and
    bwrap allow it, before any sample depends on it."""
    import tempfile

    workdir = tempfile.mkdtemp(prefix="assay-sandbox-probe-", dir=host.workdir_base())
    fds = {}
    try:
        if host.run_as is not None:
            os.chown(workdir, host.run_as, host.run_as)
        for path, data in data_files().items():
            fds[path] = os.memfd_create(path.rsplit("/", 1)[-1])
            os.write(fds[path], data)
            os.lseek(fds[path], 0, os.SEEK_SET)
        probe = [host.python, "-I", "-S", "-c", "print('sandbox ok')"]
        argv = host.command(workdir, Limits(), probe, fds, cgroup=cgroup)
        user = {} if cgroup is not None else _as_sandbox_user()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, pass_fds=tuple(fds.values()), **user)
    except (OSError, subprocess.SubprocessError) as err:
        raise SandboxUnavailable(f"code sandbox: {host.bwrap} could not be started: {err}") from None
    finally:
        for fd in fds.values():
            os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    if done.stdout.strip() != "sandbox ok":
        said = " / ".join(done.stderr.strip().splitlines()[-3:]) or f"exit code {done.returncode}"
        hint = NAMESPACE_HINT if "namespace" in said or "ermission" in said or "not permitted" in said else INSTALL
        raise SandboxUnavailable(f"code sandbox: bubblewrap could not make a sandbox here ({said}); {hint}")


def find_host(python: str | None = None) -> Host:
    """The sandbox's makings on this machine (cached); raises SandboxUnavailable saying what to install or allow."""
    return _find(os.environ.get(BWRAP_ENV) or None, python or os.environ.get(PYTHON_ENV) or None, os.geteuid())


def spawn_user() -> dict[str, Any]:
    """``subprocess`` arguments that start bwrap as the sandbox's host user (uid 65534 when running as root)."""
    return _as_sandbox_user()
