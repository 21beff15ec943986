"""A deliberately imperfect rule-based agent: it answers by calling a calculator and a lookup table.

It stands in for an LLM agent so the demo runs offline in seconds. It returns its text answer together with
the trace of tool calls it made, which is what ``tool_usage`` judges.
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any

from assay.models.base import Request, Response, ToolCall, Usage

CAPITALS = {
    "france": "Paris",
    "japan": "Tokyo",
    "kenya": "Nairobi",
    "canada": "Ottawa",
    "brazil": "Brasília",
    "australia": "Canberra",
    "egypt": "Cairo",
    "norway": "Oslo",
}

_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
}


def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression safely (numbers and + - * / ** only; no names, no calls)."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return float(_OPS[type(node.op)](walk(node.left), walk(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return float(_OPS[type(node.op)](walk(node.operand)))
        raise ValueError(f"unsupported expression: {expression!r}")

    return walk(ast.parse(expression, mode="eval").body)


def lookup_capital(country: str) -> str | None:
    """The capital of a country from a small table, or None when the table does not have it."""
    return CAPITALS.get(country.strip().lower())


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.4g}"


def answer(request: Request) -> Response:
    """Answer the last user message, calling tools where the question needs them."""
    question = str(request.messages[-1]["content"]).split("Question:")[-1].strip()
    calls: list[ToolCall] = []
    text: str
    if m := re.search(r"capital of ([A-Za-z ]+?)\??$", question):
        country = m.group(1)
        capital = lookup_capital(country)
        calls.append(ToolCall(name="lookup_capital", arguments={"country": country}, result=capital))
        text = capital if capital else f"I could not find the capital of {country}."
    elif m := re.search(r"([-\d.()+*/ ]+[-+*/][-\d.()+*/ ]+)", question):
        expression = m.group(1).strip()
        value = calculator(expression)
        # another realistic flaw: simple two-number sums are answered "from memory", skipping the tool
        if not re.fullmatch(r"\d+ [-+] \d+", expression):
            calls.append(ToolCall(name="calculator", arguments={"expression": expression}, result=value))
        # the agent is chatty about percentages: a realistic imperfection the evaluators catch
        text = f"The result is {_number(value)}." if "percent" in question else _number(value)
    else:
        text = "I don't know."
    words = sum(len(str(m.get("content", "")).split()) for m in request.messages)
    return Response(
        text=text,
        tool_calls=calls,
        usage=Usage(input_tokens=words, output_tokens=len(text.split())),
        finish_reason="stop",
        model="demo-agent",
    )
