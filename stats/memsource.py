"""Per-seed memory values, kept so that a bootstrap can resample seeds (pairing preserved).

radial: the per-seed slope of log kernel_norm on log sigma_w (a seed's runs at every sigma_w share
its init direction and data order, so the slope within one seed is a paired contrast);
functional: val_acc itself, whose memory (the spread over sigma_w of the seed means) is formed
after the seeds are drawn.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr

from initmem import cube
from initmem.stats.curves import curve_array, ols_slope

RADIAL_SIDES = ("radial_above", "radial_below")
MEMORIES = ("radial", *RADIAL_SIDES, "functional")
REF_SIGMA = 1.0  # the standard initialization: the two radial sides meet here


def memory_variable(memory: str) -> str:
    return cube.VAL_ACC if memory == "functional" else cube.KERNEL_NORM


def memory_view(ds: xr.Dataset, memory: str, ref: float = REF_SIGMA) -> tuple[xr.Dataset, str]:
    """(cube, base memory) for a memory kind: a radial side keeps the sigma_w levels >= ref
    (radial_above) or <= ref (radial_below) and is then the radial slope over those levels.

    Above the standard init the large kernels shrink (on T_l2 under L2); below it the small
    kernels grow (on sum eta): one slope over the whole range blurs the two mechanisms.
    """
    sig = ds[cube.SIGMA].values.astype(float)
    if memory not in RADIAL_SIDES:
        _need_two_levels(ds, memory, sig)
        return ds, memory
    keep = sig >= ref * (1 - 1e-9) if memory == "radial_above" else sig <= ref * (1 + 1e-9)
    if keep.sum() < 2:
        from initmem.errors import UserError

        raise UserError(f"memory {memory} needs >= 2 sigma_w levels on that side of {ref:g} "
                        f"(the cube has {', '.join(f'{s:g}' for s in sig)})")
    return ds.isel({cube.SIGMA: np.flatnonzero(keep)}), "radial"


def _need_two_levels(ds: xr.Dataset, memory: str, sig: np.ndarray) -> None:
    """Every memory curve is measured across sigma_w (a slope, or a spread, over the levels): one level
    with curves gives none, so the collapse test refuses it in one line instead of failing inside."""
    var = memory_variable(memory)
    if var in ds.data_vars and cube.SIGMA in ds[var].dims:
        other = [d for d in ds[var].dims if d != cube.SIGMA]
        has = np.asarray(ds[var].notnull().any(other).values, bool)
    else:
        has = np.ones(sig.size, bool)
    if has.sum() < 2:
        from initmem.errors import UserError

        what = "the slope of log kernel_norm on log sigma_w" if memory != "functional" else \
            "the spread of val_acc over sigma_w"
        levels = ", ".join(f"{s:g}" for s in sig[has]) or "none"
        raise UserError(f"the collapse test needs >= 2 sigma_w levels with curves (its {memory} memory is {what}); "
                        f"the cube has {int(has.sum())} (sigma_w: {levels})")


@dataclass
class Source:
    kind: str
    per_seed: np.ndarray | None = None  # radial: per-seed slopes (P, S, T)
    acc: np.ndarray | None = None  # functional: val_acc (P, I, S, T)

    @classmethod
    def from_cube(cls, ds: xr.Dataset, memory: str) -> Source:
        arr = curve_array(ds, memory_variable(memory))
        if memory == "functional":
            return cls("functional", acc=arr)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_kn = np.where(arr > 0, np.log(arr), np.nan)
        log_sigma = np.log(ds[cube.SIGMA].values.astype(float))
        return cls("radial", per_seed=ols_slope(np.moveaxis(log_kn, 1, -1), log_sigma))

    @property
    def n_seed(self) -> int:
        return self.per_seed.shape[1] if self.kind == "radial" else self.acc.shape[2]

    def observed_seeds(self, p: int) -> np.ndarray:
        """Positions of the seeds pipeline p has any data for."""
        data = self.per_seed[p] if self.kind == "radial" else np.moveaxis(self.acc[p], 1, 0)
        return np.flatnonzero(np.isfinite(data.reshape(data.shape[0], -1)).any(-1))

    def stats(self, s_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Seed-mean memory (C, T) and the variance of that mean (C, T); s_idx (C, S) seed positions."""
        p_idx = np.arange(s_idx.shape[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if self.kind == "radial":
                sel = self.per_seed[p_idx[:, None], s_idx]  # (C, S, T)
                n = np.isfinite(sel).sum(1)
                var = np.nanvar(sel, axis=1, ddof=1) / n
                return np.nanmean(sel, axis=1), np.where(n >= 2, var, np.nan)
            sel = self.acc[p_idx[:, None, None], np.arange(self.acc.shape[1])[None, :, None], s_idx[:, None, :]]
            fin = np.isfinite(sel)
            cnt = fin.sum(2)  # (C, I, T)
            tot = np.nansum(sel, axis=2)
            mean = tot / cnt
            y = np.nanmax(mean, axis=1) - np.nanmin(mean, axis=1)
            # Jackknife over seeds of the spread of the seed means.
            loo = (tot[:, :, None, :] - np.where(fin, sel, 0.0)) / (cnt[:, :, None, :] - fin)
            th = np.nanmax(loo, axis=1) - np.nanmin(loo, axis=1)  # (C, S, T)
            th = np.where(fin.any(1), th, np.nan)
            n = np.isfinite(th).sum(1)
            var = (n - 1) / n * np.nansum((th - np.nanmean(th, axis=1, keepdims=True)) ** 2, axis=1)
            return y, np.where(n >= 2, var, np.nan)

    def per_seed_curves(self) -> np.ndarray:
        """Each seed's own memory curve (P, S, T): radial its slope, functional the spread of its val_acc."""
        if self.kind == "radial":
            return self.per_seed
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmax(self.acc, axis=1) - np.nanmin(self.acc, axis=1)

    def all_seeds(self) -> np.ndarray:
        n_p = self.per_seed.shape[0] if self.kind == "radial" else self.acc.shape[0]
        return np.broadcast_to(np.arange(self.n_seed), (n_p, self.n_seed))

    def draw_seeds(self, rng: np.random.Generator) -> np.ndarray:
        """One paired seed draw per pipeline among its observed seeds, padded with a seed it lacks."""
        s_all = np.arange(self.n_seed)
        rows = []
        for p in range(self.all_seeds().shape[0]):
            obs = self.observed_seeds(p)
            obs = obs if obs.size else s_all
            drawn = obs[rng.integers(0, obs.size, obs.size)]
            pad = np.setdiff1d(s_all, obs)[:1]
            rows.append(np.concatenate([drawn, np.repeat(pad, s_all.size - drawn.size)]) if pad.size
                        else drawn)
        return np.stack(rows)


__all__ = ["MEMORIES", "RADIAL_SIDES", "REF_SIGMA", "Source", "memory_variable", "memory_view"]
