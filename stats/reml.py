"""REML variance components of y ~ 1 + (1|sigma_w) + (1|seed), crossed, reaching the optimum.

An optimizer that reports convergence can stop short of the REML optimum near the boundary (a
component at zero); with few levels and seeds that is the common case. So (docs/frequentist.md):

- Balanced complete table (one value per level x seed cell): the REML likelihood factorises over
  the three orthogonal strata of the design. With lambda_A = s2_e + J s2_level,
  lambda_B = s2_e + I s2_seed, lambda_E = s2_e, and the sums of squares SS_k on df_k,
      l_R = -1/2 sum_k [df_k log(2 pi lambda_k) + SS_k / lambda_k],
  maximised subject to lambda_A >= lambda_E and lambda_B >= lambda_E. Each active set of the
  constraints has a closed-form maximiser (the mean squares, with the strata of zeroed components
  pooled into the residual); the best feasible one of the four is the exact constrained optimum.
  Where the ANOVA estimators are positive they are the REML estimates.
- Otherwise: the REML likelihood profiled over the residual variance, as a function of the
  relative SDs theta = (s_level, s_seed) / s_e >= 0, maximised by L-BFGS-B from several starts
  including the boundary (theta = 0 on each axis, and both), keeping the best likelihood.

A fit with a component at zero is flagged ``singular`` (as lme4 does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from initmem.stats.anova import mean_squares

LOG_2PI = math.log(2 * math.pi)
STARTS = (0.0, 0.25, 4.0)  # variance ratios tried for each component (0 = the boundary)


@dataclass(frozen=True)
class RemlFit:
    s2_level: float
    s2_seed: float
    s2_e: float
    loglik: float
    method: str

    @property
    def singular(self) -> bool:
        return bool(self.s2_level <= 0.0 or self.s2_seed <= 0.0)

    def as_dict(self) -> dict:
        return {"sigma_sd": math.sqrt(self.s2_level), "seed_sd": math.sqrt(self.s2_seed),
                "residual_sd": math.sqrt(self.s2_e), "singular": self.singular, "method": self.method,
                "reml_loglik": self.loglik}


def balanced_loglik(ss: np.ndarray, df: np.ndarray, lam: np.ndarray) -> float:
    """The factorised REML log-likelihood of a balanced table (strata level, seed, residual)."""
    return float(-0.5 * np.sum(df * (LOG_2PI + np.log(lam)) + ss / lam))


def reml_balanced(table: np.ndarray) -> RemlFit:
    """Exact REML of a complete levels x seeds table (one value per cell), boundary included."""
    ms = mean_squares(table)
    n_lev, n_seed = ms.n_level, ms.n_seed
    ss = np.array([ms.ss_level, ms.ss_seed, ms.ss_e], float)
    df = np.array([ms.df_level, ms.df_seed, ms.df_e], float)
    best = None
    for zero_a in (False, True):
        for zero_b in (False, True):
            pool = np.array([zero_a, zero_b, True])
            lam_e = ss[pool].sum() / df[pool].sum()
            if not lam_e > 0:
                continue
            lam_a = lam_e if zero_a else ss[0] / df[0]
            lam_b = lam_e if zero_b else ss[1] / df[1]
            if lam_a < lam_e or lam_b < lam_e:
                continue  # infeasible: a negative variance component
            lam = np.array([lam_a, lam_b, lam_e])
            ll = balanced_loglik(ss, df, lam)
            if best is None or ll > best[0] + 1e-12:
                best = (ll, lam)
    if best is None:
        raise ValueError("the metric is constant over the pipeline's cells")
    ll, (lam_a, lam_b, lam_e) = best
    return RemlFit(max(0.0, (lam_a - lam_e) / n_seed), max(0.0, (lam_b - lam_e) / n_lev), float(lam_e), ll,
                   "closed form (balanced)")


@dataclass(frozen=True)
class _Design:
    """Cross products of the design [1, z] with the indicator matrix Z = [Z_level, Z_seed]: every
    evaluation then costs O(q^3) with q = levels + seeds (Woodbury), not O(n^3)."""

    n: int
    n_level: int
    ztz: np.ndarray  # (q, q)
    ztx: np.ndarray  # (q, 2) for the columns [1, z]
    xtx: np.ndarray  # (2, 2)

    @classmethod
    def build(cls, z: np.ndarray, level: np.ndarray, seed: np.ndarray) -> _Design:
        za = (level[:, None] == np.unique(level)[None, :]).astype(float)
        zb = (seed[:, None] == np.unique(seed)[None, :]).astype(float)
        zz = np.hstack([za, zb])
        x = np.column_stack([np.ones(z.size), z])
        return cls(z.size, za.shape[1], zz.T @ zz, zz.T @ x, x.T @ x)

    def solve(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """X' V^-1 X for V = I + Z diag(theta^2) Z', and log|V|."""
        q = self.ztz.shape[0]
        lam = np.where(np.arange(q) < self.n_level, theta[0], theta[1])
        m = np.eye(q) + lam[:, None] * self.ztz * lam[None, :]
        chol = np.linalg.cholesky(m)
        w = np.linalg.solve(chol, lam[:, None] * self.ztx)
        return self.xtx - w.T @ w, 2.0 * float(np.log(np.diag(chol)).sum())


def _deviance(theta: np.ndarray, d: _Design) -> tuple[float, float]:
    """(-2 x profiled REML log-likelihood, residual variance) at relative SDs theta.

    Normalised like the factorised balanced likelihood (REML on orthonormal error contrasts), so
    the two are directly comparable.
    """
    a, logdet = d.solve(theta)
    xtx = a[0, 0]
    s2 = (a[1, 1] - a[0, 1] ** 2 / xtx) / (d.n - 1)
    dev = (d.n - 1) * (LOG_2PI + 1 + math.log(s2)) + logdet + math.log(xtx / d.n)
    return dev, s2


def reml_profile(y: np.ndarray, level: np.ndarray, seed: np.ndarray) -> RemlFit:
    """REML by multi-start bounded optimisation of the profiled likelihood (any design)."""
    y = np.asarray(y, float)
    scale = float(y.std()) or 1.0
    d = _Design.build((y - y.mean()) / scale, np.asarray(level), np.asarray(seed))

    def fn(r: np.ndarray) -> float:
        # Optimised over the variance ratios r = theta^2: the deviance has a non-zero slope at
        # r = 0, so a bounded optimizer can tell an optimum at the boundary from one near it
        # (in theta the slope at 0 vanishes and optimizers stall short of small components).
        return _deviance(np.sqrt(np.maximum(r, 0.0)), d)[0]

    best_r, best_f = None, math.inf
    for r0 in [(a, b) for a in STARTS for b in STARTS]:
        # A start at 0 on one axis keeps that component at 0: the boundary faces are searched too.
        bounds = [(0.0, 0.0) if r0[0] == 0 and r0 != (0, 0) else (0.0, 1e6),
                  (0.0, 0.0) if r0[1] == 0 and r0 != (0, 0) else (0.0, 1e6)]
        res = optimize.minimize(fn, np.array(r0, float), method="L-BFGS-B", bounds=bounds,
                                options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 500})
        for r in (res.x, np.array(r0, float)):
            f = fn(r)
            if f < best_f - 1e-12:
                best_r, best_f = np.array(r, float), f
    best_t = np.sqrt(np.maximum(best_r, 0.0))
    s2 = _deviance(best_t, d)[1] * scale**2
    # Back on y's scale the likelihood shifts by (n - 1) log(scale).
    ll = -0.5 * best_f - (d.n - 1) * math.log(scale)
    return RemlFit(float(best_t[0] ** 2 * s2), float(best_t[1] ** 2 * s2), s2, ll, "profiled REML, multi-start")


def reml_fit(y: np.ndarray, level: np.ndarray, seed: np.ndarray) -> RemlFit:
    """Closed form when the cells form a complete table with one value each, else the profile."""
    lv, li = np.unique(level, return_inverse=True)
    sv, si = np.unique(seed, return_inverse=True)
    if y.size == lv.size * sv.size and np.unique(li * sv.size + si).size == y.size:
        table = np.empty((lv.size, sv.size))
        table[li, si] = y
        return reml_balanced(table)
    return reml_profile(y, li, si)


__all__ = ["RemlFit", "balanced_loglik", "reml_balanced", "reml_fit", "reml_profile"]
