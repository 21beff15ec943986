"""Speaking to the test server over plain HTTP (urllib), as any client would."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def post(base_url: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """(status, JSON body) of a POST to ``base_url + path``."""
    req = urllib.request.Request(
        base_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def chat(base_url: str, *messages: str | dict[str, Any], model: str = "m", **extra: Any) -> tuple[int, Any]:
    """A chat request: plain strings are user messages."""
    msgs = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages]
    return post(base_url, "/chat/completions", {"model": model, "messages": msgs, **extra})


def text_of(body: Any) -> str | None:
    return body["choices"][0]["message"]["content"]


def complete(base_url: str, prompt: Any, **extra: Any) -> tuple[int, Any]:
    return post(base_url, "/completions", {"model": "m", "prompt": prompt, **extra})
