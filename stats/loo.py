"""Leave-one-pipeline-out held-out errors, batched over configurations (docs/clocks-and-collapse.md).

A configuration is one assignment of an axis coordinate u (K, C, T) to every pipeline's points.
Each pipeline's memory curve is predicted by the master curve of the other pipelines and scored
by its squared error divided by *its own* seed-noise variance only. The weights are the same on
every axis: nothing that depends on the axis (such as the master curve's predictive variance,
which grows on an axis that spreads the pipelines apart) enters the denominator.

Per-pipeline contributions to the comparison of two axes are bounded (``log_ratio``): the
errors enter as log((1 + e_a) / (1 + e_b)) clipped to +-CLIP, so a pipeline predicted far below
the noise floor on one axis cannot move the mean by orders of magnitude.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from initmem.stats.smoother import bin_points, fit_loo, predict_held_out

CLIP = float(np.log(100.0))  # a pipeline moves D by at most log(100) / C
VAR_WINDOW = 5  # epochs averaged when smoothing the seed-noise variance


@dataclass
class HeldOut:
    """Per (configuration, pipeline): normalised error, raw MSE, mean noise variance, overlap."""

    err: np.ndarray  # (K, C), NaN = not scored
    mse: np.ndarray
    noise: np.ndarray
    overlap: np.ndarray
    npts: np.ndarray


def held_out_errors(u: np.ndarray, y: np.ndarray, v: np.ndarray) -> HeldOut:
    """u (K, C, T) coordinates; y (C, T) seed-mean memory; v (C, T) its seed-noise variance."""
    u = np.where(np.isfinite(y)[None] & np.isfinite(v)[None], u, np.nan)
    b = bin_points(u, y)
    pred = predict_held_out(fit_loo(b), u)
    sq = (y[None] - pred) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        err = np.nanmean(sq / v[None], axis=-1)
        mse = np.nanmean(sq, axis=-1)
        noise = np.nanmean(np.where(np.isfinite(sq), v[None], np.nan), axis=-1)
        # Share of the held-out points inside the range covered by the other pipelines.
        lo = np.nanmin(np.where(np.eye(b.umin.shape[1], dtype=bool)[None], np.nan, b.umin[:, None, :]), -1)
        hi = np.nanmax(np.where(np.eye(b.umax.shape[1], dtype=bool)[None], np.nan, b.umax[:, None, :]), -1)
        inside = (u >= lo[..., None]) & (u <= hi[..., None])
        overlap = np.nanmean(np.where(np.isfinite(sq), inside, np.nan), axis=-1)
    return HeldOut(err, mse, noise, overlap, np.isfinite(sq).sum(-1))


def log_ratio(e_a: np.ndarray, e_b: np.ndarray) -> np.ndarray:
    """Bounded per-pipeline evidence for axis b over axis a (> 0 favours b); NaN where unscored."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(np.log1p(e_a) - np.log1p(e_b), -CLIP, CLIP)


def smooth_var(v: np.ndarray) -> np.ndarray:
    """Moving average of the seed-noise variance over neighbouring epochs (NaN-aware).

    With a handful of seeds a single epoch's variance is a chi-square with few degrees of freedom;
    dividing by it would make the normalised errors heavy-tailed.
    """
    fin = np.isfinite(v)
    num = _window_sum(np.where(fin, v, 0.0))
    den = _window_sum(fin.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(fin, out, np.nan)


def _window_sum(a: np.ndarray) -> np.ndarray:
    """Sum over the VAR_WINDOW epochs centred on each epoch, cut at the ends of the series (last axis).

    The window shrinks to what the series has: on a series shorter than the window every epoch sums
    the neighbours it has (``np.convolve(..., "same")`` would return the window's length instead).
    """
    half = VAR_WINDOW // 2
    n = a.shape[-1]
    k = np.ones(VAR_WINDOW)
    return np.apply_along_axis(lambda r: np.convolve(r, k, "full")[half:half + n], -1, a)


def floor_var(v: np.ndarray) -> np.ndarray:
    """Smoothed variance, floored at 1e-3 of its median (a seed-noise estimate of 0 is an artefact)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(v)
    floor = 1e-3 * med if np.isfinite(med) and med > 0 else np.finfo(float).tiny
    return np.maximum(smooth_var(v), floor)


__all__ = ["CLIP", "HeldOut", "floor_var", "held_out_errors", "log_ratio", "smooth_var"]
