"""``bash``: the model's commands in the sample's persistent shell (cwd, variables and jobs carry over), as
inspect's ``bash`` tool takes them (one argument, ``cmd``)."""

from __future__ import annotations

from assay.environments.base import Environment
from assay.tools.standard.program import DEFAULT_TIMEOUT_S, ProgramTool


class BashTool(ProgramTool):
    """Runs one command line per call in the sample's shell; a non-zero exit or a time-out is a tool error."""

    DEFAULT_NAME = "bash"
    ARGUMENT = "cmd"
    ARGUMENT_DESCRIPTION = "The bash command to execute."

    def describe(self) -> str:
        return (
            "Use this function to execute bash commands. The shell session persists between calls (working "
            "directory, environment variables, files); stdout and stderr are returned together. "
            f"Commands time out after {self.timeout_s:g} seconds, which restarts the session."
        )

    async def run(self, source: str, env: Environment) -> tuple[int | None, bool, str]:
        # on a time-out the shell says that it restarts, and the next call that it did
        result = await (await env.shell()).run(source, timeout_s=self.timeout_s)
        return result.exit_code, result.timed_out, result.output


__all__ = ["DEFAULT_TIMEOUT_S", "BashTool"]
