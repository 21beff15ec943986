"""How lm-eval tasks are built, as ``lm_eval``'s own options say it: task sources, seeds, few-shot count, limit,
chat options, generation kwargs and metadata. Recorded in run.json so that a resume, a re-score or a Ray worker
builds the very same requests again."""

from __future__ import annotations

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
    apply_chat_template: bool | str = False
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
