"""How lm-eval tasks are built, as ``lm_eval``'s own options say it: task sources, seeds, few-shot count, limit,
chat options, generation kwargs and metadata. Recorded in run.json so that a resume, a re-score or a Ray worker
builds the very same requests again."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.errors import ConfigError

PREFIX = "lm-eval:"
EXTRA_HINT = "pip install 'assay[lm-eval]'"
DEFAULT_SEEDS = (0, 1234, 1234, 1234)  # lm-eval's: random, numpy, torch, few-shot sampler


class LmevalSettings(BaseModel):
    """The options ``lm_eval`` takes that shape the requests or the figures (names as ``lm_eval``'s flags).

    ``sources`` are task, group or tag names of the installed lm-eval, or task/group YAML paths (made absolute);
    ``include_path`` the folders scanned for task files besides lm-eval's own (a YAML's folder is added)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: tuple[str, ...]
    include_path: tuple[str, ...] = ()
    num_fewshot: int | None = Field(None, ge=0)
    limit: float | None = Field(None, gt=0)
    seeds: tuple[int | None, int | None, int | None, int | None] = DEFAULT_SEEDS
    apply_chat_template: bool = False
    fewshot_as_multiturn: bool | None = None  # None: lm-eval's default, True whenever a chat template is applied
    system_instruction: str | None = None
    gen_kwargs: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    bootstrap_iters: int = Field(100_000, ge=0)  # lm-eval's default; its stderrs resample this many times

    @field_validator("fewshot_as_multiturn")
    @classmethod
    def _multiturn_needs_chat(cls, value: bool | None, info: Any) -> bool | None:
        if value and not info.data.get("apply_chat_template"):
            raise ValueError("fewshot_as_multiturn needs apply_chat_template (as lm_eval's --fewshot_as_multiturn)")
        return value

    @property
    def multiturn(self) -> bool:
        """Few-shot examples as user/assistant turns: as set, else (lm-eval 0.4.13's default) with a chat template."""
        return self.chat if self.fewshot_as_multiturn is None else self.fewshot_as_multiturn

    def key(self) -> str:
        """A stable text key of these settings (one loaded suite per key and process)."""
        return self.model_dump_json()

    @property
    def chat(self) -> bool:
        """True when prompts are chat messages (``--apply-chat-template``)."""
        return bool(self.apply_chat_template)


_NAMED = re.compile(r"^(group|task):[ \t]*['\"]?([^'\"\s#\[\]{}]+)['\"]?[ \t]*(#.*)?$", re.M)


def source_of(reference: str | Path) -> tuple[str, str | None]:
    """(what lm-eval's TaskManager loads, the folder to add to its include path) for ``lm-eval:NAME``,
    ``lm-eval:FILE`` or a task/group YAML path: a file is loaded by the name it gives itself (``group:``, else
    ``task:``) with its folder on the include path, as ``lm_eval --include_path DIR --tasks NAME`` loads it."""
    text = str(reference)
    rest = text[len(PREFIX) :] if text.startswith(PREFIX) else text
    path = Path(rest).expanduser()
    if path.suffix.lower() in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"{rest}: no such lm-eval task file")
        resolved = path.resolve()
        try:
            names = {m.group(1): m.group(2) for m in _NAMED.finditer(resolved.read_text(encoding="utf-8"))}
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"{rest}: cannot read the task file: {err}") from None
        name = names.get("group") or names.get("task")
        if name is None or resolved.suffix.lower() not in (".yaml", ".yml"):  # lm-eval indexes *.yaml files only
            return str(resolved), str(resolved.parent)
        return name, str(resolved.parent)
    return rest, None


KEYWORDS = (
    "num_fewshot",
    "apply_chat_template",
    "fewshot_as_multiturn",
    "system_instruction",
    "gen_kwargs",
    "lmeval_seed",
    "metadata",
    "lmeval_bootstrap_iters",
)  # ``assay run``'s lm-eval options, as keywords of assay.run / arun (the CLI's names with underscores)


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_kwargs(text: str, option: str) -> dict[str, Any]:
    """``key=value,key=value`` (lm-eval's form, values read as Python literals) or a JSON object."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise ConfigError(f"{option}: invalid JSON: {err.msg}") from None
        if not isinstance(value, dict):
            raise ConfigError(f"{option}: a JSON object")
        return value
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in stripped.split(","))):
        key, sep, raw = part.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option}: {part!r} is not key=value")
        out[key.strip()] = _literal(raw.strip())
    return out


def parse_seeds(value: str | int | list[int | None] | tuple[int | None, ...]) -> list[int | None]:
    """lm_eval's ``--seed``: one number for all four seeds, or four comma-separated ones (``None`` for unset)."""
    if isinstance(value, int):
        return [value] * 4
    if isinstance(value, list | tuple):
        values = list(value)
    else:
        try:
            values = [None if p.strip() == "None" else int(p) for p in str(value).split(",")]
        except ValueError:
            raise ConfigError(f"lmeval_seed: {value!r}: whole numbers or None") from None
    if len(values) == 1:
        return values * 4
    if len(values) != 4:
        raise ConfigError("lmeval_seed: one number, or four (random, numpy, torch, few-shot)")
    return values


def options_from(
    *,
    num_fewshot: int | None = None,
    apply_chat_template: bool | str | None = None,  # "default" (lm_eval's spelling) means True
    fewshot_as_multiturn: bool | None = None,
    system_instruction: str | None = None,
    gen_kwargs: str | dict[str, Any] | None = None,
    lmeval_seed: str | int | list[int | None] | None = None,
    metadata: str | dict[str, Any] | None = None,
    lmeval_bootstrap_iters: int | None = None,
) -> dict[str, Any]:
    """The lm-eval options (:class:`LmevalSettings` fields) of ``assay run``'s flags or keywords given (not None):
    ``apply_chat_template`` True (the model applies its own chat template), text values parsed as lm_eval's."""
    out: dict[str, Any] = {}
    if num_fewshot is not None:
        out["num_fewshot"] = num_fewshot
    if isinstance(apply_chat_template, str) and apply_chat_template != "default":
        raise ConfigError(
            f"apply_chat_template: a named template ({apply_chat_template!r}) is not supported: assay sends the chat "
            "messages and the model applies its own chat template; give True"
        )
    if apply_chat_template:
        out["apply_chat_template"] = True
    if fewshot_as_multiturn is not None:
        if "apply_chat_template" not in out:
            raise ConfigError("fewshot_as_multiturn goes with apply_chat_template (as lm_eval's)")
        out["fewshot_as_multiturn"] = bool(fewshot_as_multiturn)
    if system_instruction is not None:
        out["system_instruction"] = system_instruction
    if gen_kwargs is not None:
        out["gen_kwargs"] = gen_kwargs if isinstance(gen_kwargs, dict) else parse_kwargs(gen_kwargs, "gen_kwargs")
    if lmeval_seed is not None:
        out["seeds"] = parse_seeds(lmeval_seed)
    if metadata is not None:
        out["metadata"] = metadata if isinstance(metadata, dict) else parse_kwargs(metadata, "metadata")
    if lmeval_bootstrap_iters is not None:
        out["bootstrap_iters"] = lmeval_bootstrap_iters
    return out


def settings_for(references: list[str | Path], **options: Any) -> LmevalSettings:
    """The settings of one lm-eval load: every reference's source and folder, and the run's options."""
    sources: list[str] = []
    folders: list[str] = list(options.pop("include_path", None) or ())
    for ref in references:
        source, folder = source_of(ref)
        sources.append(source)
        if folder is not None and folder not in folders:
            folders.append(folder)
    try:
        return LmevalSettings(sources=tuple(sources), include_path=tuple(folders), **options)
    except ValueError as err:
        raise ConfigError(f"lm-eval options: {err}") from None
