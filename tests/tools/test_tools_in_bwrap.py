"""The standard tools in the real bubblewrap environment: an agent's bash, python and text_editor calls act on the
sample's workspace at /workspace, the editor's edits are what bash then runs, and each call's changes are recorded."""

from __future__ import annotations

import pytest

from assay.tools.base import ToolError, ToolSet
from assay.tools.standard import BashTool, PythonCodeTool, TextEditorTool, changes_of
from tests.environments.env_support import environment, needs_bwrap, spec

pytestmark = needs_bwrap

BUGGY = "def add(a, b):\n    return a - b\n"


async def test_bash_python_and_text_editor_fix_a_bug_in_the_workspace() -> None:
    bash, python, editor = BashTool(timeout_s=10), PythonCodeTool(timeout_s=10), TextEditorTool()
    async with environment(spec(files={"calc.py": BUGGY, "tests/test_calc.py": "import calc\n"})) as env:
        state = ToolSet([bash, python, editor]).for_sample(environment=env)
        listing = await editor.call({"command": "view", "path": "/workspace"}, state)
        assert "/workspace/calc.py" in listing.splitlines()
        sub = await editor.call({"command": "view", "path": "tests"}, state)
        assert sub.splitlines()[1:] == ["/workspace/tests", "/workspace/tests/test_calc.py"]
        check = "python3 -B -c 'import calc; print(calc.add(2, 3))'"
        assert (await bash.call({"cmd": check}, state)).strip() == "-1"
        await editor.call(
            {"command": "str_replace", "path": "/workspace/calc.py", "old_str": "a - b", "new_str": "a + b"}, state
        )
        await bash.call({"cmd": "cd /workspace && mkdir -p out"}, state)
        assert (await bash.call({"cmd": f"{check} > out/result.txt; pwd"}, state)).strip() == "/workspace"
        assert env.read_file("out/result.txt") == b"5\n"
        assert (await python.call({"code": "import os; print(os.getcwd())"}, state)).strip() == "/workspace"
        with pytest.raises(ToolError, match="exit code 2"):
            await bash.call({"cmd": "rm out/result.txt; exit 2"}, state)
        undone = await editor.call({"command": "undo_edit", "path": "calc.py"}, state)
        assert undone.startswith("Last edit to /workspace/calc.py undone successfully.")
        assert env.read_file("calc.py").decode() == BUGGY
        with pytest.raises(ToolError, match="outside the workspace"):
            await editor.call({"command": "view", "path": "/etc/passwd"}, state)
        records = [(c["tool"], c["written"], c["deleted"], c["exit_code"]) for c in changes_of(state)]
        assert records == [
            ("text_editor", [], [], None),
            ("text_editor", [], [], None),
            ("bash", [], [], 0),
            ("text_editor", ["calc.py"], [], None),
            ("bash", [], [], 0),
            ("bash", ["out/result.txt"], [], 0),
            ("python", [], [], 0),
            ("bash", [], ["out/result.txt"], 2),
            ("text_editor", ["calc.py"], [], None),
            ("text_editor", [], [], None),
        ]
