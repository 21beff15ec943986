"""The tests' own environment: which names the program can give the tests and which it cannot, and exceptions from
the program that would steer the tests' control flow.

The tests see the program's top-level names (MBPP asserts call its functions by name), but a builtin, a module
name (``math`` in ``math.isclose``, which MBPP tests use without importing it) or any name the tests only read
attributes from is the real thing or nothing: the program's own object under such a name never reaches them.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from assay import evaluators
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap

AREA = "assert math.isclose(area(2), 12.566, rel_tol=1e-3)"
AREA_CHECK = {
    "test": "def check(candidate):\n    assert math.isclose(candidate(2), 12.566, rel_tol=1e-3)\n",
    "entry_point": "area",
}


def _exec(code: str, expected: Any, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 8, "memory_mb": 256, **options}
    return evaluators.get("code_exec", **settings).evaluate(textwrap.dedent(code), expected)


def _failed(v: Verdict) -> None:
    assert not v.passed and v.score == 0.0 and not v.is_error, v


@pytest.mark.parametrize("expected", [[AREA], AREA_CHECK], ids=["mbpp", "humaneval"])
@pytest.mark.parametrize(
    "fake",
    [
        "class math:\n    isclose = staticmethod(lambda *a, **k: True)\n",
        "def _yes(*a, **k):\n    return True\ndef math():\n    pass\nmath.isclose = _yes\n",
        "import types\nmath = types.ModuleType('math')\nmath.isclose = lambda *a, **k: True\n",
        "import math\nmath.isclose = lambda *a, **k: True\n",
    ],
    ids=["class", "function", "fake-module", "patched-module"],
)
def test_a_module_name_the_tests_use_is_never_the_programs_object(fake: str, expected: Any) -> None:
    _failed(_exec(fake + "def area(r):\n    return 0\n", expected))


def test_a_module_the_program_imported_is_the_tests_real_module() -> None:
    right = "import math\ndef area(r):\n    return math.pi * r * r\n"
    assert _exec(right, [AREA]).passed
    assert _exec(right, AREA_CHECK).passed


def test_a_module_the_program_did_not_import_is_undefined_as_python_would_have_it() -> None:
    """Tests appended to a program that never imported ``math`` stop at a NameError: here too (the MBPP rows that
    use ``math`` unimported rely on the program importing it)."""
    v = _exec("def area(r):\n    return 3.14159265 * r * r\n", [AREA])
    _failed(v)
    assert "NameError" in (v.reason or "") and "math" in (v.reason or "")


def test_a_name_the_tests_only_read_attributes_from_is_a_module_not_the_programs_object() -> None:
    """``np`` is no standard-library module, and numpy is hidden in the sandbox: only a fake can define it."""
    fake = "class np:\n    allclose = staticmethod(lambda *a, **k: True)\ndef f(x):\n    return [0.0]\n"
    _failed(_exec(fake, ["assert np.allclose(f(1), [2.0])"]))


@pytest.mark.parametrize(
    ("fake", "test"),
    [
        ("all = lambda *a: True", "assert all([f(1) == 2])"),
        ("len = lambda *a: 3", "assert len(f(1)) == 3"),
        ("isinstance = lambda *a: True", "assert isinstance(f(1), list)"),
        ("sorted = lambda x: [1, 2]", "assert sorted(f(1)) == [1, 2]"),
    ],
)
def test_builtins_the_program_shadows_stay_the_real_builtins(fake: str, test: str) -> None:
    v = _exec(fake + "\ndef f(x):\n    return 0\n", [test])
    _failed(v)


def test_a_function_named_like_a_module_is_the_programs_when_the_tests_call_it() -> None:
    code = "import math\ndef copy(xs):\n    return xs[::-1]\ndef string(n):\n    return str(n)\n"
    tests = ["assert copy([1, 2]) == [2, 1]", "assert string(3) == '3'", "assert math.isclose(1.0, 1.0)"]
    assert _exec(code, tests).passed
    fake = "def _yes(*a, **k):\n    return True\ndef math(x):\n    return x\nmath.isclose = _yes\n"
    _failed(_exec(fake + "def area(r):\n    return 0\n", [AREA, "assert math(1) == 1"]))  # used both ways


def test_the_programs_functions_classes_and_data_are_the_tests_to_use() -> None:
    code = "import math\nLIMIT = 10\nclass P:\n    def __init__(self, x):\n        self.x = x\n"
    code += "def twice(x):\n    return 2 * x\ndef xs(ps):\n    return [p.x for p in ps]\n"
    tests = [
        "assert twice(LIMIT) == 20",
        "assert list(map(twice, [1, 2])) == [2, 4]",
        "assert xs([P(1), P(2)]) == [1, 2] and P(3).x == 3",
        "assert math.isclose(twice(0.5), 1.0)",
    ]
    assert _exec(code, tests).passed


# --- exceptions crossing from the program ------------------------------------------------------------------------

STOPS = [
    "def f(x):\n    raise StopIteration\n",
    "class Done(StopIteration):\n    pass\ndef f(x):\n    raise Done('early')\n",
    "def f(x):\n    raise StopAsyncIteration\n",
]


@pytest.mark.parametrize("code", STOPS, ids=["StopIteration", "subclass", "StopAsyncIteration"])
def test_stop_iteration_from_the_program_cannot_end_the_tests_iteration(code: str) -> None:
    _failed(_exec(code, ["assert all(map(lambda x: f(x) == 1, [1, 2]))"]))
    _failed(_exec(code, {"test": "def check(c):\n    assert all(map(c, [1, 2]))\n", "entry_point": "f"}))
    _failed(_exec(code, ["assert all(f(x) == 1 for x in [1, 2])"]))


def test_stop_iteration_from_an_attribute_of_the_programs_object_cannot_either() -> None:
    code = "class C:\n    def __getattr__(self, name):\n        raise StopIteration\n"
    _failed(_exec(code, ["assert all(map(lambda x: C().value == x, [1, 2]))"]))


def test_stop_iteration_is_reported_as_what_the_program_raised() -> None:
    v = _exec(STOPS[0], ["assert all(map(lambda x: f(x) == 1, [1, 2]))"])
    _failed(v)
    assert "StopIteration" in (v.reason or "")
