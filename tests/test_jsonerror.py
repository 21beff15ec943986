"""assay words a JSON error the same on every Python: 3.13's wording of a trailing comma, which 3.11 and 3.12 report
differently, one column further on."""

from __future__ import annotations

import json

import pytest

from assay import evaluators
from assay.jsonerror import same_error

CASES = [  # (text, message, line, column) on every Python
    ('{"a": 1,}', "Illegal trailing comma before end of object", 1, 8),
    ("[1, 2,]", "Illegal trailing comma before end of array", 1, 6),
    ('{"q": "x", }', "Illegal trailing comma before end of object", 1, 10),
    ('{"a": [1,\n ]}', "Illegal trailing comma before end of array", 1, 9),
    ("[1,\t]", "Illegal trailing comma before end of array", 1, 3),
    ('{"a":1,"b":[2,], }', "Illegal trailing comma before end of array", 1, 14),
    # not a trailing comma: worded by json alike on every Python, and left as it is
    ("[1, }", "Expecting value", 1, 5),
    ('{"a": 1, ]', "Expecting property name enclosed in double quotes", 1, 10),
    ("[,]", "Expecting value", 1, 2),
    ("{,}", "Expecting property name enclosed in double quotes", 1, 2),
    ("[1,,]", "Expecting value", 1, 4),
    ('{"a":}', "Expecting value", 1, 6),
    ('{"a" 1}', "Expecting ':' delimiter", 1, 6),
    ('{"a": 1 "b": 2}', "Expecting ',' delimiter", 1, 9),
    ("[1] x", "Extra data", 1, 5),
]


@pytest.mark.parametrize(("text", "message", "line", "column"), CASES)
def test_json_errors_are_worded_alike_on_every_python(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    err = same_error(caught.value)
    assert (err.msg, err.lineno, err.colno) == (message, line, column)


def test_a_json_evaluators_reason_is_the_same_on_every_python() -> None:
    v = evaluators.get("json_match", extract="strict").evaluate('{"answer": 4,}', {"answer": 4})
    assert not v.passed and not v.is_error
    assert v.reason == (
        "output is not valid JSON: the output is not valid JSON "
        "(Illegal trailing comma before end of object at line 1 column 13)"
    )
