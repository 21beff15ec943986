"""json's error messages worded alike on every Python assay runs on, for the messages assay writes about JSON it
could not read (a dataset line, a model's output): the same input gives the same message, line and column."""

from __future__ import annotations

import json

_TRAILING = {  # what Python 3.11 and 3.12 say at the bracket after a trailing comma, by bracket
    "}": ("Expecting property name enclosed in double quotes", "object"),
    "]": ("Expecting value", "array"),
}


def same_error(err: json.JSONDecodeError) -> json.JSONDecodeError:
    """``err`` as Python 3.13 and later word it, on every Python: a trailing comma before ``}`` or ``]`` is
    "Illegal trailing comma before end of object" (or array) at the comma, where 3.11 and 3.12 say "Expecting
    property name enclosed in double quotes" (or "Expecting value") at the bracket, a column further on. Every
    other error is worded alike already. For the messages assay writes about a file's JSON (its line and column)."""
    doc, pos = err.doc, err.pos
    said = _TRAILING.get(doc[pos]) if 0 <= pos < len(doc) else None
    if said is None or err.msg != said[0]:
        return err
    comma = pos - 1
    while comma >= 0 and doc[comma] in " \t\n\r":
        comma -= 1
    if comma < 0 or doc[comma] != ",":
        return err
    return json.JSONDecodeError(f"Illegal trailing comma before end of {said[1]}", doc, comma)
