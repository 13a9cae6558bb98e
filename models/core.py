"""The memory model's mathematics, written once for numpy and for PyTensor.

For one pipeline with L sigma_w levels and S seeds (a complete table after imputation),

    y[i, s] = alpha + u[i] + v[s] + b[s] x[i] + e[i, s],
    u = a x + w,  a flat,  w ~ N(0, su^2), v ~ N(0, sv^2), b ~ N(0, sb^2), e ~ N(0, se^2),

with x the centred log sigma_w scaled to unit RMS over the pipeline's levels (|x|^2 = L): each
seed has its own intercept v and its own drift b along log sigma_w (seeds whose response to
sigma_w differs), and the memory u has a linear trend a along x, a fixed effect with a flat
prior, besides its exchangeable part w. So a drift every seed shares reads as memory and a drift
that differs between seeds as noise, and the trend is never shrunk towards "no memory" by what
the other level contrasts show: its verdict rests on the seeds' own evidence (with a few seeds,
shrinking it gave 12% false "forgets" at a true spread of delta; docs/memory-model.md). The covariance
matrices commute (x is orthogonal to the constant), so the covariance of y has six eigenspaces, products
of (grand, the linear level contrast x, the other level contrasts) and (grand, seed contrasts):

    level x / grand seed:      (the trend's stratum: integrated out with the flat trend, like alpha)
    other levels / grand seed: se^2 + S su^2                   (L - 2 df)
    grand level / seeds:       se^2 + L sv^2                   (S - 1 df)
    level x / seeds:           se^2 + |x|^2 sb^2               (S - 1 df)
    other levels / seeds:      se^2                            ((L - 2)(S - 1) df)

With a flat prior on alpha the grand-mean term integrates out and the restricted likelihood of
the four SDs is a function of four sums of squares (docs/memory-model.md, "Likelihood"). With
x = 0 (fewer than 3 levels, or independent seeds) it is the compound-symmetric likelihood
exactly. This is why the sampler never sees a group effect (no funnel to diverge in) and why
the same function serves the NUTS model, the planner's recompute and the tests. The level
effects are drawn afterwards from their exact Gaussian conditional (:func:`draw_levels`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(40)
_GH_W = _GH_W / _GH_W.sum()


MIN_SLOPE_LEVELS = 3  # with 2 levels a seed's slope is its level difference: not separable from e


def slope_axis(sigma_w: np.ndarray, lev: np.ndarray, paired: bool | np.ndarray = True) -> np.ndarray:
    """x of (..., L) level masks: centred log sigma_w with unit RMS over each table's levels, 0 at
    absent levels, and 0 throughout where slopes do not apply (fewer than 3 levels, or seeds that
    share nothing across levels)."""
    lev = np.asarray(lev, dtype=bool)
    logs = np.broadcast_to(np.log(np.asarray(sigma_w, dtype=float)), lev.shape)
    n = lev.sum(axis=-1, keepdims=True)
    mean = np.where(lev, logs, 0.0).sum(axis=-1, keepdims=True) / np.maximum(n, 1)
    c = np.where(lev, logs - mean, 0.0)
    rms = np.sqrt((c**2).sum(axis=-1, keepdims=True) / np.maximum(n, 1))
    on = (n >= MIN_SLOPE_LEVELS) & (rms > 0) & np.asarray(paired, dtype=bool)[..., None]
    return np.where(on, c / np.where(rms > 0, rms, 1.0), 0.0)


def table_sums(y: Any, lev: Any, sd: Any, x: Any = None) -> dict[str, Any]:
    """Sums of squares of complete (..., L, S) tables restricted to each table's levels ``lev``
    (..., L) and seeds ``sd`` (..., S) (0/1 masks), with the parts on the slope axis ``x``
    (..., L) (:func:`slope_axis`; None or 0 for none); works on numpy and PyTensor arrays."""
    w = lev[..., :, None] * sd[..., None, :]
    n_l, n_s = lev.sum(axis=-1), sd.sum(axis=-1)
    # An empty table (a padding slot, models/memory.py) divides by 1, not 0: its sums are 0, never NaN.
    # A real table has n_l, n_s >= 1, where this is n_l * n_s exactly.
    grand = (w * y).sum(axis=(-2, -1)) / (n_l * n_s + (n_l * n_s <= 0) * 1.0)
    lm = (w * y).sum(axis=-1) / (n_s + (n_s <= 0) * 1.0)[..., None]
    sm = (w * y).sum(axis=-2) / (n_l + (n_l <= 0) * 1.0)[..., None]
    ss_level = n_s * (lev * (lm - grand[..., None]) ** 2).sum(axis=-1)
    ss_seed = n_l * (sd * (sm - grand[..., None]) ** 2).sum(axis=-1)
    resid = y - lm[..., :, None] - sm[..., None, :] + grand[..., None, None]
    ss_e = (w * resid**2).sum(axis=(-2, -1))
    out = {"n_level": n_l, "n_seed": n_s, "grand": grand, "level_means": lm,
           "ss_level": ss_level, "ss_seed": ss_seed, "ss_e": ss_e, "xx": 0.0, "ss_level_x": 0.0, "ss_inter_x": 0.0}
    if x is not None:
        x = x * lev
        xx = (x**2).sum(axis=-1)
        safe = xx + (xx <= 0) * 1.0   # x = 0 gives 0 sums, not 0 / 0 (== is identity on tensors)
        ss_level_x = n_s * ((x * (lm - grand[..., None])).sum(axis=-1)) ** 2 / safe
        ss_inter_x = (sd * ((x[..., :, None] * resid * w).sum(axis=-2)) ** 2).sum(axis=-1) / safe
        out.update({"xx": xx, "ss_level_x": ss_level_x, "ss_inter_x": ss_inter_x})
    return out


def reml_loglik(sums: dict[str, Any], s2u: Any, s2v: Any, s2e: Any, log: Any = np.log, s2b: Any = 0.0) -> Any:
    """Restricted log likelihood of the variances (up to a constant); ``s2b`` the seed-slope
    variance (per unit of x), which enters only where the tables have a slope axis; there the
    level contrast along x is the flat trend's and leaves the likelihood (restricted likelihood)."""
    n_l, n_s, xx = sums["n_level"], sums["n_seed"], sums["xx"]
    on = (xx > 0) * 1.0   # the slope strata take one level and S - 1 interaction df when x exists
    l1 = s2e + n_s * s2u
    l2 = s2e + n_l * s2v
    l4 = s2e + xx * s2b
    return -0.5 * ((n_l - 1 - on) * log(l1) + (sums["ss_level"] - sums["ss_level_x"]) / l1
                   + (n_s - 1) * log(l2) + sums["ss_seed"] / l2
                   + on * (n_s - 1) * log(l4) + sums["ss_inter_x"] / l4
                   + ((n_l - 1) * (n_s - 1) - on * (n_s - 1)) * log(s2e)
                   + (sums["ss_e"] - sums["ss_inter_x"]) / s2e)


def draw_levels(level_means: np.ndarray, grand: np.ndarray, lev: np.ndarray, n_seed: np.ndarray,
                s2u: np.ndarray, s2v: np.ndarray, s2e: np.ndarray,
                rng: np.random.Generator, x: np.ndarray | None = None,
                s2b: np.ndarray | float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """One draw of the population level values (base, u - mean u) given the variances.

    Level contrasts of the seed-averaged table are u_i - u_bar + noise with variance se^2 / S,
    plus |x|^2 sb^2 / S along the slope axis x (the observed seeds' mean slope is noise, not
    memory), where the memory has a flat trend: along x the centred effects have the conditional
    N(c_x, (se^2 + |x|^2 sb^2)/S), unshrunk, and across the other contrasts N(w c, w se^2/S),
    w = su^2 / (su^2 + se^2/S). The population intercept at the level average (seeds averaged over
    NEW seeds) is the grand mean minus the observed seeds' and residuals' mean: base ~ N(grand,
    sv^2/S + se^2/(L S)). Shapes: level_means (..., L), x (..., L) or None, others (...).
    """
    n_l = lev.sum(axis=-1)
    c = np.where(lev, level_means - grand[..., None], 0.0)
    g = rng.standard_normal(c.shape) * lev
    g = np.where(lev, g - (g.sum(axis=-1) / n_l)[..., None], 0.0)
    w = s2u / (s2u + s2e / n_seed)
    if x is None or not np.any(x):
        u = w[..., None] * c + np.sqrt(w * s2e / n_seed)[..., None] * g
    else:
        x = np.where(lev, x, 0.0)
        xx = (x**2).sum(axis=-1)
        unit = x / np.sqrt(np.where(xx > 0, xx, 1.0))[..., None]
        cx, gx = (c * unit).sum(axis=-1), (g * unit).sum(axis=-1)
        c_perp, g_perp = c - cx[..., None] * unit, g - gx[..., None] * unit
        noise_x = s2e + xx * s2b
        ux = cx + np.sqrt(noise_x / n_seed) * rng.standard_normal(cx.shape)
        u = (w[..., None] * c_perp + np.sqrt(w * s2e / n_seed)[..., None] * g_perp + ux[..., None] * unit)
    base = grand + rng.standard_normal(grand.shape) * np.sqrt(s2v / n_seed + s2e / (n_l * n_seed))
    return base, u


def spread(u: np.ndarray, lev: np.ndarray) -> np.ndarray:
    """max - min over each table's levels of the (..., L) level values."""
    return np.where(lev, u, -np.inf).max(axis=-1) - np.where(lev, u, np.inf).min(axis=-1)


def predictive_tables(base: np.ndarray, u: np.ndarray, seed_sd: np.ndarray, residual_sd: np.ndarray,
                      n_seed: int, rng: np.random.Generator, x: np.ndarray | None = None,
                      slope_sd: np.ndarray | None = None) -> np.ndarray:
    """New experiments with the same level values and fresh seeds, seed slopes along ``x`` (L,)
    and residuals: (n, L) level values -> (n, L, n_seed) tables. The one posterior-predictive
    draw (model check and plan)."""
    n, n_lev = u.shape
    v = rng.standard_normal((n, 1, n_seed)) * seed_sd[:, None, None]
    e = rng.standard_normal((n, n_lev, n_seed)) * residual_sd[:, None, None]
    out = base[:, None, None] + u[:, :, None] + v + e
    if x is not None and slope_sd is not None:
        b = rng.standard_normal((n, 1, n_seed)) * slope_sd[:, None, None]
        out = out + b * np.asarray(x)[None, :, None]
    return out


__all__ = ["MIN_SLOPE_LEVELS", "draw_levels", "predictive_tables", "reml_loglik", "slope_axis",
           "spread", "table_sums"]
