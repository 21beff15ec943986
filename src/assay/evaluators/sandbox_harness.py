"""Run inside the sandbox as a script (never imported by assay): execute the program, then its tests.

Test styles: a test program (HumanEval: it may define ``check(candidate)``, called with ``entry_point``), a
list of assert statements (MBPP), or a function name with input/output cases. Prints one ``ASSAY-RESULT`` JSON
line (marked with a nonce read from stdin): ``outcome`` passed | failed | crashed, the failing test and its
message. Standard library only.
"""

from __future__ import annotations

import io
import json
import sys
import traceback
from typing import Any

MAX_OUT = 2000


class _Tail(io.TextIOBase):
    """Captured prints, keeping only the last MAX_OUT characters (a program printing without end stays small)."""

    def __init__(self) -> None:
        self.text = ""

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.text = (self.text + s)[-MAX_OUT:]
        return len(s)

    def getvalue(self) -> str:
        return self.text


def _result(outcome: str, **fields: Any) -> dict[str, Any]:
    return {"outcome": outcome, **fields}


def _message(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _failing_line(err: BaseException, filename: str, source: str) -> str | None:
    lines = source.splitlines()
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        if frame.filename == filename and frame.lineno and 0 < frame.lineno <= len(lines):
            return lines[frame.lineno - 1].strip()
    return None


def _run_tests(spec: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    style = spec["style"]
    if style == "asserts":
        tests = list(spec["tests"])
        for i, test in enumerate(tests):
            try:
                exec(compile(test, f"test_{i}", "exec"), g)
            except MemoryError:
                raise
            except Exception as err:
                return _result(
                    "failed",
                    failed_test=test,
                    test_index=i,
                    message=_message(err),
                    tests_passed=i,
                    tests_total=len(tests),
                )
        return _result("passed", tests_passed=len(tests), tests_total=len(tests))
    if style == "cases":
        name, cases = spec["function"], spec["cases"]
        fn = g.get(name)
        if not callable(fn):
            return _result(
                "failed",
                failed_test=f"function {name!r}",
                message=f"the code defines no function {name!r}",
                tests_passed=0,
                tests_total=len(cases),
            )
        for i, case in enumerate(cases):
            args = case.get("input", [])
            shown = (
                [f"{k}={v!r}" for k, v in args.items()]
                if isinstance(args, dict)
                else [repr(a) for a in (args if isinstance(args, list) else [args])]
            )
            call = f"{name}({', '.join(shown)})"
            try:
                got = fn(**args) if isinstance(args, dict) else fn(*(args if isinstance(args, list) else [args]))
            except MemoryError:
                raise
            except Exception as err:
                return _result(
                    "failed",
                    failed_test=call,
                    test_index=i,
                    message=f"raised {_message(err)}",
                    tests_passed=i,
                    tests_total=len(cases),
                )
            if got != case.get("output"):
                return _result(
                    "failed",
                    failed_test=call,
                    test_index=i,
                    message=f"returned {got!r}, expected {case.get('output')!r}",
                    tests_passed=i,
                    tests_total=len(cases),
                )
        return _result("passed", tests_passed=len(cases), tests_total=len(cases))
    source = spec["tests"]  # a test program
    try:
        exec(compile(source, "tests.py", "exec"), g)
        entry = spec.get("entry_point")
        if entry and callable(g.get("check")):
            if not callable(g.get(entry)):
                return _result("failed", failed_test=f"check({entry})", message=f"the code defines no {entry!r}")
            g["check"](g[entry])
    except MemoryError:
        raise
    except Exception as err:
        return _result("failed", failed_test=_failing_line(err, "tests.py", source), message=_message(err))
    return _result("passed")


def main() -> None:
    nonce = sys.stdin.readline().strip()  # sent by the parent; the program never sees it in a file or argv
    sys.stdin.close()
    with open(sys.argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    real_stdout = sys.stdout
    captured = _Tail()
    sys.stdout = captured  # the program's prints are kept (a tail of them) but cannot fake the result line
    g: dict[str, Any] = {"__name__": "__solution__"}
    try:
        try:
            exec(compile(spec["code"], "solution.py", "exec"), g)
        except MemoryError:
            raise
        except BaseException as err:  # SystemExit too: a program that exits before its tests has not passed
            result = _result(
                "failed",
                failed_test=None,
                message=f"the code itself raised {_message(err)}",
                line=_failing_line(err, "solution.py", spec["code"]),
            )
        else:
            result = _run_tests(spec, g)
    except MemoryError:
        result = _result("crashed", message="MemoryError: the program ran out of memory")
    except RecursionError as err:
        result = _result("crashed", message=_message(err))
    except BaseException as err:
        result = _result("failed", message=f"the tests raised {_message(err)}")
    sys.stdout = real_stdout
    result["stdout_tail"] = captured.getvalue()[-MAX_OUT:]
    real_stdout.write(f"\nASSAY-RESULT-{nonce} " + json.dumps(result, default=repr) + "\n")
    real_stdout.flush()


if __name__ == "__main__":
    main()
