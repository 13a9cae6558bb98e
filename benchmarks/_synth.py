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
    for name, base in (("train_loss", 2.3), ("val_loss", 2.3), ("test_loss", 2.3)):
        data[name] = (ed, base * decay + 0.02 + np.abs(noise(0.01)))
    for name in ("train_acc", "val_acc", "test_acc"):
        data[name] = (ed, np.clip(1 - 0.9 * decay + noise(0.005), 0, 1))
    sig = np.asarray(sigma_w)[None, :, None, None]
    data["kernel_norm"] = (ed, sig * 30 * (1 + 0.1 * np.log1p(t)) + noise(0.05))
    steps = np.broadcast_to(t * 351, shape).copy()
    data["step"] = (ed, steps)
    lr = np.broadcast_to(0.05 * (1 + np.cos(np.pi * t / E)), shape).copy()
    data["lr_now"] = (ed, lr)
    data["T_eta"] = (ed, np.cumsum(lr * 351, axis=-1))
    data["T_sgd"] = (ed, np.cumsum(lr**2 * 351 / 128, axis=-1))
    data["T_l2"] = (ed, 5e-4 * np.cumsum(lr * 351, axis=-1))
    data["T_adapt"] = (ed, np.cumsum(lr * 351, axis=-1))
    data["layer_norm"] = ((*ed, cube.LAYER), data["kernel_norm"][1][..., None] / np.sqrt(L)
                          * (1 + 0.01 * rng.normal(size=(P, S, K, E, L))))
    cd = cube.CELL_DIMS
    data["status"] = (cd, np.zeros((P, S, K), dtype="int8"))
    for name in ("tau_interp", "tau_best"):
        data[name] = (cd, rng.integers(1, E, (P, S, K)).astype(float))
    for name in ("selected_val_acc", "selected_test_acc", "final_test_acc"):
        data[name] = (cd, rng.uniform(0.85, 0.95, (P, S, K)))
    data["selected_test_correct"] = (cd, (data["selected_test_acc"][1] * n_test).astype("int32"))
    data["init_kernel_norm"] = (cd, data["kernel_norm"][1][..., 0])
    data["wall_seconds"] = (cd, rng.uniform(100, 200, (P, S, K)))
    labels = rng.integers(0, 10, n_test).astype("int16")
    wrong = rng.random((P, S, K, n_test)) > 0.9
    pred = np.where(wrong, rng.integers(0, 10, (P, S, K, n_test)), labels).astype("int16")
    data["test_pred"] = ((*cd, cube.EXAMPLE), pred)
    data["test_label"] = ((cube.EXAMPLE,), labels)
    ds = xr.Dataset({k: xr.Variable(d, v) for k, (d, v) in data.items()},
                    coords={cube.PIPELINE: np.array(pipelines, dtype=object),
                            cube.SIGMA: np.asarray(sigma_w, dtype=float), cube.SEED: np.asarray(seeds),
                            cube.EPOCH: np.arange(E), cube.LAYER: np.array(layers, dtype=object),
                            cube.EXAMPLE: np.arange(n_test),
                            "epochs": (cube.PIPELINE, np.full(P, epochs))})
    ds.attrs = {"schema": cube.SCHEMA, "n_test": n_test, "device": "synthetic", "created": "synthetic"}
    return cube.canonicalize(ds)
