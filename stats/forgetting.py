"""Forgetting times: when has a pipeline forgotten its init scale, on each time axis?

Per pipeline and axis (docs/clocks-and-collapse.md, "Forgetting times"):

- radial memory: the axis value at which rho(t) first falls to ``fraction`` of its start,
  rho(t) <= fraction * rho(0) (default one half);
- functional memory: the axis value at which the spread of val_acc over sigma_w, after its peak,
  first falls inside the ROPE (spread < ``rope``). Before training every sigma_w is at chance, so
  the spread starts inside the ROPE; only a fall after the peak is forgetting.

Between two epochs the crossing is interpolated in the axis, log-linearly in the memory value
(exact for an exponential decay). A pipeline whose curve does
not fall that far within its budget is *censored* (its time is only known to exceed the budget).
Intervals: a bootstrap over seeds, the same seed draw at every sigma_w (seeds are paired);
censored draws count as +infinity, so an upper quantile that is censored is null.

Per axis, the agreement of the pipelines: the SD of log forgetting time over the uncensored
pipelines. On the right clock the pipelines forget at the same clock value (SD near 0); on a
wrong one they spread out. This is the interpretable companion of the collapse test.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr

from initmem import cube
from initmem.stats.curves import curve_array, functional_spread, radial_slope
from initmem.stats.resample import seed_bootstrap, take_seeds

DEFAULT_FRACTION = 0.5
DEFAULT_ROPE = 0.01


def memory_draws(ds: xr.Dataset, memory: str, n_boot: int, seed: int) -> np.ndarray:
    """Memory curves (P, 1 + n_boot, T): the full-data curve first, then seed-bootstrap curves."""
    rng = np.random.default_rng(seed)
    idx = np.concatenate([np.arange(ds.sizes[cube.SEED])[None],
                          seed_bootstrap(ds[cube.SEED].values, n_boot, rng)])  # (1 + B, S)
    if memory == "radial":
        kn = curve_array(ds, cube.KERNEL_NORM)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_kn = np.where(kn > 0, np.log(kn), np.nan)
        log_sigma = np.log(ds[cube.SIGMA].values.astype(float))
        return radial_slope(take_seeds(log_kn, idx, 2), log_sigma, sigma_axis=1, seed_axis=3)
    return functional_spread(take_seeds(curve_array(ds, cube.VAL_ACC), idx, 2), sigma_axis=1, seed_axis=3)


def crossing(curve: np.ndarray, axis: np.ndarray, memory: str, fraction: float, rope: float) -> np.ndarray:
    """Axis value of the first fall (..., T) -> (...); +inf when censored, NaN when undefined.

    ``axis`` broadcasts against ``curve`` (e.g. (P, 1, T) against (P, B, T)).
    """
    t = np.arange(curve.shape[-1])
    fin = np.isfinite(curve) & np.isfinite(axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if memory == "radial":
            first = np.argmax(fin, axis=-1)
            start = np.take_along_axis(curve, first[..., None], -1)[..., 0]
            thr = fraction * start
            after = t > first[..., None]
        else:
            thr = np.full(curve.shape[:-1], rope)
            peak = np.argmax(np.where(fin & (t >= 1), curve, -np.inf), axis=-1)
            after = t > peak[..., None]
    below = fin & after & (curve <= thr[..., None])
    hit = below.any(-1)
    k = np.argmax(below, axis=-1)
    km1 = np.maximum(k - 1, 0)
    ax = np.broadcast_to(axis, curve.shape)
    c1, c0 = (np.take_along_axis(curve, i[..., None], -1)[..., 0] for i in (k, km1))
    a1, a0 = (np.take_along_axis(ax, i[..., None], -1)[..., 0] for i in (k, km1))
    with np.errstate(invalid="ignore", divide="ignore"):
        # Log-linear between the two epochs when the values are positive (exact for an
        # exponential decay, whose crossing can fall well inside one epoch), linear otherwise.
        pos = (c1 > 0) & (thr > 0)
        lin = (c0 - thr) / (c0 - c1)
        log = (np.log(c0) - np.log(thr)) / (np.log(c0) - np.log(c1))
        w = np.where((c0 > thr) & (c0 > c1), np.where(pos, log, lin), 1.0)
    val = a0 + np.clip(np.nan_to_num(w, nan=1.0), 0.0, 1.0) * (a1 - a0)
    defined = fin.any(-1) & np.isfinite(thr)
    return np.where(hit, val, np.where(defined, np.inf, np.nan))


def _q(draws: np.ndarray, q: float) -> float:
    d = draws[~np.isnan(draws)]
    if not d.size:
        return math.nan
    v = float(np.quantile(d, q, method="inverted_cdf"))
    return v if math.isfinite(v) else math.nan


def censored_sd(logs: list[float], cens_logs: list[float]) -> float:
    """SD across pipelines of log forgetting time with right-censored pipelines kept (Tobit MLE).

    Dropping censored pipelines (the slow ones) shrinks the spread of a wrong clock; here each
    censored pipeline contributes P(log t > log budget). Scaled by sqrt(n / (n - 1)) so that it
    equals the sample SD without censoring. NaN with fewer than 2 uncensored pipelines.
    """
    x, c = np.asarray(logs, float), np.asarray(cens_logs, float)
    if x.size < 2:
        return math.nan
    n = x.size + c.size
    sd0 = float(np.std(x, ddof=0))
    if not c.size:
        return float(np.std(x, ddof=1))
    from scipy import optimize, stats

    def nll(th: np.ndarray) -> float:
        mu, s = th[0], math.exp(th[1])
        return -(stats.norm.logpdf(x, mu, s).sum() + stats.norm.logsf(c, mu, s).sum())

    start = np.array([float(np.mean(np.concatenate([x, c]))), math.log(max(sd0, 1e-3))])
    res = optimize.minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-6, "fatol": 1e-9,
                                                                       "maxiter": 2000})
    sd = math.exp(float(res.x[1]))
    return sd * math.sqrt(n / (n - 1)) if np.isfinite(sd) and sd < 1e3 else math.nan


def per_seed_times(ds: xr.Dataset, memory: str, axis: np.ndarray, *, fraction: float = DEFAULT_FRACTION,
                   rope: float = DEFAULT_ROPE) -> tuple[np.ndarray, np.ndarray]:
    """Each seed's own forgetting time on ``axis`` (P, T): (times (P, S): +inf censored, NaN no
    curve; budget (P,): the largest axis value with data). The exponent model's measurements."""
    from initmem.stats.memsource import Source

    curves = Source.from_cube(ds, memory).per_seed_curves()  # (P, S, T)
    ax = np.asarray(axis, float)
    t = crossing(curves, ax[:, None, :], memory, fraction, rope)
    t = np.where(np.isfinite(curves).any(-1), t, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        budget = np.nanmax(np.where(np.isfinite(curves).any(1), ax, np.nan), axis=-1)
    return t, budget


def forgetting_times(ds: xr.Dataset, *, memory: str = "radial", fraction: float = DEFAULT_FRACTION,
                     rope: float = DEFAULT_ROPE, n_boot: int = 200, seed: int = 0,
                     axes: dict[str, np.ndarray]) -> dict[str, dict]:
    """Per axis: forgetting times per pipeline with intervals, censoring and their agreement.

    ``axes`` maps an axis name to its values per (pipeline, epoch), e.g. the seed-mean clocks.
    """
    names = [str(p) for p in ds[cube.PIPELINE].values.tolist()]
    curves = memory_draws(ds, memory, n_boot, seed)  # (P, 1 + B, T)
    out: dict[str, dict] = {}
    for a, vals in axes.items():
        t = crossing(curves, np.asarray(vals, float)[:, None, :], memory, fraction, rope)  # (P, 1 + B)
        per, logs, n_cens = {}, [], 0
        for i, name in enumerate(names):
            est, draws = t[i, 0], t[i, 1:]
            if np.isnan(est) or not np.nanmax(np.asarray(vals, float)[i], initial=-np.inf) > 0:
                continue  # no curve, or an axis that never moves for this pipeline (T_l2 without L2)
            censored = bool(np.isinf(est))
            n_cens += censored
            if not censored and est > 0:
                logs.append(math.log(est))
            med = _q(draws, 0.5) if draws.size else (math.nan if censored else float(est))
            per[name] = {"median": med, "q05": _q(draws, 0.05), "q95": _q(draws, 0.95), "censored": censored,
                         "estimate": math.nan if censored else float(est),
                         "budget": float(np.nanmax(np.asarray(vals, float)[i]))}
        cens_logs = [math.log(v["budget"]) for v in per.values() if v["censored"] and v["budget"] > 0]
        entry = {"spread": censored_sd(logs, cens_logs),
                 "spread_uncensored": float(np.std(logs, ddof=1)) if len(logs) >= 2 else math.nan,
                 "spread_method": "ML SD of log forgetting time, censored pipelines right-censored at their "
                                  "budget (normal on the log scale), times sqrt(n / (n - 1))",
                 "n_pipelines": len(per), "n_censored": n_cens, "per_pipeline": per}
        entry.update({"fraction": fraction} if memory == "radial" else {"rope": rope})
        out[a] = entry
    return out


__all__ = ["DEFAULT_FRACTION", "DEFAULT_ROPE", "censored_sd", "crossing", "forgetting_times", "memory_draws",
           "per_seed_times"]
