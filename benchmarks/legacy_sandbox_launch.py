"""The launcher code_exec used before bubblewrap (``src/assay/evaluators/sandbox_launch.py`` until the change to
``evaluators/code/``), kept only so ``bench_sandbox`` can compare start-up costs. Not used by assay.

Run as a script (``python -I -S legacy_sandbox_launch.py SPEC``): as root it joined a pids cgroup, unshared
network, mount and PID namespaces, remounted every filesystem read-only except the work directory, dropped every
capability and exec'd the harness; without root it applied rlimits and tried an unprivileged user + network
namespace. Standard library only.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x20000000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
SETUP_FAILED = 97  # exit code: the sandbox could not be set up (an infrastructure error, not the program's fault)

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), None), f"mount {target}")


def _limits(spec: dict) -> None:
    mem = int(spec["memory_mb"]) * 1024 * 1024
    cpu = int(spec["cpu_s"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = int(spec["file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    if os.geteuid() != 0:  # root ignores RLIMIT_NPROC; it gets a pids cgroup instead
        n = int(spec["max_processes"])
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def _mount_points() -> list[tuple[str, set[str]]]:
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            parts = line.split()
            out.append((parts[4].replace("\\040", " "), set(parts[5].split(","))))
    return out


def _read_only_except(workdir: str) -> None:
    _mount(workdir, workdir, None, MS_BIND | MS_REC)
    for target, opts in _mount_points():
        if target == workdir or target.startswith(("/proc", "/sys")):
            continue
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY
        flags |= (MS_NOSUID if "nosuid" in opts else 0) | (MS_NODEV if "nodev" in opts else 0)
        flags |= MS_NOEXEC if "noexec" in opts else 0
        try:
            _mount(None, target, None, flags)
        except OSError:
            if target == "/":
                raise
    _mount(None, workdir, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)


def _drop_capabilities() -> None:
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop capability")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _exec(spec: dict, isolation: dict) -> None:
    sys.stderr.write("ASSAY-ISOLATION " + json.dumps(isolation) + "\n")
    sys.stderr.flush()
    os.chdir(spec["workdir"])
    argv = [spec["python"], "-I", "-S", "-X", "utf8", spec["harness"], spec["spec_path"]]
    os.execve(spec["python"], argv, spec["env"])


def _as_root(spec: dict) -> None:
    cgroup = spec.get("cgroup")
    if cgroup:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID), "unshare")
    pid = os.fork()
    if pid:  # the launcher waits for the namespace's init and reports how it ended
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status))
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _read_only_except(spec["workdir"])
    _drop_capabilities()
    isolation = {"network": "namespace", "filesystem": "read-only except workdir", "pids": "namespace"}
    isolation["processes"] = "cgroup pids.max" if cgroup else "unlimited"
    _exec(spec, isolation)


def _unprivileged(spec: dict) -> None:
    isolation = {"network": "not isolated", "filesystem": "not isolated", "pids": "shared", "processes": "RLIMIT_NPROC"}
    unshare, prctl = getattr(_libc, "unshare", None), getattr(_libc, "prctl", None)  # Linux only
    if unshare is not None and unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        isolation["network"] = "namespace"
    if prctl is not None:
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _exec(spec, isolation)


def main() -> None:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    try:
        _limits(spec)
        if os.geteuid() == 0:
            _as_root(spec)
        else:
            _unprivileged(spec)
    except Exception as err:
        sys.stderr.write(f"ASSAY-SETUP-FAILED {type(err).__name__}: {err}\n")
        sys.stderr.flush()
        os._exit(SETUP_FAILED)


if __name__ == "__main__":
    main()
