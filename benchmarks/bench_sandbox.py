"""Start-up cost of one sandboxed program: bare Python, the old launcher, bubblewrap, and a whole code_exec sample.

Each variant starts ``N`` programs that do nothing (``python -I -S -c pass``), one after another (ms/program:
the latency a sample pays) and ``os.cpu_count()`` at a time (programs/s: what a run can score). Wall time: the
CPU time of processes in a PID namespace is not all charged back to the parent, so it cannot be compared.

- bare: the sandbox's Python started directly, no isolation (the baseline of every ratio);
- legacy launcher: the launcher code_exec used before bubblewrap (``benchmarks/legacy_sandbox_launch.py``: a
  Python that unshares namespaces, remounts read-only, drops capabilities, then execs the program; as root,
  without the pids cgroup it also made per program);
- bwrap: :class:`assay.sandbox.Sandbox` as code_exec uses it: a new work directory, bubblewrap with
  prlimit, the program, cleanup;
- code_exec sample: a whole sample through the data boundary (``harness.run_tests``: the sandboxed program
  serving calls, the trusted test process running one MBPP assert against it).

Run with ``python -m benchmarks.bench_sandbox`` (``N`` from the environment, default 40).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from assay.evaluators.code.harness import run_tests
from assay.sandbox import Limits, Sandbox
from assay.sandbox.bwrap import find_host, sandbox_env

N = int(os.environ.get("N", "40"))
LEGACY = Path(__file__).with_name("legacy_sandbox_launch.py")
LIMITS = Limits(timeout_s=30)


async def _run(argv: list[str], cwd: str | None = None) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, cwd=cwd
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({proc.returncode}): {err.decode()[-300:]}")


def bare(python: str) -> Callable[[], Awaitable[None]]:
    return lambda: _run([python, "-I", "-S", "-c", "pass"])


def legacy(python: str) -> Callable[[], Awaitable[None]]:
    async def one() -> None:
        workdir = tempfile.mkdtemp(prefix="assay-bench-legacy-")
        try:
            harness = Path(workdir, "harness.py")
            harness.write_text("pass\n")
            spec = {
                "workdir": workdir,
                "python": python,
                "harness": str(harness),
                "spec_path": str(harness),
                "env": sandbox_env(),
                "memory_mb": LIMITS.memory_mb,
                "cpu_s": LIMITS.cpu_seconds,
                "file_mb": LIMITS.file_mb,
                "max_processes": LIMITS.max_processes,
                "cgroup": None,
            }
            Path(workdir, "launch.json").write_text(json.dumps(spec))
            await _run([python, "-I", "-S", str(LEGACY), str(Path(workdir, "launch.json"))], cwd=workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    return one


def bwrap(python: str) -> Callable[[], Awaitable[None]]:
    async def one() -> None:
        async with Sandbox(LIMITS) as box:
            result = await box.exec([python, "-I", "-S", "-c", "pass"])
            if result.returncode != 0:
                raise RuntimeError(f"bwrap failed ({result.returncode}): {result.stderr.decode()[-300:]}")

    return one


def code_exec(python: str) -> Callable[[], Awaitable[None]]:
    async def one() -> None:
        outcome = await run_tests(
            "def add(a, b):\n    return a + b\n", {"style": "asserts", "tests": ["assert add(1, 2) == 3"]}, LIMITS
        )
        if outcome.outcome != "passed":
            raise RuntimeError(f"code_exec sample: {outcome.outcome} {outcome.result}")

    return one


async def _measure(make: Callable[[], Awaitable[None]], parallel: int) -> float:
    """Wall seconds to run N programs, ``parallel`` at a time."""
    gate = asyncio.Semaphore(parallel)

    async def one() -> None:
        async with gate:
            await make()

    await make()  # warm: caches, the probe, page cache
    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(N)))
    return time.perf_counter() - start


def main() -> None:
    host = find_host()
    python = host.python
    cores = os.cpu_count() or 1
    print(f"sandbox Python {python} ({host.python_version}), bubblewrap {host.version}, euid {os.geteuid()}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"N={N} programs per variant, parallel={cores} (cpu count); load average {load} (the machine may be shared)")
    variants = {"bare python": bare, "legacy launcher": legacy, "bwrap": bwrap, "code_exec sample": code_exec}
    rows = []
    for name, factory in variants.items():
        sequential = asyncio.run(_measure(factory(python), 1))
        parallel = asyncio.run(_measure(factory(python), cores))
        rows.append((name, sequential / N * 1000, N / parallel))
        print(f"  {name:<18} {rows[-1][1]:7.1f} ms/program  {rows[-1][2]:6.1f} programs/s", flush=True)
    base_ms, base_rate = rows[0][1], rows[0][2]
    print(f"\n{'variant':<18} {'ms/program':>10} {'programs/s':>11} {'ms x bare':>10} {'rate x bare':>12}")
    for name, ms, rate in rows:
        print(f"{name:<18} {ms:10.1f} {rate:11.1f} {ms / base_ms:10.2f} {rate / base_rate:12.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
