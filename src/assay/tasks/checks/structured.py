"""promptfoo 0.123.1's structured-output assertions: is-json / contains-json (JSON Schema, and promptfoo's way of
finding JSON in text: YAML flow syntax, ``//`` comments, unclosed braces), is-html / contains-html (its indicators
and wrapper rules). XML is in :mod:`assay.tasks.checks.xmlcheck`."""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

import yaml

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.params import Params, result

PASSED = "Assertion passed"
MAX_JSON = 100_000


class _Yaml12(yaml.SafeLoader):
    """js-yaml's default (YAML 1.2 core) schema: only true/false are booleans, no 1.1 sexagesimals or dates."""


_Yaml12.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if not tag.endswith(("bool", "int", "float", "timestamp"))]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag, _rx, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
):  # fmt: skip
    _Yaml12.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_rx), list(_first))


def load_yaml(text: str) -> Any:
    """promptfoo's ``loadYaml`` (js-yaml, YAML 1.2 core schema); a syntax error is a CheckError."""
    try:
        return yaml.load(text, Loader=_Yaml12)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        raise CheckError(f"invalid YAML/JSON: {err}") from None


def _slash_comments_to_hash(text: str) -> str:
    """promptfoo's ``convertSlashCommentsToHash``: ``// note`` outside quotes becomes a YAML ``# note``."""
    lines = []
    for line in text.split("\n"):
        state, out, i, done = "normal", [], 0, None
        while i < len(line):
            char, nxt, prev = line[i], line[i + 1 : i + 2], line[i - 1] if i else ""
            if state == "normal":
                if char == "'" and not re.match(r"[a-zA-Z]", prev):
                    state = "single"
                elif char == '"':
                    state = "double"
                elif char == "/" and nxt == "/":
                    start = next((j + 1 for j in range(i - 1, -1, -1) if line[j].isspace()), 0)
                    if "://" in line[start : i + 2]:
                        out.append(char)
                        break
                    slashes = 2
                    while i + slashes < len(line) and line[i + slashes] == "/":
                        slashes += 1
                    done = "".join(out) + "#" * (slashes // 2) + line[i + slashes :]
                    break
            elif state == "single":
                if char == "'" and not _escaped(line, i) and not re.match(r"[a-zA-Z]", nxt):
                    state = "normal"
            elif char == '"' and not _escaped(line, i):
                state = "normal"
            out.append(char)
            i += 1
        lines.append(done if done is not None else "".join(out))
    return "\n".join(lines)


def _escaped(line: str, index: int) -> bool:
    count, i = 0, index - 1
    while i >= 0 and line[i] == "\\":
        count, i = count + 1, i - 1
    return count % 2 == 1


def extract_json_objects(text: str) -> list[Any]:
    """promptfoo's ``extractJsonObjects``: every ``{...}`` (braces balanced, or closed at the end) that YAML reads
    as a mapping or a list."""
    found: list[Any] = []
    i = 0
    while i < len(text):
        if text[i] != "{":
            i += 1
            continue
        opened, closed, j = 1, 0, i + 1
        end = min(i + MAX_JSON, len(text))
        while j < end and opened > closed:
            opened += text[j] == "{"
            closed += text[j] == "}"
            j += 1
            if opened == closed or j == len(text) or j == i + MAX_JSON:
                candidate = text[i:j] + "}" * max(0, opened - closed)
                try:
                    parsed = yaml.load(_slash_comments_to_hash(candidate), Loader=_Yaml12)  # a SafeLoader subclass
                except yaml.YAMLError:
                    if opened == closed:
                        break
                    continue
                if isinstance(parsed, dict | list):
                    found.append(parsed)
                    i = j - 1
                    break
        i += 1
    return found


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import json

    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        raise CheckError(f"invalid JSON schema: {err.message}") from None
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _schema(p: Params) -> Any:
    value = p.value  # a file:// value is already the schema its file exports or holds
    if isinstance(value, str):
        value = load_yaml(value)
    elif not isinstance(value, dict | bool):
        raise CheckError(f"{p.base} assertion must have a string or object value")
    import json

    return _validator(json.dumps(value, sort_keys=True))


_AJV = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}


def _errors(validator: Any, data: Any) -> str:
    """The first error as ajv's ``errorsText`` words it (promptfoo's ajv stops at the first)."""
    error = next(iter(validator.iter_errors(data)), None)
    if error is None:
        return ""
    where = "data" + "".join(f"/{x}" for x in error.absolute_path)
    keyword, value = error.validator, error.validator_value
    if keyword == "required":
        missing = next((k for k in value if isinstance(error.instance, dict) and k not in error.instance), value[0])
        message = f"must have required property '{missing}'"
    elif keyword == "type":
        message = f"must be {','.join(value) if isinstance(value, list) else value}"
    elif keyword in _AJV:
        message = f"must be {_AJV[keyword]} {value}"
    elif keyword in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        unit = {"L": "characters", "I": "items", "P": "properties"}[keyword[3]]
        message = f"must NOT have {'fewer' if keyword.startswith('min') else 'more'} than {value} {unit}"
    elif keyword == "enum":
        message = "must be equal to one of the allowed values"
    elif keyword == "const":
        message = "must be equal to constant"
    elif keyword == "pattern":
        message = f'must match pattern "{value}"'
    elif keyword == "format":
        message = f'must match format "{value}"'
    elif keyword == "additionalProperties" and value is False:
        message = "must NOT have additional properties"
    else:
        message = error.message
    return f"{where} {message}"


def is_json(p: Params) -> dict[str, Any]:
    import json

    try:
        parsed, ok = json.loads(p.text), True
    except ValueError:
        parsed, ok = None, False
    passed = ok != p.inverse
    if ok and p.value:
        validator = _schema(p)
        valid = validator.is_valid(parsed)
        passed = valid != p.inverse
        if not passed:
            why = (
                "Output is JSON that conforms to the provided schema"
                if p.inverse
                else f"JSON does not conform to the provided schema. Errors: {_errors(validator, parsed)}"
            )
            return result(False, why)
    return result(passed, PASSED if passed else f"Expected output to {'not ' if p.inverse else ''}be valid JSON")


def contains_json(p: Params) -> dict[str, Any]:
    why = f"Expected output to {'not ' if p.inverse else ''}contain valid JSON"
    objects = extract_json_objects(p.text)
    passed = (not objects) if p.inverse else bool(objects)
    if p.value:
        validator = _schema(p)
        for obj in objects:
            valid = validator.is_valid(obj)
            passed = valid != p.inverse
            if valid:
                if p.inverse:
                    why = "Output contains JSON conforming to the provided schema"
                break
            why = f"JSON does not conform to the provided schema. Errors: {_errors(validator, obj)}"
    return result(passed, PASSED if passed else why)


_HTML_PATTERNS = {
    "opening": re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>"),
    "closing": re.compile(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>"),
    "self_closing": re.compile(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>"),
    "entity": re.compile(r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);"),
    "doctype": re.compile(r"<!DOCTYPE\s+html", re.IGNORECASE),
    "comment": re.compile(r"<!--[^-]*(?:-[^-]+)*-->"),
    "attribute": re.compile(r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']"),
    "common": re.compile(
        r"<(html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button|script|style|link|meta|br|hr)\b",
        re.IGNORECASE,
    ),
}
MAX_HTML = 10_485_760
VALID_HTML_ELEMENTS = frozenset(
    [
        "html",
        "head",
        "title",
        "base",
        "link",
        "meta",
        "style",
        "body",
        "article",
        "section",
        "nav",
        "aside",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "footer",
        "address",
        "p",
        "hr",
        "pre",
        "blockquote",
        "ol",
        "ul",
        "li",
        "dl",
        "dt",
        "dd",
        "figure",
        "figcaption",
        "main",
        "div",
        "a",
        "em",
        "strong",
        "small",
        "s",
        "cite",
        "q",
        "dfn",
        "abbr",
        "ruby",
        "rt",
        "rp",
        "data",
        "time",
        "code",
        "var",
        "samp",
        "kbd",
        "sub",
        "sup",
        "i",
        "b",
        "u",
        "mark",
        "bdi",
        "bdo",
        "span",
        "br",
        "wbr",
        "img",
        "iframe",
        "embed",
        "object",
        "param",
        "picture",
        "source",
        "video",
        "audio",
        "track",
        "map",
        "area",
        "svg",
        "math",
        "script",
        "noscript",
        "canvas",
        "ins",
        "del",
        "table",
        "caption",
        "colgroup",
        "col",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "td",
        "th",
        "form",
        "label",
        "input",
        "button",
        "select",
        "datalist",
        "optgroup",
        "option",
        "textarea",
        "output",
        "progress",
        "meter",
        "fieldset",
        "legend",
        "details",
        "summary",
        "dialog",
        "menu",
        "slot",
        "template",
    ]
)
_VOID = frozenset(
    ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
)
_WRAPPERS = {w: re.compile(rf"<{w}(?=[\s>/])") for w in ("html", "head", "body")}


def contains_html_text(text: str) -> bool:
    """promptfoo's ``containsHtml``: at least two HTML indicators."""
    if len(text) > MAX_HTML:
        return False
    pat = _HTML_PATTERNS
    opening, closing = bool(pat["opening"].search(text)), bool(pat["closing"].search(text))
    score = 2 if opening and closing else 1 if opening or closing else 0
    score += sum(1 for k in ("self_closing", "entity", "comment", "attribute") if pat[k].search(text))
    score += 2 * bool(pat["doctype"].search(text)) + 2 * bool(pat["common"].search(text))
    return score >= 2


class _Scan(HTMLParser):
    """Reads the elements a parse5 tree would have, and whether text sits directly in the (implied) body."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.open: list[str] = []
        self.top_text = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)
        if tag not in _VOID and tag not in _WRAPPERS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: Any) -> None:
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open and self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not self.open and data.strip():
            self.top_text = True


def validate_html(text: str) -> tuple[bool, str]:
    """promptfoo's ``validateHtml`` (parse5 there, Python's HTML tokenizer here with the same rules)."""
    trimmed = text.strip()
    if not trimmed:
        return False, "Output is empty"
    if len(trimmed) > MAX_HTML:
        return False, "Output exceeds maximum size limit"
    if re.match(r"^\s*<\?xml", trimmed, re.IGNORECASE):
        return False, "Output appears to be XML, not HTML"
    scan = _Scan()
    scan.feed(trimmed)
    scan.close()
    lower = trimmed.lower()
    if not _WRAPPERS["body"].search(lower) and scan.top_text:
        return False, "Output must be wrapped in HTML tags"
    user = any(
        bool(_WRAPPERS[t].search(lower)) if t in _WRAPPERS else (t in VALID_HTML_ELEMENTS or "-" in t)
        for t in scan.tags
    )
    if not user:
        return False, "Output does not contain recognized HTML elements"
    return True, "Output is valid HTML"


def is_html(p: Params) -> dict[str, Any]:
    valid, why = validate_html(p.text)
    passed = valid != p.inverse
    return result(passed, PASSED if passed else why)


def contains_html(p: Params) -> dict[str, Any]:
    passed = contains_html_text(p.text) != p.inverse
    return result(passed, PASSED if passed else f"Expected output to {'not ' if p.inverse else ''}contain HTML content")
