"""The boundary between the code under test and its tests: what crosses as data, what as a handle, what cannot,
and real HumanEval / MBPP rows judged as before (right solutions pass, wrong ones fail)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from assay import evaluators
from assay.evaluators.code import programs, wire
from assay.verdict import Verdict
from tests.sandbox.sandbox_support import needs_bwrap

pytestmark = needs_bwrap


def _exec(code: str, expected: Any, context: dict[str, Any] | None = None, **options: Any) -> Verdict:
    settings: dict[str, Any] = {"allow_untrusted_code": True, "timeout_s": 8, "memory_mb": 256, **options}
    return evaluators.get("code_exec", **settings).evaluate(code, expected, context=context)


# --- the codec ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -7, 2**5000, 1.5, -0.0, float("inf"), "é\n\"", b"\x00\xff", bytearray(b"ab"), [1, [2]],
     (1, (2,)), {1: "a", (1, 2): [3], "k": {}}, {1, 2}, frozenset({3}), 1 + 2j],
)  # fmt: skip
def test_data_round_trips_exactly(value: Any) -> None:
    back = wire.decode(wire.encode(value))
    assert back == value and type(back) is type(value)


def test_what_is_not_data_is_refused_both_ways() -> None:
    class Yes:
        def __eq__(self, other: object) -> bool:
            return True

    with pytest.raises(wire.NotData, match="'Yes'"):
        wire.encode([Yes()])
    for text in [
        '{"a": 1}',
        '{"$zz": [1]}',
        '{"$d": [[[1], 2]]}',
        '{"$h": [1, "f"]}',
        "[1] x",
        "[" * 5000 + "]" * 5000,
    ]:
        with pytest.raises(wire.WireError):
            wire.decode(text)
    assert wire.decode('{"$t": [1, NaN]}')[0] == 1  # NaN is data


def test_nesting_is_bounded_the_same_both_ways_on_every_python() -> None:
    """json's scanner alone refuses nesting only at the interpreter's recursion limit, which 3.13 raised."""
    deepest: Any = []
    for _ in range(wire.MAX_DEPTH):
        deepest = (deepest,) if len(deepest) % 2 else [deepest]
    assert wire.decode(wire.encode(deepest)) == deepest
    with pytest.raises(wire.NotData, match="nested more than"):
        wire.encode([deepest])
    for text in ["[" * (wire.MAX_DEPTH + 2) + "]" * (wire.MAX_DEPTH + 2), '{"$t": [' * 201 + "1" + "]}" * 201]:
        with pytest.raises(wire.WireError, match="nested more than"):
            wire.decode(text)
    assert wire.decode(wire.encode([[i] for i in range(5000)]))[-1] == [4999]  # many brackets, shallow: data


def test_the_programs_compose_into_valid_python() -> None:
    for program in (programs.serve_program(), programs.runner_program()):
        compile(program, "<program>", "exec")
        assert "from assay" not in program  # nothing of assay is importable where they run


# --- what crosses ------------------------------------------------------------------------------------------------


def test_objects_that_are_not_data_may_be_passed_back_and_called() -> None:
    """MBPP 601: the tests build the code's own class and hand the objects back to its function."""
    code = textwrap.dedent("""
    class Pair(object):
        def __init__(self, a, b):
            self.a = a
            self.b = b
        def span(self):
            return self.b - self.a
    def max_chain_length(arr, n):
        mcl = [1] * n
        for i in range(1, n):
            for j in range(0, i):
                if arr[i].a > arr[j].b and mcl[i] < mcl[j] + 1:
                    mcl[i] = mcl[j] + 1
        return max(mcl)
    """)
    tests = [
        "assert max_chain_length([Pair(5, 24), Pair(15, 25), Pair(27, 40), Pair(50, 60)], 4) == 3",
        "assert Pair(1, 4).span() == 3 and Pair(1, 4).a == 1",
    ]
    assert _exec(code, tests).passed
    v = _exec(code, ["assert Pair(1, 2) == Pair(1, 2)"])  # comparing the code's objects here is refused
    assert not v.passed and not v.is_error and "class 'Pair'" not in (v.reason or "")
    assert "an object of type 'Pair'" in (v.reason or "")


def test_arguments_changed_in_place_come_back() -> None:
    code = "def sort_in_place(xs):\n    xs.sort()\ndef add_key(d, k):\n    d[k] = 1\n"
    tests = [
        "xs = [3, 1, 2]\nsort_in_place(xs)\nassert xs == [1, 2, 3]",
        "d = {}\nadd_key(d, k='a')\nassert d == {'a': 1}",
    ]
    assert _exec(code, tests).passed


def test_every_kind_of_data_crosses_into_the_code_and_back() -> None:
    """Whichever Python the sandbox runs (assay's own, or another CPython 3.8+: see isolation["python"])."""
    values = ["None", "True", "2**5000", "-0.0", "float('inf')", "'é'", "b'\\x00\\xff'", "bytearray(b'ab')",
              "(1, (2,))", "{1: 'a', (1, 2): [3]}", "{1, 2}", "frozenset({3})", "1 + 2j"]  # fmt: skip
    tests = [f"assert echo({v}) == {v} and type(echo({v})) is type({v})" for v in values]
    v = _exec("def echo(x):\n    return x", tests)
    assert v.passed, v.reason
    assert "CPython 3." in v.details["isolation"]["python"]


def test_exceptions_cross_as_their_built_in_class_with_the_message() -> None:
    code = "class Bad(ValueError):\n    pass\ndef f(x):\n    if x < 0:\n        raise Bad('negative')\n    return x\n"
    catching = "try:\n    f(-1)\n    raise AssertionError('no error')\n"
    catching += "except ValueError as e:\n    assert str(e) == 'negative'"
    assert _exec(code, [catching]).passed
    v = _exec(code, ["assert f(-1) == 1"])
    assert v.reason == "test `assert f(-1) == 1` failed: ValueError: negative"


def test_names_the_tests_take_from_the_code() -> None:
    code = "import math\nLIMIT = 10\ndef area(r):\n    return math.pi * r * r\n"
    assert _exec(code, ["assert math.isclose(area(1), math.pi)", "assert LIMIT == 10"]).passed
    v = _exec(code, ["assert perimeter(1) == 2"])
    assert not v.passed and "NameError" in (v.reason or "") and "perimeter" in (v.reason or "")
    cases = {"function": "perimeter", "cases": [{"input": [1], "output": 2}]}
    assert _exec(code, cases).reason == "test `function 'perimeter'` failed: the code defines no function 'perimeter'"
    humaneval = {"test": "def check(candidate):\n    assert candidate(1) == 2\n", "entry_point": "perimeter"}
    assert _exec(code, humaneval).reason == "test `check(perimeter)` failed: the code defines no 'perimeter'"


def test_a_test_passing_what_cannot_cross_is_an_error_not_a_failure() -> None:
    v = _exec("def apply(fn, x):\n    return fn(x)\n", ["assert apply(lambda v: v + 1, 1) == 2"])
    assert v.is_error and "cannot run this test outside the sandbox" in (v.error or "")
    assert "function '<lambda>'" in (v.error or "")


# --- real rows ---------------------------------------------------------------------------------------------------

HUMANEVAL_32 = {
    "prompt": (
        "import math\n\n\ndef poly(xs: list, x: float):\n"
        '    """Evaluates polynomial with coefficients xs at point x."""\n'
        "    return sum([coeff * math.pow(x, i) for i, coeff in enumerate(xs)])\n\n\n"
        "def find_zero(xs: list):\n"
        '    """xs are coefficients of a polynomial. find_zero finds x such that poly(x) = 0."""\n'
    ),
    "test": (
        "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    import math\n    import random\n"
        "    rng = random.Random(42)\n    import copy\n    for _ in range(100):\n"
        "        ncoeff = 2 * rng.randint(1, 4)\n        coeffs = []\n        for _ in range(ncoeff):\n"
        "            coeff = rng.randint(-10, 10)\n            if coeff == 0:\n                coeff = 1\n"
        "            coeffs.append(coeff)\n        solution = candidate(copy.deepcopy(coeffs))\n"
        "        assert math.fabs(poly(coeffs, solution)) < 1e-4\n\n"
    ),
    "entry_point": "find_zero",
}
HUMANEVAL_32_SOLUTION = (
    "    begin, end = -1., 1.\n    while poly(xs, begin) * poly(xs, end) > 0:\n        begin *= 2.0\n"
    "        end *= 2.0\n    while end - begin > 1e-10:\n        center = (begin + end) / 2.0\n"
    "        if poly(xs, center) * poly(xs, begin) > 0:\n            begin = center\n        else:\n"
    "            end = center\n    return begin\n"
)


def test_humaneval_helpers_from_the_prompt_are_the_tasks_not_the_codes() -> None:
    """HumanEval/32's test calls ``poly`` from the prompt: the trusted copy is used, so redefining it cannot pass."""
    row = HUMANEVAL_32
    options = {"code_prefix": "doc.prompt"}
    assert _exec(HUMANEVAL_32_SOLUTION, row, {"doc": row}, **options).passed
    assert not _exec("    return 0.5\n", row, {"doc": row}, **options).passed
    cheat = "    return 0.0\n\n\ndef poly(xs, x):\n    return 0.0\n"
    v = _exec(cheat, row, {"doc": row}, **options)
    assert not v.passed and v.reason == "test `assert math.fabs(poly(coeffs, solution)) < 1e-4` failed: AssertionError"


def test_humaneval_38_round_trip() -> None:
    prompt = (
        "def encode_cyclic(s: str):\n"
        "    groups = [s[(3 * i):min((3 * i + 3), len(s))] for i in range((len(s) + 2) // 3)]\n"
        "    groups = [(group[1:] + group[0]) if len(group) == 3 else group for group in groups]\n"
        '    return "".join(groups)\n\n\ndef decode_cyclic(s: str):\n    """takes encoded string."""\n'
    )
    test = (
        "def check(candidate):\n    from random import Random\n    import string\n    rng = Random(0)\n"
        "    for _ in range(100):\n"
        "        str = ''.join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(10, 20)))\n"
        "        encoded_str = encode_cyclic(str)\n        assert candidate(encoded_str) == str\n"
    )
    row = {"prompt": prompt, "test": test, "entry_point": "decode_cyclic"}
    right = "    return encode_cyclic(encode_cyclic(s))\n"
    assert _exec(right, row, {"doc": row}, code_prefix="doc.prompt").passed
    assert not _exec("    return s\n", row, {"doc": row}, code_prefix="doc.prompt").passed


def test_mbpp_row_with_setup_code() -> None:
    row = {
        "test_list": ["assert heap_smallest([25, 35, 22, 85, 14, 65, 75, 22, 58], 3) == [14, 22, 22]"],
        "test_setup_code": "import heapq as hq",
    }
    right = "import heapq as hq\ndef heap_smallest(nums, n):\n    return hq.nsmallest(n, nums)\n"
    assert _exec(right, row).passed
    assert not _exec("def heap_smallest(nums, n):\n    return sorted(nums)[-n:]\n", row).passed
