"""A small deterministic stand-in for ``initmem.collect.train.engine.train_pack`` (collector tests).

It honours the engine's whole contract (cube layout of a pack, status 3 for combos not in the
pack, epoch-end checkpoints of plain data that load with weights_only, bit-identical resume,
progress callbacks, ``INITMEM_FAIL_CELL``) with a few arithmetic steps per epoch, so the
collector's crash, resume and merge logic can be tested in seconds. Cells with sigma_w >= 100
diverge at epoch 2 (their curves are NaN from there on, status diverged).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube

N_TEST = 6
LAYERS = ("conv1.weight", "conv2.weight", "fc.weight")
_MOD = 2**61 - 1


def _next(r: int) -> int:
    return (r * 48271 + 11) % _MOD


def fake_train_pack(grid: Any, pipeline: str, cells: list[tuple[float, int]], *, device: str = "cpu",
                    checkpoint: Any = None, checkpoint_every_epochs: int = 1, checkpoint_every_seconds: Any = None,
                    resume: dict | None = None, progress: Any = None) -> xr.Dataset:
    spec = grid.pipelines[pipeline]
    cells = [(float(s), int(k)) for s, k in cells]
    want = os.environ.get("INITMEM_FAIL_CELL")
    for s, k in cells:
        if want == f"{pipeline}:{s:g}:{k}":
            raise RuntimeError(f"injected failure in cell {want}")
    G, E = len(cells), spec.epochs
    if resume is None:
        st: dict[str, Any] = {
            "epochs_done": 0,
            "rng": [int(k) * 7919 + 1 for _, k in cells],
            "w": [float(s) for s, _ in cells],
            "loss": [[2.3] + [float("nan")] * E for _ in cells],
            "norm": [[float(s)] + [float("nan")] * E for s, _ in cells],
            "diverged": [-1] * G,
        }
    else:
        st = {k: (list(map(list, v)) if k in ("loss", "norm") else (list(v) if isinstance(v, list) else v))
              for k, v in resume.items()}
    for epoch in range(int(st["epochs_done"]) + 1, E + 1):
        for g, (s, _k) in enumerate(cells):
            if st["diverged"][g] >= 0:
                continue
            st["rng"][g] = _next(st["rng"][g])
            u = st["rng"][g] / _MOD
            st["w"][g] = st["w"][g] * (1.0 - spec.lr * (0.5 + u)) + 0.01 * u
            loss = st["loss"][g][epoch - 1] * (0.7 + 0.2 * u)
            if s >= 100 and epoch >= 2:
                st["diverged"][g] = epoch
                continue
            st["loss"][g][epoch] = loss
            st["norm"][g][epoch] = abs(st["w"][g])
        st["epochs_done"] = epoch
        if progress is not None:
            progress(epoch, E)
        if checkpoint is not None and epoch < E and epoch % max(checkpoint_every_epochs, 1) == 0:
            checkpoint({k: (list(map(list, v)) if k in ("loss", "norm") else (list(v) if isinstance(v, list) else v))
                        for k, v in st.items()})
    return _dataset(grid, pipeline, cells, st, device)


def _dataset(grid: Any, pipeline: str, cells: list[tuple[float, int]], st: dict[str, Any], device: str) -> xr.Dataset:
    spec = grid.pipelines[pipeline]
    sigmas = sorted({s for s, _ in cells})
    seeds = sorted({k for _, k in cells})
    E = spec.epochs + 1
    shape = (1, len(sigmas), len(seeds))
    loss = np.full((*shape, E), np.nan)
    norm = np.full((*shape, E), np.nan)
    layer = np.full((*shape, E, len(LAYERS)), np.nan)
    status = np.full(shape, cube.MISSING, dtype="int8")
    sel = np.full(shape, np.nan)
    pred = np.full((*shape, N_TEST), -1, dtype="int16")
    for g, (s, k) in enumerate(cells):
        i, j = sigmas.index(s), seeds.index(k)
        loss[0, i, j] = st["loss"][g]
        norm[0, i, j] = st["norm"][g]
        layer[0, i, j] = np.outer(st["norm"][g], [1.0, 0.5, 0.25])
        status[0, i, j] = cube.DIVERGED if st["diverged"][g] >= 0 else cube.OK
        sel[0, i, j] = 1.0 / (1.0 + np.nanmin(st["loss"][g]))
        pred[0, i, j] = (np.arange(N_TEST) + st["rng"][g]) % 3
    cd, ed = cube.CELL_DIMS, (*cube.CELL_DIMS, cube.EPOCH)
    ds = xr.Dataset(
        {"train_loss": (ed, loss), "kernel_norm": (ed, norm), "layer_norm": ((*ed, cube.LAYER), layer),
         "status": (cd, status), "selected_test_acc": (cd, sel), "wall_seconds": (cd, np.full(shape, 0.1)),
         "test_pred": ((*cd, cube.EXAMPLE), pred), "test_label": ((cube.EXAMPLE,), np.arange(N_TEST) % 3)},
        coords={cube.PIPELINE: np.array([pipeline], dtype=object), cube.SIGMA: np.asarray(sigmas, dtype="float64"),
                cube.SEED: np.asarray(seeds, dtype="int64"), cube.EPOCH: np.arange(E),
                cube.LAYER: np.array(LAYERS, dtype=object), cube.EXAMPLE: np.arange(N_TEST),
                "optimizer": (cube.PIPELINE, np.array([spec.optimizer], dtype=object)),
                "lr": (cube.PIPELINE, [float(spec.lr)]), "epochs": (cube.PIPELINE, [int(spec.epochs)])})
    ds.attrs = {"schema": cube.SCHEMA, "n_test": N_TEST, "device": device, "created": "now", "grid": grid.to_yaml()}
    return cube.canonicalize(ds)
