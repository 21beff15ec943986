"""promptfoo 0.123.1's is-sql and contains-sql. promptfoo parses with the npm package node-sql-parser (MySQL
grammar by default, ``databaseType`` for others, ``allowedTables``/``allowedColumns`` white lists in its
``select::null::users`` form) plus a few heuristics of its own; assay runs that same parser and those heuristics
in its Node.js worker, because no Python SQL parser gives node-sql-parser's answers (sqlglot, the closest,
disagreed on 4 of 25 statements tried, accepting prose such as ``hello world`` and ``DELETE users``, and has no
white lists of that form). Without node-sql-parser installed
(``npm install node-sql-parser`` in the config's folder or globally) the check errors, naming the package, as
promptfoo's does."""

from __future__ import annotations

import re
from typing import Any

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.node import NodeError
from assay.tasks.checks.params import Params, coerce_string, result


async def _check(p: Params, text: str, inverse: bool) -> dict[str, Any]:
    try:
        reply = await p.row.code.node.request({"op": "sql", "output": text, "value": p.value, "inverse": inverse})
    except NodeError as err:
        raise CheckError(str(err)) from None
    value = reply["value"]
    return result(bool(value["pass"]), str(value["reason"]))


async def is_sql(p: Params) -> dict[str, Any]:
    return await _check(p, p.text, p.inverse)


def _fence(line: str) -> tuple[str, int, str, bool] | None:
    i = 0
    while i < 3 and i < len(line) and line[i] in " \t":
        i += 1
    char = line[i : i + 1]
    if char not in ("`", "~") or not char:
        return None
    start = i
    while i < len(line) and line[i] == char:
        i += 1
    if i - start < 3:
        return None
    info = line[i:]
    return char, i - start, info, info.strip(" \t") == ""


def sql_blocks(output: str) -> list[str]:
    """promptfoo's ``extractSqlCodeBlocks``: the bodies of fenced blocks tagged sql or untagged."""
    blocks: list[str] = []
    active: dict[str, Any] | None = None
    for line in re.split(r"\r\n?|\n", output):
        fence = _fence(line)
        if active is None:
            if fence:
                language = fence[2].strip().lower()
                active = {"body": [], "char": fence[0], "len": fence[1], "sql": language in ("", "sql")}
            continue
        if fence and fence[3] and fence[0] == active["char"] and fence[1] >= active["len"]:
            if active["sql"]:
                blocks.append("\n".join(active["body"]).strip())
            active = None
        else:
            active["body"].append(line)
    return blocks


async def contains_sql(p: Params) -> dict[str, Any]:
    text = coerce_string(p.text)
    candidates = sql_blocks(text) or [text]
    why, found = "Output does not contain valid SQL", False
    for candidate in candidates:
        if not candidate.strip():
            continue
        outcome = await _check(p, candidate, False)
        if outcome["pass"]:
            found = True
            break
        why = outcome["reason"]
    passed = (not found) if p.inverse else found
    return result(passed, "Assertion passed" if passed else "The output SQL statement is valid" if found else why)
