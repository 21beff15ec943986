"""Comparing a written document with its fixture: every figure (a float) to a stated tolerance, the rest exactly.

A float's last digits can depend on the numpy release that computed it: numpy 2.5 (the newest for Python 3.12
and 3.13) gives a corpus BLEU's bootstrap stderr that differs from numpy 2.4's in the 17th significant digit, so
a fixture written under one release holds figures, not bytes. Keys and their order, strings, ints, bools, None,
list lengths, and which values are floats at all still compare exactly; only a float's value has the tolerance.
"""

from __future__ import annotations

import math
from typing import Any

REL_TOL = 1e-12  # relative: numpy releases differ by a few ulps (~1e-16); any real change is far larger
ABS_TOL = 1e-15  # for figures at or near zero, where a relative tolerance means nothing


def differences(actual: Any, expected: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (parsed JSON), with the tolerance above for floats."""
    at = where or "/"
    if type(actual) is not type(expected):
        kinds = f"{type(actual).__name__} {actual!r} where the fixture has {type(expected).__name__}"
        return [f"{at}: {kinds} {expected!r}"]
    if isinstance(expected, float):
        if math.isclose(actual, expected, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            return []
        return [f"{at}: {actual!r} != {expected!r} (beyond rel {REL_TOL:g} / abs {ABS_TOL:g})"]
    if isinstance(expected, dict):
        if list(actual) != list(expected):
            return [f"{at}: keys {list(actual)} where the fixture has {list(expected)}"]
        return [d for key in expected for d in differences(actual[key], expected[key], f"{where}/{key}")]
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return [f"{at}: {len(actual)} items where the fixture has {len(expected)}"]
        pairs = enumerate(zip(actual, expected, strict=True))
        return [d for i, (a, e) in pairs for d in differences(a, e, f"{where}/{i}")]
    return [] if actual == expected else [f"{at}: {actual!r} != {expected!r}"]


def assert_same_figures(actual: Any, expected: Any) -> None:
    """``actual == expected`` but for floats, which agree to REL_TOL (or ABS_TOL near zero)."""
    found = differences(actual, expected)
    assert not found, "differs from the fixture:\n" + "\n".join(found[:20])
