"""``text_editor``: view, create and edit workspace files with the commands and messages of Anthropic's text editor
tool as inspect's ``text_editor`` gives them (``view``, ``create``, ``str_replace``, ``insert``, ``undo_edit``).

It acts through the environment's file methods (which keep every path inside the workspace). Unlike those tools it
takes paths relative to the workspace as well as absolute ones, and it keeps tabs as they are (they expand tabs in
the files they edit, which breaks a Makefile). Each sample keeps its own edit history for ``undo_edit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.environments.base import WORKSPACE, Environment
from assay.tools.base import SampleTools, Tool, ToolError
from assay.tools.standard.args import check_names, text
from assay.tools.standard.changes import Change
from assay.tools.standard.paths import workspace_path
from assay.tools.standard.view import directory_listing, numbered

COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
HISTORY = "text_editor_history"  # resources key: relative path -> earlier contents (None: the file was created)
SNIPPET_LINES = 4  # lines shown around an edit

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "enum": list(COMMANDS),
            "description": "Which command to run: `view`, `create`, `str_replace`, `insert` or `undo_edit`.",
        },
        "path": {
            "type": "string",
            "description": "The file or directory, absolute (e.g. `/workspace/app.py`, `/workspace`) or relative to "
            "/workspace.",
        },
        "file_text": {
            "type": "string",
            "description": "For `create` (required): the whole content of the new file.",
        },
        "insert_line": {
            "type": "integer",
            "description": "For `insert` (required): `new_str` goes AFTER this line of the file (0: at the top).",
        },
        "new_str": {
            "type": "string",
            "description": "For `str_replace` (optional): the text that replaces `old_str` (left out: `old_str` is "
            "deleted). For `insert` (required): the text to insert.",
        },
        "old_str": {
            "type": "string",
            "description": "For `str_replace` (required): the text of the file to replace; it must occur exactly once.",
        },
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "For `view` of a file (optional): the lines to show, `[first, last]`, counted from 1 and "
            "both included; `[first, -1]` shows from `first` to the end. Left out, the whole file is shown.",
        },
    },
    "required": ["command", "path"],
}

DESCRIPTION = """A text editor for viewing, creating and editing files; what it does persists between calls.
* `view` of a file shows it numbered as `cat -n` does; `view` of a directory lists its files and directories two \
levels deep, leaving out hidden ones.
* `create` makes a new file; it refuses a `path` that already exists.
* `str_replace` replaces `old_str` by `new_str`. `old_str` must match the file EXACTLY (whitespace included), \
usually one or more whole consecutive lines, and must occur only once: when it occurs more often nothing is replaced, \
so give enough surrounding lines to make it unique.
* `insert` puts `new_str` after line `insert_line`.
* `undo_edit` reverts the last edit of the file at `path`.
* Long outputs are cut and marked with `<response clipped>`."""


def _read(env: Environment, relative: str, absolute: str) -> str | None:
    """A file's text; None when it is not a file (missing, or a directory)."""
    if not relative:
        return None
    try:
        data = env.read_file(relative)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except ValueError as err:  # a link leaving the workspace, or not a regular file (a directory, for some providers)
        if _is_dir(env, relative):
            return None
        raise ToolError(str(err)) from None
    except OSError as err:
        raise ToolError(f"Ran into {err} while trying to read {absolute}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ToolError(f"Ran into {err} while trying to read {absolute}") from None


def _is_dir(env: Environment, relative: str) -> bool:
    """True for the workspace itself or a folder holding files."""
    return not relative or any(name.startswith(relative + "/") for name in env.list_files())


def _write(env: Environment, relative: str, absolute: str, content: str) -> None:
    """Replace a file's text, as the model is told of a failure."""
    try:
        env.write_file(relative, content)
    except ValueError as err:
        raise ToolError(str(err)) from None
    except OSError as err:
        raise ToolError(f"Ran into {err} while trying to write to {absolute}") from None


@dataclass(frozen=True)
class _Target:
    """The file one call acts on (relative to the workspace and as the model named it) and where what the call did
    is kept: the sample's edit history for ``undo_edit`` and the call's change record."""

    env: Environment
    relative: str
    absolute: str
    state: SampleTools
    change: Change

    def history(self) -> dict[str, list[str | None]]:
        """The sample's edit history: each edited file's earlier contents, the last last (None: it was created)."""
        history: dict[str, list[str | None]] = self.state.resources.setdefault(HISTORY, {})
        return history

    def save(self, content: str, previous: str | None) -> None:
        """Write the file's new text, remember what it was before (None: nothing) and record the call wrote it."""
        _write(self.env, self.relative, self.absolute, content)
        self.history().setdefault(self.relative, []).append(previous)
        self.change.written = [self.relative]


def _start_lines(content: str, old: str) -> list[int]:
    """The line (from 1) where each non-overlapping occurrence of ``old`` starts."""
    lines, at = [], content.find(old)
    while at != -1:
        lines.append(content.count("\n", 0, at) + 1)
        at = content.find(old, at + len(old))
    return lines


class TextEditorTool(Tool):
    """The five editor commands on the sample's workspace, with a per-sample edit history for ``undo_edit``."""

    OPTIONS: tuple[str, ...] = ()
    needs_environment = True
    needs_workspace = True

    def __init__(self, *, name: str | None = None) -> None:
        self.name = name or "text_editor"
        self.description = DESCRIPTION
        self.parameters = PARAMETERS

    async def call(self, arguments: dict[str, Any], state: SampleTools) -> str:
        change = Change(self.name)
        try:
            return await self._run(arguments, state, change)
        finally:
            change.record(state)

    async def _run(self, arguments: dict[str, Any], state: SampleTools, change: Change) -> str:
        check_names(arguments, PARAMETERS["properties"], self.name)
        command = arguments.get("command")
        if command not in COMMANDS:
            raise ToolError(
                f"Unrecognized command {command}. The allowed commands for the {self.name} tool are: "
                + ", ".join(COMMANDS)
            )
        env = state.require_environment(self.name)
        relative, absolute = workspace_path(text(arguments, "path", self.name))
        content = _read(env, relative, absolute)
        is_dir = content is None and _is_dir(env, relative)
        target = _Target(env, relative, absolute, state, change)
        if command == "create":
            if content is not None or is_dir:
                raise ToolError(f"File already exists at: {absolute}. Cannot overwrite files using command `create`.")
            return self._create(target, arguments)
        if is_dir:
            if command == "view":
                return self._view_dir(env, arguments, relative, absolute)
            raise ToolError(
                f"The path {absolute} is a directory and only the `view` command can be used on directories"
            )
        if content is None:
            raise ToolError(f"The path {absolute} does not exist. Please provide a valid path.")
        if command == "view":
            return self._view(arguments, content, absolute)
        if command == "str_replace":
            return self._str_replace(target, arguments, content)
        if command == "insert":
            return self._insert(target, arguments, content)
        return await self._undo(target)

    def _view_dir(self, env: Environment, arguments: dict[str, Any], relative: str, absolute: str) -> str:
        if arguments.get("view_range"):
            raise ToolError("The `view_range` parameter is not allowed when `path` points to a directory.")
        return directory_listing(env.list_files(), relative, absolute)

    def _view(self, arguments: dict[str, Any], content: str, absolute: str) -> str:
        view_range = arguments.get("view_range")
        if not view_range:
            return numbered(content, absolute)
        if (
            not isinstance(view_range, list)
            or len(view_range) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in view_range)
        ):
            raise ToolError("Invalid `view_range`. It should be a list of two integers.")
        lines = content.split("\n")
        first, last = view_range
        if first < 1 or first > len(lines):
            raise ToolError(
                f"Invalid `view_range`: {view_range}. Its first element `{first}` should be within the range of lines "
                f"of the file: {[1, len(lines)]}"
            )
        if last > len(lines):
            raise ToolError(
                f"Invalid `view_range`: {view_range}. Its second element `{last}` should be smaller than the number "
                f"of lines in the file: `{len(lines)}`"
            )
        if last != -1 and last < first:
            raise ToolError(
                f"Invalid `view_range`: {view_range}. Its second element `{last}` should be larger or equal than its "
                f"first `{first}`"
            )
        shown = lines[first - 1 :] if last == -1 else lines[first - 1 : last]
        return numbered("\n".join(shown), absolute, first)

    def _create(self, target: _Target, arguments: dict[str, Any]) -> str:
        file_text = arguments.get("file_text")
        if not isinstance(file_text, str):
            raise ToolError("Parameter `file_text` is required for command: create")
        target.save(file_text, None)
        return f"File created successfully at: {target.absolute}"

    def _str_replace(self, target: _Target, arguments: dict[str, Any], content: str) -> str:
        absolute = target.absolute
        old, new = arguments.get("old_str"), arguments.get("new_str")
        if not isinstance(old, str) or not old:
            raise ToolError("Parameter `old_str` is required for command: str_replace")
        if new is not None and not isinstance(new, str):
            raise ToolError("Parameter `new_str` of command str_replace must be a string")
        new = new or ""
        starts = _start_lines(content, old)
        if not starts:
            raise ToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim in {absolute}.")
        if len(starts) > 1:
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines {starts}. "
                "Please ensure it is unique"
            )
        edited = content.replace(old, new, 1)
        target.save(edited, content)
        line = starts[0] - 1
        start, end = max(0, line - SNIPPET_LINES), line + SNIPPET_LINES + new.count("\n")
        snippet = "\n".join(edited.split("\n")[start : end + 1])
        return (
            f"The file {absolute} has been edited. "
            + numbered(snippet, f"a snippet of {absolute}", start + 1)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )

    def _insert(self, target: _Target, arguments: dict[str, Any], content: str) -> str:
        at, new = arguments.get("insert_line"), arguments.get("new_str")
        if not isinstance(at, int) or isinstance(at, bool):
            raise ToolError("Parameter `insert_line` is required for command: insert")
        if not isinstance(new, str):
            raise ToolError("Parameter `new_str` is required for command: insert")
        lines = content.split("\n")
        if at < 0 or at > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {at}. It should be within the range of lines of the file: "
                f"{[0, len(lines)]}"
            )
        added = new.split("\n")
        target.save("\n".join(lines[:at] + added + lines[at:]), content)
        snippet = "\n".join(lines[max(0, at - SNIPPET_LINES) : at] + added + lines[at : at + SNIPPET_LINES])
        return (
            f"The file {target.absolute} has been edited. "
            + numbered(snippet, "a snippet of the edited file", max(1, at - SNIPPET_LINES + 1))
            + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
            "Edit the file again if necessary."
        )

    async def _undo(self, target: _Target) -> str:
        env, relative, absolute = target.env, target.relative, target.absolute
        earlier = target.history().get(relative)
        if not earlier:
            raise ToolError(f"No edit history found for {absolute}.")
        previous = earlier.pop()
        if previous is None:  # the edit was its creation
            result = await env.exec(["rm", "-f", "--", relative], cwd=WORKSPACE, timeout_s=30)
            if result.returncode:
                why = result.stderr.decode("utf-8", errors="replace").strip()
                raise ToolError(f"Ran into {why or f'exit code {result.returncode}'} while trying to delete {absolute}")
            target.change.deleted = [relative]
            return f"File deleted at: {absolute}"
        _write(env, relative, absolute, previous)
        target.change.written = [relative]
        return f"Last edit to {absolute} undone successfully. {numbered(previous, absolute)}"
