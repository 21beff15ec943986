"""promptfoo 0.123.1's tool-call assertions on the output as its OpenAI provider gives it: the tool calls alone
(``[{id, type: function, function: {name, arguments}}]``) when the reply has no text, the message
(``{role, content, tool_calls}``) when it has both. ``is-valid-openai-tools-call`` checks each call against the
provider's ``tools`` (row_checks option ``tools``), ``is-valid-openai-function-call`` against its ``functions``,
``tool-call-f1`` compares the called tool names with the expected ones (also finding JSON tool calls in text)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.params import Params, js_stringify, result

PASSED = "Assertion passed"


def _validate_call(call: Any, functions: list[dict[str, Any]]) -> None:
    """promptfoo's ``validateFunctionCall``: a {name, arguments: JSON text} whose arguments fit the schema."""
    import jsonschema

    if isinstance(call, dict) and "function_call" in call:
        call = call["function_call"]
    if not (isinstance(call, dict) and isinstance(call.get("name"), str) and isinstance(call.get("arguments"), str)):
        raise ValueError(f"OpenAI did not return a valid-looking function call: {js_stringify(call)}")
    args = json.loads(call["arguments"])
    schema = next(
        (f.get("parameters") for f in functions if isinstance(f, dict) and f.get("name") == call["name"]), None
    )
    if not schema:
        raise ValueError(f'Called "{call["name"]}", but there is no function with that name')
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = [e.message for e in validator.iter_errors(args)]
    if errors:
        raise ValueError(f'Call to "{call["name"]}" does not match schema: {json.dumps(errors)}')


def tools_call(p: Params) -> dict[str, Any]:
    output = p.output
    text = output if isinstance(output, str) else js_stringify(output)
    if "MCP Tool Result" in text or "MCP Tool Error" in text:
        if "MCP Tool Error" in text:
            m = re.search(r"MCP Tool Error \(([^)]+)\): (.+)", text)
            what = (m.group(1), m.group(2)) if m else ("unknown", "unknown error")
            return result(False, f"MCP tool call failed for {what[0]}: {what[1]}")
        m = re.search(r"MCP Tool Result \(([^)]+)\):", text)
        return result(True, f"MCP tool call succeeded for {m.group(1) if m else 'unknown'}")
    if isinstance(output, dict) and "tool_calls" in output:
        output = output["tool_calls"]
    calls = output
    if (
        not isinstance(calls, list)
        or not calls
        or any(
            not isinstance(c, dict)
            or not isinstance(c.get("function"), dict)
            or not isinstance(c["function"].get("name"), str)
            or not isinstance(c["function"].get("arguments"), str)
            for c in calls
        )
    ):
        return result(False, f"OpenAI did not return a valid-looking tools response: {js_stringify(calls)}")
    tools = p.row.services.tools
    if not tools:
        return result(False, "No tools configured in provider, but output contains tool calls")
    functions = [
        t["function"] for t in tools if isinstance(t, dict) and t.get("type") == "function" and "function" in t
    ]
    try:
        for call in calls:
            _validate_call(call["function"], functions)
    except (ValueError, TypeError) as err:
        return result(False, str(err))
    return result(True, PASSED)


def function_call(p: Params) -> dict[str, Any]:
    functions = p.row.services.functions
    try:
        if not functions:
            raise ValueError("Provider does not have functionality for checking function call.")
        _validate_call(p.output, functions)
    except (ValueError, TypeError) as err:
        return result(False, str(err))
    return result(True, PASSED)


class _ParseError(Exception):
    pass


def _width(text: str) -> int:
    column = 0
    for char in text:
        column += 4 - column % 4 if char == "\t" else 1
    return column


def _delimiters(text: str) -> Iterator[tuple[str, int, bool, bool] | None]:
    """promptfoo's ``jsonDelimiters``: brackets outside strings and code fences (None: a barrier)."""
    in_string = escaped = False
    fence, fence_container, line_start = "", 0, 0
    containers: list[int] = []
    while line_start < len(text):
        offset = line_start
        newline = text.find("\n", line_start)
        line_end = len(text) if newline < 0 else newline
        content = text[line_start:line_end].rstrip()
        line_start = line_end + 1
        first = next((i for i, c in enumerate(content) if not c.isspace()), -1)
        indent = _width(content[: max(0, first)])
        if fence and content and indent < fence_container:
            fence = ""
            yield None
        if fence:
            marker = re.match(r"^[ \t]*(`{3,}|~{3,})", content)
            if (
                marker
                and indent <= fence_container + 3
                and marker.group(1)[0] == fence[0]
                and len(marker.group(1)) >= len(fence)
                and not content[marker.end() :].strip()
            ):
                fence = ""
            continue
        while content and containers and indent < containers[-1]:
            containers.pop()
        listed = re.match(r"^[ \t]*(?:[-+*]|\d+[.)])[ \t]+", content)
        if listed:
            containers.append(_width(listed.group(0)))
        container = containers[-1] if containers else 0
        fence_text = content[listed.end() :] if listed else content
        marker = re.match(r"^[ \t]*(`{3,}|~{3,})", fence_text)
        if (
            marker
            and (listed or indent <= container + 3)
            and (marker.group(1)[0] != "`" or "`" not in fence_text[marker.end() :])
        ):
            fence, fence_container = marker.group(1), container
            yield None
            continue
        for column, char in enumerate(content):
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
                continue
            if char == '"':
                in_string = True
            elif char in "{[}]":
                yield char, offset + column, column == first, column == len(content) - 1
        if in_string:
            in_string = escaped = False
            yield None


def _blocks(text: str, skip_root: bool = False) -> Iterator[tuple[str, bool]]:
    unmatched: list[int] = []
    stack_start = 0
    for token in _delimiters(text):
        if token is None:
            stack_start = len(unmatched)
        elif token[0] in "{[":
            unmatched.append(token[1])
        elif len(unmatched) > stack_start and text[unmatched[-1]] == ("{" if token[0] == "}" else "["):
            unmatched.pop()
        else:
            unmatched.append(token[1])
            stack_start = len(unmatched)
        if len(unmatched) > 65536:
            raise _ParseError("Tool Call F1 exceeded its delimiter limit (65536)")
    skip = set(unmatched)
    depth, start, start_depth, starts_line = 0, -1, 0, False
    for token in _delimiters(text):
        if token is None or token[1] in skip:
            continue
        char, index, first, last = token
        if char in "{[":
            if start < 0 and depth == (1 if skip_root else 0):
                start, start_depth, starts_line = index, depth, first
            depth += 1
            continue
        depth -= 1
        if start >= 0 and depth == start_depth:
            if last:
                yield text[start : index + 1], starts_line
            start = -1


def _json_blocks(text: str) -> Iterator[Any]:
    pending = [_blocks(text)]
    remaining = 4 * len(text)
    while pending:
        nxt = next(pending[-1], None)
        if nxt is None:
            pending.pop()
            continue
        block, starts_line = nxt
        if len(block) > remaining:
            raise _ParseError("Tool Call F1 could not finish parsing malformed output within its work limit")
        remaining -= len(block)
        try:
            parsed = json.loads(block)
        except ValueError:
            pending.append(_blocks(block, True))
            continue
        if starts_line:
            yield parsed


def tool_names(output: Any) -> set[str]:
    """promptfoo's ``extractToolNames`` (OpenAI, Anthropic, Google shapes; JSON in text)."""
    names: set[str] = set()
    if output is None:
        return names
    if isinstance(output, str):
        try:
            return tool_names(json.loads(output))
        except ValueError:
            for block in _json_blocks(output):
                names |= tool_names(block)
            return names
    if isinstance(output, dict):
        if isinstance(output.get("tool_calls"), list):
            for call in output["tool_calls"]:
                if isinstance(call, dict):
                    if isinstance(call.get("function"), dict) and isinstance(call["function"].get("name"), str):
                        names.add(call["function"]["name"])
                    if isinstance(call.get("name"), str):
                        names.add(call["name"])
            return names
        if output.get("type") in ("tool_use", "function_call") and isinstance(output.get("name"), str):
            return {output["name"]}
        if isinstance(output.get("functionCall"), dict):
            name = output["functionCall"].get("name")
            return {name} if isinstance(name, str) else names
        if isinstance(output.get("toolCall"), dict):
            calls = output["toolCall"].get("functionCalls")
            return {c["name"] for c in calls or [] if isinstance(c, dict) and isinstance(c.get("name"), str)}
        return names
    if isinstance(output, list):
        for block in output:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                names.add(block["name"])
            elif isinstance(block.get("functionCall"), dict):
                if isinstance(block["functionCall"].get("name"), str):
                    names.add(block["functionCall"]["name"])
            elif isinstance(block.get("function"), dict):
                if isinstance(block["function"].get("name"), str):
                    names.add(block["function"]["name"])
            elif isinstance(block.get("name"), str):
                names.add(block["name"])
    return names


def tool_call_f1(p: Params) -> dict[str, Any]:
    value = p.value
    if isinstance(value, list):
        expected = [str(v).strip() for v in value]
    elif isinstance(value, str):
        expected = [v.strip() for v in value.split(",")]
    else:
        raise CheckError('"tool-call-f1" assertion requires a value: array of tool names or comma-separated string')
    wanted = {v for v in expected if v}
    if not wanted:
        raise CheckError('"tool-call-f1" assertion requires at least one expected tool name')
    try:
        actual = tool_names(p.output)
    except _ParseError as err:
        return result(False, str(err))
    hit = len(wanted & actual)
    precision = hit / len(actual) if actual else 0.0
    recall = hit / len(wanted)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    threshold = 1 if p.threshold is None else p.threshold
    passed = (f1 >= threshold) != p.inverse
    exp, got = ", ".join(sorted(wanted)), ", ".join(sorted(actual)) or "(none)"
    if passed:
        measured = f"Tool Call F1: {f1:.3f} (precision={precision:.3f}, recall={recall:.3f})"
        reason = f"{measured}. Expected: [{exp}], Called: [{got}]"
    else:
        reason = (
            f"Tool Call F1 score {f1:.3f} is {'above' if p.inverse else 'below'} threshold {threshold}. "
            f"Expected: [{exp}], Called: [{got}]. Precision={precision:.3f}, Recall={recall:.3f}"
        )
    return {"pass": passed, "score": f1, "reason": reason}
