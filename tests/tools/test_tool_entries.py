"""``tools:`` names the standard tools as plain strings or ``{tool: NAME, ...options}``; an unknown name or option is
refused naming the entry and listing the choices; the runner asks a tool set whether it needs an environment."""

from __future__ import annotations

from typing import Any

import pytest

from assay.tools.spec import STANDARD_TOOLS, needs_environment, needs_workspace, parse_tools
from assay.tools.standard import BashTool, PythonCodeTool
from assay.tools.world import world_tools


class Refused(Exception):
    pass


def fail(path: tuple[Any, ...], message: str) -> Exception:
    return Refused(f"{'.'.join(map(str, path))}: {message}")


def test_standard_tools_by_name_and_with_options() -> None:
    toolset = parse_tools(["bash", "text_editor", "think", {"tool": "python", "timeout_s": 7, "name": "py"}], fail=fail)
    assert [t.name for t in toolset.tools] == ["bash", "text_editor", "think", "py"]
    assert isinstance(toolset.tools[3], PythonCodeTool) and toolset.tools[3].timeout_s == 7.0
    bash = parse_tools([{"tool": "bash", "timeout_s": 2.5}], fail=fail).tools[0]
    assert isinstance(bash, BashTool) and bash.timeout_s == 2.5
    assert list(STANDARD_TOOLS) == ["bash", "python", "text_editor", "think"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (
            ["bash", "shell"],
            "tools.1: unknown tool 'shell'; the standard tools are ['bash', 'python', 'text_editor', 'think']",
        ),
        ([{"tool": "editor"}], "tools.0.tool: unknown tool 'editor'"),
        (
            [{"tool": "bash", "memory_mb": 5}],
            "tools.0: unknown key(s) ['memory_mb'] of the bash tool (it takes tool, timeout_s, name)",
        ),
        ([{"tool": "think", "timeout_s": 5}], "tools.0: unknown key(s) ['timeout_s'] of the think tool"),
        ([{"tool": "bash", "timeout_s": -1}], "tools.0: bad options for the bash tool: timeout_s must be positive"),
        (["bash", {"sandbox": "bash"}], "tools: two tools are named 'bash'"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(entries: list[Any], message: str) -> None:
    with pytest.raises(Refused) as refused:
        parse_tools(entries, fail=fail)
    assert str(refused.value).startswith(message)


class Counter:
    def bump(self, by: int) -> int:
        """Add to the count."""
        return by


def test_which_tool_sets_need_an_environment() -> None:
    assert needs_environment(parse_tools(["bash"], fail=fail)) and needs_workspace(parse_tools(["bash"], fail=fail))
    think_only = parse_tools(["think"], fail=fail)
    assert not needs_environment(think_only) and not needs_workspace(think_only)
    world = parse_tools(world_tools(Counter), fail=fail)
    assert needs_environment(world) and not needs_workspace(world)
    assert not needs_environment(parse_tools([{"sandbox": "python"}], fail=fail))
