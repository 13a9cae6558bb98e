"""Memory curves over training time (docs/clocks-and-collapse.md), with paired seed-bootstrap intervals.

Per pipeline and epoch:

- radial memory rho(t): the slope of the seed-mean log kernel_norm on log sigma_w (1 at t = 0
  when the init only scales the kernels, 0 when the norm has forgotten the init scale);
- functional memory: the spread (max - min over sigma_w) of the seed-mean val_acc, and the share
  of val_acc's variance that the sigma_w levels account for (expected-mean-square estimators);
- function-space memory at the selected checkpoint: how often two runs at *different* sigma_w
  disagree on a test prediction, minus how often two runs at the *same* sigma_w do. Both terms
  compare runs of different seeds, so the difference isolates sigma_w from seed noise (same-seed
  pairs share the init direction and data order and would bias the first term down).

Seeds are the replication unit: intervals come from a bootstrap over seeds that uses the same
seed draw at every sigma_w (the pairing described in docs/cube.md). The result is an ``xarray.Dataset``
on (pipeline, epoch) that ``analysis`` stores as ``DIR/curves.nc`` for the report.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from initmem import cube
from initmem import names as N
from initmem.atomic import atomic_path
from initmem.cube.levels import probe_is_categorical
from initmem.stats.anova import mean_squares
from initmem.stats.resample import seed_bootstrap, take_seeds

__all__ = ["memory_curves", "seed_bootstrap", "write_curves", "curve_array", "radial_slope",
           "functional_spread", "functional_share", "seed_mean_clocks"]

QUANTILES = (0.05, 0.95)


# Arrays ------------------------------------------------------------------------------------

def has_curve(ds: xr.Dataset, var: str) -> bool:
    return var in ds.data_vars and cube.EPOCH in ds[var].dims and set(cube.CELL_DIMS) <= set(ds[var].dims)


def ok_mask(ds: xr.Dataset) -> np.ndarray:
    """(pipeline, sigma_w, seed) True where the run finished ok: ``cube.ok_cells`` as numpy."""
    return cube.ok_cells(ds).transpose(*cube.CELL_DIMS).values.astype(bool)


def curve_array(ds: xr.Dataset, var: str) -> np.ndarray:
    """``ds[var]`` as float64 (pipeline, sigma_w, seed, epoch), NaN outside ok cells."""
    arr = ds[var].transpose(*cube.CURVE_DIMS).values.astype(float)
    return np.where(ok_mask(ds)[..., None], arr, np.nan)


def _nanmean(a: np.ndarray, axis) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=axis)


def radial_slope(log_kn: np.ndarray, log_sigma: np.ndarray, sigma_axis: int = -3, seed_axis: int = -2) -> np.ndarray:
    """OLS slope of the seed-mean log kernel norm on log sigma_w (NaN-aware, vectorised).

    ``log_kn`` has a sigma_w axis and a seed axis (default (..., sigma_w, seed, epoch)); both are
    reduced. Levels without data are left out of the regression; fewer than 2 levels give NaN.
    """
    sig_ax = _axis_after_reduce(log_kn.ndim, sigma_axis, seed_axis)
    y = _nanmean(log_kn, axis=seed_axis)
    y = np.moveaxis(y, sig_ax, -1)  # (..., epoch, sigma_w)
    return ols_slope(y, log_sigma)


def _axis_after_reduce(ndim: int, axis: int, reduced: int) -> int:
    """Where ``axis`` sits once ``reduced`` is removed (both may be negative)."""
    axis, reduced = axis % ndim, reduced % ndim
    return axis if axis < reduced else axis - 1


def ols_slope(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """OLS slope of y on x along the last axis, ignoring NaN entries of y: the one implementation
    (the seed-mean radial slope and the collapse test's per-seed slopes both use it)."""
    m = np.isfinite(y)
    n = m.sum(-1)
    xw = np.where(m, x, 0.0)
    yw = np.where(m, y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        xbar = xw.sum(-1, keepdims=True) / n[..., None]
        ybar = yw.sum(-1, keepdims=True) / n[..., None]
        dx = np.where(m, x - xbar, 0.0)
        sxx = (dx**2).sum(-1)
        out = (dx * (yw - ybar)).sum(-1) / sxx
    return np.where((n >= 2) & (sxx > 0), out, np.nan)


def functional_spread(acc: np.ndarray, sigma_axis: int = -3, seed_axis: int = -2) -> np.ndarray:
    """max - min over sigma_w of the seed-mean accuracy (NaN-aware)."""
    sig_ax = _axis_after_reduce(acc.ndim, sigma_axis, seed_axis)
    y = _nanmean(acc, axis=seed_axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmax(y, axis=sig_ax) - np.nanmin(y, axis=sig_ax)


def functional_share(acc: np.ndarray) -> np.ndarray:
    """Share of the variance of acc (..., sigma_w, seed, epoch) due to sigma_w levels.

    Expected-mean-square variance components of the levels x seeds block at each epoch
    (``stats.anova.mean_squares``), on the complete block: levels with data, and the seeds
    observed at every one of them. Negative components are set to 0:
    share = s2_level / (s2_level + s2_seed + s2_e); NaN with fewer than 2 levels or seeds.
    """
    y = np.moveaxis(np.asarray(acc, float), -1, -3)  # (..., epoch, sigma, seed)
    lead = y.shape[:-2]
    tables = y.reshape(-1, *y.shape[-2:])
    fin = np.isfinite(tables)
    lev = fin.any(-1)  # (N, I)
    seeds = np.all(fin | ~lev[:, :, None], axis=1) & fin.any(1)  # observed at every level with data
    out = np.full(tables.shape[0], np.nan)
    keys = np.concatenate([lev, seeds], 1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    for g, key in enumerate(uniq):
        li, si = key[: lev.shape[1]], key[lev.shape[1]:]
        if li.sum() < 2 or si.sum() < 2:
            continue
        rows = np.flatnonzero(inverse.ravel() == g)
        ms = mean_squares(tables[rows][:, li][:, :, si])
        with np.errstate(invalid="ignore", divide="ignore"):
            s2_a = np.maximum(0.0, ms.s2_level)
            total = s2_a + np.maximum(0.0, ms.s2_seed) + ms.ms_e
            out[rows] = np.where(total > 0, s2_a / total, 0.0)
    return out.reshape(lead)


def seed_mean_clocks(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Per (pipeline, epoch): the epoch index and every clock, averaged over sigma_w and seeds.

    Clocks depend only on the pipeline's schedule, so the average is a copy; it is NaN past a
    pipeline's horizon (where no run has data).
    """
    n_p, n_t = ds.sizes[cube.PIPELINE], ds.sizes[cube.EPOCH]
    present = np.zeros((n_p, n_t), bool)
    for var in (cube.KERNEL_NORM, cube.VAL_ACC, *cube.ALL_CLOCKS, cube.STEP):
        if has_curve(ds, var):
            present |= np.isfinite(curve_array(ds, var)).any(axis=(1, 2))
    out = {N.CURVE_EPOCH_AXIS: np.where(present, ds[cube.EPOCH].values.astype(float)[None, :], np.nan)}
    for var in (cube.STEP, *cube.ALL_CLOCKS):
        if has_curve(ds, var):
            out[var] = _nanmean(curve_array(ds, var), axis=(1, 2))
        else:
            out[var] = np.full((n_p, n_t), np.nan)
    return out


# Function-space memory ----------------------------------------------------------------------

def _disagreement(pred: np.ndarray) -> np.ndarray:
    """Pairwise disagreement rates (sigma, seed, sigma, seed) of one pipeline's predictions."""
    n_lev, n_seed, n_ex = pred.shape
    flat = pred.reshape(n_lev * n_seed, n_ex)
    agree = np.zeros((flat.shape[0], flat.shape[0]))
    for k in np.unique(flat[flat >= 0]):
        onehot = (flat == k).astype(float)
        agree += onehot @ onehot.T
    return (1.0 - agree / n_ex).reshape(n_lev, n_seed, n_lev, n_seed)


def fs_memory_draws(pred: np.ndarray, valid: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Function-space memory for each row of seed ``counts`` (n_draw, seeds).

    A bootstrap draw enters as multiplicity weights on the original seeds; pairs of a seed with
    itself are never used (they would be the same run, not two seeds).
    """
    d = _disagreement(pred)
    v = valid.astype(float)
    n_lev = pred.shape[0]
    diff_lev = 1.0 - np.eye(n_lev)
    w = counts[:, :, None] * counts[:, None, :] * (1.0 - np.eye(counts.shape[1]))[None]  # (b, s, t)
    vv = v[:, :, None, None] * v[None, None, :, :]  # (i, s, j, t)
    between_w = np.einsum("bst,isjt,ij->b", w, vv, diff_lev)
    between = np.einsum("bst,isjt,ij,isjt->b", w, vv, diff_lev, d)
    within_w = np.einsum("bst,isjt,ij->b", w, vv, np.eye(n_lev))
    within = np.einsum("bst,isjt,ij,isjt->b", w, vv, np.eye(n_lev), d)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((between_w > 0) & (within_w > 0), between / between_w - within / within_w, np.nan)


# The curves -------------------------------------------------------------------------------

def _quantiles(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(draws, QUANTILES, axis=0)
    return q[0], q[1]


def memory_curves(ds: xr.Dataset, *, n_boot: int = 200, seed: int = 0) -> xr.Dataset | None:
    """Radial, functional and function-space memory per (pipeline, epoch) with 90% intervals.

    Returns None when the cube has neither a kernel_norm nor a val_acc curve. A curve whose
    source variable is missing is all-NaN and named in the ``skipped`` attribute.
    """
    has_kn, has_val = has_curve(ds, cube.KERNEL_NORM), has_curve(ds, cube.VAL_ACC)
    if not (has_kn or has_val):
        return None
    categorical = probe_is_categorical(ds)   # sigma_w holds unordered level codes (docs/arms.md)
    has_kn = has_kn and not categorical
    rng = np.random.default_rng(seed)
    n_p, n_t = ds.sizes[cube.PIPELINE], ds.sizes[cube.EPOCH]
    seeds = ds[cube.SEED].values
    idx = seed_bootstrap(seeds, n_boot, rng)  # (B, S): the same draw at every sigma_w
    log_sigma = np.log(ds[cube.SIGMA].values.astype(float))
    nan_pt = np.full((n_p, n_t), np.nan)
    out: dict[str, tuple] = {}
    skipped: list[str] = []
    pe = (cube.PIPELINE, cube.EPOCH)

    if has_kn:
        kn = curve_array(ds, cube.KERNEL_NORM)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_kn = np.where(kn > 0, np.log(kn), np.nan)
        rho = radial_slope(log_kn, log_sigma)
        boot = radial_slope(take_seeds(log_kn, idx, 2), log_sigma, sigma_axis=1, seed_axis=3)  # (P, B, T)
        lo, hi = _quantiles(np.moveaxis(boot, 1, 0)) if n_boot else (nan_pt, nan_pt)
        out.update({N.CURVE_RHO: (pe, rho), N.CURVE_RHO_Q05: (pe, lo), N.CURVE_RHO_Q95: (pe, hi)})
    else:
        skipped.append("rho (categorical probe: no log sigma_w axis)" if categorical else "rho (no kernel_norm curve)")
        out.update({N.CURVE_RHO: (pe, nan_pt), N.CURVE_RHO_Q05: (pe, nan_pt), N.CURVE_RHO_Q95: (pe, nan_pt)})

    if has_val:
        acc = curve_array(ds, cube.VAL_ACC)
        spread = functional_spread(acc)
        boot = functional_spread(take_seeds(acc, idx, 2), sigma_axis=1, seed_axis=3)
        lo, hi = _quantiles(np.moveaxis(boot, 1, 0)) if n_boot else (nan_pt, nan_pt)
        out.update({N.CURVE_FUNC_SPREAD: (pe, spread), N.CURVE_FUNC_SPREAD_Q05: (pe, lo),
                    N.CURVE_FUNC_SPREAD_Q95: (pe, hi), N.CURVE_FUNC_SHARE: (pe, functional_share(acc))})
    else:
        skipped.append("func_spread, func_share (no val_acc curve)")
        out.update({N.CURVE_FUNC_SPREAD: (pe, nan_pt), N.CURVE_FUNC_SPREAD_Q05: (pe, nan_pt),
                    N.CURVE_FUNC_SPREAD_Q95: (pe, nan_pt), N.CURVE_FUNC_SHARE: (pe, nan_pt)})

    if cube.TEST_PRED in ds.data_vars:
        pred = ds[cube.TEST_PRED].transpose(*cube.CELL_DIMS, cube.EXAMPLE).values.astype(int)
        valid = ok_mask(ds) & (pred >= 0).all(-1)
        counts = np.concatenate([np.ones((1, len(seeds))),
                                 np.stack([np.bincount(r, minlength=len(seeds)) for r in idx])
                                 if n_boot else np.zeros((0, len(seeds)))]).astype(float)
        fs = np.full(n_p, np.nan)
        fs_lo, fs_hi = np.full(n_p, np.nan), np.full(n_p, np.nan)
        for p in range(n_p):  # one disagreement matrix per pipeline; draws are vectorised
            draws = fs_memory_draws(pred[p], valid[p], counts)
            fs[p] = draws[0]
            if n_boot and np.isfinite(draws[1:]).any():
                fs_lo[p], fs_hi[p] = np.nanquantile(draws[1:], QUANTILES)
        out.update({N.CURVE_FS_MEMORY: ((cube.PIPELINE,), fs), N.CURVE_FS_MEMORY_Q05: ((cube.PIPELINE,), fs_lo),
                    N.CURVE_FS_MEMORY_Q95: ((cube.PIPELINE,), fs_hi)})
    else:
        skipped.append("fs_memory (no test_pred)")

    for name, arr in seed_mean_clocks(ds).items():
        if name in (N.CURVE_EPOCH_AXIS, cube.STEP, *cube.CLOCKS) or has_curve(ds, name):  # new clocks when present
            out[name] = (pe, arr)
    res = xr.Dataset(
        {k: v for k, v in out.items()},
        coords={cube.PIPELINE: ds[cube.PIPELINE].values, cube.EPOCH: ds[cube.EPOCH].values},
    )
    res.attrs = {
        "schema": "initmem.curves/1",
        "n_boot": int(n_boot),
        "bootstrap": "seeds resampled with replacement, the same draw at every sigma_w",
        "interval": "5% and 95% bootstrap quantiles",
        "skipped": "; ".join(skipped),
    }
    return res


def write_curves(curves: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write the curves as NetCDF atomically (temporary name, then rename)."""
    with atomic_path(path) as tmp:
        curves.to_netcdf(tmp)
    return Path(path)
