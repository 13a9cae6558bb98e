"""The master-curve smoother of the collapse test, batched over configurations and folds.

One smoother for every time axis (docs/clocks-and-collapse.md, "The smoother"):

1. Each axis is mapped to its pooled empirical CDF over the points being compared,
   u = rank / n in (0, 1]. A monotone transform common to all pipelines (log, a power, a cosine
   schedule's cumulative sum) leaves u unchanged, so the smoother's resolution cannot differ
   between axes that order the points the same way. Uniform bins on u are bins at quantiles of
   the pooled x: a schedule that crams late epochs into a short stretch of log T no longer
   squeezes them into one or two bins.
2. Weighted isotonic regression of the bin means (direction from the sign of the training
   covariance), then a running mean over +-HALF_WIDTH bins: a positive box kernel keeps the
   sequence monotone. No tuning parameter is left, so there is nothing to tune inside a fold.
3. Prediction: linear in u between the bins' mean-u knots, constant beyond the end knots.

Arrays are batched over a leading configuration axis K (axes, permuted axis assignments),
pipelines C and epochs T; NaN in u means "this point is not part of this configuration".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

N_BINS = 16
HALF_WIDTH = 1


def ecdf_coordinates(x: np.ndarray) -> np.ndarray:
    """Pooled mid-rank / n over the finite entries of each x[k] (K, C, T); NaN stays NaN."""
    u = np.full(x.shape, np.nan)
    for k in range(x.shape[0]):
        fin = np.isfinite(x[k])
        if fin.any():
            u[k][fin] = rankdata(x[k][fin]) / fin.sum()
    return u


def isotonic_bins(n: np.ndarray, sy: np.ndarray) -> np.ndarray:
    """Weighted increasing isotonic regression of bin means, batched over leading axes.

    The max-min formula f(i) = max_{j<=i} min_{k>=i} mean(j..k) vectorises (PAVA is sequential);
    G is small so O(G^2) per problem is cheap. Empty bins get some value but carry no weight.
    """
    g = n.shape[-1]
    zero = np.zeros((*n.shape[:-1], 1))
    cn = np.concatenate([zero, np.cumsum(n, -1)], -1)
    cy = np.concatenate([zero, np.cumsum(sy, -1)], -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (cy[..., None, 1:] - cy[..., :-1, None]) / (cn[..., None, 1:] - cn[..., :-1, None])  # [j, k]
    s = np.fmin.accumulate(m[..., ::-1], axis=-1)[..., ::-1]
    s[..., ~np.triu(np.ones((g, g), bool))] = np.nan
    return np.fmax.reduce(s, axis=-2)


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
class Binned:
    """Per (configuration, pipeline, bin) sums of the points of each configuration."""

    n: np.ndarray  # (K, C, G)
    su: np.ndarray
    sy: np.ndarray
    umin: np.ndarray  # (K, C)
    umax: np.ndarray


def bin_points(u: np.ndarray, y: np.ndarray) -> Binned:
    """u (K, C, T) in (0, 1] or NaN; y (C, T) memory values (NaN = no value)."""
    k_, c_, _ = u.shape
    ok = np.isfinite(u) & np.isfinite(y)[None]
    g = np.clip(np.floor(np.nan_to_num(u) * N_BINS), 0, N_BINS - 1).astype(np.int64)
    flat = ((np.arange(k_)[:, None, None] * c_ + np.arange(c_)[None, :, None]) * N_BINS + g).ravel()
    w = ok.ravel().astype(float)
    size = k_ * c_ * N_BINS

    def bc(weights: np.ndarray) -> np.ndarray:
        return np.bincount(flat, weights=weights, minlength=size).reshape(k_, c_, N_BINS)

    yy = np.broadcast_to(np.nan_to_num(y), u.shape).ravel() * w
    uu = np.nan_to_num(u).ravel() * w
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        umin = np.nanmin(np.where(ok, u, np.nan), axis=-1)
        umax = np.nanmax(np.where(ok, u, np.nan), axis=-1)
    return Binned(bc(w), bc(uu), bc(yy), umin, umax)


@dataclass
class Curves:
    """Leave-one-pipeline-out master curves: fold f is fitted without pipeline f."""

    has: np.ndarray  # (K, F, G) bin has training data
    uk: np.ndarray  # (K, F, G) knot = mean u of the bin's training points
    f: np.ndarray  # (K, F, G) smoothed monotone values at the knots
    prev: np.ndarray  # (K, F, G) last bin <= g with data (-1 if none)
    next: np.ndarray  # (K, F, G) first bin >= g with data (G if none)


def fit_loo(b: Binned) -> Curves:
    """One master curve per (configuration, held-out pipeline), from the other pipelines' bins."""
    def loo(a: np.ndarray) -> np.ndarray:
        return a.sum(1, keepdims=True) - a  # (K, F=C, G): totals without the held-out pipeline

    n, su, sy = loo(b.n), loo(b.su), loo(b.sy)
    nt = n.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = (su * sy / np.where(n > 0, n, np.inf)).sum(-1, keepdims=True) \
            - su.sum(-1, keepdims=True) * sy.sum(-1, keepdims=True) / nt
    sign = np.where(cov < 0, -1.0, 1.0)
    f = sign * isotonic_bins(n, sign * sy)
    has = n > 0
    num = _moving_sum(n * np.where(has, f, 0.0), HALF_WIDTH)
    den = _moving_sum(n, HALF_WIDTH)
    with np.errstate(invalid="ignore", divide="ignore"):
        fs = num / den
        uk = su / n
    g = np.arange(N_BINS)
    prev = np.maximum.accumulate(np.where(has, g, -1), axis=-1)
    nxt = np.flip(np.minimum.accumulate(np.flip(np.where(has, g, N_BINS), -1), axis=-1), -1)
    return Curves(has, uk, fs, prev, nxt)


def predict_held_out(cv: Curves, u: np.ndarray) -> np.ndarray:
    """Predict every pipeline's points u (K, C, T) from the curve fitted without it.

    Linear between neighbouring knots, constant beyond the first and last knot; one flat gather
    index per table rather than take_along_axis.
    """
    n_k, n_c, _ = u.shape
    g = N_BINS
    g_u = np.clip(np.floor(np.nan_to_num(u) * g), 0, g - 1).astype(np.int64)
    base = ((np.arange(n_k)[:, None] * n_c + np.arange(n_c)[None, :]) * g)[:, :, None]
    has, uk, prev, nxt, f = (a.reshape(-1) for a in (cv.has, cv.uk, cv.prev, cv.next, cv.f))

    def at(t: np.ndarray, i: np.ndarray) -> np.ndarray:
        return t[base + np.clip(i, 0, g - 1)]

    cur = at(has, g_u)
    right_of = u >= at(uk, g_u)
    left = np.where(cur, np.where(right_of, g_u, at(prev, g_u - 1)), at(prev, g_u))
    left = np.where(cur & ~right_of & (g_u == 0), -1, left)
    right = np.where(cur, np.where(right_of, at(nxt, g_u + 1), g_u), at(nxt, g_u))
    right = np.where(cur & right_of & (g_u == g - 1), g, right)
    no_l, no_r = left < 0, right >= g
    li = np.clip(np.where(no_l, right, left), 0, g - 1)
    ri = np.clip(np.where(no_r, left, right), 0, g - 1)
    ul, ur = at(uk, li), at(uk, ri)
    with np.errstate(invalid="ignore", divide="ignore"):
        fr = np.where(ri > li, (u - ul) / (ur - ul), 0.0)
    fr = np.clip(np.nan_to_num(fr), 0.0, 1.0)
    val = at(f, li) * (1 - fr) + at(f, ri) * fr
    return np.where(~np.isfinite(u) | (no_l & no_r), np.nan, val)


__all__ = ["N_BINS", "HALF_WIDTH", "Binned", "Curves", "bin_points", "ecdf_coordinates", "fit_loo",
           "isotonic_bins", "predict_held_out"]
