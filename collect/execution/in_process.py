"""Several packs: training a whole grid in one process and merging the pack results.

For tests and benchmarks; ``initmem collect`` goes through shards instead
(:mod:`initmem.collect.execution.runner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import xarray as xr

from initmem import cube
from initmem.collect.execution.pack_plan import plan_packs
from initmem.collect.train.devices import resolve_device
from initmem.collect.train.engine import train_pack
from initmem.grid import Grid

FILL = {name: fill for name, (_dtype, fill) in cube.INT_VARS.items()}


def merge_packs(packs: Sequence[xr.Dataset]) -> xr.Dataset:
    """Combine pack results (possibly several packs of one pipeline) into one cube."""
    if not packs:
        raise ValueError("no packs to merge")
    sigmas = sorted({float(s) for p in packs for s in p[cube.SIGMA].values})
    seeds = sorted({int(s) for p in packs for s in p[cube.SEED].values})
    # A crossed design's seeds per run index (coordinates on the seed dim): gathered from every pack, set
    # aside while the packs are reindexed to the union of run indices, and put back on the merged cube.
    pairs: dict[str, dict[int, int]] = {}
    for p in packs:
        for name in cube.SEED_COORDS:
            if name in p.coords:
                pairs.setdefault(name, {}).update(zip(p[cube.SEED].values.tolist(), p[name].values.tolist(),
                                                      strict=True))
    packs = [p.drop_vars([c for c in cube.SEED_COORDS if c in p.coords]) for p in packs]
    by_pipe: dict[str, xr.Dataset] = {}
    order: list[str] = []
    for p in packs:
        name = str(p[cube.PIPELINE].values[0])
        fill = {v: FILL.get(v, np.nan) for v in p.data_vars}
        p = p.reindex({cube.SIGMA: sigmas, cube.SEED: seeds}, fill_value=fill)
        if name not in by_pipe:
            by_pipe[name] = p
            order.append(name)
            continue
        cur = by_pipe[name]
        have = p[cube.STATUS] != cube.MISSING
        for v in p.data_vars:
            if cube.SIGMA in p[v].dims:
                cur[v] = xr.where(have, p[v], cur[v]).astype(cur[v].dtype).transpose(*cur[v].dims)
        by_pipe[name] = cur
    parts = [by_pipe[n] for n in order]
    if len(parts) == 1:
        out = parts[0]
    else:
        out = xr.concat(parts, dim=cube.PIPELINE, join="outer", combine_attrs="drop_conflicts",
                        data_vars="different", coords="different", compat="equals",
                        fill_value={v: FILL.get(v, np.nan) for v in parts[0].data_vars})
        out[cube.TEST_LABEL] = parts[0][cube.TEST_LABEL]
    out.attrs = dict(parts[0].attrs)
    for name, by_run in pairs.items():
        out = out.assign_coords({name: (cube.SEED, np.asarray([by_run[k] for k in seeds], dtype="int64"))})
    return cube.canonicalize(out)


def collect_grid(grid: Grid, *, device: str = "cpu", pack_size: int | None = None,
                 progress: Callable[[str, int, int], None] | None = None) -> xr.Dataset:
    """Train every pack of ``grid`` one after another and merge them (for tests and benchmarks)."""
    device = resolve_device(device)
    packs = []
    for pipeline, cells in plan_packs(grid, device=device, pack_size=pack_size):
        cb = (lambda e, n, _p=pipeline: progress(_p, e, n)) if progress else None
        packs.append(train_pack(grid, pipeline, cells, device=device, progress=cb))
    return merge_packs(packs)

