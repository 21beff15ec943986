"""The ``agent:`` key of a task: the tool loop's limits, tool timeout, parallelism and the optional submit tool."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUBMIT_TOOL = "submit"
# Characters of a tool's result the model is sent and the record keeps: the default of --max-response-chars
# (assay.runner.exits.DEFAULT_MAX_RESPONSE_CHARS; a run passes its own), so a tool's 50 MB answer is capped as a
# model's is. The full length is recorded beside the cut result.
MAX_TOOL_RESULT_CHARS = 256 * 1024


class AgentConfig(BaseModel):
    """How a trajectory runs and when it stops. Every limit is per sample; None lifts it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_turns: int = Field(default=10, ge=1)  # model calls in one trajectory (per user turn in a conversation)
    max_tool_calls: int | None = Field(default=50, ge=0)
    token_budget: int | None = Field(default=None, ge=1)  # input + output tokens over every model call
    time_limit_s: float | None = Field(default=600.0, gt=0)  # wall time of the whole trajectory
    tool_timeout_s: float = Field(default=60.0, gt=0)  # each tool call
    parallel_tool_calls: int = Field(default=4, ge=1)  # calls of one reply run at once, at most this many
    submit: bool = False  # offer a `submit(answer)` tool; the sample's answer is what the model submits

    def submit_schema(self) -> dict[str, Any]:
        """The submit tool's OpenAI schema."""
        return {
            "type": "function",
            "function": {
                "name": SUBMIT_TOOL,
                "description": "Submit your final answer. Call this once, when you are done.",
                "parameters": {
                    "type": "object",
                    "properties": {"answer": {"type": "string", "description": "the final answer"}},
                    "required": ["answer"],
                },
            },
        }
