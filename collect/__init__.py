"""Training grids into cubes (torch; docs/collect.md, docs/collect-runs.md).

Two wings (docs/collect.md): ``collect.train``, the trainer that turns one pack of (sigma_w, seed)
cells into curves, selected checkpoints and predictions (nets, optimizers, measured clocks, init probes,
data); and ``collect.execution``, the machinery that makes a grid's run resumable, shardable and mergeable (run
folder, clock budgets, pack plan, pack jobs, local and Slurm executors, shards and their assembly,
checkpoints, events, progress, status). The trainer imports nothing from the execution wing. Public face:
:func:`collect_cube` (a grid into a resumable grid folder and its cube; also ``initmem.collect_cube``),
:class:`CollectOptions` (its options as one record), :func:`collect_grid` (a grid in memory), :func:`merge_dir`.

``collect`` was the old name of :func:`collect_cube` here; it still works until initmem 0.12, with a
DeprecationWarning. The new name says what comes out, and the package's own name cannot be the function's
at the top level (``initmem.collect`` is this package).
"""

from __future__ import annotations

from initmem.lazy import Deprecated, lazy_dir, lazy_getattr

_API: dict[str, tuple[str, str]] = {
    "collect_cube": ("initmem.collect.execution.runner", "collect_cube"),
    "CollectOptions": ("initmem.collect.execution.options", "CollectOptions"),
    "collect_grid": ("initmem.collect.execution.in_process", "collect_grid"),
    "merge_dir": ("initmem.collect.execution.shards", "merge_dir"),
}

# The old name resolves to the entry point it always named, which still takes the options as keywords.
_DEPRECATED = {"collect": Deprecated("initmem.collect.execution.runner", "collect", "initmem.collect_cube", "0.12")}


__getattr__ = lazy_getattr(__name__, _API, _DEPRECATED)
__dir__ = lazy_dir(__name__, _API)


__all__ = list(_API)
