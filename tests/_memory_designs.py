"""One compiled memory model shared by the calibration and plan tests (compiling costs ~20 s).

Every calibration dataset is brought to one shape, (24 pipelines, 7 sigma_w, 6 seeds): smaller
designs leave seeds unused (outside a pipeline's rectangle nothing is imputed, so an unused
seed is exactly absent), and ``MemoryModel.refit`` runs each new dataset on the compiled
sampler.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
from scipy import stats

from initmem.models.data import MemoryData, prepare_data
from initmem.models.memory import MemoryModel

P, L, S = 24, 7, 6
FIT = {"draws": 500, "tune": 500, "chains": 2, "progress": False}


def pad_seeds(d: MemoryData, n_seed: int = S) -> MemoryData:
    """The same data with unused seeds appended up to ``n_seed``."""
    extra = n_seed - d.used.shape[2]
    if extra <= 0:
        return d
    pad = ((0, 0), (0, 0), (0, extra))
    return replace(d, y=np.pad(d.y, pad, constant_values=np.nan), used=np.pad(d.used, pad),
                   diverged=None if d.diverged is None else np.pad(d.diverged, pad),
                   seeds=np.arange(n_seed))


def table_data(y: np.ndarray, used: np.ndarray, scale: float | np.ndarray, metric: str = "sim") -> MemoryData:
    """MemoryData straight from (P, L, S) tables in outcome units with a given noise scale."""
    p, n_l, n_s = y.shape
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (p,)).copy()
    center = np.array([y[k][used[k]].mean() for k in range(p)])
    names = [f"t{k}" for k in range(p)]
    return MemoryData(metric=metric, family="gaussian", likelihood="gaussian", gate="all", pipelines=names,
                      sigma_w=np.geomspace(0.25, 8.0, n_l), seeds=np.arange(n_s), y=np.where(used, y, np.nan),
                      used=used, scale=scale, center=center, n_test=None,
                      diverged=np.zeros_like(used), n_excluded={n: {} for n in names},
                      interpolation={n: {"n_cells": int(used[k].sum()), "n_interpolated": int(used[k].sum()),
                                         "by_sigma_w": {}, "levels_without_interpolation": [], "gate": "all"}
                                     for k, n in enumerate(names)}, divergence_p={n: None for n in names})


@functools.lru_cache(maxsize=1)
def compiled_model() -> MemoryModel:
    """A fitted model of the shared shape (standard-normal tables), compiled once per session."""
    rng = np.random.default_rng(0)
    d = table_data(rng.standard_normal((P, L, S)), np.ones((P, L, S), dtype=bool), 1.0)
    m = MemoryModel(d)
    m.fit(seed=0, **FIT)
    return m


def fit_cube(ds, seed: int = 0) -> MemoryModel:
    return compiled_model().refit(pad_seeds(prepare_data(ds)), seed=seed)


def fit_tables(d: MemoryData, seed: int = 0) -> MemoryModel:
    return compiled_model().refit(d, seed=seed)


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(c - h), float(c + h)
