"""Pack planning: which cells of which pipeline train together as one packed model.

A pack holds cells of one pipeline only (they share every hyper-parameter). Without an explicit
size the pack is as large as free memory allows (estimated from parameter count and activation
size of one member), capped, and then balanced so a pipeline's packs have near-equal sizes.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from initmem.collect.train.data import load_split
from initmem.collect.train.devices import device_kind, free_memory_bytes
from initmem.collect.train.nets import activation_elems_per_image
from initmem.collect.train.probes import build_for_grid
from initmem.grid import Grid

MAX_PACK = {"cpu": 32, "mps": 64, "cuda": 256}
MEMORY_FRACTION = 0.5


def member_bytes(grid: Grid, batch_size: int, pipeline: str | None = None) -> int:
    """Rough training memory of one member: params, grads, two optimizer states, activations."""
    split = load_split(grid.dataset)
    net = build_for_grid(grid, pipeline or next(iter(grid.pipelines)), 1, split.in_channels, split.n_classes,
                         split.image_size)
    n_params = sum(p.numel() for p in net.parameters())
    acts = activation_elems_per_image(net, split.in_channels, split.image_size)
    return 4 * (4 * n_params + 3 * acts * max(batch_size, 256))


def auto_pack_size(grid: Grid, pipeline: str, device: str) -> int:
    kind = device_kind(device)
    per = member_bytes(grid, grid.pipelines[pipeline].batch_size, pipeline)
    fit = int(MEMORY_FRACTION * free_memory_bytes(device) // max(per, 1))
    return max(1, min(fit, MAX_PACK.get(kind, 32)))


def plan_packs(grid: Grid, *, device: str, pack_size: int | None = None,
               only: Collection[tuple[str, float, int]] | None = None) -> list[tuple[str, list[tuple[float, int]]]]:
    """(pipeline, cells) per pack, pipelines in grid order, cells sigma_w-major: deterministic.

    ``only`` restricts the packs to those (pipeline, sigma_w, seed) cells, sized on what is left to train:
    a sequential look that adds seeds 4-7 to one pipeline gets packs of equal size, where packing the whole
    grid first and then dropping the trained cells would leave packs of 8 and 12."""
    if pack_size is not None and pack_size < 1:
        raise ValueError("pack_size must be >= 1")
    size_opt = pack_size or grid.engine.pack_size
    plans: list[tuple[str, list[tuple[float, int]]]] = []
    for pipeline in grid.pipelines:
        cells = [(float(s), int(k)) for s, k in grid.cells(pipeline)
                 if only is None or (pipeline, float(s), int(k)) in only]
        if not cells:
            continue
        cap = size_opt or auto_pack_size(grid, pipeline, device)
        n_packs = math.ceil(len(cells) / cap)
        size = math.ceil(len(cells) / n_packs)
        for i in range(0, len(cells), size):
            plans.append((pipeline, cells[i:i + size]))
    return plans


def pack_cost(grid: Grid, pipeline: str, n_cells: int) -> float:
    """A pack's relative training cost: optimizer steps times members (evaluation and per-step overhead are
    taken as proportional). Only the order of packs uses it."""
    spec = grid.pipelines[pipeline]
    n_train = getattr(grid.dataset, "n_train", None) or spec.batch_size
    return float(spec.epochs or 1) * math.ceil(n_train / spec.batch_size) * n_cells


def spread_over_workers(packs: list[tuple[str, list[tuple[float, int]]]], workers: int,
                        ) -> list[tuple[str, list[tuple[float, int]]]]:
    """Split the largest packs in halves until every CPU worker has one (or each is a single cell).

    Why: a pack trains on one worker, so a run with fewer packs than workers leaves cores idle; a sequential
    look that adds seeds to one undecided pipeline would train on one core of two. On CPU a cell's numbers do
    not depend on its pack (the packed engine's invariance), so the split changes no cube."""
    out = list(packs)
    while len(out) < workers:
        i = max(range(len(out)), key=lambda j: len(out[j][1]), default=None)
        if i is None or len(out[i][1]) < 2:
            break
        pipe, cells = out.pop(i)
        half = math.ceil(len(cells) / 2)
        out[i:i] = [(pipe, cells[:half]), (pipe, cells[half:])]
    return out
