"""Five tiny repositories in SWE-bench's row schema, each with a bug, an issue text, the fix, and hidden tests:
``files`` is the repository as the agent finds it, ``check_files`` the tests applied after it stops (SWE-bench's
``test_patch``, given as whole files), ``FAIL_TO_PASS``/``PASS_TO_PASS`` JSON-encoded lists of pytest node ids as
SWE-bench writes them. ``fix`` is what a right agent changes (path, old text, new text)."""

from __future__ import annotations

import json
from typing import Any

REPOS: list[dict[str, Any]] = [
    {
        "instance_id": "tiny__calc-1",
        "repo": "tiny/calc",
        "problem_statement": "calc.add returns the difference of its arguments: add(2, 3) gives -1, not 5.",
        "files": {
            "calc/__init__.py": "",
            "calc/ops.py": "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
            "tests/test_ops.py": "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
        },
        "fix": ["calc/ops.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"],
        "check_files": {
            "tests/test_ops.py": (
                "import pytest\n\nfrom calc.ops import add, sub\n\n\n"
                "def test_sub():\n    assert sub(5, 3) == 2\n\n\n"
                "@pytest.mark.parametrize('a,b,total', [(2, 3, 5), (-1, 1, 0)])\n"
                "def test_add(a, b, total):\n    assert add(a, b) == total\n"
            )
        },
        "FAIL_TO_PASS": ["tests/test_ops.py::test_add[2-3-5]", "tests/test_ops.py::test_add[-1-1-0]"],
        "PASS_TO_PASS": ["tests/test_ops.py::test_sub"],
    },
    {
        "instance_id": "tiny__slug-2",
        "repo": "tiny/slug",
        "problem_statement": "slugify keeps capitals: slugify('Hello World') should be 'hello-world'.",
        "files": {
            "slug.py": "def slugify(text):\n    return '-'.join(text.split())\n",
            "tests/test_slug.py": (
                "from slug import slugify\n\n\ndef test_spaces():\n    assert slugify('a b') == 'a-b'\n"
            ),
        },
        "fix": ["slug.py", "return '-'.join(text.split())", "return '-'.join(text.lower().split())"],
        "check_files": {
            "tests/test_slug.py": (
                "from slug import slugify\n\n\ndef test_spaces():\n    assert slugify('a b') == 'a-b'\n\n\n"
                "def test_lowercase():\n    assert slugify('Hello World') == 'hello-world'\n"
            )
        },
        "FAIL_TO_PASS": ["tests/test_slug.py::test_lowercase"],
        "PASS_TO_PASS": ["tests/test_slug.py::test_spaces"],
    },
    {
        "instance_id": "tiny__stack-3",
        "repo": "tiny/stack",
        "problem_statement": "Stack.pop on an empty stack returns None; it should raise IndexError.",
        "files": {
            "stack.py": (
                "class Stack:\n    def __init__(self):\n        self.items = []\n\n"
                "    def push(self, x):\n        self.items.append(x)\n\n"
                "    def pop(self):\n        if not self.items:\n            return None\n"
                "        return self.items.pop()\n"
            ),
        },
        "fix": ["stack.py", "            return None\n", "            raise IndexError('pop from an empty stack')\n"],
        "check_files": {
            "tests/test_stack.py": (
                "import pytest\n\nfrom stack import Stack\n\n\n"
                "def test_push_pop():\n    s = Stack()\n    s.push(1)\n    assert s.pop() == 1\n\n\n"
                "def test_empty_pop_raises():\n    with pytest.raises(IndexError):\n        Stack().pop()\n"
            )
        },
        "FAIL_TO_PASS": ["tests/test_stack.py::test_empty_pop_raises"],
        "PASS_TO_PASS": ["tests/test_stack.py::test_push_pop"],
    },
    {
        "instance_id": "tiny__dates-4",
        "repo": "tiny/dates",
        "problem_statement": "is_leap(1900) is True; century years are leap years only when divisible by 400.",
        "files": {
            "dates/__init__.py": "from dates.leap import is_leap\n",
            "dates/leap.py": "def is_leap(year):\n    return year % 4 == 0\n",
        },
        "fix": [
            "dates/leap.py",
            "    return year % 4 == 0\n",
            "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n",
        ],
        "check_files": {
            "tests/test_leap.py": (
                "from dates import is_leap\n\n\n"
                "def test_ordinary():\n    assert is_leap(2024) and not is_leap(2023)\n\n\n"
                "def test_century():\n    assert not is_leap(1900)\n\n\n"
                "def test_four_hundred():\n    assert is_leap(2000)\n"
            )
        },
        "FAIL_TO_PASS": ["tests/test_leap.py::test_century"],
        "PASS_TO_PASS": ["tests/test_leap.py::test_ordinary", "tests/test_leap.py::test_four_hundred"],
    },
    {
        "instance_id": "tiny__cart-5",
        "repo": "tiny/cart",
        "problem_statement": "Cart.total ignores quantities: two items at 3.0 should cost 6.0.",
        "files": {
            "cart.py": (
                "class Cart:\n    def __init__(self):\n        self.lines = []\n\n"
                "    def add(self, price, qty=1):\n        self.lines.append((price, qty))\n\n"
                "    def total(self):\n        return sum(price for price, qty in self.lines)\n"
            ),
            "README.md": "# cart\nA shopping cart.\n",
        },
        "fix": ["cart.py", "sum(price for price, qty in self.lines)", "sum(price * qty for price, qty in self.lines)"],
        "check_files": {
            "tests/test_cart.py": (
                "from cart import Cart\n\n\n"
                "def test_single():\n    c = Cart()\n    c.add(2.5)\n    assert c.total() == 2.5\n\n\n"
                "def test_quantity():\n    c = Cart()\n    c.add(3.0, 2)\n    assert c.total() == 6.0\n"
            )
        },
        "FAIL_TO_PASS": ["tests/test_cart.py::test_quantity"],
        "PASS_TO_PASS": ["tests/test_cart.py::test_single"],
    },
]


def rows() -> list[dict[str, Any]]:
    """The dataset rows as SWE-bench writes them (test lists JSON-encoded), plus files and check_files."""
    out = []
    for repo in REPOS:
        row = {k: v for k, v in repo.items() if k != "fix"}
        row["FAIL_TO_PASS"] = json.dumps(repo["FAIL_TO_PASS"])
        row["PASS_TO_PASS"] = json.dumps(repo["PASS_TO_PASS"])
        out.append(row)
    return out


def fix_of(instance_id: str) -> list[str]:
    """The (path, old, new) edit that resolves an instance."""
    return next(r["fix"] for r in REPOS if r["instance_id"] == instance_id)
