"""The memory model's mathematics, written once for numpy and for PyTensor.

For one pipeline with L sigma_w levels and S seeds (a complete table after imputation),

    y[i, s] = alpha + u[i] + v[s] + e[i, s],  u ~ N(0, su^2), v ~ N(0, sv^2), e ~ N(0, se^2),

the covariance of y has four eigenspaces (grand mean, level contrasts, seed contrasts,
interaction) with eigenvalues se^2 + S su^2 + L sv^2, se^2 + S su^2, se^2 + L sv^2 and se^2.
With a flat prior on alpha the grand-mean term integrates out and the restricted likelihood of
the three SDs is a function of three sums of squares (docs/memory-model.md, "Likelihood"):

    -1/2 [ (L-1) log l1 + SS_level / l1 + (S-1) log l2 + SS_seed / l2 + (L-1)(S-1) log se^2 + SS_e / se^2 ]

This is why the sampler never sees a group effect (no funnel to diverge in) and why the same
function serves the NUTS model, the planner's exact recompute and the tests. The level effects
are drawn afterwards from their exact Gaussian conditional (:func:`draw_levels`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(40)
_GH_W = _GH_W / _GH_W.sum()


def table_sums(y: Any, lev: Any, sd: Any) -> dict[str, Any]:
    """Sums of squares of complete (..., L, S) tables restricted to each table's levels ``lev``
    (..., L) and seeds ``sd`` (..., S) (0/1 masks); works on numpy and PyTensor arrays."""
    w = lev[..., :, None] * sd[..., None, :]
    n_l, n_s = lev.sum(axis=-1), sd.sum(axis=-1)
    grand = (w * y).sum(axis=(-2, -1)) / (n_l * n_s)
    lm = (w * y).sum(axis=-1) / n_s[..., None]
    sm = (w * y).sum(axis=-2) / n_l[..., None]
    ss_level = n_s * (lev * (lm - grand[..., None]) ** 2).sum(axis=-1)
    ss_seed = n_l * (sd * (sm - grand[..., None]) ** 2).sum(axis=-1)
    resid = y - lm[..., :, None] - sm[..., None, :] + grand[..., None, None]
    ss_e = (w * resid**2).sum(axis=(-2, -1))
    return {"n_level": n_l, "n_seed": n_s, "grand": grand, "level_means": lm,
            "ss_level": ss_level, "ss_seed": ss_seed, "ss_e": ss_e}


def reml_loglik(sums: dict[str, Any], s2u: Any, s2v: Any, s2e: Any, log: Any = np.log) -> Any:
    """Restricted log likelihood of the three variances (up to a constant)."""
    n_l, n_s = sums["n_level"], sums["n_seed"]
    l1 = s2e + n_s * s2u
    l2 = s2e + n_l * s2v
    return -0.5 * ((n_l - 1) * log(l1) + sums["ss_level"] / l1
                   + (n_s - 1) * log(l2) + sums["ss_seed"] / l2
                   + (n_l - 1) * (n_s - 1) * log(s2e) + sums["ss_e"] / s2e)


def draw_levels(level_means: np.ndarray, grand: np.ndarray, lev: np.ndarray, n_seed: np.ndarray,
                s2u: np.ndarray, s2v: np.ndarray, s2e: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw of the population level values (base, u - mean u) given the variances.

    Level contrasts of the seed-averaged table are u_i - u_bar + noise with variance se^2 / S:
    the centred effects have the conditional N(w c, w se^2/S (I - J/L)), w = su^2 / (su^2 +
    se^2/S). The population intercept at the level average (seeds averaged over NEW seeds) is
    the grand mean minus the observed seeds' and residuals' mean: base ~ N(grand, sv^2/S +
    se^2/(L S)). Shapes: level_means (..., L), others (...).
    """
    n_l = lev.sum(axis=-1)
    c = np.where(lev, level_means - grand[..., None], 0.0)
    w = s2u / (s2u + s2e / n_seed)
    g = rng.standard_normal(c.shape) * lev
    g = np.where(lev, g - (g.sum(axis=-1) / n_l)[..., None], 0.0)
    u = w[..., None] * c + np.sqrt(w * s2e / n_seed)[..., None] * g
    base = grand + rng.standard_normal(grand.shape) * np.sqrt(s2v / n_seed + s2e / (n_l * n_seed))
    return base, u


def spread(u: np.ndarray, lev: np.ndarray) -> np.ndarray:
    """max - min over each table's levels of the (..., L) level values."""
    return np.where(lev, u, -np.inf).max(axis=-1) - np.where(lev, u, np.inf).min(axis=-1)


def predictive_tables(base: np.ndarray, u: np.ndarray, seed_sd: np.ndarray, residual_sd: np.ndarray,
                      n_seed: int, rng: np.random.Generator) -> np.ndarray:
    """New experiments with the same level values and fresh seeds and residuals: (n, L) level
    values -> (n, L, n_seed) tables. The one posterior-predictive draw (model check and plan)."""
    n, n_lev = u.shape
    v = rng.standard_normal((n, 1, n_seed)) * seed_sd[:, None, None]
    e = rng.standard_normal((n, n_lev, n_seed)) * residual_sd[:, None, None]
    return base[:, None, None] + u[:, :, None] + v + e


def expected_accuracy(eta: np.ndarray, noise_sd: float, offsets: np.ndarray | None = None) -> np.ndarray:
    """Mean over examples of E over N(0, noise_sd^2) of sigmoid(eta + offset_x): the expected
    accuracy on a fixed test set whose examples have logit offsets ``offsets`` (one example at
    offset 0 when None), by 40-point Gauss-Hermite quadrature. The simulator's truth."""
    eta = np.asarray(eta, dtype=float)
    off = np.zeros(1) if offsets is None else np.asarray(offsets, dtype=float)
    out = np.empty(eta.shape)
    for idx, e in np.ndenumerate(eta):
        z = e + off[:, None] + noise_sd * _GH_X[None, :]
        out[idx] = float(((1.0 / (1.0 + np.exp(-z))) @ _GH_W).mean())
    return out


__all__ = ["draw_levels", "expected_accuracy", "predictive_tables", "reml_loglik", "spread", "table_sums"]
