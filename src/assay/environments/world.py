"""The environment of a pure Python world (``environment: {python: "mod:make"}`` with no files or programs): its
state object, and no sandbox, since nothing in it runs a program."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.environments.base import Environment, EnvironmentFailed, Shell

if TYPE_CHECKING:
    from assay.sandbox.box import ExecResult

NO_PROGRAMS = (
    "this environment is a Python world with no workspace: give the task's environment files, a folder or a "
    "setup command (or a tool that runs programs) to have one"
)


class WorldEnvironment(Environment):
    """A world's state and an empty workspace; running a program in it is an error that says why."""

    kind = "world"

    def __init__(self, state: Any) -> None:
        self.state = state

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
        raise EnvironmentFailed(NO_PROGRAMS)

    async def shell(self) -> Shell:
        raise EnvironmentFailed(NO_PROGRAMS)

    def read_file(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def write_file(self, path: str, data: bytes | str) -> None:
        raise EnvironmentFailed(NO_PROGRAMS)

    def list_files(self) -> list[str]:
        return []

    def initial_file(self, path: str) -> bytes | None:
        return None

    def add_check_files(self, files: Mapping[str, bytes]) -> None:
        raise EnvironmentFailed(NO_PROGRAMS)

    async def close(self) -> None:
        """Nothing to remove: the state goes with the sample."""
