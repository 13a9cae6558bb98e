"""``CollectOptions``: every option of a collect call, validated once where it enters, made the way
:class:`initmem.results.AnalysisSpec` is (a frozen pydantic model, ``of`` to build or replace, one line per refusal).

``initmem collect``, ``initmem run`` and :func:`initmem.collect_cube` each build one record and hand it on, so
the entry point (:func:`initmem.collect.execution.runner.collect`) and its helpers receive the options already
valid, as one object, instead of some twenty keywords repeated at every call. A bad value raises
:class:`~initmem.errors.OptionError`, one line that names the option; the command line names its flag.

Importing this module imports neither torch nor the training machinery: the command line builds the record before
anything heavy loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from initmem.errors import option, validated_options

Executor = Literal["local", "slurm"]
EXECUTORS: tuple[str, ...] = get_args(Executor)


class CollectOptions(BaseModel):
    """Every option of a collect call with its default (docs/collect-runs.md).

    Build one with ``CollectOptions.of(jobs=4)``, or pass the fields as keywords to
    [`initmem.collect_cube`][initmem.collect_cube]; a bad value raises one line that names the option, and a
    misspelt option suggests the right one. Values are taken as given, never converted: ``jobs="4"`` or
    ``resume="yes"`` is refused rather than read as a number or a truth value.

    Examples
    --------
    >>> from initmem.collect.execution.options import CollectOptions
    >>> opts = CollectOptions.of(jobs=2, checkpoint_minutes=1.5)
    >>> opts.jobs, opts.checkpoint_seconds, opts.executor
    (2, 90.0, 'local')
    >>> CollectOptions.of(opts, pack_siz=4)
    Traceback (most recent call last):
    initmem.errors.OptionError: pack_siz is not a collect option; did you mean pack_size?
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=True)

    resume: bool = False
    """Continue the training already in the grid folder: train only its unfinished cells."""
    force_new: bool = False
    """When the grid folder holds a training, start a new folder ``DIR-N`` instead."""
    retry_failed: bool = False
    """Resume, and train the cells that failed again."""
    executor: Executor = "local"
    """``local``: worker processes on this machine; ``slurm``: a Slurm job array (submitit)."""
    device: str = "auto"
    """``auto``, ``cpu``, ``cuda`` or ``mps``."""
    jobs: int | Literal["auto"] = 1
    """Worker processes (``auto``: one per ``engine.cpu_threads`` cores, one per GPU with GPUs)."""
    pack_size: int | None = None
    """Cells per packed model; None: the engine's planner (or ``engine.pack_size``) sizes the packs."""
    quiet: bool = False
    """Print nothing but errors (no tables, no notes)."""
    progress: bool = True
    """Show the progress bar (never when ``quiet``)."""
    checkpoint_every: int = 1
    """Checkpoint each pack every this many epochs."""
    checkpoint_minutes: float | None = None
    """Also checkpoint when this many minutes passed since the last checkpoint."""
    slurm: Mapping[str, Any] | None = None
    """Slurm settings that override the grid's ``slurm:`` block (``partition``, ``gpus_per_job``, ``time_min``,
    ``mem_gb``, ``cpus_per_task``, ``array_parallelism``; None values keep the grid's)."""
    slurm_cluster: str | None = None
    """submitit's cluster (``local`` runs the array on this machine; tests use it)."""
    wait: bool = True
    """With Slurm, wait for the array to finish and merge; False returns right after submission (the last array
    task merges; so does the command line's merge of the folder, docs/collect-runs.md)."""

    @field_validator("jobs", mode="before")
    @classmethod
    def _jobs(cls, v: Any) -> Any:
        if v != "auto" and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ValueError(f"must be 'auto' or at least 1 (got {v!r})")
        return v

    @field_validator("pack_size")
    @classmethod
    def _pack_size(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"must be at least 1 (got {v})")
        return v

    @field_validator("checkpoint_every")
    @classmethod
    def _checkpoint_every(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be at least 1 epoch (got {v})")
        return v

    @field_validator("checkpoint_minutes")
    @classmethod
    def _checkpoint_minutes(cls, v: float | None) -> float | None:
        if v is not None and not v > 0:
            raise ValueError(f"must be positive (got {v})")
        return v

    @model_validator(mode="after")
    def _new_or_continued(self) -> CollectOptions:
        if self.force_new and (self.resume or self.retry_failed):
            other = option("resume", True) if self.resume else option("retry_failed", True)
            raise ValueError(f"starts a new grid folder and {other} continues the training in it: give one of them")
        return self

    @classmethod
    def of(cls, options: CollectOptions | None = None, **fields: Any) -> CollectOptions:
        """``options`` with ``fields`` replaced (or a new record from ``fields``), validated.

        A name that is no field raises :class:`OptionError` naming it (and the field it is closest to), as an
        unknown analysis option does, rather than Python's ``TypeError``: the caller gets one line that says what
        to fix."""
        return validated_options(cls, dict(options) if options is not None else None, fields,
                                 what="a collect option", default="force_new")   # the one check across fields

    @property
    def continues(self) -> bool:
        """Whether the call continues a training in the folder: ``resume``, or ``retry_failed`` (which only makes
        sense on an existing one)."""
        return self.resume or self.retry_failed

    @property
    def checkpoint_seconds(self) -> float | None:
        """``checkpoint_minutes`` in seconds, the unit the executors count in."""
        return self.checkpoint_minutes * 60 if self.checkpoint_minutes is not None else None


class CollectFields(TypedDict, total=False):
    """The fields of :class:`CollectOptions` as keyword arguments, so that a type checker sees every keyword that
    :func:`initmem.collect_cube` accepts beside a record (tests/test_public_api.py checks that the two list the
    same names and types, in the same order)."""

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
