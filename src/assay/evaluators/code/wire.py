"""The data that crosses the sandbox boundary: plain Python values as tagged JSON, decoded without ``eval``.

Both sides use it: the sandboxed program and the trusted test process (their programs are this module's source
followed by theirs, see :mod:`assay.evaluators.code.programs`), so it is standard library only and quick to
start: it drives ``json``'s C scanner directly instead of importing ``json``, whose ``re`` import alone costs
~9 ms per process. Decoding builds nothing but ``None``, bools, ints, floats, complex, str, bytes, bytearray,
list, tuple, dict, set and frozenset — whatever the sender wrote — plus *handles* (an id standing for an object
that is not data) when the caller supplies a function for them. Messages are one line each (ASCII JSON arrays).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    HandleOut = Callable[[Any], list[Any]]
    HandleIn = Callable[[Any], Any]

MAX_DEPTH = 200  # nesting a value may have, both ways (deeper values are not data: they would exhaust the C stack)
BIG_INT_BITS = 4096  # ints past this cross as hex: decimal text this long parses in quadratic time
DATA_TYPES = "None, bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset"


class NotData(TypeError):
    """A value that cannot cross the boundary as data: an object of a custom class, a function, a generator."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not data (data is {DATA_TYPES})")
        self.what = what


class WireError(ValueError):
    """A message that is not well-formed boundary data."""


def describe(value: object) -> str:
    """How a value that is not data is named in a reason: ``function 'f'``, ``class 'Pair'``, ``a 'Pair' object``."""
    kind = type(value)
    name = getattr(kind, "__name__", "?")
    if isinstance(value, type):
        return f"class {getattr(value, '__name__', '?')!r}"
    if name in ("function", "builtin_function_or_method", "method"):
        return f"function {getattr(value, '__name__', '?')!r}"
    return f"an object of type {name!r}"


def _str(text: str) -> str:
    return _encode_str(text)


def _enc(value: Any, out: list[str], handle: HandleOut | None, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise NotData(f"a value nested more than {MAX_DEPTH} deep")
    kind = type(value)
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif kind is int:
        if value.bit_length() > BIG_INT_BITS:
            out.append('{"$i":"' + format(value, "x") + '"}')
        else:
            out.append(int.__repr__(value))
    elif kind is float:
        out.append(_float(value))
    elif kind is str:
        out.append(_str(value))
    elif kind is list:
        _seq("[", value, out, handle, depth)
        out.append("]")
    elif kind is tuple:
        _seq('{"$t":[', value, out, handle, depth)
        out.append("]}")
    elif kind is dict:
        out.append('{"$d":[')
        for i, (k, v) in enumerate(value.items()):
            out.append(",[" if i else "[")
            _enc(k, out, handle, depth + 1)
            out.append(",")
            _enc(v, out, handle, depth + 1)
            out.append("]")
        out.append("]}")
    elif kind is set or kind is frozenset:
        _seq('{"$s":[' if kind is set else '{"$f":[', value, out, handle, depth)
        out.append("]}")
    elif kind is bytes or kind is bytearray:
        import binascii

        text = binascii.b2a_base64(value, newline=False).decode("ascii")
        out.append(('{"$b":"' if kind is bytes else '{"$y":"') + text + '"}')
    elif kind is complex:
        out.append('{"$c":[' + _float(value.real) + "," + _float(value.imag) + "]}")
    else:
        base = _builtin_base(value)
        if base is not None:  # a namedtuple crosses as a tuple, a Counter or OrderedDict as a dict, an IntEnum as int
            _enc(base, out, handle, depth + 1)
        elif handle is not None:
            _seq('{"$h":[', handle(value), out, None, depth)
            out.append("]}")
        else:
            raise NotData(describe(value))


def _seq(opening: str, items: Any, out: list[str], handle: HandleOut | None, depth: int) -> None:
    out.append(opening)
    for i, item in enumerate(items):
        if i:
            out.append(",")
        _enc(item, out, handle, depth + 1)


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _builtin_base(value: Any) -> Any:
    """A plain copy of a value whose type subclasses a data type (bool excepted: it cannot be subclassed)."""
    bases: tuple[Any, ...] = (int, float, complex, str, bytes, bytearray, tuple, list, dict, frozenset, set)
    for base in bases:
        if isinstance(value, base):
            try:
                return base(value)
            except Exception:
                return None
    return None


def encode(value: object, handle: HandleOut | None = None) -> str:
    """One line of ASCII JSON for ``value``; objects that are not data go through ``handle`` or raise NotData."""
    out: list[str] = []
    _enc(value, out, handle, 0)
    return "".join(out)


_TAGS = frozenset(("$h", "$b", "$y", "$i", "$t", "$s", "$f", "$d", "$c"))


def _tagged(pairs: list[tuple[str, Any]], handle: HandleIn | None) -> Any:
    if len(pairs) != 1:
        raise WireError("an object must be one tag")
    tag, v = pairs[0]
    if tag not in _TAGS:
        raise WireError(f"unknown tag {tag!r}")
    if tag == "$h":
        if handle is None or type(v) is not list:
            raise WireError("a handle where none may be")
        return handle(v)
    if tag in ("$b", "$y", "$i"):
        if type(v) is not str:
            raise WireError(f"{tag} needs a string")
        if tag == "$i":
            return int(v, 16)
        import binascii

        data = binascii.a2b_base64(v, **_STRICT)
        return data if tag == "$b" else bytearray(data)
    if type(v) is not list:
        raise WireError(f"{tag} needs a list")
    if tag == "$t":
        return tuple(v)
    if tag == "$s":
        return set(v)
    if tag == "$f":
        return frozenset(v)
    if tag == "$d":
        if not all(type(kv) is list and len(kv) == 2 for kv in v):
            raise WireError("$d needs [key, value] pairs")
        return dict(v)
    if len(v) != 2 or not all(type(p) in (int, float) for p in v):  # $c
        raise WireError("$c needs [real, imag]")
    return complex(v[0], v[1])


# strict base64 where the Python has it (3.11+): always on the trusted side, which runs assay's own Python; a
# sandbox's older Python decodes what the trusted side wrote, which is well-formed
_STRICT = {"strict_mode": True} if sys.version_info >= (3, 11) else {}


def _too_deep(value: Any) -> bool:
    """Whether a decoded value nests deeper than :func:`encode` allows. json's scanner refuses deep nesting only at
    the interpreter's recursion limit (~1,000 levels on 3.11, several thousand on 3.13), so the same bound is
    checked here, the same on every Python (one level at a time: no recursion, no per-item Python frames)."""
    level = [value]
    for _ in range(MAX_DEPTH + 1):
        inner: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is list or kind is tuple or kind is set or kind is frozenset:
                inner += item
            elif kind is dict:
                inner += item
                inner += item.values()
        if not inner:
            return False
        level = inner
    return True


class _Context:
    """What ``_json.make_scanner`` reads from a decoder (the attributes of ``json.JSONDecoder``)."""

    strict = True
    object_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # NaN, Infinity, -Infinity

    def __init__(self, handle: HandleIn | None) -> None:
        self.memo: dict[str, str] = {}
        self.object_pairs_hook = lambda pairs: _tagged(pairs, handle)


def decode(text: str, handle: HandleIn | None = None) -> Any:
    """The value a line of :func:`encode` output stands for; anything else raises WireError."""
    try:
        value, end = _make_scanner(_Context(handle))(text, 0)
    except WireError:
        raise
    except Exception as err:  # StopIteration, JSONDecodeError, RecursionError, TypeError (unhashable key) …
        raise WireError(f"not boundary data: {type(err).__name__}: {err}"[:300]) from None
    if end != len(text):
        raise WireError("trailing characters after the value")
    if text.count("[") > MAX_DEPTH and _too_deep(value):  # every level of nesting writes a "["
        raise WireError(f"a value nested more than {MAX_DEPTH} deep")
    return value


try:  # the C parts of json, without json's import of re
    import _json

    _encode_str: Any = _json.encode_basestring_ascii
    _make_scanner: Any = _json.make_scanner
except ImportError:  # pragma: no cover - an interpreter without _json (not CPython)
    import json.encoder
    import json.scanner

    _encode_str = json.encoder.py_encode_basestring_ascii
    _make_scanner = json.scanner.py_make_scanner  # type: ignore[attr-defined]


class Channel:
    """Messages over one file descriptor: each an encoded value on its own line, at most ``limit`` bytes."""

    def __init__(self, fd: int, limit: int, handle_in: HandleIn | None = None) -> None:
        self.fd, self.limit, self.handle_in = fd, limit, handle_in
        self.buffer = bytearray()

    def send(self, value: object, handle: HandleOut | None = None) -> None:
        data = (encode(value, handle) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def recv(self) -> Any:
        """The next message, or None at end of file; a line past the limit or not data raises WireError."""
        searched = 0
        while (end := self.buffer.find(b"\n", searched)) < 0:
            searched = len(self.buffer)
            if searched > self.limit:
                raise WireError(f"a message longer than {self.limit} bytes")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        if end > self.limit:
            raise WireError(f"a message longer than {self.limit} bytes")
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        try:
            text = line.decode("ascii")
        except UnicodeDecodeError:
            raise WireError("a message that is not ASCII") from None
        return decode(text, self.handle_in)
