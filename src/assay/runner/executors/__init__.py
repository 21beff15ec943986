"""Who runs the work of a run: ``local`` (this process, the default) or ``ray`` (a Ray cluster).

The session hands an executor (:func:`~assay.runner.executors.choose.make_executor`) the pending (task, sample)
pairs and the run folder's writer; the executor returns finished records to that writer, so the driver stays the
single writer of the run folder whatever runs the work. Nothing here imports ``ray``: only choosing
``executor="ray"`` does.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ConfigError

ExecutorName = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")


class RayOptions(BaseModel):
    """Where and with what a run's Ray workers run (recorded in run.json; a resume may change them)."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = None  # "auto", "ray://host:10001", "host:6379"; None: start a local Ray instance
    workers: int | None = Field(default=None, ge=1)  # worker actors; None: one per `num_cpus` CPUs of the cluster
    # what each worker reserves (it holds the model client and the evaluators); None: the most any task's
    # ``resources:`` asks for, else 1 CPU and no GPU
    num_cpus: float | None = Field(default=None, ge=0)
    num_gpus: float | None = Field(default=None, ge=0)
    shard_size: int | None = Field(default=None, ge=1)  # samples per shard; None: the worker's share of concurrency
    # how long each worker may take to start, or to come back after it was lost; None: 60 s. The run goes on with
    # the workers that started; none started: it stops with its samples pending
    start_timeout_s: float | None = Field(default=None, gt=0)


def require_ray() -> None:
    """Raise ConfigError (naming the extra to install) when Ray cannot be imported: checked before a run starts."""
    try:
        import ray  # noqa: F401
    except ImportError as err:
        raise ConfigError(
            f"--executor ray needs Ray, which cannot be imported here ({err}): pip install 'assay[ray]'"
        ) from None
