"""``assay cache info`` and ``assay cache clear``: inspect or empty the SQLite response cache."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

cache_dir_option = click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="ASSAY_CACHE_DIR",
    default=None,
    help="Directory of the cache (default: $ASSAY_CACHE_DIR, else ~/.cache/assay).",
)


def _cache_file(cache_dir: Path | None) -> Path:
    from assay.models.cache import CACHE_FILE, default_cache_dir

    return (cache_dir or default_cache_dir()) / CACHE_FILE


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


@click.group("cache")
def cache_group() -> None:
    """Inspect or clear the response cache."""


@cache_group.command("info")
@cache_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def info_command(cache_dir: Path | None, as_json: bool) -> None:
    """Show where the cache is, how many responses it holds and for which models."""
    from assay.models.cache import ResponseCache

    path = _cache_file(cache_dir)
    if path.exists():
        with ResponseCache(path) as cache:
            info = cache.info()
    else:
        info = {"path": str(path), "entries": 0, "size_bytes": 0, "models": {}, "oldest": None, "newest": None}
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"cache:   {info['path']}" + ("" if path.exists() else " (not created yet)"))
    click.echo(f"entries: {info['entries']}")
    click.echo(f"size:    {_size(info['size_bytes'])}")
    if info["oldest"] is not None:
        oldest, newest = (time.strftime("%Y-%m-%d %H:%M", time.localtime(info[k])) for k in ("oldest", "newest"))
        click.echo(f"written: {oldest} – {newest}")
    if info["models"]:
        width = max(len(name) for name in info["models"])
        for name, count in sorted(info["models"].items(), key=lambda kv: (-kv[1], kv[0])):
            click.echo(f"  {name:<{width}}  {count}")


@cache_group.command("clear")
@cache_dir_option
@click.option(
    "--model", "model", default=None, metavar="NAME", help='Only this model\'s entries (name or "provider:name").'
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def clear_command(cache_dir: Path | None, model: str | None, yes: bool) -> None:
    """Delete cached responses: all of them, or one model's."""
    from assay.models.cache import ResponseCache

    path = _cache_file(cache_dir)
    if not path.exists():
        click.echo(f"no cache at {path}; nothing to clear")
        return
    with ResponseCache(path) as cache:
        info = cache.info()
        if model is None:
            count = info["entries"]
        else:
            count = sum(n for key, n in info["models"].items() if model in (key, key.partition(":")[2]))
        what = f"{count} cached response(s)" + (f" of model {model!r}" if model else "")
        if count == 0:
            click.echo(f"{what} in {path}; nothing to clear")
            return
        if not yes:
            click.confirm(f"Delete {what} from {path}?", abort=True)
        deleted = cache.clear(model)
    click.echo(f"deleted {deleted} cached response(s) from {path}")
