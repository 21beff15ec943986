"""Runs inside the sandbox: executes the code under test as module ``solution``, then answers the trusted test
process's requests (look a name up, call a function, read an attribute) over one socket, values as data.

It is as untrusted as the code it runs — the code may rewrite any of it — so nothing it sends is believed beyond
being data: the verdict is made outside (``runner.py``). Its program is ``wire.py`` followed by this file (see
``programs.py``); assay imports it only in its own tests. Standard library only.
"""

from __future__ import annotations

import os
import sys

from assay.evaluators.code.wire import Channel, describe, encode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

MESSAGE_LIMIT = 1 << 24  # bytes in one request
MAX_TEXT = 1000  # characters of an exception's message sent back


class _Objects:
    """The objects behind the handles the test process holds (kept alive until the program ends)."""

    def __init__(self) -> None:
        self.by_id: dict[int, Any] = {}

    def handle(self, obj: Any) -> list[Any]:
        self.by_id[len(self.by_id) + 1] = obj
        return [len(self.by_id), describe(obj)]

    def resolve(self, ref: object) -> Any:
        if not (isinstance(ref, list) and ref and type(ref[0]) is int and ref[0] in self.by_id):
            raise ValueError("no such handle")
        return self.by_id[ref[0]]


def _line(tb: TracebackType | None, lines: list[str]) -> str | None:
    """The last line of the code under test a traceback passes through."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "solution.py" and 0 < tb.tb_lineno <= len(lines):
            found = lines[tb.tb_lineno - 1].strip()
        tb = tb.tb_next
    return found


def _exception(err: BaseException, lines: list[str]) -> list[Any]:
    """``[type, nearest built-in exception class, message, line]`` of an exception raised by the code."""
    import builtins

    base = next(
        (c.__name__ for c in type(err).__mro__ if getattr(builtins, c.__name__, None) is c),
        "BaseException",
    )
    try:
        message = str(err)[:MAX_TEXT]
    except BaseException:
        message = "<the message could not be read>"
    line = _line(err.__traceback__, lines)
    if isinstance(err, SyntaxError) and err.filename == "solution.py":
        line = (err.text or "").strip() or None
    return [type(err).__name__[:100], base, message, line]


def _answer(request: list[Any], objects: _Objects, module: dict[str, Any], lines: list[str]) -> list[Any]:
    op, rid = request[0], request[1]
    if op == "names":
        found: list[Any] = []
        for name in request[2]:
            if name not in module:
                found.append([name, "missing", None])
            elif type(module[name]) is type(sys):
                found.append([name, "module", getattr(module[name], "__name__", None)])
            else:
                found.append([name, "value", module[name]])
        return ["names", rid, found]
    target = request[2]  # the handle was resolved to its object as the request was read
    try:
        if op == "getattr":
            value = getattr(target, request[3])
            return ["ok", rid, value, []]
        args, kwargs = request[3], dict(request[4])
        value = target(*args, **kwargs)
    except (SystemExit, KeyboardInterrupt, GeneratorExit) as err:
        return ["exit", rid, type(err).__name__]
    except BaseException as err:
        return ["raised", rid, _exception(err, lines)]
    # arguments the code changed in place go back, so a test of an in-place sort sees the sorted list
    changed = [[i, a] for i, a in enumerate(args) if type(a) in (list, dict, set, bytearray)]
    changed += [[k, a] for k, a in kwargs.items() if type(a) in (list, dict, set, bytearray)]
    return ["ok", rid, value, changed]


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # the code may have replaced or closed them
            continue


def main() -> None:
    fd, path = int(sys.argv[1]), sys.argv[2]
    objects = _Objects()
    channel = Channel(fd, MESSAGE_LIMIT, objects.resolve)
    channel.send(["ready"])  # before any of the code runs: a sandbox that never says this did not start
    solution = type(sys)("solution")
    solution.__file__ = path
    sys.modules["solution"] = solution
    lines: list[str] = []
    loaded: Any = None
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        lines = source.splitlines()
        exec(compile(source, "solution.py", "exec"), solution.__dict__)
    except BaseException as err:  # SystemExit too: code that exits before its tests has not passed them
        loaded = _exception(err, lines)
    _flush()
    channel.send(["loaded", loaded])
    if loaded is not None:
        return
    while (request := channel.recv()) is not None:
        assert isinstance(request, list)
        try:
            reply = _answer(request, objects, solution.__dict__, lines)
            text = encode(reply, objects.handle)
        except BaseException as err:  # a value that cannot be written (nested too deep, a broken __class__ …)
            text = encode(["notdata", request[1], f"{type(err).__name__}: {err}"[:MAX_TEXT]])
        _flush()  # what the code printed is kept even when the sandbox is killed after the tests
        data = (text + "\n").encode("ascii")
        while data:
            data = data[os.write(fd, data) :]


if __name__ == "__main__":
    main()
