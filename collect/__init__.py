"""Training grids into cubes (torch; docs/collect.md, docs/collect-runs.md).

Two wings (docs/collect.md): ``collect.train``, the trainer that turns one pack of (sigma_w, seed)
cells into curves, selected checkpoints and predictions (nets, optimizers, measured clocks, init probes,
data); and ``collect.run``, the machinery that makes a grid's run resumable, shardable and mergeable (run
folder, clock budgets, pack plan, pack jobs, local and Slurm executors, shards and their assembly,
checkpoints, events, progress, status). The trainer imports nothing from the run wing. Public face:
:func:`collect` (a resumable run folder), :func:`collect_grid` (a grid in memory), :func:`merge_dir`."""

from __future__ import annotations

from initmem.lazy import lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "collect": ("initmem.collect.run.runner", "collect"),
    "collect_grid": ("initmem.collect.run.in_process", "collect_grid"),
    "merge_dir": ("initmem.collect.run.shards", "merge_dir"),
}


__getattr__ = lazy_getattr(__name__, _API)


__all__ = list(_API)
