"""Merging a grid folder's shards into ``DIR/cube.nc`` and reporting what failed.

Kept apart from :mod:`initmem.collect.execution.runner` so that the executors (the Slurm array's last
task merges) and ``--status`` can merge without importing the runner: the dependency runs
runner -> executors -> merge, never back. Imports neither torch nor the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from initmem import cube
from initmem.collect.execution.events import EventLog
from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.shards import MergeReport, merge_dir
from initmem.collect.train.coords import pipeline_coords
from initmem.errors import UserError, option
from initmem.grid import grid_hash


def merge_folder(folder_dir: str | os.PathLike, *, grid: Any = None, jobs: int = 1) -> MergeReport:
    """Merge every shard of a grid folder into ``DIR/cube.nc`` (atomically, re-runnable), reading the shards with
    ``jobs`` processes."""
    folder = GridFolder(Path(folder_dir))
    if not folder.exists():
        raise folder.not_a_grid_folder()
    grid = grid if grid is not None else folder.load_grid()
    report = merge_dir(
        folder.shards, folder.cube, pipelines=list(grid.pipelines), sigma_w=[float(s) for s in grid.sigma_w],
        seeds=[int(k) for k in grid.runs], seed_coords=grid.seed_coords(), accepted_hashes=folder.accepted_hashes(),
        attrs={cube.A_GRID: grid.to_yaml(), cube.A_GRID_HASH: grid_hash(grid), cube.A_GRID_NAME: grid.name},
        pipeline_defaults=_pipeline_defaults(grid), jobs=jobs)
    EventLog(folder.events).emit("merge", cube=str(folder.cube), shards=report.n_shards,
                              corrupt=[p.name for p, _ in report.corrupt],
                              foreign=[p.name for p, _ in report.foreign], missing=len(report.missing))
    return report


def _pipeline_defaults(grid: Any) -> dict[str, dict[str, Any]]:
    """Per pipeline, the coordinates it takes when none of its cells has a shard: the engine's settings, or a
    user-code pipeline's entry point or command."""
    out: dict[str, dict[str, Any]] = {}
    for p, spec in grid.pipelines.items():
        if spec.is_user_code:
            from initmem.collect.custom.user_runner import default_coords  # torch-free

            out[p] = default_coords(spec)
        else:
            out[p] = pipeline_coords(spec, grid.model_of(p) if grid.mixed_models else None)
    return out


def corrupt_error(report: MergeReport, folder: GridFolder) -> UserError:
    names = ", ".join(p.name for p, _ in report.corrupt)
    return UserError(f"{len(report.corrupt)} corrupt shard(s) in {folder.shards}: {names}; their cells are marked "
                     f"missing in {folder.cube}; rerun with {option('resume', True)} to train them again")


def problem_rows(ds: Any) -> list[dict[str, Any]]:
    """Failed and diverged cells of a merged cube, with the error text or divergence epoch."""
    rows: list[dict[str, Any]] = []
    if cube.STATUS not in ds.data_vars:
        return rows
    failed = cube.json_attr(ds, cube.A_FAILED_CELLS) or []
    errors = {(f[cube.PIPELINE], float(f[cube.SIGMA]), int(f[cube.SEED])): f["error"] for f in failed}
    st = ds[cube.STATUS].values
    for ip, pipe in enumerate(ds[cube.PIPELINE].values.tolist()):
        for i, s in enumerate(ds[cube.SIGMA].values.tolist()):
            for j, k in enumerate(ds[cube.SEED].values.tolist()):
                code = int(st[ip, i, j])
                if code == cube.FAILED:
                    rows.append({cube.PIPELINE: pipe, cube.SIGMA: s, cube.SEED: k, cube.STATUS: "failed",
                                 "detail": errors.get((pipe, float(s), int(k)), "")})
                elif code == cube.DIVERGED:
                    detail = ""
                    if cube.TRAIN_LOSS in ds.data_vars and cube.EPOCH in ds.dims:
                        curve = ds[cube.TRAIN_LOSS].values[ip, i, j]
                        finite = np.nonzero(np.isfinite(curve))[0]
                        if finite.size:
                            detail = f"curves kept up to epoch {int(ds[cube.EPOCH].values[finite[-1]])}"
                    rows.append({cube.PIPELINE: pipe, cube.SIGMA: s, cube.SEED: k, cube.STATUS: "diverged",
                                 "detail": detail})
    return rows


def print_summary(report: MergeReport, folder: GridFolder, quiet: bool) -> None:
    if quiet:
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # logs and pipes: do not wrap error texts at 80 columns
        console = Console(width=200)
    counts = {name: 0 for name in cube.STATUS_NAMES.values()}
    vals = report.ds[cube.STATUS].values.ravel()
    for code, name in cube.STATUS_NAMES.items():
        counts[name] = int((vals == code).sum())
    rows = problem_rows(report.ds)
    if rows:
        table = Table(title="failed and diverged cells")
        for col in (*cube.CELL_DIMS, cube.STATUS, "detail"):
            table.add_column(col)
        for r in rows:
            detail = r["detail"].splitlines()[0] if r["detail"] else ""
            table.add_row(r[cube.PIPELINE], f"{r[cube.SIGMA]:g}", str(r[cube.SEED]), r[cube.STATUS], detail[:120])
        console.print(table)
    console.print(f"wrote {folder.cube}: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v or k == "ok"),
                  markup=False, highlight=False)
    for path, why in report.foreign:
        console.print(f"note: ignored shard {path.name}: {why}", markup=False, highlight=False)
