"""The test server behaves like a server that supports only some ``response_format`` types, when told to."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "g",
        "strict": True,
        "schema": {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]},
    },
}


def post(server: Any, response_format: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "grade"}]}
    if response_format is not None:
        body["response_format"] = response_format
    request = urllib.request.Request(
        server.base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_unsupported_types_are_refused_and_supported_ones_pass(serve):
    server = serve('{"score": 3}', response_formats={"json_object", "text"})
    status, body = post(server, SCHEMA)
    assert status == 400 and "'json_schema' is not supported" in body["error"]["message"]
    assert post(server, {"type": "json_object"})[0] == 200
    assert post(server, None)[0] == 200


@pytest.mark.parametrize(
    ("reply", "fmt", "message"),
    [
        ("SCORE: 3", {"type": "json_object"}, "is not JSON"),
        ("[3]", {"type": "json_object"}, "not an object"),
        ('{"score": "three"}', SCHEMA, "does not satisfy the response_format schema"),
    ],
)
def test_a_scripted_reply_breaking_the_format_is_a_loud_error(serve, reply, fmt, message):
    server = serve(reply, response_formats={"json_schema", "json_object", "text"})
    status, body = post(server, fmt)
    assert status == 500 and message in body["error"]["message"]


def test_by_default_any_format_is_taken_and_nothing_checked(serve):
    server = serve("SCORE: 3")
    assert post(server, SCHEMA)[0] == 200
