"""orjson on the hot JSON paths (dataset and predictions lines, samples.jsonl records), only where it gives exactly
what the parser used before gives: else that parser decides, so values, accepted inputs and error messages are the
same as before, only faster.

orjson refuses NaN/Infinity, lone surrogates, invalid UTF-8, nesting past 1024 levels and a UTF-8 BOM, all of which
``json.loads`` (and some ``pydantic_core.from_json``) accept: on any refusal the previous parser reads the line. The
one input orjson accepts with another value is an integer beyond 64 bits, which it reads as a float; and it reads
nesting up to 1024 levels, where ``pydantic_core.from_json`` stops at about 200 (``json.loads`` at the interpreter's
recursion limit). A line that may hold an integer literal of 19 digits or more, or more than 200 brackets, goes to
the previous parser too (one scan of its bytes) — unless orjson read it as one flat object of strings, integers,
booleans and nulls (the usual dataset and predictions line): no integer of its became a float, and it is one level
deep, so it needs no scan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

NOT_SURE: Final[Any] = object()  # try_loads: orjson's value might not be the previous parser's (or it refused)

_ZEROED = bytes.maketrans(b"123456789{", b"000000000[")  # digits to 0, brackets to [
_RUN = b"0" * 19  # the fewest digits of an integer outside orjson's range (-9223372036854775809)
_BEFORE_NUMBER = frozenset(b"[,: \t\n\r")  # what may precede a number (or its minus sign) in JSON
MAX_BRACKETS = 200  # pydantic_core.from_json reads nesting 200 deep (json.loads deeper): so many brackets are safe
_FLAT = frozenset({str, int, bool, type(None)})  # values orjson reads as json.loads does (a big integer is a float)


def uncertain(data: bytes) -> bool:
    """Whether orjson's value of ``data`` might differ from json.loads' and from_json's: it may hold an integer
    literal of 19 digits or more (a run of 19 digits at the start or after ``[``, ``,``, ``:`` or whitespace, with
    or without a minus sign; a fraction or an exponent is not one), or more than :data:`MAX_BRACKETS` brackets. A
    run inside a string may be counted: the line is then only parsed the slow way."""
    zeroed = data.translate(_ZEROED)
    return (len(data) > 2 * MAX_BRACKETS and zeroed.count(b"[") > MAX_BRACKETS) or _may_hold_big_int(zeroed)


def _may_hold_big_int(zeroed: bytes) -> bool:
    """Whether a text, its digits made 0, may hold an integer literal of 19 digits or more (see :func:`uncertain`)."""
    at = zeroed.find(_RUN)
    while at >= 0:
        before = at - 1
        if before >= 0 and zeroed[before] == 0x2D:  # "-"
            before -= 1
        if before < 0 or zeroed[before] in _BEFORE_NUMBER:
            return True
        at = zeroed.find(_RUN, at + 19)  # past this window: a run starts after a non-digit, not inside it
    return False


def try_loads(data: bytes) -> Any:
    """orjson's value of ``data`` when it is the value ``json.loads`` and ``pydantic_core.from_json`` give, else
    :data:`NOT_SURE` (orjson refused it, or it is :func:`uncertain`)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return NOT_SURE
    if type(value) is dict and _FLAT.issuperset(map(type, value.values())):
        return value  # one level of strings, 64-bit integers, booleans and nulls: nothing to scan for
    return NOT_SURE if uncertain(data) else value


def loads(data: bytes, previous: Callable[[bytes], Any]) -> Any:
    """``previous(data)``'s value or error (``previous`` is the parser used before: ``json.loads``,
    ``pydantic_core.from_json``), read by orjson when :func:`try_loads` is sure it is the same."""
    value = try_loads(data)
    return previous(data) if value is NOT_SURE else value


def loads_text(line: str, previous: Callable[[str], Any]) -> Any:
    """:func:`loads` for a line already decoded (from a file read as text)."""
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: orjson would refuse it
        return previous(line)
    value = try_loads(data)
    return previous(line) if value is NOT_SURE else value
