"""The radial-memory verdict: does a pipeline's final kernel norm still carry the initial scale?

At initialization the kernels of (seed s, sigma_w 2) are exactly twice those of (seed s, sigma_w 1), so the
slope of log ||W|| on log sigma_w is 1. Training moves it: under gradient flow with BatchNorm the norms are
conserved (the slope stays near 1), L2 resets them towards one equilibrium (slope 0), Adam moves them at
order eta. The slope of the log *final* kernel norm on log sigma_w is the paper's mechanism readout, and its
noise is far below the accuracy's, so a few seeds decide it (docs/radial-verdict.md).

The estimand is the mean over seeds of each seed's OLS slope across the sigma_w levels (seeds are common
random numbers, so a seed's slope compares like with like). Decision against a stated margin ``m``:

* "keeps the initial scale": the one-sided t test of mean slope > m rejects at ALPHA;
* "forgets the scale": two one-sided t tests show -m < mean slope < m at ALPHA (an intersection-union
  test: no multiplicity correction, Berger 1982);
* otherwise "undecided" (the word of every undecided verdict, initmem/names.py).

Both are exact t tests for normal seed slopes at the boundary, so each false verdict is at most ALPHA there
(tests/test_radial.py measures it, with heavy-tailed seeds too). Imported cubes whose seeds share nothing
across levels get the pooled OLS slope over all runs with its residual standard error instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr
from scipy import stats as sps

from initmem import cube
from initmem.cube.levels import probe_is_categorical
from initmem.names import ALPHA, UNDECIDED
from initmem.results.margins import RADIAL_MARGIN  # the margin's one owner, read by the rule table too
from initmem.results.records import RADIAL_VERDICTS

KEEPS, FORGETS, _ = RADIAL_VERDICTS   # the words' one owner (results/records.py); the rule table: models/rules.py


def final_log_norms(ds: xr.Dataset) -> xr.DataArray:
    """log ||W|| at each run's last recorded epoch, (pipeline, sigma_w, seed); NaN for runs that did not
    finish (status other than ok) or recorded no kernel norm."""
    kn = ds[cube.KERNEL_NORM]
    finite = np.isfinite(kn.values) & (kn.values > 0)
    last = np.where(finite.any(-1), kn.sizes[cube.EPOCH] - 1 - np.argmax(finite[..., ::-1], axis=-1), 0)
    vals = np.take_along_axis(kn.values, last[..., None], axis=-1)[..., 0]
    vals = np.where(finite.any(-1), vals, np.nan)
    if cube.STATUS in ds.data_vars:
        vals = np.where(ds[cube.STATUS].values == cube.OK, vals, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return xr.DataArray(np.log(vals), dims=cube.CELL_DIMS, coords={d: ds[d] for d in cube.CELL_DIMS})


def seed_slopes(log_norm: np.ndarray, log_sigma: np.ndarray) -> np.ndarray:
    """Each seed's OLS slope of ``log_norm`` (sigma_w, seed) on ``log_sigma`` over its finite levels; NaN for a
    seed with fewer than 2 levels."""
    y = np.asarray(log_norm, float).T  # (seed, sigma_w)
    m = np.isfinite(y)
    n = m.sum(1)
    x = np.where(m, log_sigma[None, :], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        xbar = x.sum(1) / n
        ybar = np.where(m, y, 0.0).sum(1) / n
        dx = np.where(m, log_sigma[None, :] - xbar[:, None], 0.0)
        slope = (dx * np.where(m, y - ybar[:, None], 0.0)).sum(1) / (dx**2).sum(1)
    return np.where(n >= 2, slope, np.nan)


def _tests(est: float, se: float, df: int, margin: float, alpha: float) -> dict[str, Any]:
    """One-sided test of slope > margin, TOST of |slope| < margin, and the (1 - 2 alpha) interval."""
    if not (math.isfinite(se) and df >= 1):
        return {"p_keeps": math.nan, "p_forgets": math.nan, "q05": math.nan, "q95": math.nan}
    se = max(se, 1e-12 * max(1.0, abs(est)))
    t = sps.t(df)
    half = t.ppf(1 - alpha) * se
    return {"p_keeps": float(t.sf((est - margin) / se)),  # H0: slope <= margin
            "p_forgets": float(max(t.cdf((est - margin) / se), t.sf((est + margin) / se))),  # H0: |slope| >= margin
            "q05": float(est - half), "q95": float(est + half)}


def radial_verdict(log_norm: np.ndarray, log_sigma: np.ndarray, *, paired: bool = True,
                   margin: float = RADIAL_MARGIN, alpha: float = ALPHA) -> dict[str, Any]:
    """The verdict of one pipeline from its final log norms (sigma_w, seed): the slope with its interval, the
    two p-values and the decision (module docstring)."""
    y = np.asarray(log_norm, float)
    if paired:
        s = seed_slopes(y, log_sigma)
        s = s[np.isfinite(s)]
        n, df = int(s.size), int(s.size) - 1
        est = float(s.mean()) if n else math.nan
        se = float(s.std(ddof=1) / math.sqrt(n)) if n >= 2 else math.nan
        unit = "seeds"
    else:
        m = np.isfinite(y)
        xs, ys = np.broadcast_to(log_sigma[:, None], y.shape)[m], y[m]
        n, df = int(ys.size), int(ys.size) - 2
        if n >= 3 and np.ptp(xs) > 0:
            fit = sps.linregress(xs, ys)
            est, se = float(fit.slope), float(fit.stderr)
        else:
            est, se = math.nan, math.nan
        unit = "runs"
    res = {"margin": float(margin), "n": n, "unit": unit, "slope": est, **_tests(est, se, df, margin, alpha)}
    if res["p_keeps"] < alpha:
        res["verdict"] = KEEPS
    elif res["p_forgets"] < alpha:
        res["verdict"] = FORGETS
    else:
        res["verdict"] = UNDECIDED
    return res


def radial_verdicts(ds: xr.Dataset, *, margin: float = RADIAL_MARGIN, alpha: float = ALPHA) -> dict[str, dict]:
    """Per pipeline, the radial verdict of a cube with kernel-norm curves (empty when it has none, or when its
    sigma_w axis is categorical: a slope on log sigma_w then means nothing)."""
    if cube.KERNEL_NORM not in ds.data_vars or cube.EPOCH not in ds[cube.KERNEL_NORM].dims or probe_is_categorical(ds):
        return {}
    ln = final_log_norms(ds)
    log_sigma = np.log(ds[cube.SIGMA].values.astype(float))
    paired = cube.seed_design(ds) == cube.SEED_PAIRED
    out = {}
    for pipe in ds[cube.PIPELINE].values.tolist():
        res = radial_verdict(ln.sel({cube.PIPELINE: pipe}).values, log_sigma, paired=paired, margin=margin,
                             alpha=alpha)
        if res["n"] >= (2 if paired else 3):
            out[str(pipe)] = res
    return out


__all__ = ["FORGETS", "KEEPS", "RADIAL_MARGIN", "RADIAL_VERDICTS", "final_log_norms",
           "radial_verdict", "radial_verdicts", "seed_slopes"]
