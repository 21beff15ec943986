"""A task's ``environment:`` key read into an :class:`~assay.environments.base.EnvironmentSpec`: the schema users
write (pydantic, unknown keys refused) and the one conversion from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from assay.environments.base import EnvironmentLimits, EnvironmentSpec


class LimitsConfig(BaseModel):
    """``environment.limits``: for the whole sample, every process of its environment together."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_s: float = Field(default=EnvironmentLimits.cpu_s, gt=0)
    memory_mb: int = Field(default=EnvironmentLimits.memory_mb, ge=16)
    disk_mb: int = Field(default=EnvironmentLimits.disk_mb, ge=1)
    max_processes: int = Field(default=EnvironmentLimits.max_processes, ge=1)
    wall_s: float = Field(default=EnvironmentLimits.wall_s, gt=0)
    command_timeout_s: float = Field(default=EnvironmentLimits.command_timeout_s, gt=0)
    network: bool = False


class EnvironmentConfig(BaseModel):
    """``environment:`` as a task file writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: dict[str, str | dict[str, str]] = Field(default_factory=dict)  # path -> text, or {path: host file}
    row_files: str | None = "files"  # the row key adding workspace files (dict path -> text, or a folder/archive)
    folder: str | None = None  # a host folder or archive: the workspace's base
    rootfs: str | None = None  # a host directory mounted read-only as /
    setup: str | None = None  # a shell command run in the workspace before the agent starts
    packages: list[str] = Field(default_factory=list)  # host Python distributions importable inside (pytest)
    python: str | None = None  # "module:factory": the sample's stateful world, built from its row
    limits: LimitsConfig = Field(default_factory=LimitsConfig)

    @field_validator("files")
    @classmethod
    def _file_entries(cls, files: dict[str, Any]) -> dict[str, Any]:
        for name, value in files.items():
            if isinstance(value, dict) and set(value) != {"path"}:
                raise ValueError(f"files.{name}: give the text, or {{path: FILE}} (got keys {sorted(value)})")
        return files

    @field_validator("python")
    @classmethod
    def _factory_ref(cls, ref: str | None) -> str | None:
        if ref is not None and ":" not in ref:
            raise ValueError(f"python must be 'module:factory' (a class or function making the world), got {ref!r}")
        return ref


def parse_environment(raw: dict[str, Any], base_dir: Path | None) -> EnvironmentSpec:
    """The spec of a task's ``environment:`` (pydantic's ValidationError on a bad key, for the caller to place)."""
    cfg = EnvironmentConfig.model_validate(raw)
    return EnvironmentSpec(
        files=dict(cfg.files),
        row_files=cfg.row_files,
        folder=cfg.folder,
        rootfs=cfg.rootfs,
        setup=cfg.setup,
        packages=tuple(cfg.packages),
        world=cfg.python,
        limits=EnvironmentLimits(**cfg.limits.model_dump()),
        base_dir=str(base_dir) if base_dir is not None else None,
    )


def needs_sandbox(spec: EnvironmentSpec, *, programs: bool) -> bool:
    """False for a pure Python world: no files, folder, root filesystem or setup, and nothing (``programs``: a
    tool or a check) that runs a program in it."""
    if not spec.world or programs:
        return True
    return bool(spec.files or spec.folder or spec.rootfs or spec.setup or spec.packages)
