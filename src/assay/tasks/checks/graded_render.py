"""How promptfoo turns values into grading-prompt text, and grader replies into values, in Python.

promptfoo renders its grading prompts with Nunjucks over JavaScript values: the output goes through ``tryParse``
(``JSON.parse``, else the text), objects are ``JSON.stringify``-ed first (``processContextForTemplating``), and
Nunjucks prints ``null``/``undefined`` as nothing, booleans as ``true``/``false``, numbers as JavaScript writes them
(``1`` not ``1.0``) and arrays joined by commas. A JSON prompt (chat messages) has each string of it rendered
(``renderLlmRubricPrompt``); the rendered text becomes chat messages as promptfoo's OpenAI provider reads it
(``parseChatPrompt``: JSON, YAML starting ``- role:``, else one user message). Replies are read with
``extractJsonObjects`` (the first balanced ``{...}`` that parses as YAML 1.2, ``//`` comments allowed). The templates
run in Jinja2's sandbox with the same printing rules (``finalize``); promptfoo's ``env`` global (the process
environment) is left out, so a grading prompt never reads a secret.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any

import yaml

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.yaml12 import Yaml12Loader

MAX_JSON = 100_000  # extractJsonObjects' longest candidate


class Untrusted(str):
    """A value already rendered and delimited (see ``graded``): printed as it is, never JSON-encoded again."""


def try_parse(text: str) -> Any:
    """promptfoo's ``tryParse``: the JSON value of ``text`` (no NaN/Infinity, as ``JSON.parse``), else ``text``."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"JSON has no {name}")


def js_number(x: float | int) -> str:
    """A number as JavaScript's ``String(x)`` writes it (shortest round trip, ``1`` for 1.0, ``1e-7``, ``1e+21``)."""
    if isinstance(x, int) and abs(x) < 2**53:
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digits_t, exponent = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    n = exponent + len("".join(map(str, digits_t)))  # the decimal point's place after the first digit run
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def js_json(value: Any) -> str:
    """``JSON.stringify(value)``: compact, keys in order, non-ASCII kept, non-finite numbers as ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{js_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def js_string(value: Any) -> str:
    """How Nunjucks prints a value: ``String(value)`` with null/undefined as nothing."""
    if value is None or _is_undefined(value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def _is_undefined(value: Any) -> bool:
    import jinja2

    return isinstance(value, jinja2.Undefined)


def js_to_number(value: Any) -> float:
    """JavaScript's ``Number(value)`` (NaN where JavaScript gives NaN)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return js_to_number(js_string(value))
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        if re.fullmatch(r"[+-]?Infinity", text):
            return -math.inf if text.startswith("-") else math.inf
        if re.fullmatch(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+", text):
            return float(int(text, 0))
        if re.fullmatch(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", text):
            return float(text)
    return math.nan


def template_values(values: dict[str, Any]) -> dict[str, Any]:
    """``processContextForTemplating``: objects become their JSON text; so do objects and arrays inside an array."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Untrusted):
            out[key] = value
        elif isinstance(value, dict):
            out[key] = js_json(value)
        elif isinstance(value, list):
            out[key] = [js_json(v) if isinstance(v, dict | list) else v for v in value]
        else:
            out[key] = value
    return out


@lru_cache(maxsize=1)
def _environment() -> Any:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        undefined=jinja2.ChainableUndefined,  # Nunjucks prints a missing name, or a member of one, as nothing
        keep_trailing_newline=True,
        autoescape=False,
        finalize=js_string,
    )
    env.filters["dump"] = js_json  # Nunjucks' JSON filter
    env.filters["load"] = lambda text: json.loads(text)  # promptfoo's own filter
    return env


@lru_cache(maxsize=512)
def _compiled(template: str) -> Any:
    """A template compiled once (the grading prompts are the same for every row)."""
    return _environment().from_string(template)


def render(template: str, values: dict[str, Any]) -> str:
    """Render a Nunjucks template (as Jinja2, sandboxed) over ``values`` prepared by :func:`template_values`."""
    import jinja2

    try:
        return str(_compiled(template).render(values))
    except jinja2.TemplateError as err:
        raise ConfigError(f"the grading prompt does not render: {type(err).__name__}: {err}") from None


def render_prompt(prompt: str, values: dict[str, Any]) -> str:
    """``renderLlmRubricPrompt``: a JSON prompt has every string in it rendered (and is JSON again); any other text
    is rendered as a whole."""
    try:
        parsed = json.loads(prompt)
    except ValueError:
        return render(prompt, values)
    return js_json(_render_strings(parsed, values))


def _render_strings(value: Any, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return render(value, values)
    if isinstance(value, list):
        return [_render_strings(v, values) for v in value]
    if isinstance(value, dict):
        return {k: _render_strings(v, values) for k, v in value.items()}
    return value


def chat_messages(prompt: str) -> list[dict[str, Any]]:
    """The chat messages promptfoo's OpenAI provider sends for a rendered prompt (``parseChatPrompt``)."""
    text = prompt.strip()
    if text.startswith("- role:"):
        try:
            parsed = yaml.load(prompt, Loader=Yaml12Loader)  # a SafeLoader subclass
        except yaml.YAMLError as err:
            raise ConfigError(f"the grading prompt is not valid YAML chat messages: {err}") from None
    else:
        try:
            parsed = json.loads(prompt)
        except ValueError as err:
            if _looks_like_json(text):
                raise ConfigError(f"the grading prompt is not a valid JSON string: {err}") from None
            return [{"role": "user", "content": prompt}]
    if isinstance(parsed, list) and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in parsed):
        return [dict(m) for m in parsed]
    raise ConfigError(f"the grading prompt renders to JSON that is not a list of chat messages: {prompt[:200]!r}")


def _looks_like_json(text: str) -> bool:
    if text.startswith("{") and text.endswith("}"):
        return True
    if text.startswith("[") and text.endswith("]"):
        after = text[1:].lstrip()
        return not after or after[0] in '"{[-0123456789' or after.startswith(("true", "false", "null"))
    return False


def extract_json_objects(text: str) -> list[Any]:
    """promptfoo's ``extractJsonObjects``: from each ``{``, the shortest brace-balanced run (closed at the end of the
    text when it never balances) that parses as YAML 1.2 (JSON, or JSON with ``//`` comments, unquoted keys...)."""
    found: list[Any] = []
    i = 0
    n = len(text)
    while i < n:
        if text[i] == "{":
            opened, closed = 1, 0
            j = i + 1
            limit = min(i + MAX_JSON, n)
            while j < limit and opened > closed:
                if text[j] == "{":
                    opened += 1
                if text[j] == "}":
                    closed += 1
                j += 1
                if opened == closed or j == n or j == i + MAX_JSON:
                    candidate = text[i:j] + "}" * max(0, opened - closed)
                    parsed = _parse_object(candidate)
                    if isinstance(parsed, dict | list):
                        found.append(parsed)
                        i = j - 1
                        break
                    if opened == closed:
                        break
        i += 1
    return found


def _parse_object(candidate: str) -> Any:
    try:
        return json.loads(candidate, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        pass
    try:
        return yaml.load(slash_comments_to_hash(candidate), Loader=Yaml12Loader)  # a SafeLoader subclass
    except (yaml.YAMLError, RecursionError, ValueError):
        return None


def slash_comments_to_hash(text: str) -> str:
    """promptfoo's ``convertSlashCommentsToHash``: ``// comment`` outside quotes becomes ``# comment`` (``://`` in a
    URL is kept)."""
    return "\n".join(_line_comments(line) for line in text.split("\n"))


def _line_comments(line: str) -> str:
    state = "normal"
    out = ""
    i = 0
    while i < len(line):
        char = line[i]
        nxt = line[i + 1] if i + 1 < len(line) else ""
        prev = line[i - 1] if i > 0 else ""
        if state == "normal":
            if char == "'" and not re.match(r"[a-zA-Z]", prev):
                state = "single"
            elif char == '"':
                state = "double"
            elif char == "/" and nxt == "/":
                start = 0
                for k in range(i - 1, -1, -1):
                    if line[k].isspace():
                        start = k + 1
                        break
                if "://" in line[start : i + 2]:  # a URL: kept as it is
                    out += char
                    i += 1
                    continue
                slashes = 2
                while i + slashes < len(line) and line[i + slashes] == "/":
                    slashes += 1
                return out + "#" * (slashes // 2) + line[i + slashes :]
            out += char
        elif state == "single":
            out += char
            if char == "'" and not _escaped(line, i) and not re.match(r"[a-zA-Z]", nxt):
                state = "normal"
        else:
            out += char
            if char == '"' and not _escaped(line, i):
                state = "normal"
        i += 1
    return out


def _escaped(line: str, at: int) -> bool:
    count = 0
    k = at - 1
    while k >= 0 and line[k] == "\\":
        count += 1
        k -= 1
    return count % 2 == 1
