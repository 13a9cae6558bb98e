"""Does a forgetting clock collapse the memory curves better than epochs? (METHODS section 4)

Leave-one-pipeline-out (LOPO) master-curve prediction on every time axis
(epoch, step, T_eta, T_sgd, T_l2, T_adapt, T_fit):

1. x = log T_m(p, t) for every pipeline p and epoch t >= 1 where T_m > 0 (epoch 0 and axes that
   are 0 for a pipeline, such as T_adapt for SGD or T_l2 without L2, are left out: the axis is
   scored only where it is defined, and the output names the scored pipelines).
2. For each held-out pipeline, one master curve is fitted to the other pipelines' memory curves
   with the same monotone smoother on every axis: weighted isotonic regression of bin means on a
   fixed grid of N_BINS bins of the axis (direction from the sign of the training covariance),
   then a running mean over +-h bins (a positive box kernel keeps the sequence monotone), linear
   interpolation between the bins' mean-x knots and constant beyond the ends. h is tuned by an
   inner leave-one-pipeline-out on the training pipelines. No per-pipeline shifts or scales.
3. T_fit: log T = log(T_sgd + a T_l2 + c T_adapt); (a, c) is chosen from a grid together with h
   by the same inner LOPO, inside each outer training fold, so it cannot win by construction.
4. The held-out squared error at each point is divided by the seed-noise variance of that point
   (variance of the seed mean, smoothed over neighbouring epochs) plus the master curve's own
   predictive variance; loco_error is its mean over pipelines (about 1 = collapsed within noise).
   floor_ratio is the raw mean squared error over the mean seed-noise variance (absolute quality).
5. D_m = mean over pipelines of log(error on epochs / error on m); D > 0 favours m (the raw
   difference of METHODS 4.3 is reported as D_raw). p-value: exact sign-flip permutation over
   pipelines (all 2^C sign patterns; the smallest possible two-sided value is 2^(1-C)).
   Interval: cluster bootstrap over pipelines and seeds, rerunning the whole nested procedure in
   every replicate (see ``collapse_test`` for the two resampling schemes).
6. Identifiability first: a forgetting clock equal to epochs up to one global constant (eta
   proportional to b with one lambda) is not identifiable; if all are, `not_identifiable`.

Vectorised over axes, folds, bins and bandwidths with numpy; one Python iteration per bootstrap
replicate, none per point.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from initmem import cube
from initmem.errors import UserError
from initmem.stats.curves import curve_array, has_curve, seed_mean_clocks
from initmem.stats.resample import seed_bootstrap

SCHEMA = "initmem.collapse/1"
AXES = ("epoch", "step", "T_eta", "T_sgd", "T_l2", "T_adapt", "T_fit")
CLOCK_AXES = AXES[1:]
FORGETTING_CLOCKS = ("T_eta", "T_sgd", "T_l2", "T_adapt", "T_fit")  # what the verdict is about
FIXED_AXES = AXES[:-1]
MEMORIES = ("radial", "functional")
ALPHA = 0.05
N_BINS = 24
BANDWIDTHS = (0, 1, 3)  # half-widths of the running mean, in bins
FIT_MULTIPLIERS = (0.0, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)  # times a design-based scale
INNER_POINTS = 50  # epochs scored per inner fold (tuning only)
VAR_WINDOW = 5  # epochs averaged when smoothing the seed-noise variance
IDENT_TOL = 0.05  # SD (log units) of log T_m - log epoch below which m is epochs in disguise
MIN_UNITS = 3
EXACT_MAX = 20  # exact sign-flip enumeration up to 2^20 patterns


# Memory values per pipeline, seed and epoch -------------------------------------------------

@dataclass
class _Source:
    """The per-seed data a memory curve is computed from (kept so bootstraps can resample seeds)."""

    kind: str
    per_seed: np.ndarray | None = None  # radial: per-seed slopes (P, S, T)
    acc: np.ndarray | None = None  # functional: val_acc (P, I, S, T)

    def values(self, p: int) -> np.ndarray:
        """Pipeline p's data with seeds first: (S, ...), for finding the observed seeds."""
        if self.kind == "radial":
            return self.per_seed[p]
        return np.moveaxis(self.acc[p], 1, 0).reshape(self.acc.shape[2], -1)

    def stats(self, p_idx: np.ndarray, s_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Seed-mean memory (C, T) and the variance of that mean (C, T) for drawn pipelines/seeds."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            if self.kind == "radial":
                sel = self.per_seed[p_idx[:, None], s_idx]  # (C, S, T)
                n = np.isfinite(sel).sum(1)
                y = np.nanmean(sel, axis=1)
                var = np.nanvar(sel, axis=1, ddof=1) / n
                return y, np.where(n >= 2, var, np.nan)
            sel = self.acc[p_idx[:, None, None], np.arange(self.acc.shape[1])[None, :, None], s_idx[:, None, :]]
            fin = np.isfinite(sel)
            cnt = fin.sum(2)  # (C, I, T)
            tot = np.nansum(sel, axis=2)
            mean = tot / cnt
            y = np.nanmax(mean, axis=1) - np.nanmin(mean, axis=1)
            # Jackknife over seeds of the spread of the seed means.
            loo = (tot[:, :, None, :] - np.where(fin, sel, 0.0)) / (cnt[:, :, None, :] - fin)
            th = np.nanmax(loo, axis=1) - np.nanmin(loo, axis=1)  # (C, S, T)
            th = np.where(fin.any(1), th, np.nan)  # only seeds that have data
            n = np.isfinite(th).sum(1)
            var = (n - 1) / n * np.nansum((th - np.nanmean(th, axis=1, keepdims=True)) ** 2, axis=1)
            return y, np.where(n >= 2, var, np.nan)


def _per_seed_slopes(log_kn: np.ndarray, log_sigma: np.ndarray) -> np.ndarray:
    """Slope of log kernel_norm on log sigma_w for every (pipeline, seed, epoch)."""
    y = np.moveaxis(log_kn, 1, -1)  # (P, S, T, I)
    m = np.isfinite(y)
    n = m.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xbar = np.where(m, log_sigma, 0).sum(-1, keepdims=True) / n[..., None]
        ybar = np.where(m, y, 0).sum(-1, keepdims=True) / n[..., None]
        dx = np.where(m, log_sigma - xbar, 0.0)
        sxx = (dx**2).sum(-1)
        slope = (dx * np.where(m, y - ybar, 0.0)).sum(-1) / sxx
    return np.where((n >= 2) & (sxx > 0), slope, np.nan)


def _smooth_var(v: np.ndarray) -> np.ndarray:
    """Moving average of the seed-noise variance over neighbouring epochs (NaN-aware).

    With a handful of seeds a single epoch's variance is a chi-square with few degrees of freedom;
    dividing by it would make the normalised errors heavy-tailed.
    """
    fin = np.isfinite(v)
    val = np.where(fin, v, 0.0)
    k = np.ones(VAR_WINDOW)
    num = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), -1, val)
    den = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), -1, fin.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(fin, out, np.nan)


# The batched monotone smoother -----------------------------------------------------------------

def _isotonic_bins(n: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """Weighted increasing isotonic regression of bin means, batched over leading axes.

    Uses the max-min formula f(i) = max_{j<=i} min_{k>=i} mean(j..k), which vectorises (PAVA is
    sequential); G is small so O(G^2) per problem is cheap. Empty bins get some value but carry
    no weight later.
    """
    g = n.shape[-1]
    zero = np.zeros((*n.shape[:-1], 1))
    cn = np.concatenate([zero, np.cumsum(n, -1)], -1)
    cy = np.concatenate([zero, np.cumsum(sy, -1)], -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (cy[..., None, 1:] - cy[..., :-1, None]) / (cn[..., None, 1:] - cn[..., :-1, None])  # [j, k]
    # s[j, i] = min_{k>=i} m[j, k]. Only j <= i is used, where every k >= i >= j is a real interval
    # (entries below the diagonal of m are meaningless and never reach the result).
    s = np.fmin.accumulate(m[..., ::-1], axis=-1)[..., ::-1]
    s[..., ~np.triu(np.ones((g, g), bool))] = np.nan
    return np.fmax.reduce(s, axis=-2)


@dataclass
class _Binned:
    """Per (axis candidate, pipeline, bin) sums on a fixed grid of each candidate axis."""

    lo: np.ndarray  # (K,)
    width: np.ndarray  # (K,)
    n: np.ndarray  # (K, P, G)
    sx: np.ndarray
    sy: np.ndarray
    sxy: np.ndarray
    sv: np.ndarray
    xmin: np.ndarray  # (K, P)
    xmax: np.ndarray


def _bin(x: np.ndarray, y: np.ndarray, v: np.ndarray, lo: np.ndarray, width: np.ndarray) -> _Binned:
    """x (K, P, T) log time on each candidate axis; y, v (P, T). NaN x = not scored."""
    k_, p_, t_ = x.shape
    ok = np.isfinite(x) & np.isfinite(y)[None] & np.isfinite(v)[None]
    g = np.clip(np.floor((x - lo[:, None, None]) / width[:, None, None]), 0, N_BINS - 1)
    g = np.where(ok, g, 0).astype(np.int64)
    flat = ((np.arange(k_)[:, None, None] * p_ + np.arange(p_)[None, :, None]) * N_BINS + g).ravel()
    size = k_ * p_ * N_BINS
    w = ok.ravel().astype(float)
    yy = np.broadcast_to(np.nan_to_num(y), x.shape).ravel() * w
    vv = np.broadcast_to(np.nan_to_num(v), x.shape).ravel() * w
    xx = np.nan_to_num(x).ravel() * w

    def bc(weights: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=size).reshape(k_, p_, N_BINS)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        xmin = np.nanmin(np.where(ok, x, np.nan), axis=-1)
        xmax = np.nanmax(np.where(ok, x, np.nan), axis=-1)
    return _Binned(lo, width, bc(w), bc(xx), bc(yy), bc(xx * yy), bc(vv), xmin, xmax)


def _moving_sum(a: np.ndarray, h: int) -> np.ndarray:
    """Sum over the window [g - h, g + h] along the last axis (truncated at the ends)."""
    if h == 0:
        return a
    g = a.shape[-1]
    c = np.concatenate([np.zeros((*a.shape[:-1], 1)), np.cumsum(a, -1)], -1)
    hi = np.minimum(np.arange(g) + h + 1, g)
    lo = np.maximum(np.arange(g) - h, 0)
    return c[..., hi] - c[..., lo]


@dataclass
class _Curves:
    """Master curves of every (axis candidate, fold): knots and smoothed values per bandwidth."""

    has: np.ndarray  # (K, F, G) bin has training data
    xk: np.ndarray  # (K, F, G) knot = mean x of the bin's training points
    f: np.ndarray  # (K, F, H, G) smoothed monotone values at the knots
    pvar: np.ndarray  # (K, F, H, G) their variance from the seed noise of the points used
    prev: np.ndarray  # (K, F, G) last bin <= g with data (-1 if none)
    next: np.ndarray  # (K, F, G) first bin >= g with data (G if none)


def _fit_curves(b: _Binned, train: np.ndarray) -> _Curves:
    """Isotonic fit of each fold's training bins, then a running mean over +-h bins.

    ``train`` (F, P) selects the training pipelines of each fold. A running mean with positive
    weights is a log-concave (box) kernel, so the smoothed sequence stays monotone.
    """
    tw = train.astype(float)
    n = np.einsum("fp,kpg->kfg", tw, b.n)
    sx = np.einsum("fp,kpg->kfg", tw, b.sx)
    sy = np.einsum("fp,kpg->kfg", tw, b.sy)
    sxy = np.einsum("fp,kpg->kfg", tw, b.sxy)
    sv = np.einsum("fp,kpg->kfg", tw, b.sv)
    nt = n.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy.sum(-1, keepdims=True) - sx.sum(-1, keepdims=True) * sy.sum(-1, keepdims=True) / nt
    sign = np.where(cov < 0, -1.0, 1.0)
    f = sign * _isotonic_bins(n, sign * sy)  # (K, F, G)
    has = n > 0
    fz = np.where(has, f, 0.0)
    fs, pv = [], []
    for h in BANDWIDTHS:
        num = _moving_sum(n * fz, h)
        den = _moving_sum(n, h)
        with np.errstate(invalid="ignore", divide="ignore"):
            fs.append(num / den)
            pv.append(_moving_sum(sv, h) / den**2)
    g = np.arange(N_BINS)
    prev = np.maximum.accumulate(np.where(has, g, -1), axis=-1)
    nxt = np.flip(np.minimum.accumulate(np.flip(np.where(has, g, N_BINS), -1), axis=-1), -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xk = sx / n
    return _Curves(has, xk, np.stack(fs, 2), np.stack(pv, 2), prev, nxt)


def _interp(cv: _Curves, f_idx: np.ndarray, x: np.ndarray, lo: np.ndarray, width: np.ndarray):
    """Predict at x (K, Q, T) from the curves of folds f_idx (Q,): linear between neighbouring
    knots, constant beyond the first and last knot. Returns values and variances (K, Q, T, H).

    Gathers use flat row indices (one fancy index per table) rather than take_along_axis.
    """
    n_k, n_q, _ = x.shape
    g = N_BINS
    g_x = np.clip(np.floor((np.nan_to_num(x) - lo[:, None, None]) / width[:, None, None]), 0, g - 1)
    g_x = g_x.astype(np.int64)
    base = ((np.arange(n_k)[:, None] * n_q + np.arange(n_q)[None, :]) * g)[:, :, None]  # (K, Q, 1)

    def table(a: np.ndarray) -> np.ndarray:
        return a[:, f_idx].reshape(-1)

    has, xk, prev, nxt = table(cv.has), table(cv.xk), table(cv.prev), table(cv.next)

    def at(t: np.ndarray, i: np.ndarray) -> np.ndarray:
        return t[base + np.clip(i, 0, g - 1)]

    cur = at(has, g_x)
    right_of = x >= at(xk, g_x)
    left = np.where(cur, np.where(right_of, g_x, at(prev, g_x - 1)), at(prev, g_x))
    left = np.where(cur & ~right_of & (g_x == 0), -1, left)
    right = np.where(cur, np.where(right_of, at(nxt, g_x + 1), g_x), at(nxt, g_x))
    right = np.where(cur & right_of & (g_x == g - 1), g, right)
    no_l, no_r = left < 0, right >= g
    li = np.clip(np.where(no_l, right, left), 0, g - 1)
    ri = np.clip(np.where(no_r, left, right), 0, g - 1)
    xl, xr = at(xk, li), at(xk, ri)
    with np.errstate(invalid="ignore", divide="ignore"):
        fr = np.where(ri > li, (x - xl) / (xr - xl), 0.0)
    fr = np.clip(np.nan_to_num(fr), 0.0, 1.0)[..., None]
    n_h = cv.f.shape[2]
    rows_f = np.moveaxis(cv.f[:, f_idx], 2, -1).reshape(-1, n_h)  # (K*Q*G, H)
    rows_v = np.moveaxis(cv.pvar[:, f_idx], 2, -1).reshape(-1, n_h)
    il, ir = base + li, base + ri
    val = rows_f[il] * (1 - fr) + rows_f[ir] * fr
    var = rows_v[il] * (1 - fr) ** 2 + rows_v[ir] * fr**2
    bad = (~np.isfinite(x) | (no_l & no_r))[..., None]
    return np.where(bad, np.nan, val), np.where(bad, np.nan, var)


# One complete LOPO analysis ---------------------------------------------------------------------

@dataclass
class _Result:
    err: dict[str, np.ndarray]  # axis -> (C,) normalised held-out error (NaN = not scored)
    mse: dict[str, np.ndarray]
    noise: dict[str, np.ndarray]  # mean seed-noise variance of the scored points
    overlap: dict[str, np.ndarray]
    npts: dict[str, np.ndarray]
    bandwidth: dict[str, np.ndarray] = field(default_factory=dict)
    fit_choice: np.ndarray | None = None  # (C,) index into the T_fit candidates


def _folds(groups: np.ndarray):
    """Outer and inner folds over the distinct groups (copies of one pipeline stay together)."""
    units = np.unique(groups)
    train, pairs = [], []  # pairs: (fold, pipeline, outer unit index, is_outer)
    for ui, u in enumerate(units):
        train.append(groups != u)
        f = len(train) - 1
        pairs += [(f, p, ui, True) for p in np.flatnonzero(groups == u)]
        for u2 in units:
            if u2 == u:
                continue
            train.append((groups != u) & (groups != u2))
            f = len(train) - 1
            pairs += [(f, p, ui, False) for p in np.flatnonzero(groups == u2)]
    return units, np.array(train), np.array(pairs, dtype=np.int64).reshape(-1, 4)


def _analyse(x_fixed: np.ndarray, x_fit: np.ndarray, y: np.ndarray, v: np.ndarray, groups: np.ndarray,
             lo: np.ndarray, width: np.ndarray) -> _Result:
    """Nested LOPO on every axis. x_fixed (A, C, T) for FIXED_AXES, x_fit (Kf, C, T) candidates."""
    x = np.concatenate([x_fixed, x_fit], 0)
    n_fixed = x_fixed.shape[0]
    binned = _bin(x, y, v, lo, width)
    units, train, pairs = _folds(groups)
    cv = _fit_curves(binned, train)
    f_idx, p_idx, u_idx, is_outer = pairs.T
    n_k, n_q, n_h, n_t = x.shape[0], len(pairs), len(BANDWIDTHS), x.shape[-1]
    e = np.full((n_k, n_q, n_h), np.nan)
    raw, noise, npts = e.copy(), e.copy(), np.zeros((n_k, n_q, n_h), int)
    # Inner folds only rank bandwidths and T_fit weights: they are scored on at most
    # INNER_POINTS evenly spaced epochs; outer (reported) scores use every epoch.
    step = max(1, math.ceil(n_t / INNER_POINTS))
    for rows, t_sel in ((np.flatnonzero(~is_outer.astype(bool)), np.arange(0, n_t, step)),
                        (np.flatnonzero(is_outer.astype(bool)), np.arange(n_t))):
        if rows.size == 0:
            continue
        xq = x[:, p_idx[rows]][:, :, t_sel]  # (K, R, T')
        pred, pv = _interp(cv, f_idx[rows], xq, lo, width)  # (K, R, T', H)
        yq = y[p_idx[rows]][:, t_sel][None, :, :, None]
        vq = v[p_idx[rows]][:, t_sel][None, :, :, None]
        sq = (yq - pred) ** 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            e[:, rows] = np.nanmean(sq / (vq + pv), axis=-2)
            raw[:, rows] = np.nanmean(sq, axis=-2)
            noise[:, rows] = np.nanmean(np.where(np.isfinite(sq), vq, np.nan), axis=-2)
        npts[:, rows] = np.isfinite(sq).sum(-2)
    # Inner-LOPO error per outer unit: mean over inner pairs.
    n_units = len(units)
    inner = ~is_outer.astype(bool)
    ind = np.zeros((n_units, len(pairs)))
    ind[u_idx[inner], np.flatnonzero(inner)] = 1.0
    fin = np.isfinite(e)
    tot = np.einsum("uq,kqh->kuh", ind, np.where(fin, e, 0.0))
    cnt = np.einsum("uq,kqh->kuh", ind, fin.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        inner_err = np.where(cnt > 0, tot / cnt, np.inf)  # (K, U, H)

    outer_rows = np.flatnonzero(is_outer.astype(bool))
    out_p, out_u = p_idx[outer_rows], u_idx[outer_rows]
    c_total = len(groups)
    res = _Result({}, {}, {}, {}, {})
    tmin = np.where(train[None, :, :], binned.xmin[:, None, :], np.inf).min(-1)  # (K, F)
    tmax = np.where(train[None, :, :], binned.xmax[:, None, :], -np.inf).max(-1)

    def collect(name: str, k_of_row: np.ndarray, h_of_row: np.ndarray) -> None:
        err = np.full(c_total, np.nan)
        mse, noi, ov, npt = err.copy(), err.copy(), err.copy(), np.zeros(c_total, int)
        for r, k, h in zip(outer_rows, k_of_row, h_of_row, strict=True):
            p = p_idx[r]
            if not np.isfinite(inner_err[k, u_idx[r], h]) or npts[k, r, h] == 0:
                continue
            err[p], mse[p], noi[p], npt[p] = e[k, r, h], raw[k, r, h], noise[k, r, h], npts[k, r, h]
            xs = x[k, p][np.isfinite(x[k, p]) & np.isfinite(y[p]) & np.isfinite(v[p])]
            f = f_idx[r]
            ov[p] = float(np.mean((xs >= tmin[k, f] - 1e-12) & (xs <= tmax[k, f] + 1e-12))) if xs.size else np.nan
        res.err[name], res.mse[name], res.noise[name], res.overlap[name], res.npts[name] = err, mse, noi, ov, npt

    for a, name in enumerate(FIXED_AXES):
        h_best = np.argmin(inner_err[a], axis=-1)  # (U,)
        collect(name, np.full(len(outer_rows), a), h_best[out_u])
        res.bandwidth[name] = np.asarray(BANDWIDTHS)[h_best]
    fit_err = inner_err[n_fixed:]  # (Kf, U, H)
    flat = fit_err.transpose(1, 0, 2).reshape(n_units, -1)
    best = np.argmin(flat, axis=-1)
    k_best, h_best = np.unravel_index(best, fit_err[:, 0, :].shape)
    collect("T_fit", n_fixed + k_best[out_u], h_best[out_u])
    res.bandwidth["T_fit"] = np.asarray(BANDWIDTHS)[h_best]
    res.fit_choice = np.full(c_total, -1)
    res.fit_choice[out_p] = k_best[out_u]
    return res


# Inference ------------------------------------------------------------------------------------

def sign_flip_p(d: np.ndarray, rng: np.random.Generator | None = None) -> float:
    """Two-sided sign-flip permutation p-value of mean(d) = 0 (exact up to 2^20 patterns)."""
    d = np.asarray(d, float)
    d = d[np.isfinite(d)]
    c = d.size
    if c == 0:
        return math.nan
    obs = abs(d.mean())
    if c <= EXACT_MAX:
        signs = 1 - 2 * ((np.arange(2**c)[:, None] >> np.arange(c)[None, :]) & 1)
    else:
        rng = rng or np.random.default_rng(0)
        signs = rng.choice([-1, 1], size=(200_000, c))
    stat = np.abs(signs @ d) / c
    return float(np.mean(stat >= obs - 1e-12 * max(1.0, obs)))


def _separation(x: np.ndarray, x_ref: np.ndarray) -> float:
    """SD over the design of log T_m - log T_ref: 0 when m is ref up to one global constant."""
    d = x - x_ref
    d = d[np.isfinite(d)]
    return float(d.std()) if d.size > 1 else 0.0


def _identifiable(x: np.ndarray, x_epoch: np.ndarray) -> bool:
    """An axis is identifiable when log T_m - log epoch is not (nearly) one constant over the design.

    Tolerance IDENT_TOL in log units: a 5% wobble (e.g. steps per epoch rounded up) is not
    something a master-curve fit can resolve.
    """
    units = np.isfinite(x).any(-1).sum()
    return bool(units >= 2 and _separation(x, x_epoch) > IDENT_TOL)


# The public function ----------------------------------------------------------------------------

def collapse_test(ds: xr.Dataset, *, memory: str = "radial", n_boot: int = 200, seed: int = 0,
                  refit_pipelines: bool = False) -> dict | None:
    """The collapse test; the collapse.json dict of SPEC section 3, or None without curves.

    Bootstrap (``n_boot`` replicates): every replicate resamples seeds within every pipeline
    (the same draw at every sigma_w), reruns the whole nested LOPO, and then resamples pipelines
    with replacement to form D* from the rerun per-pipeline log error ratios. With
    ``refit_pipelines=True`` the drawn pipelines themselves are refitted instead (copies of one
    pipeline held out together); with few pipelines that leaves ~63% of them distinct per
    replicate, a harder problem than the one analysed, and the interval is biased towards 0.
    """
    if memory not in MEMORIES:
        raise UserError(f"memory must be one of {', '.join(MEMORIES)}, not {memory!r}")
    if n_boot < 0:
        raise UserError("n_boot must be >= 0")
    var = "kernel_norm" if memory == "radial" else "val_acc"
    if cube.EPOCH not in ds.dims or not has_curve(ds, var):
        return None
    notes: list[str] = []
    names = [str(p) for p in ds[cube.PIPELINE].values.tolist()]
    rng = np.random.default_rng(seed)

    if memory == "radial":
        kn = curve_array(ds, var)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_kn = np.where(kn > 0, np.log(kn), np.nan)
        src = _Source("radial", per_seed=_per_seed_slopes(log_kn, np.log(ds[cube.SIGMA].values.astype(float))))
    else:
        src = _Source("functional", acc=curve_array(ds, var))

    clocks = seed_mean_clocks(ds)
    epoch = clocks["epoch_axis"]
    missing_axes = [a for a in FIXED_AXES[1:] if not np.isfinite(clocks[a]).any()]
    if missing_axes:
        notes.append(f"the cube has no {', '.join(missing_axes)} curve(s): those axes are not scored")

    def logx(t: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where((t > 0) & np.isfinite(t) & (epoch >= 1), np.log(t), np.nan)

    x_fixed = np.stack([logx(epoch if a == "epoch" else clocks[a]) for a in FIXED_AXES])
    t_sgd = clocks["T_sgd"]
    t_l2 = np.nan_to_num(clocks["T_l2"])
    t_ad = np.nan_to_num(clocks["T_adapt"])
    s_a, s_c = _scale(t_sgd, t_l2), _scale(t_sgd, t_ad)
    cands = [(a * s_a, c * s_c) for a in FIT_MULTIPLIERS for c in FIT_MULTIPLIERS
             if (a == 0 or s_a > 0) and (c == 0 or s_c > 0)]
    x_fit = np.stack([logx(t_sgd + a * t_l2 + c * t_ad) for a, c in cands])
    x_all = np.concatenate([x_fixed, x_fit])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanmin(x_all, axis=(1, 2))
        hi = np.nanmax(x_all, axis=(1, 2))
    lo = np.where(np.isfinite(lo), lo, 0.0)
    width = np.where(np.isfinite(hi) & (hi > lo), (hi - lo) / N_BINS, 1.0) * (1 + 1e-9)

    # Identifiability of every clock against epochs, and collinear clock pairs.
    x_by_axis = {a: x_fixed[i] for i, a in enumerate(FIXED_AXES)}
    identifiable = {a: _identifiable(x_by_axis[a], x_by_axis["epoch"]) for a in CLOCK_AXES if a != "T_fit"}
    identifiable["T_fit"] = any(_identifiable(xf, x_by_axis["epoch"]) for xf in x_fit)
    separation = {a: _separation(x_by_axis[a], x_by_axis["epoch"]) for a in CLOCK_AXES if a != "T_fit"}
    separation["T_fit"] = max(_separation(xf, x_by_axis["epoch"]) for xf in x_fit)
    collinear = [[a, b] for a, b in itertools.combinations(FIXED_AXES, 2)
                 if np.isfinite(x_by_axis[a]).any() and np.isfinite(x_by_axis[b]).any()
                 and not _identifiable(x_by_axis[b], x_by_axis[a])
                 and np.array_equal(np.isfinite(x_by_axis[a]), np.isfinite(x_by_axis[b]))]

    c_pipes = len(names)
    s_all = np.arange(ds.sizes[cube.SEED])
    p_all = np.arange(c_pipes)
    y, v = src.stats(p_all, np.broadcast_to(s_all, (c_pipes, s_all.size)))
    if not np.isfinite(v).any():
        notes.append("fewer than 2 seeds with curves: no seed-noise estimate, the collapse test cannot score")
    floor = _v_floor(v)
    v_s = np.maximum(_smooth_var(v), floor)
    groups = p_all.copy()
    base = _analyse(x_fixed, x_fit, y, v_s, groups, lo, width)
    # Seeds each pipeline actually has: only those are drawn; a draw shorter than the seed axis is
    # padded with a seed the pipeline lacks (all NaN, ignored by the means).
    observed = [np.flatnonzero(np.isfinite(src.values(p)).any(axis=-1)) for p in p_all]
    pad = [np.setdiff1d(s_all, o)[:1] for o in observed]

    def draw_seeds(pipes: np.ndarray) -> np.ndarray:
        """One paired seed draw per drawn pipeline (positions on the cube's seed axis)."""
        rows = []
        for p in pipes:
            obs = observed[p] if observed[p].size else s_all
            drawn = obs[seed_bootstrap(obs, 1, rng)[0]]
            rows.append(np.concatenate([drawn, np.repeat(pad[p], s_all.size - drawn.size)]) if
                        drawn.size < s_all.size else drawn)
        return np.stack(rows)

    # Cluster bootstrap: pipelines, then seeds within each pipeline (same draw at every sigma_w).
    boot_d = {a: [] for a in CLOCK_AXES}
    for _ in range(n_boot):
        pb = rng.integers(0, c_pipes, c_pipes)
        if refit_pipelines:
            if np.unique(pb).size < MIN_UNITS:
                continue
            yb, vb = src.stats(pb, draw_seeds(pb))
            r = _analyse(x_fixed[:, pb], x_fit[:, pb], yb, np.maximum(_smooth_var(vb), floor), pb, lo, width)
            for a in CLOCK_AXES:
                boot_d[a].append(_d(r.err["epoch"], r.err[a])[0])
            continue
        yb, vb = src.stats(p_all, draw_seeds(p_all))
        r = _analyse(x_fixed, x_fit, yb, np.maximum(_smooth_var(vb), floor), p_all, lo, width)
        for a in CLOCK_AXES:
            ratio = _log_ratio(r.err["epoch"], r.err[a])[pb]
            boot_d[a].append(float(np.mean(ratio[np.isfinite(ratio)])) if np.isfinite(ratio).any() else math.nan)

    defined = {a: int(np.isfinite(x_by_axis[a]).any(-1).sum()) for a in FIXED_AXES}
    defined["T_fit"] = int(np.isfinite(x_fit).any(-1).any(0).sum())
    out = _assemble(names, memory, base, boot_d, identifiable, collinear, cands, notes, n_boot, defined)
    out["separation"] = separation
    out["method"]["bootstrap"] = (
        "pipelines refitted (copies held out together), seeds resampled within each" if refit_pipelines else
        "seeds resampled within every pipeline and the nested LOPO rerun; pipelines resampled over the "
        "rerun per-pipeline log error ratios")
    return out


def _scale(t_sgd: np.ndarray, t_other: np.ndarray) -> float:
    """A design-based unit for T_fit's weights: median final T_sgd over median final T_other."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fs = np.nanmax(t_sgd, axis=-1)
        fo = np.nanmax(t_other, axis=-1)
    fs, fo = fs[np.isfinite(fs) & (fs > 0)], fo[np.isfinite(fo) & (fo > 0)]
    if not fs.size or not fo.size:
        return 0.0
    return float(np.median(fs) / np.median(fo))


def _v_floor(v: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(v)
    return float(max(1e-12, 1e-3 * med)) if np.isfinite(med) else 1e-12


def _log_ratio(e_epoch: np.ndarray, e_axis: np.ndarray) -> np.ndarray:
    """Per pipeline log(e_epoch / e_axis), NaN where either axis is not scored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(np.maximum(e_epoch, 1e-12)) - np.log(np.maximum(e_axis, 1e-12))


def _d(e_epoch: np.ndarray, e_axis: np.ndarray) -> tuple[float, np.ndarray]:
    """Per-pipeline log error ratios log(e_epoch / e_axis) over pipelines scored on both, and their mean.

    Normalised errors span orders of magnitude (1 when collapsed within noise, 10^4 when the axis
    is wrong and the seed noise is small), so differences of raw errors are dominated by the worst
    pipeline; the log ratio weighs every pipeline's evidence alike. D > 0 favours the axis.
    """
    both = np.isfinite(e_epoch) & np.isfinite(e_axis)
    diff = np.log(np.maximum(e_epoch[both], 1e-12)) - np.log(np.maximum(e_axis[both], 1e-12))
    return (float(diff.mean()) if diff.size else math.nan), diff


def _d_raw(e_epoch: np.ndarray, e_axis: np.ndarray) -> float:
    both = np.isfinite(e_epoch) & np.isfinite(e_axis)
    return float(np.mean(e_epoch[both] - e_axis[both])) if both.any() else math.nan


def _assemble(names, memory, base: _Result, boot_d, identifiable, collinear, cands, notes, n_boot,
              defined: dict[str, int]) -> dict:
    c_pipes = len(names)
    axes: dict[str, dict] = {}
    for a in AXES:
        err = base.err[a]
        scored = np.isfinite(err)
        entry = {
            "loco_error": _f(np.mean(err[scored])) if scored.any() else None,
            "floor_ratio": _f(np.mean(base.mse[a][scored]) / np.mean(base.noise[a][scored])) if scored.any() else None,
            "overlap": _f(np.nanmean(base.overlap[a][scored])) if scored.any() else None,
            "scored_pipelines": [names[i] for i in np.flatnonzero(scored)],
            "n_points": int(base.npts[a][scored].sum()),
            "per_pipeline": {names[i]: _f(err[i]) for i in np.flatnonzero(scored)},
        }
        if 0 < scored.sum() < c_pipes:
            entry["note"] = (f"scored only where defined (T > 0 after epoch 0): {int(scored.sum())} of "
                             f"{c_pipes} pipelines")
        if scored.sum() < MIN_UNITS:
            entry["note"] = (f"defined (T > 0 after epoch 0) for {defined[a]} of {c_pipes} pipeline(s): a "
                             f"leave-one-pipeline-out test needs >= {MIN_UNITS}; not scored")
        axes[a] = entry
    if axes["epoch"]["n_points"] == 0:
        notes.append("no scorable epoch >= 1 with memory values: nothing to compare")

    vs_epoch: dict[str, dict] = {}
    for a in CLOCK_AXES:
        d, diff = _d(base.err["epoch"], base.err[a])
        n_units = int(diff.size)
        draws = np.asarray([b for b in boot_d[a] if np.isfinite(b)])
        q05, q95 = (np.quantile(draws, [0.05, 0.95]).tolist() if draws.size >= 10 else [math.nan, math.nan])
        ok = n_units >= MIN_UNITS
        vs_epoch[a] = {
            "D": _f(d) if ok else None,
            "D_raw": _f(_d_raw(base.err["epoch"], base.err[a])) if ok else None,
            "q05": _f(q05) if ok else None,
            "q95": _f(q95) if ok else None,
            "p_value": _f(sign_flip_p(diff)) if ok else None,
            "n_pipelines": n_units,
            "min_p_value": 2.0 ** (1 - n_units) if n_units else None,
            "n_boot": int(draws.size),
        }
    # The verdict is about the forgetting clocks; step is reported but, like epochs, is a count.
    testable = [a for a in FORGETTING_CLOCKS if identifiable[a] and vs_epoch[a]["p_value"] is not None]
    powered = [a for a in testable if vs_epoch[a]["min_p_value"] < ALPHA]

    def sig(a: str, sign: int) -> bool:
        r = vs_epoch[a]
        if r["p_value"] is None or not r["p_value"] < ALPHA or r["q05"] is None:
            return False
        return r["q05"] > 0 if sign > 0 else r["q95"] < 0

    better = [a for a in testable if sig(a, +1)]
    if not any(identifiable[a] for a in FORGETTING_CLOCKS):
        verdict, best = "not_identifiable", None
        notes.append("every forgetting clock equals epochs up to one constant on this design (e.g. eta "
                     "proportional to b and one lambda): the design cannot tell clocks from epochs")
    elif better:
        verdict = "clock_better"
        best = max(better, key=lambda a: vs_epoch[a]["D"])
    elif powered and all(sig(a, -1) for a in powered):
        verdict, best = "epoch_better", "epoch"
    else:
        verdict = "no_difference"
        cand = [a for a in testable if vs_epoch[a]["D"] is not None]
        top = max(cand, key=lambda a: vs_epoch[a]["D"]) if cand else None
        best = top if top is not None and vs_epoch[top]["D"] > 0 else "epoch"

    min_p = 2.0 ** (1 - c_pipes)
    if n_boot < 10:
        notes.append(f"n_boot = {n_boot}: no bootstrap interval, so no verdict can be significant "
                     "(clock_better and epoch_better need an interval that excludes 0)")
    if min_p >= ALPHA:
        notes.append(f"only {c_pipes} pipelines: the smallest possible sign-flip p-value is 2^(1-{c_pipes}) = "
                     f"{min_p:.3g} >= {ALPHA}, so no verdict can be significant; run >= 6 pipelines")
    for a in testable:
        if a not in powered:
            notes.append(f"{a} is defined for only {vs_epoch[a]['n_pipelines']} pipelines (min p = "
                         f"{vs_epoch[a]['min_p_value']:.3g}): it cannot reach significance on its own")
    for a in CLOCK_AXES:
        if not identifiable[a] and axes[a]["n_points"]:
            notes.append(f"{a} is not identifiable: it equals epochs up to a constant on this design")
    if best and best != "epoch" and verdict == "clock_better":
        fr = axes[best]["floor_ratio"]
        if fr is not None and fr > 3:
            notes.append(f"{best} beats epochs but its held-out error is {fr:.1f}x the seed-noise floor: "
                         "less bad, not collapsed")
    fit_w = {}
    for i in np.flatnonzero(base.fit_choice >= 0):
        a_w, c_w = cands[int(base.fit_choice[i])]
        fit_w[names[i]] = {"a": float(a_w), "c": float(c_w)}
    return {
        "schema": SCHEMA,
        "memory": memory,
        "axes": axes,
        "vs_epoch": vs_epoch,
        "best": best,
        "verdict": verdict,
        "identifiable": identifiable,
        "collinear": collinear,
        "n_pipelines": c_pipes,
        "min_p_value": min_p,
        "t_fit_weights": fit_w,
        "bandwidths": {a: [float(h) for h in base.bandwidth[a]] for a in base.bandwidth},
        "n_boot": int(n_boot),
        "notes": notes,
        "method": {
            "smoother": f"isotonic regression on {N_BINS} bins of the axis, running mean over +-h bins with h "
                        f"from {list(BANDWIDTHS)} tuned by inner leave-one-pipeline-out, linear between knots",
            "error": "squared error / (seed-noise variance of the seed mean + master-curve variance)",
            "t_fit": "log(T_sgd + a*T_l2 + c*T_adapt), (a, c) chosen inside each training fold",
            "alpha": ALPHA,
        },
    }


def _f(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
