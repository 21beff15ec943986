"""``think``: a place for the model to reason between tool calls; it changes nothing and returns nothing, as
inspect's ``think`` tool (one argument, ``thought``, kept in the transcript as the call's argument)."""

from __future__ import annotations

from typing import Any

from assay.tools.base import SampleTools, Tool
from assay.tools.standard.args import check_names, text


class ThinkTool(Tool):
    """Accepts a thought and returns an empty result."""

    OPTIONS: tuple[str, ...] = ()

    def __init__(self, *, name: str | None = None) -> None:
        self.name = name or "think"
        self.description = (
            "Use the tool to think about something. It will not obtain new information or change the environment, "
            "but just append the thought to the log. Use it when complex reasoning or some cache memory is needed."
        )
        self.parameters = {
            "type": "object",
            "properties": {"thought": {"type": "string", "description": "A thought to think about."}},
            "required": ["thought"],
        }

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        check_names(arguments, ["thought"], self.name)
        text(arguments, "thought", self.name)
        return ""
