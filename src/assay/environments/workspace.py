"""A sample's workspace, made on the host from the task's ``environment:`` and the row, before anything runs in it.

In order, later ones replacing earlier ones: ``spec.folder`` (a host folder, or a ``.tar``, ``.tar.gz``,
``.tgz``, ``.tar.bz2``, ``.tar.xz`` or ``.zip`` archive) as the base; ``spec.files`` (workspace path -> inline
text, or ``{path: host file}``); then the row's ``spec.row_files`` key: a mapping path -> text, or a string naming
a folder or archive. Relative host paths are read from ``spec.base_dir`` (the task file's folder). A workspace
path that is absolute or leaves the workspace, an archive member that does, and an archive link pointing outside
are refused with a ValueError naming where it came from.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.environments.base import WORKSPACE, EnvironmentSpec
from assay.environments.confined import chown_tree, parent_fd, regular_files, relative_parts, write

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
ARCHIVE_SUFFIXES = (*TAR_SUFFIXES, ".zip")


def _host_path(name: str, base_dir: str | None, what: str) -> Path:
    """A host path from the task (relative ones from the task file's folder), which must exist."""
    path = Path(os.path.expanduser(name))
    if not path.is_absolute():
        path = Path(base_dir or ".") / path
    if not path.exists():
        raise ValueError(f"{what}: {str(path)!r} does not exist")
    return path


def _workspace_parts(path: str, what: str) -> tuple[str, ...]:
    """A workspace path's components; a path from a task or a row must be relative and stay inside."""
    if isinstance(path, str) and path.startswith("/"):
        raise ValueError(f"{what}: {path!r} is absolute; workspace paths are relative to {WORKSPACE}")
    return relative_parts(path, WORKSPACE, what)


def _extract_tar(archive: Path, dest: Path, what: str) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                _workspace_parts(member.name, f"{what}: member of {archive.name}")
            tar.extractall(dest, filter="data")  # refuses links leaving dest, devices, absolute names
    except tarfile.FilterError as err:
        raise ValueError(f"{what}: {archive.name}: {err}") from None
    except tarfile.TarError as err:
        raise ValueError(f"{what}: {archive.name} is not a readable tar archive ({err})") from None


def _extract_zip(archive: Path, dest: Path, what: str) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                _workspace_parts(info.filename.rstrip("/") or ".", f"{what}: member of {archive.name}")
            zf.extractall(dest)  # links in a zip are extracted as plain files holding their target's name
    except zipfile.BadZipFile as err:
        raise ValueError(f"{what}: {archive.name} is not a readable zip archive ({err})") from None


def copy_in(source: Path, dest: Path, what: str) -> None:
    """Copy a host folder (links kept as links) or extract an archive into ``dest``."""
    name = source.name.lower()
    if source.is_dir():
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    elif name.endswith(TAR_SUFFIXES):
        _extract_tar(source, dest, what)
    elif name.endswith(".zip"):
        _extract_zip(source, dest, what)
    else:
        raise ValueError(f"{what}: {str(source)!r} is neither a folder nor an archive ({', '.join(ARCHIVE_SUFFIXES)})")


def merge_in(source: Path, dest: Path, what: str, uid: int | None) -> None:
    """Copy a folder or archive over a workspace that already has files: staged beside it, then each entry moved
    in without following a link already in the workspace (so ``lib -> /etc`` there cannot redirect a write)."""
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=dest.parent))
    try:
        copy_in(source, staging, what)
        chown_tree(str(staging), uid)
        for folder, dirs, files in os.walk(staging, followlinks=False):
            rel = Path(folder).relative_to(staging).parts
            for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
                parts = (*rel, name)
                with parent_fd(str(dest), parts, make=True, uid=uid) as dir_fd:
                    try:
                        os.rename(os.path.join(folder, name), name, dst_dir_fd=dir_fd)
                    except OSError as err:
                        raise ValueError(f"{what}: cannot put {'/'.join(parts)!r} in the workspace: {err}") from None
            for name in dirs:
                if not os.path.islink(os.path.join(folder, name)):
                    with parent_fd(str(dest), (*rel, name, "."), make=True, uid=uid):
                        pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _file_content(value: Any, base_dir: str | None, what: str) -> bytes:
    """Inline text (or bytes), or ``{path: host file}`` read from the host."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, bytes):
        return value
    if isinstance(value, Mapping) and set(value) == {"path"} and isinstance(value["path"], str):
        return _host_path(value["path"], base_dir, what).read_bytes()
    raise ValueError(f"{what}: give inline text or {{path: <host file>}}, not {type(value).__name__}")


def materialise(spec: EnvironmentSpec, row: Mapping[str, Any], dest: Path, uid: int | None) -> dict[str, bytes]:
    """Make the workspace in the (empty) host folder ``dest``, every file owned by ``uid``; returns each regular
    file's initial bytes (relative path -> content): what ``Environment.initial_file`` answers."""
    if spec.folder:
        copy_in(_host_path(spec.folder, spec.base_dir, "environment.folder"), dest, "environment.folder")
        chown_tree(str(dest), uid)
    for path, value in spec.files.items():
        what = f"environment.files[{path!r}]"
        write(str(dest), _workspace_parts(path, what), _file_content(value, spec.base_dir, what), uid)
    value = row.get(spec.row_files) if spec.row_files else None
    if isinstance(value, str):
        what = f"row key {spec.row_files!r}"
        source = _host_path(value, spec.base_dir, what)
        if any(dest.iterdir()):
            merge_in(source, dest, what, uid)
        else:
            copy_in(source, dest, what)
            chown_tree(str(dest), uid)
    elif isinstance(value, Mapping):
        for path, content in value.items():
            what = f"row key {spec.row_files!r}, file {path!r}"
            write(str(dest), _workspace_parts(path, what), _file_content(content, spec.base_dir, what), uid)
    elif value is not None:
        raise ValueError(f"row key {spec.row_files!r}: give a mapping path -> text or a folder/archive name")
    return {name: (dest / name).read_bytes() for name in regular_files(str(dest))}
