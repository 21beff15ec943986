"""``$ref`` resolved at load, as promptfoo resolves them (json-schema-ref-parser over the whole config): a JSON
pointer into the config (``#/assertionTemplates/NAME``), or into another file (``other.yaml#/x``, relative to the
folder of the file holding the ``$ref``). Keys beside a ``$ref`` win over the value it names (objects merged
deeply). A ``$ref`` naming nothing, a file that does not exist or a ``$ref`` inside its own value is refused naming
the file, line and key path, so no sample ever meets a dangling one."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

from assay.tasks.importers.promptfoo.files import Files
from assay.tasks.importers.promptfoo.where import At, listing
from assay.tasks.importers.promptfoo.yaml12 import LineDict, LineList

REF = "$ref"


def has_refs(value: Any) -> bool:
    if isinstance(value, dict):
        return REF in value or any(has_refs(v) for v in value.values())
    if isinstance(value, list):
        return any(has_refs(v) for v in value)
    return False


class Refs:
    """Resolves the ``$ref``s of one document (``root``, read from ``path``)."""

    def __init__(self, root: Any, path: Path, files: Files) -> None:
        self.docs: dict[Path, Any] = {path.resolve(): root}
        self.files = files
        self.active: list[tuple[Path, str]] = []

    def resolve(self, value: Any, at: At, doc: Path) -> Any:
        """``value`` (at ``at``, in the document ``doc``) with every ``$ref`` replaced by what it names."""
        if not has_refs(value):
            return value
        if isinstance(value, dict):
            if REF in value:
                return self._ref(value, at, doc)
            out = LineDict(source=getattr(value, "source", ""), line=getattr(value, "line", None))
            out.lines.update(getattr(value, "lines", {}))
            for key, item in value.items():
                out[key] = self.resolve(item, at.key(value, key), doc)
            return out
        assert isinstance(value, list)
        seq = LineList(source=getattr(value, "source", ""), line=getattr(value, "line", None))
        seq.lines.extend(getattr(value, "lines", []))
        seq.extend(self.resolve(item, at.key(value, i), doc) for i, item in enumerate(value))
        return seq

    def _ref(self, node: dict[str, Any], at: At, doc: Path) -> Any:
        ref_at = at.key(node, REF)
        ref = node[REF]
        if not isinstance(ref, str):
            raise ref_at.error(f"a $ref is a string like '#/assertionTemplates/NAME', got {ref!r}")
        file_part, _, pointer = ref.partition("#")
        if file_part.startswith(("http://", "https://")):
            raise ref_at.error(f"{ref!r}: a $ref to a URL is not fetched by assay; save the file beside the config")
        target_doc = doc
        if file_part:
            target_doc = (doc.parent / unquote(file_part)).resolve()
            if target_doc not in self.docs:
                found = self.files.under(doc.parent).paths(unquote(file_part), ref_at)[0]
                self.docs[target_doc] = self.files.load(found, ref_at)
        key = (target_doc, pointer)
        if key in self.active:
            raise ref_at.error(f"{ref!r} is inside the value it names (a circular $ref)")
        target = self._pointer(self.docs[target_doc], pointer, ref, ref_at)
        self.active.append(key)
        try:
            value = self.resolve(target, At.of(target, at.path, ref_at), target_doc)
        finally:
            self.active.pop()
        extra = {k: self.resolve(v, at.key(node, k), doc) for k, v in node.items() if k != REF}
        if not extra or not isinstance(value, dict):
            return value
        merged = LineDict(source=getattr(node, "source", ""), line=getattr(node, "line", None))
        for k, v in extra.items():  # the $ref's own keys first and winning, as json-schema-ref-parser merges
            merged[k] = _deep_merge(value[k], v) if isinstance(v, dict) and isinstance(value.get(k), dict) else v
            merged.lines[k] = getattr(node, "lines", {}).get(k, merged.line)
        for k, v in value.items():
            if k not in merged:
                merged[k] = v
                merged.lines[k] = getattr(value, "lines", {}).get(k, merged.line)
        return merged

    def _pointer(self, root: Any, pointer: str, ref: str, at: At) -> Any:
        """The value a JSON pointer names (``/a/b/0``, ``~1`` = ``/``, ``~0`` = ``~``, percent-decoded)."""
        value = root
        if pointer in ("", "/"):
            return value
        if not pointer.startswith("/"):
            raise at.error(f"{ref!r}: a JSON pointer after '#' starts with '/'")
        walked = ""
        for raw in pointer[1:].split("/"):
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                if isinstance(value, dict):
                    have = f"{walked or 'the document'} has: {listing(set(map(str, value)))}"
                elif isinstance(value, list):
                    have = f"{walked or 'the document'} is a list of {len(value)}"
                else:
                    have = f"{walked or 'the document'} is not a mapping"
                raise at.error(f"{ref!r} names nothing: no {part!r} ({have})")
            walked += "/" + raw
        return value


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = LineDict(source=getattr(over, "source", ""), line=getattr(over, "line", None))
    for k, v in base.items():
        out[k] = v
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    out.lines.update(getattr(base, "lines", {}))
    out.lines.update(getattr(over, "lines", {}))
    return out


def resolve_refs(root: Any, path: Path, files: Files) -> Any:
    """A document with its ``$ref``s resolved (the same object when it has none)."""
    return Refs(root, path, files).resolve(root, At.of(root, "", At(str(path), None)), path.resolve())
