"""The sample's persistent bash session: cwd, variables and functions carry over; stdin never hangs it; output is
capped; a command that times out kills the session and the next call says it starts afresh."""

from __future__ import annotations

import time

from tests.environments.env_support import environment, needs_bwrap, spec

pytestmark = needs_bwrap


async def test_cwd_variables_and_functions_persist_between_calls() -> None:
    async with environment(spec(files={"sub/f.txt": "in sub\n"})) as env:
        shell = await env.shell()
        assert shell is await env.shell()
        first = await shell.run("cd sub && export GREETING=hello && twice() { echo $1$1; }", timeout_s=5)
        assert first.exit_code == 0 and first.output == ""
        second = await shell.run('pwd; echo "$GREETING"; twice ab; cat f.txt; echo oops >&2; false', timeout_s=5)
        assert second.output == "/workspace/sub\nhello\nabab\nin sub\noops\n" and second.exit_code == 1


async def test_stdin_readers_syntax_errors_and_big_output_do_not_break_the_protocol() -> None:
    async with environment() as env:
        shell = await env.shell()
        started = time.monotonic()
        reader = await shell.run("cat; read -r line; echo read:$?", timeout_s=5)
        assert reader.output == "read:1\n" and time.monotonic() - started < 2
        broken = await shell.run("echo 'unbalanced", timeout_s=5)
        assert broken.exit_code == 2 and "unexpected EOF" in broken.output
        big = await shell.run("seq 1 200000", timeout_s=10)
        assert big.exit_code == 0 and len(big.output) < 70_000
        assert big.output.startswith("1\n2\n") and big.output.endswith("199999\n200000\n")
        assert "[... output truncated ...]" in big.output
        after = await shell.run("echo still here", timeout_s=5)
        assert after.output == "still here\n"


async def test_a_time_out_kills_the_session_and_the_next_call_starts_a_fresh_one() -> None:
    async with environment() as env:
        shell = await env.shell()
        await shell.run("cd /tmp && export KEPT=1 && echo partial", timeout_s=5)
        started = time.monotonic()
        slow = await shell.run("echo before; sleep 30", timeout_s=0.5)
        assert slow.timed_out and slow.exit_code is None and time.monotonic() - started < 2
        assert slow.output.startswith("before\n") and "timed out after 0.5 s" in slow.output
        fresh = await shell.run('pwd; echo "kept=$KEPT"', timeout_s=5)
        assert "a new shell session started" in fresh.output
        assert fresh.output.endswith("/workspace\nkept=\n") and fresh.exit_code == 0
        ended = await shell.run("exit 4", timeout_s=5)
        assert ended.exit_code == 4
        again = await shell.run("echo back", timeout_s=5)
        assert "exited with 4" in again.output and again.output.endswith("back\n")
