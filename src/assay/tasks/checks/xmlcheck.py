"""promptfoo 0.123.1's is-xml and contains-xml: well-formed XML (saxes there, expat here: DTD internal subsets are
refused as promptfoo refuses them, so no entity is ever expanded), ``requiredElements`` as dotted paths into the
object fast-xml-parser makes (``root.item.0.@_id``, ``#text``), and contains-xml's search for XML inside text."""

from __future__ import annotations

import re
from typing import Any
from xml.parsers import expat

from assay.tasks.checks.code import CheckError
from assay.tasks.checks.params import Params, result

PASSED = "Assertion passed"
_NAME_START = (
    r":A-Z_a-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D\u2070-\u218F"
    r"\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF"
)
_NAME = re.compile(rf"[{_NAME_START}][{_NAME_START}\-.0-9\u00B7\u0300-\u036F\u203F-\u2040]*")


class _Doc:
    """An expat parse into fast-xml-parser's object shape."""

    def __init__(self, text: str) -> None:
        self.root: dict[str, Any] = {}
        self.stack: list[tuple[str, dict[str, Any], list[str]]] = []
        parser = expat.ParserCreate()
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._doctype
        parser.XmlDeclHandler = lambda version, encoding, standalone: self._add(self.root, "?xml", "")
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._text
        parser.Parse(text, True)

    def _doctype(self, name: str, system_id: Any, public_id: Any, has_internal_subset: int) -> None:
        if has_internal_subset:
            raise CheckError("DTD internal subsets are not supported by is-xml validation")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self.stack.append((name, {f"@_{k}": _scalar(v) for k, v in attrs.items()}, []))

    def _text(self, data: str) -> None:
        if self.stack:
            self.stack[-1][2].append(data)

    def _end(self, name: str) -> None:
        _, node, texts = self.stack.pop()
        text = "".join(texts).strip()
        value: Any
        if len(node) == 0:
            value = _scalar(text) if text else ""
        else:
            if text:
                node["#text"] = _scalar(text)
            value = node
        self._add(self.stack[-1][1] if self.stack else self.root, name, value)

    @staticmethod
    def _add(parent: dict[str, Any], name: str, value: Any) -> None:
        if name not in parent:
            parent[name] = value
        elif isinstance(parent[name], list):
            parent[name].append(value)
        else:
            parent[name] = [parent[name], value]


def _scalar(text: str) -> Any:
    """fast-xml-parser's parseTagValue/parseAttributeValue: numbers and booleans become values."""
    if re.fullmatch(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text.strip()):
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    return {"true": True, "false": False}.get(text, text)


def _parse(text: str) -> dict[str, Any]:
    try:
        return _Doc(text).root
    except expat.ExpatError as err:
        raise ValueError(f"{err.lineno}:{err.offset + 1}: {expat.errors.messages[err.code]}") from None


def _has_path(value: Any, path: list[str]) -> bool:
    current = value
    for key in path:
        if isinstance(current, list):
            if not re.fullmatch(r"0|[1-9][0-9]*", key) or int(key) >= len(current):
                return False
            current = current[int(key)]
        elif isinstance(current, dict):
            if key not in current:
                return False
            current = current[key]
        else:
            return False
    return True


def _candidate(text: str, required: list[str] | None) -> tuple[bool, bool, str]:
    """(valid, well formed, reason) of one XML text: parsed, then the required elements looked up."""
    try:
        tree = _parse(text)
    except ValueError as err:
        return False, False, f"XML parsing failed: {err}"
    missing = [r for r in required or [] if not _has_path(tree, r.split("."))]
    if missing:
        return False, True, f"XML is missing required elements: {', '.join(missing)}"
    return True, True, "XML is valid and contains all required elements"


def validate_xml(text: str, required: list[str] | None) -> tuple[bool, str]:
    valid, _, reason = _candidate(text, required)
    return valid, reason


def _tag(text: str, start: int) -> tuple[str, int, str | None, bool] | None:
    """promptfoo's ``readXmlTag``: (kind, end, name, self-closing) of the tag at ``start``."""
    nxt = text[start + 1 : start + 2]
    if not nxt:
        return None
    if nxt in "!?":
        if text.startswith("<!--", start):
            end = text.find("-->", start + 4)
            return "decl", (len(text) - 1 if end == -1 else end + 2), None, False
        if text.startswith("<![CDATA[", start):
            end = text.find("]]>", start + 9)
            return "decl", (len(text) - 1 if end == -1 else end + 2), None, False
        if nxt == "?":
            end = text.find("?>", start + 2)
            return "decl", (len(text) - 1 if end == -1 else end + 1), None, False
        quote, depth = None, 0
        for i in range(start + 2, len(text)):
            c = text[i]
            if quote:
                quote = None if c == quote else quote
            elif c in "\"'":
                quote = c
            elif c == "[":
                depth += 1
            elif c == "]" and depth:
                depth -= 1
            elif c == ">" and not depth:
                return "decl", i, None, False
        return "decl", len(text) - 1, None, False
    closing = nxt == "/"
    name = _NAME.match(text, start + (2 if closing else 1))
    if name is None:
        return None
    end, quote = -1, None
    for i in range(start + 1, len(text)):
        c = text[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "<":
            return None
        elif c == ">":
            end = i
            break
    if end == -1:
        return None
    return ("closing" if closing else "opening"), end, name.group(0), text[start + 1 : end].rstrip().endswith("/")


def xml_candidates(text: str) -> list[tuple[int, int]]:
    """promptfoo's ``extractXmlCandidates``: balanced element ranges, sibling runs first, then maximal elements."""
    stack: list[tuple[str, int]] = []
    found: list[tuple[int, int, int | None]] = []
    i = 0
    while i < len(text):
        if text[i] == "<" and (tag := _tag(text, i)) is not None:
            kind, end, name, selfclosing = tag
            if kind == "opening":
                if selfclosing:
                    found.append((i, end + 1, stack[-1][1] if stack else None))
                else:
                    stack.append((name or "", i))
            elif kind == "closing":
                if stack and stack[-1][0] == name:
                    _, start = stack.pop()
                    found.append((start, end + 1, stack[-1][1] if stack else None))
                else:
                    stack.clear()
            i = end
        i += 1
    return _order(found)


def _order(found: list[tuple[int, int, int | None]]) -> list[tuple[int, int]]:
    ordered: list[tuple[int, int]] = []
    starts = {f[0] for f in found}
    by_parent: dict[int | None, list[tuple[int, int, int | None]]] = {}
    for f in found:
        by_parent.setdefault(f[2], []).append(f)
    for parent, siblings in by_parent.items():
        if len(siblings) <= 1 or (parent is not None and parent in starts):
            continue
        siblings.sort(key=lambda f: (f[0], f[1]))
        span = (siblings[0][0], siblings[-1][1])
        if span not in ordered:
            ordered.append(span)
    maximal = sorted((f for f in found if f[2] is None or f[2] not in starts), key=lambda f: (f[0], -f[1]))
    for f in maximal:
        if (f[0], f[1]) not in ordered:
            ordered.append((f[0], f[1]))
    return ordered


def contains_xml(text: str, required: list[str] | None) -> tuple[bool, str]:
    candidates = xml_candidates(text)
    if not candidates:
        return False, "No XML content found in the output"
    containers: list[tuple[int, int]] = []
    for start, end in candidates:
        if any(start >= a and end <= b for a, b in containers):
            continue
        valid, well_formed, reason = _candidate(text[start:end], required)
        if valid:
            return True, reason
        if well_formed:
            containers.append((start, end))
    return False, "No valid XML content found matching the requirements"


def xml(p: Params) -> dict[str, Any]:
    value = p.value
    required: list[str] | None = None
    if isinstance(value, str):
        required = [e.strip() for e in value.split(",")]
    elif isinstance(value, list) and value:
        required = [str(e) for e in value]
    elif isinstance(value, dict) and value:
        if not isinstance(value.get("requiredElements"), list):
            raise CheckError("xml assertion must contain a string, array value, or no value")
        required = [str(e) for e in value["requiredElements"]]
    valid, why = (validate_xml if p.base == "is-xml" else contains_xml)(p.text, required)
    passed = valid != p.inverse
    return result(passed, PASSED if passed else why)
