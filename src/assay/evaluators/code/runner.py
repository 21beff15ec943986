"""The trusted test process: runs the task's tests — a HumanEval ``check(candidate)`` program, MBPP asserts, or a
function's input/output cases — with the code's functions as proxies to the sandbox. A call sends its arguments
as data and gets the return value back as data (``wire.py``), so every comparison, and the verdict, is made here,
where the code under test cannot reach: it cannot exit early for us, patch these tests, see the expected values
or hand back an object whose ``__eq__`` always says yes (objects that are not data come back as opaque handles
that may be called or passed back, and fail the test when compared or inspected).

The tests' environment is what Python gives tests appended to the program, less anything of the program's that
could stand in for the tests' own tools: builtins are always the real ones; a name used as a module (one the
tests only read attributes from, like ``math`` in ``math.isclose``, or a standard-library module's name they read
attributes from) is our own import of that standard-library module when the program imported it under that name,
and undefined otherwise, never the program's object; every other name the tests read but do not define is the
program's (functions and classes as handles, data as data). A ``code_prefix`` (HumanEval's prompt) is run here
too, so its helpers (``poly``, ``encode_cyclic``) are the task's, not the code's; its stubs are the code's.

Nothing the program sends may change how the tests run other than by its values: an exception that would end an
iteration (``StopIteration`` ending ``all(map(f, xs))`` early) arrives as a RuntimeError, and any value, however
large or odd, is shown in a reason cut to a few hundred characters.

Its program is ``wire.py`` followed by this file (``programs.py``); it reads its spec on stdin and writes events
(``["test", label]``, then ``["result", {...}]``) on stdout. Standard library only.
"""

from __future__ import annotations

import builtins
import os
import sys

from assay.evaluators.code.wire import DATA_TYPES, Channel, NotData, WireError, decode, describe, encode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

REPLY_LIMIT = 1 << 25  # bytes in one reply from the sandbox
SHOWN = 300  # characters of a value shown in a reason
MESSAGE = 1000  # characters of an exception's message in a result
LABEL = 2000  # characters of a test's text in an event or a result
_NO_IMPORT = frozenset({"antigravity", "this", "__hello__", "__phello__", "idlelib", "tkinter", "turtle"})


class Boundary(BaseException):
    """Raised into the tests where the boundary was crossed wrongly. A BaseException, so ``except Exception`` in
    a test does not swallow it; and recorded, so a test that catches it anyway still does not pass."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(value: object) -> str:
    """A value as a reason shows it: a bounded ``repr`` (only its first items are formatted), never an error."""
    import reprlib

    class Shown(reprlib.Repr):
        def repr_int(self, x: int, level: int) -> str:
            if x.bit_length() > 4 * SHOWN:  # decimal text of a huge int is slow, and refused past 4300 digits
                return f"<an int of {x.bit_length()} bits>"
            return super().repr_int(x, level)

    shown = Shown()
    shown.maxlevel, shown.maxstring, shown.maxother, shown.maxlong = 6, SHOWN, SHOWN, SHOWN
    shown.maxlist = shown.maxtuple = shown.maxset = shown.maxfrozenset = shown.maxdict = 50
    try:
        return _cut(shown.repr(value), SHOWN)
    except Exception as err:  # RecursionError, MemoryError: whatever the value, the reason is written
        return f"<a {type(value).__name__} that cannot be shown: {type(err).__name__}>"


def _text(value: object, limit: int = SHOWN) -> str:
    """A string from the other side (which may send any data where a string belongs), cut to ``limit``."""
    return _cut(value, limit) if type(value) is str else _short(value)


def _message(err: BaseException) -> str:
    """``Type: message`` of an exception, at most MESSAGE characters, whatever its arguments hold."""
    try:
        text = str(err)  # one string argument is returned as it is, not copied
    except Exception:  # a huge int in its arguments, a __str__ that fails
        text = ", ".join(_short(a) for a in getattr(err, "args", ())[:5])
    name = type(err).__name__
    return _cut(f"{name}: {text}" if text else name, MESSAGE)


class Session:
    """The test process's side of the boundary: requests to the sandbox, and the first thing that went wrong."""

    def __init__(self, fd: int) -> None:
        self.channel = Channel(fd, REPLY_LIMIT, self._handle_in)
        self.next_id = 0
        self.problem: tuple[str, str] | None = None  # (outcome, message): failed | crashed | error

    def fail(self, outcome: str, message: str) -> Boundary:
        if self.problem is None:
            self.problem = (outcome, message)
        return Boundary(message)

    def _handle_in(self, ref: object) -> Any:
        if not (isinstance(ref, list) and len(ref) == 2 and type(ref[0]) is int and type(ref[1]) is str):
            raise WireError("a malformed handle")
        return Remote(self, ref[0], ref[1][:SHOWN])

    @staticmethod
    def _handle_out(value: object) -> list[Any]:
        if type(value) is Remote:
            return [value._id, value._what]
        raise NotData(describe(value))

    def receive(self, expect: str | None = None) -> list[Any]:
        """The next message (of kind ``expect`` when given); the program ending or lying raises Boundary."""
        try:
            message = self.channel.recv()
        except WireError as err:
            raise self.fail("failed", f"the program sent back something that is not data ({err})") from None
        except OSError:
            message = None
        if message is None:
            raise self.fail("crashed", "the program ended before the tests finished")
        if not (isinstance(message, list) and message and type(message[0]) is str):
            raise self.fail("failed", "the program wrote something else than an answer to the test channel")
        if expect is not None and message[0] != expect:
            raise self.fail("failed", f"the program wrote {message[0][:40]!r} where {expect!r} was due")
        return message

    def request(self, what: str, *parts: object) -> list[Any]:
        self.next_id += 1
        rid = self.next_id
        try:
            self.channel.send([parts[0], rid, *parts[1:]], self._handle_out)
        except NotData as err:
            raise self.fail(
                "error",
                f"cannot run this test outside the sandbox: it passes {err.what} to {what}, and only data "
                f"({DATA_TYPES}) or objects the code returned can be passed",
            ) from None
        except OSError:
            raise self.fail("crashed", "the program ended before the tests finished") from None
        reply = self.receive()
        if not (len(reply) >= 3 and type(reply[1]) is int and reply[1] == rid):
            raise self.fail("failed", "the program answered out of turn on the test channel")
        return reply

    def names(self, wanted: list[str]) -> list[Any]:
        reply = self.request("the code", "names", wanted)
        if reply[0] != "names" or not isinstance(reply[2], list):
            raise self.fail("failed", "the program answered a name lookup with something else")
        return reply[2]

    def call(self, remote: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        reply = self.request(remote._what, "call", remote, list(args), [[k, v] for k, v in kwargs.items()])
        return self._result(remote, reply, args, kwargs)

    def getattr(self, remote: Remote, name: str) -> Any:
        return self._result(remote, self.request(remote._what, "getattr", remote, name), (), {})

    def _result(self, remote: Remote, reply: list[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kind = reply[0]
        if kind == "ok" and len(reply) == 4 and isinstance(reply[3], list):
            for changed in reply[3]:
                if isinstance(changed, list) and len(changed) == 2:
                    key, new = changed
                    if type(key) is int and 0 <= key < len(args):
                        _copy_back(args[key], new)
                    elif type(key) is str and key in kwargs:
                        _copy_back(kwargs[key], new)
            return reply[2]
        if kind == "raised" and isinstance(reply[2], list) and len(reply[2]) == 4:
            raise _rebuilt(reply[2])
        if kind == "exit":
            raise self.fail("failed", f"the code raised {_text(reply[2], 40)} while {remote._what} ran")
        if kind == "notdata":
            raise self.fail("failed", f"{remote._what} gave back something that cannot be sent: {_text(reply[2])}")
        raise self.fail("failed", "the program answered a call with something else")


def _copy_back(original: object, new: object) -> None:
    """Apply an argument's change in the sandbox to the test's own object (an in-place sort, an appended item)."""
    if type(original) is list and type(new) is list:
        original[:] = new
    elif (type(original) is dict and type(new) is dict) or (type(original) is set and type(new) is set):
        original.clear()
        original.update(new)
    elif type(original) is bytearray and type(new) is bytearray:
        original[:] = new


def _rebuilt(info: list[Any]) -> Exception:
    """The exception the code raised, as the nearest built-in class with its message (its own class stays there).
    One that would end an iteration of the tests (StopIteration: ``all(map(f, xs))`` would stop early and pass)
    arrives as a RuntimeError, as PEP 479 has it for generators."""
    name, base, message, _line = (_text(x) if x is not None else None for x in info)
    cls = getattr(builtins, base or "", None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = Exception
    if issubclass(cls, StopIteration | StopAsyncIteration):
        message = f"the code raised {name}" + (f": {message}" if message else "")
        cls = RuntimeError
    try:
        err = cls(message) if message else cls()
    except Exception:
        err = Exception(message)
    if name != cls.__name__ and cls is not RuntimeError:
        err.add_note(f"(raised by the code as {name})")
    return err


def _misuse(op: str) -> Callable[..., object]:
    def method(self: Remote, *args: object) -> Any:
        raise self._session.fail(
            "failed",
            f"the test used {self._what} from the code as a value ({op}); only data ({DATA_TYPES}) can be "
            "compared or inspected outside the sandbox",
        )

    return method


class Remote:
    """An object that lives in the sandbox: it may be called, have attributes read, or be passed back; anything
    else (comparing, hashing, truth, iterating, arithmetic) fails the test, since its answer would be the code's."""

    __slots__ = ("_id", "_session", "_what")

    def __init__(self, session: Session, ref: int, what: str) -> None:
        self._session, self._id, self._what = session, ref, what

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.call(self, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._session.getattr(self, name)

    def __repr__(self) -> str:
        return f"<{self._what} in the sandbox>"


for _op in str.split(
    "__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __bool__ __len__ __iter__ __next__ __reversed__ __contains__ "
    "__getitem__ __setitem__ __delitem__ __int__ __float__ __complex__ __index__ __round__ __trunc__ __floor__ "
    "__ceil__ __abs__ __neg__ __pos__ __invert__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ "
    "__rtruediv__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __divmod__ __rdivmod__ __pow__ __rpow__ __and__ "
    "__rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ __rshift__ __rrshift__ __matmul__ __rmatmul__ "
    "__enter__ __exit__ __bytes__ __fspath__ __length_hint__"
):
    setattr(Remote, _op, _misuse(_op.strip("_")))


def _failing_line(err: BaseException, filename: str, source: str) -> str | None:
    lines = source.splitlines()
    found, tb = None, err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename and 0 < tb.tb_lineno <= len(lines):
            found = lines[tb.tb_lineno - 1].strip()
        tb = tb.tb_next
    return found


def _nodes(source: str, filename: str) -> list[Any]:
    """Every node of the source's syntax tree, from the C parser (``_ast``): importing ``ast`` costs a few ms."""
    import _ast

    stack: list[Any] = [compile(source, filename, "exec", _ast.PyCF_ONLY_AST)]
    found = []
    while stack:
        node = stack.pop()
        found.append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, _ast.AST))
            elif isinstance(value, _ast.AST):
                stack.append(value)
    return found


def _stubs(prefix: str) -> list[str]:
    """Functions the prefix only declares (a docstring, ``pass``, ``...``): the code under test completes them."""
    if not prefix.strip():
        return []
    import _ast

    def stub(body: list[Any]) -> bool:
        for node in body:
            if isinstance(node, _ast.Pass | _ast.Raise):
                continue
            if isinstance(node, _ast.Expr) and isinstance(node.value, _ast.Constant):
                continue
            return False
        return True

    tree: Any = compile(prefix, "<prefix>", "exec", _ast.PyCF_ONLY_AST)
    defs = (_ast.FunctionDef, _ast.AsyncFunctionDef)
    return [n.name for n in tree.body if isinstance(n, defs) and stub(n.body)]


def _free_names(sources: Iterable[tuple[str, str]]) -> dict[str, bool]:
    """Global names the test sources read but do not bind at their top level (in the order first seen), each
    with whether the tests use it as a module: they only read attributes from it (``math.isclose(...)``), or it is
    a standard-library module's name they read attributes from at all (a name they only call or pass, like an
    MBPP function ``copy``, is the program's)."""
    import _ast
    import symtable

    read: dict[str, None] = {}
    bound: set[str] = set()
    bare: set[str] = set()  # names used other than as ``name.attribute`` (called, passed, compared) somewhere
    dotted: set[str] = set()  # names used as ``name.attribute`` somewhere
    for source, filename in sources:
        top = symtable.symtable(source, filename, "exec")
        for sym in top.get_symbols():
            if sym.is_assigned() or sym.is_imported():
                bound.add(sym.get_name())
            if sym.is_referenced():
                read.setdefault(sym.get_name())
        stack = list(top.get_children())
        while stack:
            table = stack.pop()
            for sym in table.get_symbols():
                if sym.is_global() and sym.is_referenced():
                    read.setdefault(sym.get_name())
            stack.extend(table.get_children())
        nodes = _nodes(source, filename)
        bases = {id(n.value): n.value.id for n in nodes if type(n) is _ast.Attribute and type(n.value) is _ast.Name}
        bare.update(n.id for n in nodes if type(n) is _ast.Name and id(n) not in bases)
        dotted.update(bases.values())
    free = [n for n in read if n not in bound and not hasattr(builtins, n)]
    return {n: n in dotted and (n not in bare or n in sys.stdlib_module_names) for n in free}


def _result(outcome: str, **fields: Any) -> dict[str, Any]:
    return {"outcome": outcome, **fields}


class Tests:
    """One run of a task's tests against the code in the sandbox."""

    def __init__(self, spec: dict[str, Any], session: Session, emit: Callable[[list[Any]], None]) -> None:
        self.spec, self.session, self.emit = spec, session, emit
        self.g: dict[str, Any] = {"__name__": "__tests__", "__builtins__": builtins}

    def sources(self) -> list[tuple[str, str]]:
        style = self.spec["style"]
        if style == "asserts":
            return [(t, f"test_{i}") for i, t in enumerate(self.spec["tests"])]
        if style == "program":
            return [(self.spec["tests"], "tests.py")]
        return []

    def prepare(self) -> dict[str, Any] | None:
        """Run the task's own code (prefix, setup) here; an error there is the task's: the sample cannot be judged."""
        for key in ("prefix", "setup"):
            code = self.spec.get(key) or ""
            try:
                exec(compile(code, f"<{key}>", "exec"), self.g)
            except Exception as err:
                return _result("error", message=f"the task's {key} code raised {_message(err)}")
        try:
            for source, filename in self.sources():
                compile(source, filename, "exec")
        except SyntaxError as err:
            return _result("error", message=f"the task's tests do not compile: {_message(err)}")
        return None

    def bind(self) -> None:
        """Give the tests the names they need from the code: the function(s) under test, then what else they read.

        Builtins are never asked for. A name used as a module (see :func:`_free_names`) is our own import of that
        standard-library module when the program imported it by that name, as Python would resolve it for tests
        appended to the program, and else stays undefined: the program's object under it (``class math: isclose =
        lambda *a, **k: True``) would answer for the tests."""
        named = [n for n in (self.spec.get("entry_point"), self.spec.get("function")) if isinstance(n, str) and n]
        replace = [*named, *_stubs(self.spec.get("prefix") or "")]
        free = {n: as_module for n, as_module in _free_names(self.sources()).items() if n not in self.g}
        wanted = list(dict.fromkeys([*replace, *free]))
        if not wanted:
            return
        import importlib

        for item in self.session.names(wanted):
            if not (isinstance(item, list) and len(item) == 3 and type(item[0]) is str and item[0] in wanted):
                raise self.session.fail("failed", "the program answered a name lookup with something else")
            name, kind, value = item
            if name in replace:
                if kind == "value":
                    self.g[name] = value
                elif kind == "missing":
                    self.g.pop(name, None)
            elif kind == "module":
                if value == name and name in sys.stdlib_module_names and name not in _NO_IMPORT:
                    try:  # the code imported it; the tests may use it
                        module = importlib.import_module(name)
                    except Exception:  # not importable here (a module of another OS): undefined, as if not imported
                        continue
                    self.g.setdefault(name, module)
            elif kind == "value" and not free.get(name):
                self.g[name] = value

    def run(self) -> dict[str, Any]:
        style = self.spec["style"]
        if style == "asserts":
            return self.asserts()
        if style == "cases":
            return self.cases()
        return self.program()

    def asserts(self) -> dict[str, Any]:
        tests = list(self.spec["tests"])
        for i, test in enumerate(tests):
            self.emit(["test", _cut(test, LABEL)])
            try:
                exec(compile(test, f"test_{i}", "exec"), self.g)
            except (Exception, Boundary) as err:
                return _result(
                    "failed",
                    failed_test=_cut(test, LABEL),
                    test_index=i,
                    message=_message(err),
                    tests_passed=i,
                    tests_total=len(tests),
                )
        return _result("passed", tests_passed=len(tests), tests_total=len(tests))

    def cases(self) -> dict[str, Any]:
        name, cases = self.spec["function"], self.spec["cases"]
        fn = self.g.get(name)
        total = len(cases)
        if type(fn) is not Remote:
            message = f"the code defines no function {name!r}"
            return _result(
                "failed", failed_test=f"function {name!r}", message=message, tests_passed=0, tests_total=total
            )
        for i, case in enumerate(cases):
            args = case.get("input", [])
            if isinstance(args, dict):
                shown = [f"{k}={_short(v)}" for k, v in args.items()]
            else:
                args = args if isinstance(args, list) else [args]
                shown = [_short(a) for a in args]
            call = _cut(f"{name}({', '.join(shown)})", LABEL)
            self.emit(["test", call])
            try:
                got = fn(**args) if isinstance(args, dict) else fn(*args)
                differs = got != case.get("output")
            except (Exception, Boundary) as err:
                return _result(
                    "failed",
                    failed_test=call,
                    test_index=i,
                    message=f"raised {_message(err)}",
                    tests_passed=i,
                    tests_total=total,
                )
            if differs:
                message = f"returned {_short(got)}, expected {_short(case.get('output'))}"
                return _result(
                    "failed", failed_test=call, test_index=i, message=message, tests_passed=i, tests_total=total
                )
        return _result("passed", tests_passed=total, tests_total=total)

    def program(self) -> dict[str, Any]:
        source = self.spec["tests"]
        entry = self.spec.get("entry_point")
        self.emit(["test", "tests.py"])
        try:
            exec(compile(source, "tests.py", "exec"), self.g)
            if entry and callable(self.g.get("check")):
                candidate = self.g.get(entry)
                if type(candidate) is not Remote:
                    return _result("failed", failed_test=f"check({entry})", message=f"the code defines no {entry!r}")
                self.emit(["test", f"check({entry})"])
                self.g["check"](candidate)
        except (Exception, Boundary) as err:
            line = _failing_line(err, "tests.py", source)
            return _result("failed", failed_test=line and _cut(line, LABEL), message=_message(err))
        return _result("passed")


def _loaded(session: Session) -> dict[str, Any] | None:
    """Wait for the sandbox to start and the code to load; a failure of either as a result."""
    try:
        session.receive("ready")
    except Boundary:
        session.problem = None  # not the code's doing: nothing of it has run yet
        return _result("error", message="the sandbox did not start", sandbox_started=False)
    message = session.receive("loaded")
    info = message[1] if len(message) == 2 else None
    if info is None:
        return None
    if not (isinstance(info, list) and len(info) == 4):
        raise session.fail("failed", "the program reported its start in a form it does not have")
    name, base, text, line = (_text(x) if x is not None else None for x in info)
    shown = f"{name}: {text}" if text else name
    if base == "MemoryError":
        return _result("crashed", message="MemoryError: the program ran out of memory", line=line)
    if base == "RecursionError":
        return _result("crashed", message=shown, line=line)
    return _result("failed", failed_test=None, message=f"the code itself raised {shown}", line=line)


def _limit(spec: dict[str, Any]) -> None:
    import resource

    memory = (int(spec["memory_mb"]) + 256) << 20
    cpu = int(spec["cpu_s"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    size = int(spec["file_mb"]) << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def main() -> None:
    out = os.dup(1)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # what the tests print goes nowhere; our events keep their own descriptor
    os.dup2(quiet, 2)

    def emit(event: list[Any]) -> None:
        data = (encode(event) + "\n").encode("ascii")
        while data:
            data = data[os.write(out, data) :]

    spec = decode(sys.stdin.read())
    assert isinstance(spec, dict)
    sys.path[:] = list(spec.get("sys_path") or sys.path)
    _limit(spec)
    session = Session(int(spec["fd"]))
    tests = Tests(spec, session, emit)
    try:
        result = tests.prepare() or _loaded(session)
        if result is None:
            tests.bind()
            result = tests.run()
    except Boundary:
        result = _result("failed")
    except MemoryError:
        result = _result("crashed", message="MemoryError: the test process ran out of memory")
    except Exception as err:  # what the program sent reached a corner of this process: its failure, never an error
        result = _result("failed", failed_test=None, message=f"the tests could not go on: {_message(err)}")
    if session.problem is not None:  # whatever the tests did with it: the boundary was crossed wrongly
        outcome, message = session.problem
        result = {**result, "outcome": outcome, "message": message}
        if outcome != "failed" or "failed_test" not in result:
            result.setdefault("failed_test", None)
    emit(["result", result])


if __name__ == "__main__":
    main()
