"""What an environment is to the code that acts in it: one sample's world (a workspace of files, a shell, programs,
optionally a stateful Python object), made when the sample starts and always removed when it ends.

The agent's tools act in it during the loop (:mod:`assay.tools.standard`); environment evaluators look at it after
the loop, before it is removed (:meth:`EnvironmentEvaluator.observe`), and score what they saw from the record
(:meth:`~assay.evaluators.base.Evaluator.evaluate` reads ``context["environment"]``), so a re-score needs no
environment. Providers (bubblewrap today) make environments from a task's :class:`EnvironmentSpec`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.sandbox.box import ExecResult

WORKSPACE = "/workspace"  # the sample's files, as programs in the environment see them (their cwd and HOME)
CHECK_DIR = "/assay-check"  # a check's files after the loop, mounted read-only (never seen by the agent)


class EnvironmentFailed(Exception):
    """The environment failed (could not be made, set up or reached): the sample is an error sample, never a zero."""


@dataclass(frozen=True)
class ShellResult:
    """What one command of a persistent shell printed (stdout and stderr interleaved) and how it ended."""

    output: str
    exit_code: int | None  # None when the command timed out (the shell is restarted)
    timed_out: bool = False


class Shell(ABC):
    """A persistent bash session in an environment: cwd, variables and background jobs carry over between calls."""

    @abstractmethod
    async def run(self, command: str, *, timeout_s: float) -> ShellResult:
        """Run one command line; on time-out the session is killed and the next call starts a fresh one."""

    @abstractmethod
    async def close(self) -> None:
        """End the session and every process it started."""


class Environment(ABC):
    """One sample's environment. Paths given to the file methods are relative to the workspace (or absolute under
    :data:`WORKSPACE`); a path that leaves the workspace, also through a symbolic link the agent planted, raises
    :class:`ValueError`."""

    workspace: str = WORKSPACE
    kind: str = ""  # what made it ("bwrap", "world"): recorded with the sample
    state: Any = None  # a stateful world's object (``environment: {python: "mod:make"}``); None for a plain one

    @abstractmethod
    async def exec(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout_s: float | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        check_files: bool = False,
    ) -> ExecResult:
        """Run a program inside, to its end. ``check_files`` mounts the files given by :meth:`add_check_files` at
        :data:`CHECK_DIR` for this program only (a check after the loop; never during it)."""

    @abstractmethod
    async def shell(self) -> Shell:
        """The sample's persistent shell (started at the first call, the same session afterwards)."""

    @abstractmethod
    def read_file(self, path: str) -> bytes:
        """A workspace file's bytes (FileNotFoundError when it is not there)."""

    @abstractmethod
    def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a workspace file (parent folders made), owned as the environment's programs' files."""

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every regular file of the workspace, relative, sorted (links not followed)."""

    @abstractmethod
    def initial_file(self, path: str) -> bytes | None:
        """A workspace file as it was made, before setup and the agent ran (None when it was not there): what a
        check restores before it runs (a conftest.py the agent wrote must not decide its own tests)."""

    @abstractmethod
    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        """Files a check uses (hidden tests), copied in only after the agent stopped; see ``exec(check_files=)``."""

    async def list_links(self) -> list[str]:
        """Every symbolic link of the workspace, relative, sorted (``list_files`` lists regular files only). This
        default runs ``find`` inside; a provider that can read the workspace directly should."""
        result = await self.exec(["find", ".", "-type", "l", "-print0"], cwd=self.workspace)
        if result.returncode != 0:
            raise EnvironmentFailed(f"could not list the workspace's links: {result.stderr.decode(errors='replace')}")
        names = result.stdout.decode("utf-8", errors="surrogateescape").split("\0")
        return sorted(n.removeprefix("./") for n in names if n and n != ".")

    async def remove(self, path: str) -> None:
        """Remove a workspace file, link (not its target) or folder; nothing when it is not there. This default
        runs ``rm`` inside; a provider that can reach the workspace directly should."""
        result = await self.exec(["rm", "-rf", "--", path], cwd=self.workspace)
        if result.returncode != 0:
            raise EnvironmentFailed(f"could not remove {path}: {result.stderr.decode(errors='replace')[-300:]}")

    def snapshot(self) -> dict[str, str]:
        """A signature of each workspace file (relative path -> text that changes when the file does; here its
        sha256, which reads every file: a provider that can stat them should): what a tool call changed is the
        difference of two snapshots."""
        import hashlib

        out = {}
        for name in self.list_files():
            try:
                out[name] = hashlib.sha256(self.read_file(name)).hexdigest()
            except (OSError, ValueError):
                continue
        return out

    async def stop_programs(self) -> None:
        """End every program the agent started (its shell, background jobs), keeping the files: called when the
        agent stops, so nothing it left running can change the workspace while the checks look at it."""

    @abstractmethod
    async def close(self) -> None:
        """Kill everything still running in it and remove it (idempotent)."""


@dataclass(frozen=True)
class EnvironmentLimits:
    """Limits for the whole sample (every process of its environment together, where the machine allows it)."""

    cpu_s: float = 600.0  # CPU seconds of all its processes together
    memory_mb: int = 2048  # memory of all its processes and files in memory together
    disk_mb: int = 1024  # the workspace, /tmp and everything written
    max_processes: int = 64
    wall_s: float = 1800.0  # the sample's whole life: setup, the loop and the checks
    command_timeout_s: float = 120.0  # one program or shell command (a tool call's own timeout may be smaller)
    network: bool = False  # off by default; on gives the host's network namespace (documented as unsafe)


@dataclass(frozen=True)
class EnvironmentSpec:
    """A task's ``environment:`` key, parsed (:mod:`assay.environments.spec`)."""

    files: Mapping[str, Any] = field(default_factory=dict)  # workspace path -> inline text or {path: host file}
    row_files: str | None = "files"  # the row key whose value adds workspace files (see workspace.py)
    folder: str | None = None  # a host folder or archive copied in as the workspace's base (relative: task dir)
    rootfs: str | None = None  # a host directory mounted read-only as the environment's /
    setup: str | None = None  # a shell command run in the workspace before the agent starts (non-zero: error)
    packages: tuple[str, ...] = ()  # host Python packages made importable inside (e.g. pytest for checks)
    world: str | None = None  # "module:factory" making the sample's stateful world from its row
    limits: EnvironmentLimits = field(default_factory=EnvironmentLimits)
    base_dir: str | None = None  # the task file's folder: relative paths are read from it


class EnvironmentEvaluator(ABC):
    """Mixin of evaluators that look at the environment after the loop. ``observe`` runs inside the sample's
    lifetime and returns JSON-able facts (test outcomes, file contents, the world's state); they are recorded
    under ``response.metadata["environment"]["observations"][observation_key]`` and ``evaluate`` scores them
    from ``context["environment"]``."""

    # whether observing needs the workspace and programs (False for one that reads only a Python world's state,
    # so a pure world needs no sandbox)
    runs_programs: bool = True
    # they read what they compare with from the row themselves (FAIL_TO_PASS, expected_state, ...), not the target
    default_expected: str = "none"
    needs_expected: bool = False

    @abstractmethod
    def observation_key(self) -> str:
        """A key naming this evaluator and its options (two env_check metrics with other commands differ)."""

    @abstractmethod
    async def observe(self, env: Environment, doc: Mapping[str, Any]) -> Any:
        """Look at the environment after the loop; the JSON-able observation ``evaluate`` will score."""


__all__ = [
    "CHECK_DIR",
    "WORKSPACE",
    "Environment",
    "EnvironmentEvaluator",
    "EnvironmentFailed",
    "EnvironmentLimits",
    "EnvironmentSpec",
    "Shell",
    "ShellResult",
]
