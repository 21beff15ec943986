"""Host Python distributions made importable inside an environment (``environment: {packages: [pytest]}``).

The sandbox hides the host's site-packages; a check that runs pytest inside needs pytest and what it requires. For
each named distribution and, recursively, the distributions it requires on this Python (extras and markers that do
not apply are skipped; a requirement not installed is skipped), its top-level import packages and modules are
found from ``importlib.metadata`` and bound read-only under :data:`PACKAGES_DIR`, which ``PYTHONPATH`` names. The
packages are the host's files: they fit the sandbox's Python when it is the same version as assay's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

PACKAGES_DIR = "/opt/assay-packages"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_SKIP_TOP = {"__pycache__", "..", "bin", "share", "include", "etc", "lib", "scripts"}


def _requirements(dist: metadata.Distribution) -> list[str]:
    """The names of the distributions ``dist`` needs on this Python (no extras)."""
    names = []
    for line in dist.requires or []:
        try:
            from packaging.requirements import Requirement

            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            names.append(req.name)
        except ImportError:  # packaging is missing: keep requirements without a marker
            found = _NAME.match(line)
            if found and ";" not in line:
                names.append(found.group(1))
        except ValueError:
            continue
    return names


def _top_level(dist: metadata.Distribution) -> dict[str, Path]:
    """Top-level import name (file or folder as installed) and the ``.dist-info`` folder (its metadata, which
    ``importlib.metadata`` reads inside) -> its host path, from the distribution's record."""
    out: dict[str, Path] = {}
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if parts and parts[0].endswith(".dist-info") and parts[0] not in out:
            meta = Path(str(dist.locate_file(parts[0])))  # its metadata: pluggy and pytest read their versions
            if meta.is_dir():
                out[parts[0]] = meta.resolve()
            continue
        if not parts or parts[0] in _SKIP_TOP or parts[0].endswith((".egg-info", ".data")):
            continue
        top = parts[0]
        if len(parts) == 1 and not top.endswith((".py", ".so", ".pyd")):
            continue  # a .pth file, a licence, ...
        host = Path(str(dist.locate_file(top)))
        if host.exists():
            out[top] = host.resolve()
    return out


def package_binds(names: Iterable[str]) -> list[tuple[str, str]]:
    """(host path, path inside) for every top-level package of ``names`` and their requirements; ValueError
    naming a distribution that is not installed here."""
    seen: set[str] = set()
    binds: dict[str, str] = {}
    todo = [(name, True) for name in names]
    while todo:
        name, named = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if named:
                raise ValueError(f"environment.packages: {name!r} is not installed in assay's Python") from None
            continue
        for top, host in _top_level(dist).items():
            binds.setdefault(f"{PACKAGES_DIR}/{top}", str(host))
        todo += [(req, False) for req in _requirements(dist)]
    return sorted((host, inside) for inside, host in binds.items())
