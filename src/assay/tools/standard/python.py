"""``python``: the model's code run by ``python3`` in the sample's environment, each call a fresh process (no state
is kept between calls but the files it writes), as inspect's ``python`` tool runs it (one argument, ``code``)."""

from __future__ import annotations

from assay.environments.base import Environment
from assay.tools.standard.program import ProgramTool


def _joined(stdout: bytes, stderr: bytes) -> str:
    """stdout, then stderr on lines of its own."""
    out = stdout.decode("utf-8", errors="replace")
    err = stderr.decode("utf-8", errors="replace")
    if not err:
        return out
    return out + ("\n" if out and not out.endswith("\n") else "") + err


class PythonCodeTool(ProgramTool):
    """Runs ``python3 -`` with the code on stdin in the workspace; a non-zero exit or a time-out is a tool error."""

    DEFAULT_NAME = "python"
    ARGUMENT = "code"
    ARGUMENT_DESCRIPTION = "The python code to execute."

    def describe(self) -> str:
        return (
            "Use the python function to execute Python code. Each execution is independent: no variables or imports "
            "are kept between calls (files written in the working directory are). Print what you need to see: "
            "only stdout and stderr are returned."
        )

    async def run(self, source: str, env: Environment) -> tuple[int | None, bool, str]:
        result = await env.exec(["python3", "-"], input=source.encode("utf-8"), timeout_s=self.timeout_s)
        return result.returncode, result.timed_out, _joined(result.stdout, result.stderr)
