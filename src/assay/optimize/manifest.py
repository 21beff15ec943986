"""``optimization.json``: what is optimised, with what, within which budget, on which splits; written through
:mod:`assay.secrets` (no key, header or URL credential reaches it) and checked when an optimisation is resumed, so a
hand-edited or damaged file is an error naming the file and the key, never a traceback."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.errors import ConfigError

MANIFEST = "optimization.json"
SPLIT_NAMES = ("train", "val", "test")


class _Recorded(BaseModel):
    """The keys a resumed optimisation reads (others are kept as written)."""

    model_config = ConfigDict(extra="allow")

    kind: Literal["assay.optimization"]
    task: dict[str, Any]
    task_hash: str
    model: Any = None
    optimizer_model: Any = None
    budget: int = Field(ge=1, strict=True)
    budget_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    spec: dict[str, Any]
    splits: dict[Literal["train", "val", "test"], list[int]]
    run_settings: dict[str, Any] = Field(default_factory=dict)
    status: str = "running"


def recorded_model(model: Any) -> Any:
    """What the folder records of a model: its spec with credentials redacted (keys, headers, a URL's password and
    secret query values), or for an object (or a spec with a literal key) what it describes; either way the model
    must then be given again on resume."""
    from assay.models.base import Model
    from assay.models.registry import load_model
    from assay.secrets import looks_secret, redact_spec

    if model is None:
        return None
    if isinstance(model, str):
        return redact_spec(model)
    if isinstance(model, dict):
        if any(looks_secret(k) and k != "api_key_env" for k in model):
            return {"object": redact_spec(load_model(model).describe())}
        return redact_spec(model)
    if isinstance(model, Model):
        return {"object": redact_spec(model.describe())}
    raise ConfigError(f"a model is a spec ('openai:NAME', 'python:mod:fn', a dict) or a Model, got {type(model)}")


def recorded_config(config: Any) -> Any:
    """A task config as the folder records it: credential-named keys dropped, credentials in URLs redacted."""
    from assay.record import redact_config_urls
    from assay.results.document import _scrub

    return redact_config_urls(_scrub(config))[0]


def recorded_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Run settings as recorded (paths as strings, credentials in a model spec or URL redacted)."""
    from assay.secrets import redact_spec

    return {k: redact_spec(str(v) if isinstance(v, Path) else v) for k, v in settings.items()}


def needs_model_again(recorded: Any) -> bool:
    """True when the recorded model cannot be rebuilt (an object, or a spec whose credentials were redacted)."""
    from assay.secrets import REDACTED

    if isinstance(recorded, dict) and "object" in recorded:
        return True
    return REDACTED in json.dumps(recorded, default=str)


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write ``optimization.json`` atomically."""
    path = folder / MANIFEST
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_manifest(folder: Path) -> dict[str, Any]:
    """``optimization.json`` of ``folder``, checked: a ConfigError names the file and the first bad key."""
    path = folder / MANIFEST
    if not path.is_file():
        raise ConfigError(f"{folder} is not an optimisation folder (no {MANIFEST})")
    damaged = "(edited by hand or damaged; an optimisation folder's files are written by assay optimize)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text ({err.reason}) {damaged}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}:{err.lineno}:{err.colno}: not valid JSON: {err.msg} {damaged}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, got {type(data).__name__} {damaged}")
    try:
        _Recorded.model_validate(data)
    except ValidationError as err:
        e = err.errors()[0]
        raise ConfigError(f"{path}: {_where(tuple(e['loc']))}: {e['msg']} {damaged}") from None
    try:
        check_run_settings(data["run_settings"])
    except ConfigError as err:
        raise ConfigError(f"{path}: {err} {damaged}") from None
    missing = [name for name in SPLIT_NAMES if not data["splits"].get(name)]
    if missing:
        raise ConfigError(f"{path}: splits.{missing[0]}: missing or empty {damaged}")
    from assay.optimize.spec import OptimizeSpec

    try:
        OptimizeSpec.model_validate(data["spec"])
    except ValidationError as err:
        e = err.errors()[0]
        message = str(e["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{path}: {_where(('spec', *tuple(e['loc'])))}: {message} {damaged}") from None
    return data


def check_splits(path: Path, splits: dict[str, list[int]], n_rows: int) -> None:
    """The recorded splits index the dataset's rows, each row in one split at most."""
    seen: set[int] = set()
    for name in SPLIT_NAMES:
        for i, row in enumerate(splits[name]):
            if not 0 <= row < n_rows:
                raise ConfigError(f"{path}: splits.{name}[{i}]: row {row} is not in the dataset ({n_rows} rows)")
            if row in seen:
                raise ConfigError(f"{path}: splits.{name}[{i}]: row {row} is in two splits")
            seen.add(row)


def finite_budget_usd(value: Any) -> float | None:
    """``budget_usd`` checked: None, or a finite number of dollars above 0 (NaN would switch the cap off)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"budget_usd: expected a finite amount of US dollars above 0, got {value!r}")
    return float(value)


def check_run_settings(settings: dict[str, Any]) -> None:
    """``run_settings`` are RunSettings of every candidate run, less what the optimiser sets itself: a wrong key or
    value is a ConfigError naming it (and the intended key), not pydantic's error from deep in the first run."""
    from pydantic import ValidationError

    from assay.api import check_settings
    from assay.results.operational import validate_prices
    from assay.runner.settings import RunSettings

    try:
        check_settings(settings, call="assay.optimize")
    except ConfigError as err:
        raise ConfigError(f"run_settings: {str(err).replace('keyword argument', 'setting')}") from None
    own = sorted({"output_dir", "progress"} & set(settings))
    if own:
        raise ConfigError(f"run_settings: {', '.join(own)} is set by the optimiser for each candidate run")
    try:
        RunSettings.model_validate(settings)
    except ValidationError as err:
        e = err.errors()[0]
        where = ".".join(str(p) for p in e["loc"])
        raise ConfigError(f"run_settings: {where}: {e['msg']} (got {e.get('input')!r})") from None
    validate_prices(settings.get("prices"))
    if settings.get("executor", "local") != "local":
        raise ConfigError(
            "run_settings: executor: candidate runs use the local executor (the optimiser counts every model call "
            "against its budget as it is sent, in this process)"
        )
