"""Where a dataset comes from: a local file, inline rows, or a Hugging Face dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.errors import ConfigError

Format = Literal["jsonl", "csv", "tsv", "json", "inline", "hf"]

# file extension (after any .gz) -> format
_EXTENSIONS: dict[str, str] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".json": "json"}


class DatasetSpec(BaseModel):
    """A dataset source: exactly one of ``path`` (a file, or a ``save_to_disk`` folder with
    ``format: hf``), ``rows`` (inline) or ``hf`` (a Hugging Face dataset id or builder such as ``json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = None
    format: Format | None = None
    rows: list[dict[str, Any]] | None = None
    hf: str | None = None
    name: str | None = None  # Hugging Face configuration name
    split: str | None = None
    revision: str | None = None
    data_files: Any = Field(default=None, description="Hugging Face data_files: str, list or {split: files}")
    delimiter: str | None = None  # csv/tsv

    @field_validator("delimiter")
    @classmethod
    def _one_char(cls, value: str | None) -> str | None:
        if value is not None and len(value) != 1:
            raise ValueError(f"must be a single character, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSpec:
        given = [k for k in ("path", "rows", "hf") if getattr(self, k) is not None]
        if len(given) != 1:
            which = " and ".join(given) if given else "none of them"
            raise ValueError(f"give exactly one of 'path', 'rows' or 'hf' (got {which})")
        fmt = self.format
        if self.rows is not None and fmt not in (None, "inline"):
            raise ValueError(f"inline 'rows' cannot have format {fmt!r}")
        if self.hf is not None and fmt not in (None, "hf"):
            raise ValueError(f"a Hugging Face dataset ('hf') cannot have format {fmt!r}")
        if self.path is not None and fmt == "inline":
            raise ValueError("format 'inline' needs 'rows', not 'path'")
        hf_only = [k for k in ("name", "split", "revision", "data_files") if getattr(self, k) is not None]
        if hf_only and self.resolved_format() != "hf":
            keys = ", ".join(repr(k) for k in hf_only)
            raise ValueError(f"{keys}: only for Hugging Face datasets ('hf: ...', or a saved folder with format: hf)")
        if self.delimiter is not None and self.resolved_format() not in ("csv", "tsv"):
            raise ValueError("'delimiter' only applies to csv/tsv files")
        return self

    def resolved_format(self) -> str:
        """The format, inferred from the file extension where not given."""
        if self.format is not None:
            return self.format
        if self.rows is not None:
            return "inline"
        if self.hf is not None:
            return "hf"
        assert self.path is not None
        return infer_format(self.path)

    def resolve(self, base_dir: str | Path | None) -> DatasetSpec:
        """The same spec with ``path`` (and local ``data_files``) made absolute against ``base_dir``."""
        base = Path(base_dir) if base_dir is not None else Path.cwd()
        update: dict[str, Any] = {}
        if self.path is not None:
            update["path"] = str((base / Path(self.path).expanduser()).resolve())
        if self.data_files is not None:
            update["data_files"] = _resolve_files(self.data_files, base)
        return self.model_copy(update=update) if update else self

    def to_config(self) -> dict[str, Any]:
        """The spec as a JSON-safe dict, without unset keys."""
        return self.model_dump(mode="json", exclude_none=True)


def infer_format(path: str) -> str:
    """``jsonl``/``csv``/``tsv``/``json`` from the extension (``.gz`` allowed); ConfigError otherwise."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    fmt = _EXTENSIONS.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        known = ", ".join(sorted(_EXTENSIONS))
        raise ConfigError(
            f"cannot infer the format of {p.name!r} from its extension (known: {known}, optionally .gz); "
            "set 'format' (jsonl, csv, tsv, json, hf)"
        )
    return fmt


def _resolve_files(files: Any, base: Path) -> Any:
    if isinstance(files, str):
        return files if "://" in files else str((base / files).resolve())
    if isinstance(files, list):
        return [_resolve_files(f, base) for f in files]
    if isinstance(files, dict):
        return {k: _resolve_files(v, base) for k, v in files.items()}
    raise ConfigError(f"data_files must be a path, a list of paths or a mapping of split to paths, got {files!r}")
