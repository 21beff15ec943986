"""``python``: the model's code run by ``python3`` in the sample's environment, each call a fresh process (no state
is kept between calls but the files it writes), as inspect's ``python`` tool runs it (one argument, ``code``)."""

from __future__ import annotations

from typing import Any

from assay.tools.base import SampleTools, Tool, ToolError
from assay.tools.standard.args import check_names, clip, text
from assay.tools.standard.bash import DEFAULT_TIMEOUT_S
from assay.tools.standard.changes import tracking


def _joined(stdout: bytes, stderr: bytes) -> str:
    """stdout, then stderr on lines of its own."""
    out = stdout.decode("utf-8", errors="replace")
    err = stderr.decode("utf-8", errors="replace")
    if not err:
        return out
    return out + ("\n" if out and not out.endswith("\n") else "") + err


class PythonCodeTool(Tool):
    """Runs ``python3 -`` with the code on stdin in the workspace; a non-zero exit or a time-out is a tool error."""

    OPTIONS = ("timeout_s",)
    needs_environment = True
    needs_workspace = True

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, name: str | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.name = name or "python"
        self.timeout_s = float(timeout_s)
        self.description = (
            "Use the python function to execute Python code. Each execution is independent: no variables or imports "
            "are kept between calls (files written in the working directory are). Print what you need to see: "
            "only stdout and stderr are returned."
        )
        self.parameters = {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The python code to execute."}},
            "required": ["code"],
        }

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        async with tracking(state, self.name) as change:
            check_names(arguments, ["code"], self.name)
            code = text(arguments, "code", self.name)
            env = state.require_environment(self.name)
            result = await env.exec(["python3", "-"], input=code.encode("utf-8"), timeout_s=self.timeout_s)
            change.exit_code, change.timed_out = result.returncode, result.timed_out
        output = clip(_joined(result.stdout, result.stderr))
        if result.timed_out:
            raise ToolError(f"timed out after {self.timeout_s:g}s\n{output}".rstrip())
        if result.returncode:
            raise ToolError(f"exit code {result.returncode}\n{output}".rstrip())
        return output
