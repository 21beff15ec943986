"""The text editor, command by command, with the messages of Anthropic's/inspect's editor: numbered views, a folder's
two levels, create, str_replace with 0, 1 and 2 occurrences, insert, undo_edit back through the history, and paths
that leave the workspace refused."""

from __future__ import annotations

import os
from typing import Any

import pytest

from assay.tools.base import SampleTools, ToolError, ToolSet
from assay.tools.standard import TextEditorTool, changes_of
from tests.environments.hostenv import HostEnvironment

EDITOR = TextEditorTool()


async def edit(state: SampleTools, **arguments: Any) -> str:
    return await EDITOR.call(arguments, state)


async def refused(state: SampleTools, **arguments: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await EDITOR.call(arguments, state)
    return str(caught.value)


def test_the_schema_is_the_editor_agents_know() -> None:
    schema = EDITOR.schema()["function"]
    assert schema["name"] == "text_editor"
    params = schema["parameters"]
    assert params["required"] == ["command", "path"]
    assert params["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert", "undo_edit"]
    assert set(params["properties"]) == {
        "command",
        "path",
        "file_text",
        "insert_line",
        "new_str",
        "old_str",
        "view_range",
    }
    assert params["properties"]["insert_line"]["type"] == "integer"
    assert params["properties"]["view_range"] == {**params["properties"]["view_range"], "type": "array"}


async def test_view_numbers_lines_as_cat_n(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("a.py", "x = 1\n\tindented\nlast")
    out = await edit(state, command="view", path="/workspace/a.py")
    header = "Here's the result of running `cat -n` on /workspace/a.py:\n"
    assert out == header + "     1\tx = 1\n     2\t\tindented\n     3\tlast\n"
    assert await edit(state, command="view", path="a.py") == out  # relative to the workspace
    ranged = await edit(state, command="view", path="a.py", view_range=[2, -1])
    assert ranged.splitlines()[1:] == ["     2\t\tindented", "     3\tlast"]
    assert (await edit(state, command="view", path="a.py", view_range=[1, 1])).splitlines()[1:] == ["     1\tx = 1"]
    assert "should be within the range of lines of the file: [1, 3]" in await refused(
        state, command="view", path="a.py", view_range=[4, 4]
    )
    assert "should be larger or equal than its first `3`" in await refused(
        state, command="view", path="a.py", view_range=[3, 2]
    )
    assert await refused(state, command="view", path="a.py", view_range=[1]) == (
        "Invalid `view_range`. It should be a list of two integers."
    )


async def test_a_long_file_is_clipped_with_a_note(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("big.txt", "y" * 40_000)
    out = await edit(state, command="view", path="big.txt")
    assert len(out) < 17_000 and "<response clipped>" in out and "grep -n" in out


async def test_view_of_a_directory_lists_two_levels_without_hidden_items(
    env: HostEnvironment, state: SampleTools
) -> None:
    for name in ("a.py", "pkg/mod.py", "pkg/sub/deep.py", "pkg/sub/deeper/x.py", ".git/config", "pkg/.env"):
        env.write_file(name, "")
    out = await edit(state, command="view", path="/workspace")
    assert out == (
        "Here are the files and directories up to 2 levels deep in /workspace, excluding hidden items:\n"
        "/workspace\n/workspace/a.py\n/workspace/pkg\n/workspace/pkg/mod.py\n/workspace/pkg/sub\n"
    )
    sub = await edit(state, command="view", path="pkg")
    assert sub.splitlines()[1:] == [
        "/workspace/pkg",
        "/workspace/pkg/mod.py",
        "/workspace/pkg/sub",
        "/workspace/pkg/sub/deep.py",
        "/workspace/pkg/sub/deeper",
    ]
    assert await refused(state, command="view", path="pkg", view_range=[1, 2]) == (
        "The `view_range` parameter is not allowed when `path` points to a directory."
    )
    assert await refused(state, command="str_replace", path="pkg", old_str="x") == (
        "The path /workspace/pkg is a directory and only the `view` command can be used on directories"
    )


async def test_create_makes_a_file_and_refuses_an_existing_one(env: HostEnvironment, state: SampleTools) -> None:
    assert await edit(state, command="create", path="/workspace/src/new.py", file_text="print(1)\n") == (
        "File created successfully at: /workspace/src/new.py"
    )
    assert env.read_file("src/new.py") == b"print(1)\n"
    assert await refused(state, command="create", path="src/new.py", file_text="other") == (
        "File already exists at: /workspace/src/new.py. Cannot overwrite files using command `create`."
    )
    assert await refused(state, command="create", path="src/other.py") == (
        "Parameter `file_text` is required for command: create"
    )
    assert env.read_file("src/new.py") == b"print(1)\n"


async def test_str_replace_needs_exactly_one_occurrence(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("m.py", "def f():\n    return 1\n\ndef g():\n    return 1\n")
    assert await refused(state, command="str_replace", path="m.py", old_str="return 2", new_str="x") == (
        "No replacement was performed, old_str `return 2` did not appear verbatim in /workspace/m.py."
    )
    assert await refused(state, command="str_replace", path="m.py", old_str="return 1", new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `return 1` in lines [2, 5]. "
        "Please ensure it is unique"
    )
    assert env.read_file("m.py") == b"def f():\n    return 1\n\ndef g():\n    return 1\n"
    out = await edit(
        state, command="str_replace", path="m.py", old_str="g():\n    return 1", new_str="g():\n    return 2"
    )
    assert env.read_file("m.py") == b"def f():\n    return 1\n\ndef g():\n    return 2\n"
    assert out == (
        "The file /workspace/m.py has been edited. Here's the result of running `cat -n` on a snippet of "
        "/workspace/m.py:\n     1\tdef f():\n     2\t    return 1\n     3\t\n     4\tdef g():\n     5\t    return 2\n"
        "     6\t\nReview the changes and make sure they are as expected. Edit the file again if necessary."
    )
    await edit(state, command="str_replace", path="m.py", old_str="def f():\n")  # no new_str: deleted
    assert env.read_file("m.py") == b"    return 1\n\ndef g():\n    return 2\n"
    assert await refused(state, command="str_replace", path="m.py") == (
        "Parameter `old_str` is required for command: str_replace"
    )


async def test_str_replace_keeps_tabs(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("Makefile", "all:\n\techo hi\n")
    await edit(state, command="str_replace", path="Makefile", old_str="echo hi", new_str="echo bye")
    assert env.read_file("Makefile") == b"all:\n\techo bye\n"


async def test_insert_goes_after_the_line(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("t.txt", "one\ntwo\nthree")
    out = await edit(state, command="insert", path="t.txt", insert_line=1, new_str="one and a half")
    assert env.read_file("t.txt") == b"one\none and a half\ntwo\nthree"
    assert out.startswith("The file /workspace/t.txt has been edited. Here's the result of running `cat -n` on a ")
    assert "     2\tone and a half\n" in out and "(correct indentation, no duplicate lines, etc)" in out
    await edit(state, command="insert", path="t.txt", insert_line=0, new_str="zero")
    assert env.read_file("t.txt").startswith(b"zero\none\n")
    assert await refused(state, command="insert", path="t.txt", insert_line=9, new_str="x") == (
        "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 5]"
    )
    assert await refused(state, command="insert", path="t.txt", new_str="x") == (
        "Parameter `insert_line` is required for command: insert"
    )


async def test_undo_edit_walks_back_through_the_history(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("u.py", "v = 0\n")
    await edit(state, command="str_replace", path="u.py", old_str="0", new_str="1")
    await edit(state, command="insert", path="u.py", insert_line=1, new_str="w = 2")
    assert env.read_file("u.py") == b"v = 1\nw = 2\n"
    out = await edit(state, command="undo_edit", path="/workspace/u.py")
    assert out.startswith("Last edit to /workspace/u.py undone successfully. Here's the result of running `cat -n`")
    assert env.read_file("u.py") == b"v = 1\n"
    await edit(state, command="undo_edit", path="u.py")
    assert env.read_file("u.py") == b"v = 0\n"
    assert await refused(state, command="undo_edit", path="u.py") == "No edit history found for /workspace/u.py."
    other = ToolSet([EDITOR]).for_sample(environment=env)  # another sample: its own history
    await edit(state, command="str_replace", path="u.py", old_str="0", new_str="5")
    assert await refused(other, command="undo_edit", path="u.py") == "No edit history found for /workspace/u.py."


async def test_undo_of_a_creation_deletes_the_file(env: HostEnvironment, state: SampleTools) -> None:
    await edit(state, command="create", path="made.txt", file_text="hi")
    assert await edit(state, command="undo_edit", path="made.txt") == "File deleted at: /workspace/made.txt"
    assert "made.txt" not in env.list_files()
    assert [(c["written"], c["deleted"]) for c in changes_of(state)] == [(["made.txt"], []), ([], ["made.txt"])]


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "/workspace/../etc/passwd", "/workspacex/a"])
async def test_paths_outside_the_workspace_are_refused(state: SampleTools, path: str) -> None:
    message = await refused(state, command="create", path=path, file_text="x")
    assert "is outside the workspace" in message


async def test_a_link_planted_to_leave_the_workspace_is_refused(
    env: HostEnvironment, state: SampleTools, tmp_path: Any
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP")
    os.symlink(secret, env.root / "link.txt")
    message = await refused(state, command="view", path="link.txt")
    assert "outside the workspace" in message and "TOP" not in message
    await refused(state, command="str_replace", path="link.txt", old_str="TOP", new_str="x")
    assert secret.read_text() == "TOP"


async def test_a_missing_path_and_a_bad_command_are_said(state: SampleTools) -> None:
    assert await refused(state, command="view", path="nope.py") == (
        "The path /workspace/nope.py does not exist. Please provide a valid path."
    )
    assert await refused(state, command="delete", path="x") == (
        "Unrecognized command delete. The allowed commands for the text_editor tool are: "
        "view, create, str_replace, insert, undo_edit"
    )
    assert "takes no argument(s) ['mode']" in await refused(state, command="view", path="x", mode="r")


async def test_without_an_environment_it_says_it_needs_one() -> None:
    bare = ToolSet([EDITOR]).for_sample()
    with pytest.raises(ToolError, match="text_editor needs an environment"):
        await EDITOR.call({"command": "view", "path": "/workspace"}, bare)
