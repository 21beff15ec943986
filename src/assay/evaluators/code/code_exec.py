"""``code_exec``: run model-written Python against the task's tests (HumanEval / MBPP style) in a sandbox.

Off unless the user opts in with ``allow_untrusted_code: true`` (or ``ASSAY_ALLOW_UNTRUSTED_CODE=1``), because it
runs code nobody reviewed on this machine. The code runs under bubblewrap (``bwrap.py``); the tests run in a
separate trusted process that calls it across a data-only boundary (``runner.py``), so the code cannot fake its
score. Passed, failed (which test, its message), timed out and crashed are failures with reasons; a sandbox that
cannot be made here is a ConfigError when the evaluator is built, one that fails later an error verdict.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from assay.errors import ConfigError, EvaluationInputError
from assay.evaluators.base import Evaluator, Options, as_text
from assay.evaluators.code.harness import Outcome, run_tests
from assay.evaluators.registry import register
from assay.sandbox.box import SandboxError, signal_name
from assay.sandbox.bwrap import find_host
from assay.sandbox.limits import Limits
from assay.verdict import Verdict

OPT_IN_ENV = "ASSAY_ALLOW_UNTRUSTED_CODE"
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class CodeExecOptions(Options):
    allow_untrusted_code: bool = Field(
        False,
        description="opt in to running model-written code on this machine (in the sandbox); without it, or "
        "ASSAY_ALLOW_UNTRUSTED_CODE=1, the evaluator refuses to start",
    )
    timeout_s: float = Field(
        10.0, gt=0, le=600, description="wall-clock seconds one sample's program and tests may run (also its CPU limit)"
    )
    memory_mb: int = Field(
        512, ge=64, description="address-space limit per sandboxed process, in MB; raise it for numpy-heavy solutions"
    )
    memory_total_mb: int | None = Field(
        None,
        ge=64,
        description="memory of all the sample's sandboxed processes and files together, in MB (where a memory "
        "cgroup can be made: as root); null: twice memory_mb",
    )
    disk_mb: int = Field(
        256,
        ge=1,
        description="size of all the files the sample's program writes (work directory, /tmp, /dev/shm) together, "
        "in MB (where a tmpfs can be mounted: as root)",
    )
    max_processes: int = Field(
        32, ge=1, description="processes and threads a sandboxed program may run at once (stops fork bombs)"
    )
    style: Literal["auto", "program", "asserts", "cases"] = Field(
        "auto",
        description="how the expected value holds the tests: 'program' a HumanEval check(candidate) program, "
        "'asserts' a list of MBPP assert lines, 'cases' input/output pairs for a function; 'auto' tells by its shape",
    )
    entry_point: str | None = Field(
        None,
        description="the function a 'program' test passes to check(); null reads the expected value's entry_point",
    )
    function: str | None = Field(
        None,
        description="the function the 'cases' style calls with each input; null reads the expected value's "
        "function or fn_name",
    )
    extract_code: bool = Field(
        True,
        description="run only the code in the output's Markdown code fences (python or unlabelled), joined, when "
        "it has any; false runs the output as it is",
    )
    code_prefix: str | None = Field(None, pattern=r"^(doc|metadata)\..+", description="e.g. doc.prompt (HumanEval)")
    max_parallel: int | None = Field(
        None, ge=1, description="sandboxes run at once per event loop; null: one per CPU core"
    )
    sandbox_python: str | None = Field(
        None,
        description="the Python run in the sandbox, a CPython 3.8+ its user can run (default: assay's own when that "
        "user can run it, else the newest other one it can; details.isolation.python names the one used)",
    )


def extract_code(text: str) -> str:
    """The code of an output: its fenced ```python blocks joined, or the whole text when it has none."""
    blocks = _FENCE.findall(text)
    return "\n\n".join(b.strip("\n") for b in blocks) if blocks else text


def _opted_in(options: CodeExecOptions) -> bool:
    return options.allow_untrusted_code or os.environ.get(OPT_IN_ENV, "").strip().lower() in ("1", "true", "yes")


def _as_strings(value: Any) -> list[str] | None:
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def tests_spec(expected: Any, o: CodeExecOptions) -> dict[str, Any]:
    """The test process's spec from what the task expects: a test program, a list of asserts, or function cases."""
    style, entry, function = o.style, o.entry_point, o.function
    if isinstance(expected, Mapping):
        entry = entry or expected.get("entry_point")
        function = function or expected.get("function") or expected.get("fn_name")
        if style in ("auto", "cases") and "cases" in expected:
            cases = expected["cases"]
            if not function or not isinstance(cases, list):
                raise EvaluationInputError("code_exec: cases need a 'function' name and a list of {input, output}")
            return {"style": "cases", "function": function, "cases": cases}
        for key in ("asserts", "test_list", "tests"):
            asserts = _as_strings(expected.get(key))
            if asserts is not None and style in ("auto", "asserts"):
                setup = expected.get("test_setup_code") or expected.get("setup") or ""
                return {"style": "asserts", "tests": asserts, "setup": setup}
        program = expected.get("test") or expected.get("program")
        if isinstance(program, str) and style in ("auto", "program"):
            return {"style": "program", "tests": program, "entry_point": entry}
        raise EvaluationInputError(
            f"code_exec: expected has none of 'test', 'asserts'/'test_list', 'cases' (keys: {sorted(expected)})"
        )
    asserts = _as_strings(expected)
    if asserts is not None and style in ("auto", "asserts"):
        return {"style": "asserts", "tests": asserts}
    if isinstance(expected, list) and style in ("auto", "cases"):
        if not function:
            raise EvaluationInputError("code_exec: input/output cases need the option 'function'")
        return {"style": "cases", "function": function, "cases": expected}
    if isinstance(expected, str) and expected.strip() and style in ("auto", "program"):
        return {"style": "program", "tests": expected, "entry_point": entry}
    raise EvaluationInputError(f"code_exec: no tests to run (expected is {type(expected).__name__}: {expected!r:.80})")


def verdict_for(outcome: Outcome, limits: Limits) -> Verdict:
    """A verdict from a finished run: pass, or a failure saying what happened and what to do."""
    r = outcome.result
    details: dict[str, Any] = {
        "outcome": outcome.outcome,
        "seconds": round(outcome.seconds, 3),
        "isolation": outcome.isolation,
        "tests_passed": r.get("tests_passed"),
        "tests_total": r.get("tests_total"),
    }
    if outcome.stdout_tail:
        details["stdout_tail"] = outcome.stdout_tail[-500:]
    if outcome.outcome == "passed":
        return Verdict.pass_(1.0, details)
    if outcome.outcome == "error":  # the task's tests cannot be run this way: not the code's fault
        return Verdict.errored(f"code_exec: {r.get('message') or 'the tests could not be run'}")
    sig = signal_name(outcome.returncode)
    if outcome.outcome == "timed_out" or (outcome.outcome == "crashed" and sig == "SIGXCPU"):
        # The CPU limit equals the wall limit, and a busy loop reaches either first depending on the machine's
        # load: both are the same time-out, reported alike.
        where = f" (in `{outcome.running}`)" if outcome.running else ""
        details["outcome"], details["running"] = "timed_out", outcome.running
        wall = outcome.outcome == "timed_out"
        limit = (
            f"ran past the {limits.timeout_s:g} s time limit"
            if wall
            else f"reached the {limits.cpu_seconds} s CPU time limit"
        )
        return Verdict.fail(
            f"timed out: the program {limit}{where}",
            feedback="The code did not finish in time: look for an infinite loop, a blocking call or a slow algorithm.",
            details=details,
        )
    if outcome.outcome == "failed":
        test, message = r.get("failed_test"), r.get("message") or "failed"
        if outcome.out_of_memory:  # a process the code started was killed, and the tests saw what that did
            message += (
                f" (a process of the program was killed: its processes and files together reached the "
                f"{limits.total_memory_mb} MB memory limit)"
            )
            details["out_of_memory"] = True
        details["failed_test"], details["message"] = test, message
        if r.get("line"):
            details["line"] = r["line"]
        where = f"test `{test}` failed: " if test else ""
        return Verdict.fail(
            f"{where}{message}",
            feedback=f"Make the code satisfy `{test}` (it failed with {message})." if test else f"Fix: {message}.",
            details=details,
        )
    message = r.get("message")
    if outcome.out_of_memory:
        message = (
            f"out of memory: the program's processes and files together reached the {limits.total_memory_mb} MB "
            "limit" + (f" (killed by {sig})" if sig else "")
        )
    elif sig == "SIGXFSZ":
        message = "killed for writing a file past the size limit"
    elif sig is not None:
        message = f"killed by {sig}"
    elif message is None or message.startswith("the program ended"):
        tail = outcome.stderr_tail.strip().splitlines()
        code = outcome.returncode
        message = f"exited with code {code} before its tests finished" + (f": {tail[-1][:200]}" if tail else "")
    if "memory" in (message or "").lower() and not outcome.out_of_memory:
        message = f"{message} (limit {limits.memory_mb} MB)"
    details["message"] = message
    return Verdict.fail(
        f"crashed: {message}",
        feedback="The program crashed before its tests finished: " + (message or "") + ".",
        details=details,
    )


@register("code_exec")
class CodeExec(Evaluator):
    """Run generated Python against the task's tests in a sandbox; passes when every test passes."""

    Options = CodeExecOptions

    def setup(self) -> None:
        o = self.options
        assert isinstance(o, CodeExecOptions)
        if not _opted_in(o):
            raise ConfigError(
                "code_exec: this evaluator runs model-written code on this machine; opt in with "
                f"'allow_untrusted_code: true' (or {OPT_IN_ENV}=1) once you accept that"
            )
        find_host(o.sandbox_python)  # no sandbox here: a ConfigError now, saying how to install bubblewrap
        self._limits = Limits(
            timeout_s=o.timeout_s,
            memory_mb=o.memory_mb,
            max_processes=o.max_processes,
            memory_total_mb=o.memory_total_mb,
            disk_mb=o.disk_mb,
        )
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        o = self.options
        assert isinstance(o, CodeExecOptions)
        sem = self._semaphores.get(id(loop))
        if sem is None:
            sem = self._semaphores[id(loop)] = asyncio.Semaphore(o.max_parallel or os.cpu_count() or 1)
        return sem

    def _prefix(self, context: Mapping[str, Any] | None) -> str:
        """The code that goes before the output's (HumanEval: the prompt with the signature), from the sample."""
        o = self.options
        assert isinstance(o, CodeExecOptions)
        if o.code_prefix is None:
            return ""
        source, _, path = o.code_prefix.partition(".")
        value: Any = (context or {}).get(source)
        for part in path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise EvaluationInputError(f"code_exec: code_prefix {o.code_prefix!r}: the sample has no such field")
            value = value[part]
        return value if isinstance(value, str) else str(value)

    async def _run(self, actual: Any, expected: Any, context: Mapping[str, Any] | None = None) -> Verdict:
        o = self.options
        assert isinstance(o, CodeExecOptions)
        text = as_text(actual, self.name)
        prefix = self._prefix(context)
        code = prefix + (extract_code(text) if o.extract_code else text)
        spec = {**tests_spec(expected, o), "prefix": prefix}  # the prefix is the task's: its helpers stay trusted
        async with self._semaphore():
            outcome = await run_tests(code, spec, self._limits, python=o.sandbox_python)
        return verdict_for(outcome, self._limits)

    async def aevaluate(
        self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None
    ) -> Verdict:
        try:
            return await self._run(actual, expected, context)
        except (EvaluationInputError, SandboxError, ConfigError) as exc:
            return Verdict.errored(str(exc))
        except Exception as exc:
            return Verdict.errored(f"{self.name} raised {type(exc).__name__}: {exc}")

    def evaluate(self, actual: Any, expected: Any = None, *, context: Mapping[str, Any] | None = None) -> Verdict:
        """Synchronous form (also from inside a running event loop, in a thread)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.aevaluate(actual, expected, context=context))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.aevaluate(actual, expected, context=context)).result()

    def check(self, actual: Any, expected: Any) -> Verdict:
        return self.evaluate(actual, expected)
