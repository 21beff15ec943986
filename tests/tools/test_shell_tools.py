"""bash keeps one shell session per sample (cd, variables), python starts fresh each call, think changes nothing;
each call of bash, python and text_editor records the files it wrote and deleted and its exit code."""

from __future__ import annotations

import pytest

from assay.tools.base import CALL_ID, SampleTools, ToolError, ToolSet
from assay.tools.standard import BashTool, PythonCodeTool, TextEditorTool, ThinkTool, changes, changes_of
from tests.environments.hostenv import HostEnvironment

BASH = BashTool(timeout_s=5)
PYTHON = PythonCodeTool(timeout_s=5)


async def test_schemas_take_cmd_code_and_thought() -> None:
    for tool, arg in ((BASH, "cmd"), (PYTHON, "code"), (ThinkTool(), "thought")):
        params = tool.schema()["function"]["parameters"]
        assert list(params["properties"]) == [arg] and params["required"] == [arg]
        assert params["properties"][arg]["type"] == "string"
    assert [t.name for t in (BASH, PYTHON, TextEditorTool(), ThinkTool())] == ["bash", "python", "text_editor", "think"]


async def test_bash_is_one_session_per_sample(env: HostEnvironment, state: SampleTools) -> None:
    await BASH.call({"cmd": "mkdir -p sub && cd sub && export GREETING=hello"}, state)
    where = await BASH.call({"cmd": "pwd; echo $GREETING"}, state)
    assert where.splitlines() == [str(env.root / "sub"), "hello"]
    assert (await BASH.call({"cmd": "echo out; echo err >&2"}, state)).splitlines() == ["out", "err"]


async def test_bash_says_the_exit_code_and_restarts_after_a_time_out(env: HostEnvironment, state: SampleTools) -> None:
    with pytest.raises(ToolError) as failed:
        await BASH.call({"cmd": "echo partial; exit_with() { return $1; }; exit_with 3"}, state)
    assert str(failed.value) == "exit code 3\npartial"
    quick = BashTool(timeout_s=0.5)
    await quick.call({"cmd": "cd /tmp"}, state)
    with pytest.raises(ToolError, match=r"^timed out after 0\.5s\nstarted"):
        await quick.call({"cmd": "echo started; sleep 10"}, state)
    assert (await quick.call({"cmd": "pwd"}, state)).strip() == str(env.root)  # a fresh session, in the workspace
    assert [c["exit_code"] for c in changes_of(state)] == [3, 0, None, 0]
    assert [c["timed_out"] for c in changes_of(state)] == [False, False, True, False]


async def test_python_runs_each_call_fresh_in_the_workspace(env: HostEnvironment, state: SampleTools) -> None:
    assert await PYTHON.call({"code": "x = 41\nopen('kept.txt', 'w').write(str(x + 1))\nprint(x)"}, state) == "41\n"
    assert await PYTHON.call({"code": "print(open('kept.txt').read())"}, state) == "42\n"
    with pytest.raises(ToolError) as failed:
        await PYTHON.call({"code": "print(x)"}, state)
    assert str(failed.value).startswith("exit code 1\nTraceback") and "NameError" in str(failed.value)
    with pytest.raises(ToolError, match=r"timed out after 0\.3s"):
        await PythonCodeTool(timeout_s=0.3).call({"code": "import time; time.sleep(5)"}, state)


async def test_think_returns_nothing_and_records_nothing(state: SampleTools) -> None:
    assert await ThinkTool().call({"thought": "first the tests"}, state) == ""
    assert changes_of(state) == []
    with pytest.raises(ToolError, match="needs a string argument 'thought'"):
        await ThinkTool().call({}, state)


async def test_each_call_records_what_it_changed(env: HostEnvironment, state: SampleTools) -> None:
    env.write_file("old.txt", "x")
    env.write_file("same.txt", "y")
    token = CALL_ID.set("call_7")
    try:
        await BASH.call({"cmd": "echo hi > new.txt; rm old.txt; touch same.txt; mkdir d; echo z > d/z.txt"}, state)
    finally:
        CALL_ID.reset(token)
    await PYTHON.call({"code": "open('new.txt', 'a').write('more')"}, state)
    with pytest.raises(ToolError):
        await BASH.call({"cmd": "echo q > q.txt; false"}, state)
    await TextEditorTool().call({"command": "view", "path": "new.txt"}, state)
    assert changes_of(state) == [
        {
            "tool": "bash",
            "call_id": "call_7",
            "written": ["d/z.txt", "new.txt"],
            "deleted": ["old.txt"],
            "exit_code": 0,
            "timed_out": False,
        },
        {"tool": "python", "call_id": None, "written": ["new.txt"], "deleted": [], "exit_code": 0, "timed_out": False},
        {"tool": "bash", "call_id": None, "written": ["q.txt"], "deleted": [], "exit_code": 1, "timed_out": False},
        {"tool": "text_editor", "call_id": None, "written": [], "deleted": [], "exit_code": None, "timed_out": False},
    ]


async def test_a_large_workspace_is_not_compared(
    env: HostEnvironment, state: SampleTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "MAX_TRACKED_FILES", 2)
    for i in range(3):
        env.write_file(f"f{i}.txt", "x")
    await BASH.call({"cmd": "echo changed > f0.txt"}, state)
    assert changes_of(state)[-1]["written"] is None and changes_of(state)[-1]["deleted"] is None


async def test_without_an_environment_the_tools_say_so() -> None:
    bare = ToolSet([BASH, PYTHON]).for_sample()
    for tool, args in ((BASH, {"cmd": "ls"}), (PYTHON, {"code": "1"})):
        with pytest.raises(ToolError, match=f"{tool.name} needs an environment"):
            await tool.call(args, bare)
    assert [c["written"] for c in changes_of(bare)] == [None, None]  # recorded, nothing compared
