"""Synthetic cube content with the paper preset's shapes, for the size and merge benchmarks.

The values imitate real curves closely enough for compression to be representative: noisy
float32 losses and accuracies that decay / rise, cumulative clocks, integer step counts,
per-kernel norms, and test predictions that agree with the label ~90% of the time.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from initmem import cube

RESNET9_KERNELS = ("prep.conv", "layer1.conv", "res1.a.conv", "res1.b.conv", "layer2.conv", "layer3.conv",
                   "res3.a.conv", "res3.b.conv", "head")
PAPER_PIPELINES = ("sgd_low_lr", "sgd_l2", "sgd_mom_cos", "adam", "adamw")
PAPER_SIGMA = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def synthetic_cube(pipelines: list[str], sigma_w: list[float], seeds: list[int], *, epochs: int,
                   n_test: int, layers: tuple[str, ...] = RESNET9_KERNELS, seed: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    P, S, K, E, L = len(pipelines), len(sigma_w), len(seeds), epochs + 1, len(layers)
    t = np.arange(E, dtype=float)
    shape = (P, S, K, E)
    decay = np.exp(-t / max(epochs / 5, 1))
    noise = lambda scale: rng.normal(0, scale, shape)  # noqa: E731
    data: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}
    ed = cube.CURVE_DIMS
    for name, base in ((cube.TRAIN_LOSS, 2.3), (cube.VAL_LOSS, 2.3), (cube.TEST_LOSS, 2.3)):
        data[name] = (ed, base * decay + 0.02 + np.abs(noise(0.01)))
    for name in (cube.TRAIN_ACC, cube.VAL_ACC, cube.TEST_ACC):
        data[name] = (ed, np.clip(1 - 0.9 * decay + noise(0.005), 0, 1))
    sig = np.asarray(sigma_w)[None, :, None, None]
    data[cube.KERNEL_NORM] = (ed, sig * 30 * (1 + 0.1 * np.log1p(t)) + noise(0.05))
    steps = np.broadcast_to(t * 351, shape).copy()
    data[cube.STEP] = (ed, steps)
    lr = np.broadcast_to(0.05 * (1 + np.cos(np.pi * t / E)), shape).copy()
    data[cube.LR_NOW] = (ed, lr)
    data[cube.T_ETA] = (ed, np.cumsum(lr * 351, axis=-1))
    data[cube.T_SGD] = (ed, np.cumsum(lr**2 * 351 / 128, axis=-1))
    data[cube.T_L2] = (ed, 5e-4 * np.cumsum(lr * 351, axis=-1))
    data[cube.T_ADAPT] = (ed, np.cumsum(lr * 351, axis=-1))
    data[cube.T_WD] = (ed, 5e-4 * np.cumsum(lr * 351, axis=-1))  # decoupled weight decay's clock
    # Momentum-corrected clocks (eta / (1 - mu), mu = 0.9) and the measured, layer-pooled clocks.
    for plain, mom in ((cube.T_ETA, cube.T_ETA_MOM), (cube.T_SGD, cube.T_SGD_MOM), (cube.T_L2, cube.T_L2_MOM)):
        data[mom] = (ed, data[plain][1] * (10.0 if plain != cube.T_SGD else 100.0))
    angle = np.cumsum(0.01 * lr / lr.max() + np.abs(noise(1e-4)), axis=-1)
    data[cube.T_ANGLE] = (ed, angle)
    data[cube.T_EFF] = (ed, np.cumsum(lr * 351 / data[cube.KERNEL_NORM][1] ** 2, axis=-1))
    lay = (*ed, cube.LAYER)
    data[cube.COS_TO_INIT] = (lay, np.cos(np.minimum(angle, np.pi / 2))[..., None] * np.ones(L))
    data[cube.ANGULAR_PATH] = (lay, angle[..., None] * (1 + 0.01 * rng.normal(size=(P, S, K, E, L))))
    data[cube.EFF_LR] = (lay, (lr / data[cube.KERNEL_NORM][1] ** 2)[..., None] * np.ones(L))
    data[cube.LAYER_NORM] = ((*ed, cube.LAYER), data[cube.KERNEL_NORM][1][..., None] / np.sqrt(L)
                          * (1 + 0.01 * rng.normal(size=(P, S, K, E, L))))
    cd = cube.CELL_DIMS
    data[cube.STATUS] = (cd, np.zeros((P, S, K), dtype="int8"))
    for name in (cube.TAU_INTERP, cube.TAU_BEST):
        data[name] = (cd, rng.integers(1, E, (P, S, K)).astype(float))
    for name in (cube.SELECTED_VAL_ACC, cube.SELECTED_TEST_ACC, cube.FINAL_TEST_ACC):
        data[name] = (cd, rng.uniform(0.85, 0.95, (P, S, K)))
    data[cube.SELECTED_TEST_CORRECT] = (cd, (data[cube.SELECTED_TEST_ACC][1] * n_test).astype("int32"))
    data[cube.INIT_KERNEL_NORM] = (cd, data[cube.KERNEL_NORM][1][..., 0])
    data[cube.WALL_SECONDS] = (cd, rng.uniform(100, 200, (P, S, K)))
    labels = rng.integers(0, 10, n_test).astype("int16")
    wrong = rng.random((P, S, K, n_test)) > 0.9
    pred = np.where(wrong, rng.integers(0, 10, (P, S, K, n_test)), labels).astype("int16")
    data[cube.TEST_PRED] = ((*cd, cube.EXAMPLE), pred)
    data[cube.TEST_LABEL] = ((cube.EXAMPLE,), labels)
    ds = xr.Dataset({k: xr.Variable(d, v) for k, (d, v) in data.items()},
                    coords={cube.PIPELINE: np.array(pipelines, dtype=object),
                            cube.SIGMA: np.asarray(sigma_w, dtype=float), cube.SEED: np.asarray(seeds),
                            cube.EPOCH: np.arange(E), cube.LAYER: np.array(layers, dtype=object),
                            cube.EXAMPLE: np.arange(n_test),
                            cube.PIPELINE_COORDS[-1]: (cube.PIPELINE, np.full(P, epochs))})
    ds.attrs = {cube.A_SCHEMA: cube.SCHEMA, cube.A_N_TEST: n_test, cube.A_DEVICE: "synthetic",
                cube.A_CREATED: "synthetic"}
    return cube.canonicalize(ds)
