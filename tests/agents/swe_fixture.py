"""The SWE-style example (``examples/environments/swe``) for the tests: its five tiny repositories in SWE-bench's row
schema (``files`` the repository as the agent finds it, ``check_files`` the hidden tests applied after it stops,
``FAIL_TO_PASS``/``PASS_TO_PASS`` JSON-encoded lists of pytest node ids), and the edit that fixes each one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "environments" / "swe"

# instance id -> (path, old text, new text): what a right agent changes
FIXES: dict[str, tuple[str, str, str]] = {
    "tiny__calc-1": ("calc/ops.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"),
    "tiny__slug-2": ("slug.py", "return '-'.join(text.split())", "return '-'.join(text.lower().split())"),
    "tiny__stack-3": (
        "stack.py",
        "            return None\n",
        "            raise IndexError('pop from an empty stack')\n",
    ),
    "tiny__dates-4": (
        "dates/leap.py",
        "    return year % 4 == 0\n",
        "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
    ),
    "tiny__cart-5": (
        "cart.py",
        "sum(price for price, qty in self.lines)",
        "sum(price * qty for price, qty in self.lines)",
    ),
}


def rows() -> list[dict[str, Any]]:
    """The example's dataset rows, as SWE-bench writes them."""
    return [json.loads(line) for line in (EXAMPLE / "instances.jsonl").read_text().splitlines() if line.strip()]


REPOS: list[dict[str, Any]] = [
    {**row, "FAIL_TO_PASS": json.loads(row["FAIL_TO_PASS"]), "PASS_TO_PASS": json.loads(row["PASS_TO_PASS"])}
    for row in rows()
]


def fix_of(instance_id: str) -> tuple[str, str, str]:
    """The (path, old, new) edit that resolves an instance."""
    return FIXES[instance_id]
