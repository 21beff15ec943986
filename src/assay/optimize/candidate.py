"""A candidate: the texts, few-shot demos, generation parameters and model that an optimisation may change, and how
it is applied to the task's config. Text from the optimiser model is untrusted: it is inserted as literal text,
never as template source."""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from assay.hashing import sha256_hex
from assay.tasks.config import TaskConfig

BLOCK = re.compile(r"(\{#-?\s*optimize:\s*([\w][\w.\-]*)\s*-?#\})(.*?)(\{#-?\s*end optimize\s*-?#\})", re.DOTALL)
_JINJA = ("{{", "{%", "{#", "}}", "%}", "#}")


@dataclass
class Candidate:
    """What differs from the task as written: component texts, fixed demos, generation overrides, a model spec."""

    components: dict[str, str] = field(default_factory=dict)
    demos: list[dict[str, Any]] | None = None  # dataset rows shown as fixed few-shot examples
    params: dict[str, Any] = field(default_factory=dict)
    model: Any = None  # a model spec overriding the optimisation's model

    @property
    def id(self) -> str:
        """A short content hash: equal candidates share their evaluations."""
        return sha256_hex(self.to_dict())[:12]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form (the journal and the lineage store it)."""
        return {"components": self.components, "demos": self.demos, "params": self.params, "model": self.model}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        """The inverse of :meth:`to_dict`."""
        return cls(
            dict(data.get("components") or {}), data.get("demos"), dict(data.get("params") or {}), data.get("model")
        )

    def with_component(self, name: str, text: str) -> Candidate:
        """A copy with one component's text replaced."""
        return Candidate({**self.components, name: text}, self.demos, dict(self.params), self.model)

    def text(self) -> str:
        """A readable text form, for diffs between candidates."""
        lines: list[str] = []
        for name in sorted(self.components):
            lines += [f"[{name}]", *self.components[name].splitlines(), ""]
        if self.demos is not None:
            lines.append(f"[demos] {len(self.demos)}")
            lines += [f"  {_short(d)}" for d in self.demos]
        for key in sorted(self.params):
            lines.append(f"[param] {key} = {self.params[key]!r}")
        if self.model is not None:
            lines.append(f"[model] {self.model}")
        return "\n".join(lines).rstrip() + "\n"


def _short(row: dict[str, Any]) -> str:
    import json

    text = json.dumps(row, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def diff(parent: Candidate | None, child: Candidate, parent_label: str = "parent", child_label: str = "child") -> str:
    """A unified diff of the text forms of two candidates."""
    before = parent.text().splitlines(keepends=True) if parent is not None else []
    after = child.text().splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, parent_label, child_label))


def find_blocks(cfg: TaskConfig) -> dict[str, str]:
    """Blocks marked ``{# optimize: NAME #} … {# end optimize #}`` in the template, system or messages: name -> text."""
    found: dict[str, str] = {}
    sources = [cfg.template, cfg.system, *(m.content for m in cfg.messages or ())]
    for source in sources:
        for m in BLOCK.finditer(source or ""):
            found.setdefault(m.group(2), m.group(3))
    return found


def original_texts(cfg: TaskConfig, names: list[str]) -> dict[str, str]:
    """The task's own text of each component (an absent system prompt is the empty text)."""
    blocks = find_blocks(cfg)
    return {n: (cfg.system or "") if n == "system" else blocks.get(n, "") for n in names}


def literal(text: str) -> str:
    """Template source that renders exactly ``text``: wrapped in a raw block when it holds Jinja delimiters."""
    if not any(d in text for d in _JINJA):
        return text
    return (
        "{% raw %}"
        + text.replace("{% endraw %}", "{ % endraw % }").replace("{%endraw%}", "{ %endraw% }")
        + ("{% endraw %}")
    )


def _replace_block(source: str | None, name: str, text: str) -> str | None:
    if source is None:
        return None

    def swap(m: re.Match[str]) -> str:
        return m.group(1) + literal(text) + m.group(4) if m.group(2) == name else m.group(0)

    return BLOCK.sub(swap, source)


def apply(
    config: dict[str, Any], cand: Candidate, original: dict[str, str], target_field: str | None
) -> dict[str, Any]:
    """The task config (``Task.to_config()`` form) with the candidate applied; unchanged components stay as written.

    Bootstrapped demos may carry the model's own output under ``_output``: it replaces the row's target field.
    """
    out = copy.deepcopy(config)
    for name, text in cand.components.items():
        if text == original.get(name):
            continue
        if name == "system":
            out["system"] = literal(text)
            continue
        for key in ("template", "system"):
            if out.get(key) is not None:
                out[key] = _replace_block(out[key], name, text)
        for msg in out.get("messages") or ():
            msg["content"] = _replace_block(msg["content"], name, text)
    if cand.demos is not None:
        rows = []
        for demo in cand.demos:
            row = {k: v for k, v in demo.items() if k != "_output"}
            if "_output" in demo and target_field:
                row[target_field] = demo["_output"]
            rows.append(row)
        fewshot = {k: v for k, v in (out.get("fewshot") or {}).items() if k in ("separator", "target_delimiter")}
        out["fewshot"] = {**fewshot, "fixed": rows} if rows else None
        if not rows:
            out.pop("fewshot")
    if cand.params:
        out["generation"] = {**(out.get("generation") or {}), **cand.params}
    return out
