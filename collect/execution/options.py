"""``CollectOptions``: every option of a collect run, validated once where it enters (the collect-side twin of
:class:`initmem.results.AnalysisSpec`).

``initmem collect``, ``initmem run`` and :func:`initmem.collect_cube` each build one record and hand it on, so
the run's entry point (:func:`initmem.collect.execution.runner.collect`) and its helpers receive the options already
valid, as one object, instead of some twenty keywords repeated at every call. A bad value raises
:class:`~initmem.errors.OptionError`, one line that names the option; the command line names its flag.

Importing this module imports neither torch nor the run machinery: the command line builds the record before
anything heavy loads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from initmem.errors import OptionError, option

EXECUTORS = ("local", "slurm")
Executor = Literal["local", "slurm"]


@dataclass(frozen=True)
class CollectOptions:
    """Every option of a collect run with its default (docs/collect-runs.md).

    Attributes
    ----------
    resume : bool, default False
        Continue the run already in the run folder: train only its unfinished cells.
    force_new : bool, default False
        When the run folder holds a run, start a new folder ``DIR-N`` instead.
    retry_failed : bool, default False
        Resume, and train the cells that failed again.
    executor : {"local", "slurm"}, default "local"
        Worker processes on this machine, or a Slurm job array (submitit).
    device : str, default "auto"
        ``auto``, ``cpu``, ``cuda`` or ``mps``.
    jobs : int or "auto", default 1
        Worker processes (``auto``: one per ``engine.cpu_threads`` cores, one per GPU with GPUs).
    pack_size : int, optional
        Cells per packed model; None: the engine's planner sizes the packs.
    quiet : bool, default False
        Print nothing but errors (no tables, no notes).
    progress : bool, default True
        Show the progress bar (never when ``quiet``).
    checkpoint_every : int, default 1
        Checkpoint each pack every this many epochs.
    checkpoint_minutes : float, optional
        Also checkpoint when this many minutes passed since the last checkpoint.
    slurm : mapping, optional
        Slurm settings that override the grid's ``slurm:`` block (``partition``, ``gpus_per_job``, ``time_min``,
        ``mem_gb``, ``cpus_per_task``, ``array_parallelism``; None values keep the grid's).
    slurm_cluster : str, optional
        submitit's cluster (``local`` runs the array on this machine; tests use it).
    wait : bool, default True
        With Slurm, wait for the array to finish and merge; False returns right after submission.

    Raises
    ------
    OptionError
        A value is out of range, or ``force_new`` is combined with ``resume`` or ``retry_failed``.
    """

    resume: bool = False
    force_new: bool = False
    retry_failed: bool = False
    executor: Executor = "local"
    device: str = "auto"
    jobs: int | Literal["auto"] = 1
    pack_size: int | None = None
    quiet: bool = False
    progress: bool = True
    checkpoint_every: int = 1
    checkpoint_minutes: float | None = None
    slurm: Mapping[str, Any] | None = None
    slurm_cluster: str | None = None
    wait: bool = True

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise OptionError("executor", f"{{option}} must be one of {', '.join(EXECUTORS)} (got {self.executor!r})")
        if self.jobs != "auto" and (not isinstance(self.jobs, int) or self.jobs < 1):
            raise OptionError("jobs", f"{{option}} must be 'auto' or at least 1 (got {self.jobs!r})")
        if self.pack_size is not None and self.pack_size < 1:
            raise OptionError("pack_size", f"{{option}} must be at least 1 (got {self.pack_size})")
        if self.checkpoint_every < 1:
            raise OptionError("checkpoint_every",
                              f"{{option}} must be at least 1 epoch (got {self.checkpoint_every})")
        if self.checkpoint_minutes is not None and self.checkpoint_minutes <= 0:
            raise OptionError("checkpoint_minutes", f"{{option}} must be positive (got {self.checkpoint_minutes})")
        if self.force_new and (self.resume or self.retry_failed):
            other = option("resume", True) if self.resume else option("retry_failed", True)
            raise OptionError("force_new", f"{{option}} starts a new run folder and {other} continues the run in "
                                           "it: give one of them")

    @classmethod
    def of(cls, options: CollectOptions | None = None, **fields: Any) -> CollectOptions:
        """``options`` with ``fields`` replaced (or a new record from ``fields``), validated.

        A name that is no field raises :class:`OptionError` naming it, as an unknown analysis option does,
        rather than Python's ``TypeError``: the caller gets one line that says what to fix."""
        known = {f.name for f in dataclasses.fields(cls)}
        for name in fields:
            if name not in known:
                raise OptionError(name, "{option} is not a collect option")
        return dataclasses.replace(options, **fields) if options is not None else cls(**fields)

    @property
    def continues(self) -> bool:
        """Whether the run continues one in the folder: ``resume``, or ``retry_failed`` (which only makes sense on
        an existing run)."""
        return self.resume or self.retry_failed

    @property
    def checkpoint_seconds(self) -> float | None:
        """``checkpoint_minutes`` in seconds, the unit the executors count in."""
        return self.checkpoint_minutes * 60 if self.checkpoint_minutes is not None else None


class CollectFields(TypedDict, total=False):
    """The fields of :class:`CollectOptions` as keyword arguments, so that a type checker sees every keyword that
    :func:`initmem.collect.execution.runner.collect` accepts beside a record (tests/test_public_api.py checks that the
    two list the same names and types)."""

    resume: bool
    force_new: bool
    retry_failed: bool
    executor: Executor
    device: str
    jobs: int | Literal["auto"]
    pack_size: int | None
    quiet: bool
    progress: bool
    checkpoint_every: int
    checkpoint_minutes: float | None
    slurm: Mapping[str, Any] | None
    slurm_cluster: str | None
    wait: bool
