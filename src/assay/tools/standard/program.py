"""What ``bash`` and ``python`` share: one text argument run as a program in the sample's environment under a
time-out, what it changed recorded, and a non-zero exit or a time-out sent back as a tool error with the output."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from assay.environments.base import Environment, EnvironmentLimits
from assay.tools.base import SampleTools, Tool, ToolError
from assay.tools.standard.args import check_names, clip, text
from assay.tools.standard.changes import tracking

DEFAULT_TIMEOUT_S = EnvironmentLimits.command_timeout_s


class ProgramTool(Tool):
    """A tool taking one string argument (``ARGUMENT``) that it runs in the environment (:meth:`run`)."""

    OPTIONS = ("timeout_s",)
    needs_environment = True
    needs_workspace = True
    DEFAULT_NAME: str
    ARGUMENT: str  # its one argument's name
    ARGUMENT_DESCRIPTION: str

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, name: str | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.name = name or self.DEFAULT_NAME
        self.timeout_s = float(timeout_s)
        self.description = self.describe()
        self.parameters = {
            "type": "object",
            "properties": {self.ARGUMENT: {"type": "string", "description": self.ARGUMENT_DESCRIPTION}},
            "required": [self.ARGUMENT],
        }

    @abstractmethod
    def describe(self) -> str:
        """The description the model reads (``timeout_s`` is set)."""

    @abstractmethod
    async def run(self, source: str, env: Environment) -> tuple[int | None, bool, str]:
        """Run the model's argument: its exit code (None when it timed out), whether it timed out, its output."""

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        async with tracking(state, self.name) as change:
            check_names(arguments, [self.ARGUMENT], self.name)
            source = text(arguments, self.ARGUMENT, self.name)
            exit_code, timed_out, output = await self.run(source, state.require_environment(self.name))
            change.exit_code, change.timed_out = exit_code, timed_out
        output = clip(output)
        if timed_out:
            raise ToolError(f"timed out after {self.timeout_s:g}s\n{output}".rstrip())
        if exit_code:
            raise ToolError(f"exit code {exit_code}\n{output}".rstrip())
        return output
