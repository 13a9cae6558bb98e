"""Training grids into cubes (torch; docs/collect.md, docs/collect-runs.md).

Two wings under one roof (to be split into sub-packages, issue 17 item 4): the trainer (engine,
nets, normfree, optim, measure, select, data, devices, coords, schedule) that turns one pack of
(sigma_w, seed) cells into curves, and the run machinery (runner, rundir, shards, merge, packrun,
packs, packing, local/slurm executors, checkpoints, events, progress, status, hooks) that makes a
grid's run resumable, shardable and mergeable. Public face: :func:`collect` (a resumable run folder),
:func:`collect_grid` (a grid in memory), :func:`merge_dir`, and the torch-free schedule
(:class:`LrSchedule`, :func:`pipeline_clocks`)."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "collect": ("initmem.collect.runner", "collect"),
    "collect_grid": ("initmem.collect.packs", "collect_grid"),
    "merge_dir": ("initmem.collect.shards", "merge_dir"),
    "LrSchedule": ("initmem.collect.schedule", "LrSchedule"),
    "pipeline_clocks": ("initmem.collect.schedule", "pipeline_clocks"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)
