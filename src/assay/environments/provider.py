"""Environment providers: what makes a sample's :class:`Environment` from a task's spec and the row.

bubblewrap (``"bwrap"``, :mod:`assay.environments.bwrap_env`) is the default and the only one shipped. A container
engine plugs in here: an adapter (e.g. for Docker or Podman) is a class with ``name`` and ``async create(spec, row,
sample_id)`` returning an :class:`Environment` whose methods map as follows — ``create``: run a container from the
task's image (``spec.rootfs`` would name the image) with ``--network none`` unless ``limits.network``,
``--memory``/``--pids-limit``/``--cpus`` from :class:`EnvironmentLimits`, copy the workspace made by
:func:`assay.environments.workspace.materialise` into ``/workspace`` (``docker cp``), then run ``spec.setup``;
``exec``: ``docker exec -w /workspace`` (``check_files``: copy them to ``/assay-check`` just before, remove them after);
``shell``: one long-lived ``docker exec -i bash`` driven as :class:`assay.environments.shell.BashShell` drives bwrap;
the file methods: through the engine's archive API (never the host's view of an overlay); ``close``: ``docker rm -f``
(containers labelled with the run's pid, so ``cleanup_leftovers`` can remove a killed run's). Register it with
:func:`register_provider`; a shipped adapter comes with tests that run the engine for real.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from assay.environments.base import Environment, EnvironmentSpec


@runtime_checkable
class Provider(Protocol):
    """Makes one environment per sample; ``create`` raises EnvironmentFailed when it cannot (nothing left)."""

    name: str

    async def create(self, spec: EnvironmentSpec, row: Mapping[str, Any], sample_id: str) -> Environment: ...


class BwrapProvider:
    """The bubblewrap provider (the default): :class:`assay.environments.bwrap_env.BwrapEnvironment`."""

    name = "bwrap"

    async def create(self, spec: EnvironmentSpec, row: Mapping[str, Any], sample_id: str) -> Environment:
        from assay.environments.bwrap_env import BwrapEnvironment

        return await BwrapEnvironment.create(spec, row, sample_id)


_PROVIDERS: dict[str, Provider] = {"bwrap": BwrapProvider()}


def register_provider(provider: Provider) -> None:
    """Make ``provider`` available to :func:`get_provider` under its ``name``."""
    _PROVIDERS[provider.name] = provider


def get_provider(name: str = "bwrap") -> Provider:
    """The provider called ``name``; ValueError naming the known ones otherwise."""
    try:
        return _PROVIDERS[name]
    except KeyError:
        raise ValueError(f"no environment provider {name!r} (known: {', '.join(sorted(_PROVIDERS))})") from None
