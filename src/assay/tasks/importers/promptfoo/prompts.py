"""A config's ``prompts`` read as promptfoo's readPrompts reads them: strings, ``{raw|id, label, config}``,
``{file: label}`` maps, ``file://`` files and globs (``.txt`` split at ``---`` lines, ``.json``/``.yaml`` chat
messages, ``.jsonl`` one prompt a line, ``.md``/``.j2`` whole), each with promptfoo's label (tests' and
providers' ``prompts:`` filters match it) and a short alias for assay's reports."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.importers.promptfoo.envs import render_env
from assay.tasks.importers.promptfoo.files import CODE, FILE, Files, split_function, strip_file
from assay.tasks.importers.promptfoo.keys import check_keys
from assay.tasks.importers.promptfoo.where import At
from assay.tasks.importers.promptfoo.yaml12 import load_yaml12, plain

_FILE_LIKE = re.compile(r"\.[A-Za-z0-9]{2,4}$")


@dataclass
class Prompt:
    """One prompt: a template text, or chat messages whose contents are templates; promptfoo's label and id, a
    short alias, and the provider settings it overrides (its ``config``)."""

    label: str
    text: str | None = None
    messages: list[dict[str, str]] | None = None
    id: str | None = None
    alias: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    at: At = field(default_factory=lambda: At("?", None))


def _maybe_file(raw: str) -> bool:
    """promptfoo's maybeFilePath: file://, a path-like string, a glob; never a text with a newline."""
    if "\n" in raw:
        return False
    last = raw.split(":")[-1]
    return raw.startswith(FILE) or bool(_FILE_LIKE.search(last)) or any(c in raw for c in "*/\\")


def read_prompts(raw: Any, at: At, files: Files, separator: str = "---") -> list[Prompt]:
    """Every prompt of a config (``at`` is where ``prompts`` is); a config without prompts is refused."""
    if isinstance(raw, dict) and not ({"raw", "id", "label"} & set(raw)):  # {file://x: label}
        entries = [(at.key(raw, k), {"raw": k, "label": v}) for k, v in raw.items()]
    else:
        items = raw if isinstance(raw, list) else [] if raw is None else [raw]
        entries = [(at.key(raw, i) if isinstance(raw, list) else at, item) for i, item in enumerate(items)]
    if not entries:
        raise at.error("a promptfoo config needs at least one prompt")
    out: list[Prompt] = []
    for item_at, item in entries:
        if isinstance(item, dict):
            given = dict(item)  # as written: a refusal below shows the keys check_keys drops
            check_keys(item, "prompt", item_at)
            spec = dict(item)
            spec.setdefault("raw", item.get("id"))
            if spec.get("label") is None and item.get("display") is not None:
                spec["label"] = item["display"]
        else:
            spec = {"raw": item}
        if not isinstance(spec.get("raw"), str):
            raise item_at.error(
                f"a prompt is a string, a file:// reference or {{raw, label}}, got "
                f"{given if isinstance(item, dict) else item!r}"
            )
        prompts = _process(spec, item_at, files, separator)
        if not prompts:
            raise item_at.error(f"there are no prompts in {spec['raw']!r}")
        out += prompts
    return out


def _process(spec: dict[str, Any], at: At, files: Files, separator: str) -> list[Prompt]:
    raw, label, config = spec["raw"], spec.get("label"), spec.get("config") or {}
    if raw.startswith("exec:"):
        raise at.error("not supported by assay's promptfoo reader: an executable prompt (exec:)")
    if not _maybe_file(raw):
        return [_prompt(raw, label if label is not None else raw, spec.get("id"), config, at)]
    path_spec, function = split_function(strip_file(raw))
    if any(c in path_spec for c in "*?[{"):
        found = files.paths(path_spec, at, allow_none=True)
        if not found:  # promptfoo reads a pattern that matches nothing as the prompt text itself
            return [_prompt(raw, label if label is not None else raw, spec.get("id"), config, at)]
        return [p for path in found for p in _process({"raw": str(path)}, at, files, separator)]
    if function is not None or path_spec.endswith(CODE):
        raise at.error(f"not supported by assay's promptfoo reader: a prompt function ({raw!r})")
    path = files.paths(path_spec, at)[0]
    suffix, text = path.suffix.lower(), render_env(files.text(path, at), files.env)  # nunjucks' env global
    if suffix == ".txt":
        parts: list[str] = []
        buffer: list[str] = []
        for line in [*re.split(r"\r?\n", text), separator]:
            if line.strip() == separator:
                if "\n".join(buffer).strip():
                    parts.append("\n".join(buffer).strip())
                buffer = []
            else:
                buffer.append(line)
        names = [f"{label}: {path}: {p}" if label else f"{path}: {p}" for p in parts]
        return [
            _prompt(p, n, None, {}, at, alias=label or _alias(path, k, len(parts)))
            for k, (p, n) in enumerate(zip(parts, names, strict=True))
        ]
    if suffix in (".json", ".yaml", ".yml"):
        data = _json_prompt(text, path, at) if suffix == ".json" else plain(load_yaml12(text, str(path)))
        content = json.dumps(data, separators=(",", ":"), ensure_ascii=False) if suffix != ".json" else text
        name = label or f"{path}: {content[:80] if suffix != '.json' else content}"
        return [_prompt(data if isinstance(data, list) else content, name, None, config, at, alias=label or path.name)]
    if suffix == ".jsonl":
        lines = [line for line in re.split(r"\r?\n", text) if line]
        many = len(lines) > 1
        return [
            _prompt(line, (f"{label or path}: {line}" if many else label or str(path)), None, config, at,
                    alias=label or _alias(path, k, len(lines)))
            for k, line in enumerate(lines)
        ]  # fmt: skip
    if suffix == ".csv":
        return _csv_prompts(path, text, label, spec.get("id"), config, at, files)
    if suffix in (".md", ".j2"):
        return [_prompt(text, label or f"{path}: {text[:50]}...", None, config, at, alias=label or path.name)]
    raise at.error(f"not supported by assay's promptfoo reader: a prompt file of type {suffix or '(none)'} ({raw!r})")


def _json_prompt(text: str, path: Path, at: At) -> Any:
    """A ``.json`` prompt file's JSON. One that is not JSON is refused naming its line: promptfoo keeps such a file's
    text as the prompt, renders it with the vars and parses the result as chat messages (a nunjucks template of JSON,
    e.g. ``{% for completion in _conversation %}`` replaying earlier turns); assay's tasks render each message's
    content, not a text into messages."""
    try:
        return json.loads(text)
    except ValueError as err:
        lineno = getattr(err, "lineno", None)
        line = text.splitlines()[lineno - 1].strip() if lineno and lineno <= len(text.splitlines()) else ""
        templated = "{%" in text or "{{" in text
        why = (
            "a JSON prompt file that is a template of JSON (promptfoo renders the text with the vars, then reads "
            "chat messages from it; assay renders the contents of chat messages read at load)"
            if templated
            else "promptfoo fails on it too ('Chat Completion prompt is not a valid JSON string')"
        )
        where = f"{path}:{lineno}" if lineno else str(path)
        raise at.error(
            f"not supported by assay's promptfoo reader: {where}: not JSON ({getattr(err, 'msg', err)}"
            f"{f': {line[:120]!r}' if line else ''}): {why}"
        ) from None


def _csv_prompts(
    path: Path, text: str, label: str | None, ident: str | None, config: Any, at: At, files: Files
) -> list[Prompt]:
    """promptfoo's processCsvPrompts: a ``prompt`` column (and ``label``), else one prompt a line."""
    rows: list[tuple[str, str | None]] = []
    delimiter = files.env.get("PROMPTFOO_CSV_DELIMITER", ",")
    try:
        if delimiter not in text:
            raise ConfigError("one prompt a line")
        rows = [
            (r["prompt"].strip(), (r.get("label") or "").strip() or None)
            for r in files.csv(text, path)
            if (r.get("prompt") or "").strip()
        ]
    except ConfigError:
        lines = [line for line in re.split(r"\r?\n", text) if line.strip()]
        start = 1 if lines and lines[0].strip().lower() == "prompt" else 0
        rows = [(line, None) for line in lines[start:]]
    many = len(rows) > 1
    used = {row_label for _, row_label in rows if row_label}
    out = []
    for k, (raw, row_label) in enumerate(rows):
        name = row_label or (f"{label}: {raw}" if label and many else label or f"Prompt {k + 1} - {raw}")
        if not row_label:
            first, n = name, 1
            while name in used:
                name = f"{first} (row {k + 1}{'.' + str(n) if n > 1 else ''})"
                n += 1
            used.add(name)
        row_id = f"{ident}:{k + 1}" if many and ident else ident
        out.append(_prompt(raw, name, row_id, config, at, alias=row_label or _alias(path, k, len(rows))))
    return out


def _alias(path: Path, k: int, n: int) -> str:
    return path.name if n == 1 else f"{path.name}:{k + 1}"


def _prompt(content: Any, label: str, ident: str | None, config: Any, at: At, *, alias: str | None = None) -> Prompt:
    if not isinstance(config, dict):
        raise at.error(f"a prompt's config is a mapping of provider settings, got {config!r}")
    alias = alias or label
    if isinstance(content, str):
        stripped = content.strip()
        if stripped.startswith("- role:"):
            content = plain(load_yaml12(content, at.file))
        else:
            try:
                parsed = json.loads(content)
            except ValueError:
                parsed = None
            if not isinstance(parsed, list):
                return Prompt(label, text=content, id=ident, alias=alias, config=dict(config), at=at)
            content = parsed
    if not isinstance(content, list) or not all(
        isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") for m in content
    ):
        raise at.error("a chat prompt is a list of {role, content} messages")
    messages = [{"role": str(m["role"]), "content": m["content"]} for m in content]
    return Prompt(label, messages=messages, id=ident, alias=alias, config=dict(config), at=at)
