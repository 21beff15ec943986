"""``bash``: the model's commands in the sample's persistent shell (cwd, variables and jobs carry over), as
inspect's ``bash`` tool takes them (one argument, ``cmd``)."""

from __future__ import annotations

from typing import Any

from assay.environments.base import EnvironmentLimits
from assay.tools.base import SampleTools, Tool, ToolError
from assay.tools.standard.args import check_names, clip, text
from assay.tools.standard.changes import tracking

DEFAULT_TIMEOUT_S = EnvironmentLimits.command_timeout_s


class BashTool(Tool):
    """Runs one command line per call in the sample's shell; a non-zero exit or a time-out is a tool error."""

    OPTIONS = ("timeout_s",)
    needs_environment = True
    needs_workspace = True

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, name: str | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.name = name or "bash"
        self.timeout_s = float(timeout_s)
        self.description = (
            "Use this function to execute bash commands. The shell session persists between calls (working "
            "directory, environment variables, files); stdout and stderr are returned together. "
            f"Commands time out after {self.timeout_s:g} seconds, which restarts the session."
        )
        self.parameters = {
            "type": "object",
            "properties": {"cmd": {"type": "string", "description": "The bash command to execute."}},
            "required": ["cmd"],
        }

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        async with tracking(state, self.name) as change:
            check_names(arguments, ["cmd"], self.name)
            cmd = text(arguments, "cmd", self.name)
            shell = await state.require_environment(self.name).shell()
            result = await shell.run(cmd, timeout_s=self.timeout_s)
            change.exit_code, change.timed_out = result.exit_code, result.timed_out
        output = clip(result.output)
        if result.timed_out:  # the shell says that it restarts, and the next call that it did
            raise ToolError(f"timed out after {self.timeout_s:g}s\n{output}".rstrip())
        if result.exit_code:
            raise ToolError(f"exit code {result.exit_code}\n{output}".rstrip())
        return output
