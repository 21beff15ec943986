"""``{sandbox: python}`` and ``{sandbox: bash}``: code the model writes, run in the bubblewrap sandbox (assay.sandbox).

One sandbox per sample, opened at the first call and kept for the whole trajectory (files written by one call are
there for the next), removed when the trajectory ends. Each call is a new process in it (as inspect's tools are).
"""

from __future__ import annotations

from typing import Any

from assay.tools.base import SampleTools, Tool, ToolError

KINDS = ("python", "bash")
MAX_REPLY_CHARS = 16_000  # of stdout + stderr sent back to the model per call


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class SandboxTool(Tool):
    """Runs the model's ``python`` code or ``bash`` commands in the sample's sandbox."""

    def __init__(self, kind: str, *, timeout_s: float = 30.0, memory_mb: int = 512, name: str | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"sandbox must be one of {list(KINDS)}, got {kind!r}")
        self.kind = kind
        self.name = name or kind
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        arg = "code" if kind == "python" else "cmd"
        what = "Python code (standard library only)" if kind == "python" else "a bash command line"
        self.description = (
            f"Run {what} in a sandbox with no network; files in the working directory persist between calls. "
            "Returns stdout and stderr; print what you need to see."
        )
        self.arg = arg
        self.parameters = {
            "type": "object",
            "properties": {arg: {"type": "string", "description": f"the {what} to run"}},
            "required": [arg],
        }

    async def _box(self, state: SampleTools) -> Any:
        from assay.sandbox.box import Sandbox
        from assay.sandbox.limits import Limits

        key = "sandbox"
        box = state.resources.get(key)
        if box is None:
            box = Sandbox(Limits(timeout_s=self.timeout_s, memory_mb=self.memory_mb))
            box.open()
            state.resources[key] = box
        return box

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        from assay.sandbox.box import signal_name

        source = arguments.get(self.arg)
        if not isinstance(source, str):
            raise ToolError(f"{self.name} needs a string argument {self.arg!r}")
        box = await self._box(state)
        if self.kind == "python":
            result = await box.exec([box.python, "-I", "-"], input=source.encode())
        else:
            result = await box.exec(["bash", "--noprofile", "--norc", "-c", source])
        out, err = _decode(result.stdout), _decode(result.stderr)
        text = out + (("\n" if out and not out.endswith("\n") else "") + err if err else "")
        if len(text) > MAX_REPLY_CHARS:
            text = text[: MAX_REPLY_CHARS // 2] + "\n[...]\n" + text[-MAX_REPLY_CHARS // 2 :]
        if result.timed_out:
            raise ToolError(f"timed out after {self.timeout_s:g}s\n{text}".rstrip())
        if signal_name(result.returncode) == "SIGXCPU":  # the CPU limit equals the time limit: the same time-out
            raise ToolError(f"timed out at the {box.limits.cpu_seconds} s CPU time limit\n{text}".rstrip())
        if result.returncode:
            raise ToolError(f"exit code {result.returncode}\n{text}".rstrip())
        return text

    async def close_sample(self, state: SampleTools) -> None:
        box = state.resources.pop("sandbox", None)
        if box is not None:
            await box.close()
