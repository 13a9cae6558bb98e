"""Effect sizes in the units a paper reports (issue: Analysis part 2, item 4).

- spread in accuracy points (max minus min over the sigma_w grid of the seed-mean metric), with
  a 90% interval from a paired seed bootstrap;
- spread over the seed SD: how many run-to-run standard deviations the grid moves the metric;
- omega squared: the share of the total variance that the sigma_w levels account for, from the
  expected mean squares of the block design (unbiased, unlike eta squared).
"""

from __future__ import annotations

import math

import numpy as np

from initmem.stats.resample import seed_bootstrap


def omega_squared(table: np.ndarray) -> float:
    """omega^2 of sigma_w in a levels x seeds block design without replication.

    Variance components from the expected mean squares, sigma_w treated as a fixed factor:
    s2_A = (I-1)(MS_A - MS_e)/(I J), s2_seed = (MS_seed - MS_e)/I, s2_e = MS_e;
    omega^2 = s2_A / (s2_A + s2_seed + s2_e), negative components truncated at 0.
    """
    n_lev, n_seed = table.shape
    if n_lev < 2 or n_seed < 2:
        return math.nan
    grand = table.mean()
    lev_m, seed_m = table.mean(axis=1), table.mean(axis=0)
    ms_a = n_seed * ((lev_m - grand) ** 2).sum() / (n_lev - 1)
    ms_s = n_lev * ((seed_m - grand) ** 2).sum() / (n_seed - 1)
    resid = table - lev_m[:, None] - seed_m[None, :] + grand
    ms_e = (resid**2).sum() / ((n_lev - 1) * (n_seed - 1))
    s2_a = max(0.0, (n_lev - 1) * (ms_a - ms_e) / (n_lev * n_seed))
    s2_s = max(0.0, (ms_s - ms_e) / n_lev)
    total = s2_a + s2_s + ms_e
    return float(s2_a / total) if total > 0 else 0.0


def _spreads(table: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Spread of the level means for each bootstrap row of seed positions (pairing kept)."""
    boot = table[:, idx]  # (levels, n_boot, seeds): the same seeds at every level
    means = boot.mean(axis=2)
    return means.max(axis=0) - means.min(axis=0)


def effect_sizes(table: np.ndarray, *, scale: float = 100.0, n_boot: int = 2000,
                 rng: np.random.Generator | None = None) -> dict:
    """Effect sizes of one pipeline from its complete levels x seeds table (NaN when too thin)."""
    nan = math.nan
    if table.ndim != 2 or table.shape[0] < 2 or table.shape[1] < 1:
        return {"spread_points": {"estimate": nan, "q05": nan, "q95": nan},
                "spread_over_seed_sd": nan, "omega_sq": nan, "units": _units(scale)}
    rng = rng or np.random.default_rng(0)
    lev_m = table.mean(axis=1)
    spread = float(lev_m.max() - lev_m.min())
    if table.shape[1] >= 2:
        boot = _spreads(table, seed_bootstrap(range(table.shape[1]), n_boot, rng))
        q05, q95 = (float(v) * scale for v in np.quantile(boot, [0.05, 0.95]))
        # Pooled within-level SD over seeds: the run-to-run noise one training run carries.
        seed_sd = float(np.sqrt(table.var(axis=1, ddof=1).mean()))
    else:
        q05 = q95 = seed_sd = nan
    ratio = spread / seed_sd if seed_sd and math.isfinite(seed_sd) and seed_sd > 0 else nan
    return {
        "spread_points": {"estimate": spread * scale, "q05": q05, "q95": q95},
        "spread_over_seed_sd": float(ratio),
        "omega_sq": omega_squared(table),
        "units": _units(scale),
    }


def _units(scale: float) -> str:
    return "accuracy points" if scale == 100.0 else "metric units"
