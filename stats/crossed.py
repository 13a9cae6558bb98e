"""Variance components of a crossed init x data seed design, and the draw verdict (docs/crossed.md).

One pipeline's final metric on a crossed design is a (sigma_w level, init seed, data seed) table,
modelled as

    y[l, i, j] = mu_l + a[l, i] + b[l, j] + e[l, i, j],

with a[l, :] ~ N(0, SD_init_l^2), b[l, :] ~ N(0, SD_data_l^2) and e ~ N(0, SD_resid^2). The effects may be
correlated across the levels l anywhere from independent to identical (the same draw trained at another
scale), and every interval here is valid over that whole range. SD_init's bounds also allow skewed or
heavy-tailed init effects, up to Student t with 3 df (below).

Point estimates. Each level's table gives the two-way mean squares MS_A,l (init, df I - 1), MS_B,l (data,
df J - 1) and MS_E,l (df (I - 1)(J - 1)). Pooled over levels, MS_k = mean_l MS_k,l has expectation
SD_resid^2 + J SD_init^2 (k = A), SD_resid^2 + I SD_data^2 (B), SD_resid^2 (E), with
SD_init^2 := mean_l SD_init_l^2. The point estimates are the REML estimates of the balanced table on the
pooled sums of squares: the ANOVA estimates where they are positive, otherwise the constrained optimum with a
zero component's stratum pooled into the residual (exactly :func:`initmem.stats.reml.reml_balanced` when
there is one level).

Intervals (each bound a (1 - alpha) one-sided bound; the pair a (1 - 2 alpha) two-sided interval):

- SD_init and SD_data: the modified large-sample (MLS) bounds of Graybill and Wang for a difference of two
  mean squares, (MS_A - MS_E) / J and (MS_B - MS_E) / I (Burdick & Graybill 1992, "Confidence Intervals on
  Variance Components", sec. 3.3; Ting, Burdick, Graybill, Jeyaratnam & Lu 1990), on the square-root scale,
  truncated at 0. The pooled mean squares get the CONSERVATIVE degrees of freedom I - 1, J - 1 and
  (I - 1)(J - 1), those of a single level: when the effects are identical across levels the pooled MS_A
  carries no more information than one level's, and counting L (I - 1) df there makes the bounds too narrow
  (false "keeps its draw" at the margin rise to about 15%).
- The init mean square's df shrink further where the init effects look non-normal
  (:func:`init_mean_square_df`). Var(s^2) / sigma^4 = 2 / (I - 1) + kappa / I for a sample variance of I
  draws of excess kurtosis kappa (Bonett 2006 builds his interval for an SD on it). Pooled over levels,
  with q_i = mean_l d_li^2 (d_li: init seed i's row mean at level l minus the level's mean) and S the L x L
  covariance of a seed's row means across levels, Var(MS_A) / E(MS_A)^2 = (K - 1) / I + 2 r / (I (I - 1))
  with K = E q^2 / (E q)^2 and r = tr(S^2) / tr(S)^2 <= 1, so at most 2 / (I - 1) + (K - 3) / I (K = 3 + kappa
  when the draw is the same at every level). So the lower bound (the "keeps" side) uses
  df_lower = min(I - 1, 2 / (2 / (I - 1) + kappa_hat / I)) with kappa_hat = max(0, 2 G2), G2 the sample
  excess kurtosis of the q_i, K_hat - 3 = I sum q^2 / (sum q)^2 - 3, with the small-sample adjustment
  G2 = (I - 1) / ((I - 2)(I - 3)) ((I + 1)(K_hat - 3) + 6) (Joanes & Gill 1998; unbiased for normal draws;
  0 below four init seeds). Summing each init seed's squared deviations over the levels before taking the
  moment ratio is what makes the estimate valid for any correlation across levels: the init seeds are the
  independent units, and K itself falls from 3 + kappa (identical effects) towards 1 + (2 + kappa) / L
  (independent ones), as Var(MS_A) does, so independent levels are not charged for a kurtosis that their
  pooling averages away.
  A false "keeps" needs an outlying draw in the sample, which shows in G2; the factor 2 covers the low bias
  of G2 for skewed and heavy-tailed draws at a handful of seeds.
- A false "forgets" needs the opposite, a sample that missed the tail, which no statistic of the sample
  shows (an outlying draw raises MS_A, away from a false "forgets", so G2 does not enter here). The upper
  bound therefore caps the df at a tail allowance instead,
  df_upper = min(I - 1, 1.25 (I / c)^(2/3)): for draws as heavy-tailed as Student t with 3 df the
  squared effects have tail index 3/2, their sum fluctuates as n^(2/3) rather than n^(1/2), so the
  chi-square df that matches their lower tail grows as n^(2/3) of the n = I / c independent draws behind
  MS_A; c in [1/L, 1] is the shared fraction 1'S_a 1 / (L tr S_a) of the init effects' covariance S_a across
  levels, estimated from the row means with the residual's share MS_E / J removed (1 when the init variance
  estimate is not positive).
  The constant 1.25 holds false "forgets" at or under 5% for t3 init effects at 4 to 16 init seeds and 3 or
  more sigma_w levels. With one or two levels it is 0.8: there the residual's heavy tail is averaged over
  only J or 2J cells of each row mean, not 3J or more, and 1.25 let false "forgets" reach 9.5% (t3 seeds, one
  level, 4 x 4) and 5.9% (two levels, 16 x 4); 0.8 holds them at or under 3%, at a cost in the power to
  forget (studies/crossed_calibration.py, "Fewer sigma_w levels").
- SD_resid: the chi-square interval of MS_E on (I - 1)(J - 1) df.
- The init share SD_init^2 / (SD_init^2 + SD_data^2 + SD_resid^2): a generalized pivotal quantity
  (Weerahandi 1993; Hannig, Iyer & Patterson 2006): each expected mean square's pivot
  MS_k df_k / chi^2_{df_k} (the three independent), the components from them truncated at 0, and the
  share's alpha and 1 - alpha quantiles over a fixed set of chi-square draws (seeded, so the interval is a
  deterministic function of the table); its lower quantile uses the init df of the lower bound, its upper
  quantile those of the upper bound.

Calibration on simulated tables (false verdicts, power and coverage in both correlation regimes):
``python studies/crossed_calibration.py``.

Missing runs: the components read the largest complete block of init and data seeds (:func:`complete_block`,
the cube's rule :func:`initmem.cube.crossed.complete_crossed_block`, which the scale verdict's crossed pair
tests in models/paired.py use too).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from initmem.cube.crossed import complete_crossed_block
from initmem.errors import UserError
from initmem.names import ALPHA, UNDECIDED
from initmem.stats.anova import mean_squares

KEEPS_DRAW, FORGETS_DRAW = "keeps its draw", "forgets its draw"
UNDECIDED_DRAW = UNDECIDED  # one word for every undecided verdict (initmem/names.py)
DRAW_VERDICTS = (KEEPS_DRAW, FORGETS_DRAW, UNDECIDED_DRAW)
GPQ_DRAWS = 10_000     # chi-square draws of the init share's generalized pivotal quantity
GPQ_SEED = 20_240_917  # their fixed seed: the interval is a deterministic function of the table
KURTOSIS_FACTOR = 2.0  # kappa_hat = max(0, 2 G2) in the init mean square's df (lower and upper bound)
TAIL_SCALE = 1.25      # the upper bound's tail allowance: df <= TAIL_SCALE (I / c)^TAIL_EXPONENT
TAIL_SCALE_FEW_LEVELS = 0.8   # ... its scale with one or two sigma_w levels (MIN_LEVELS_FOR_TAIL_SCALE)
MIN_LEVELS_FOR_TAIL_SCALE = 3
TAIL_EXPONENT = 2.0 / 3.0
_LOG_2PI = math.log(2 * math.pi)


# Records ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """A point estimate with its (1 - alpha) lower and upper one-sided confidence bounds."""

    estimate: float
    lower: float
    upper: float

    def as_dict(self) -> dict[str, float]:
        return {"estimate": self.estimate, "lower": self.lower, "upper": self.upper}


@dataclass(frozen=True)
class LevelComponents:
    """The components of one sigma_w level's own init x data table."""

    sigma_w: float
    sd_init: Interval
    sd_data: Interval
    sd_resid: Interval
    init_share: Interval

    def as_dict(self) -> dict[str, Any]:
        return {"sigma_w": self.sigma_w, "sd_init": self.sd_init.as_dict(), "sd_data": self.sd_data.as_dict(),
                "sd_resid": self.sd_resid.as_dict(), "init_share": self.init_share.as_dict()}


@dataclass(frozen=True)
class CrossedComponents:
    """SD_init, SD_data, SD_resid and the init share of one pipeline, pooled over sigma_w, and per level.

    ``df`` holds the degrees of freedom the pooled intervals used for the init (its lower bound), data and
    residual mean squares; ``df_init_upper`` those of the init mean square in the upper bound
    (:func:`init_mean_square_df`).
    """

    sd_init: Interval
    sd_data: Interval
    sd_resid: Interval
    init_share: Interval
    n_levels: int
    n_init: int
    n_data: int
    alpha: float
    df: tuple[float, float, float]
    by_sigma_w: tuple[LevelComponents, ...] = field(default=())
    df_init_upper: float = math.nan

    def as_dict(self, margin: float | None = None) -> dict[str, Any]:
        """The summary.json shapes: ``{"estimate", "lower", "upper"}`` per quantity and ``by_sigma_w``; with a
        ``margin``, ``draw_verdict`` too."""
        out: dict[str, Any] = {}
        if margin is not None:
            out["draw_verdict"] = draw_verdict(self, margin, alpha=self.alpha)
        out.update({"sd_init": self.sd_init.as_dict(), "sd_data": self.sd_data.as_dict(),
                    "sd_resid": self.sd_resid.as_dict(), "init_share": self.init_share.as_dict(),
                    "by_sigma_w": [lv.as_dict() for lv in self.by_sigma_w]})
        return out


# Complete tables ---------------------------------------------------------------------------------------

def complete_block(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The largest complete sub-table that dropping whole init rows and data columns leaves, by the cube's rule
    (:func:`initmem.cube.crossed.complete_crossed_block`, the one the scale verdict's seed tests use too).

    A cell (i, j) is missing when any leading entry of ``y[..., i, j]`` is NaN (a run lost at any sigma_w
    drops the pair everywhere: the components compare levels on the same runs). While cells are missing, the
    row or column that discards the fewest observed cells among those holding a missing cell is dropped
    (ties: the one removing more missing cells, then rows before columns, then the lower index), so the
    result is deterministic and depends on which runs exist, never on their values.

    Parameters
    ----------
    y : ndarray, shape (..., I, J)
        The metric, init seeds along the second-to-last axis and data seeds along the last.

    Returns
    -------
    (y_complete, kept_init_idx, kept_data_idx)
        The sub-table ``y[..., kept_init_idx, :][..., kept_data_idx]`` (no NaN), and the kept indices (sorted).
        Either index may come back empty when nothing complete remains.

    Raises
    ------
    UserError
        When ``y`` has fewer than two dimensions.
    """
    y = np.asarray(y, dtype=float)
    if y.ndim < 2:
        raise UserError(f"a crossed table needs init and data axes, got shape {y.shape}")
    rows, cols = complete_crossed_block(np.isfinite(y))
    return y[..., rows, :][..., cols], rows, cols


# The init mean square's degrees of freedom --------------------------------------------------------------

def _row_deviations(y: np.ndarray) -> np.ndarray:
    """Each init seed's row mean minus its level's mean, ``d[..., L, I]`` of tables ``y[..., L, I, J]``."""
    r = y.mean(axis=-1)
    return r - r.mean(axis=-1, keepdims=True)


def _init_kurtosis(d: np.ndarray) -> np.ndarray:
    """The small-sample adjusted excess kurtosis G2 of q_i = mean_l d[l, i]^2 (K_hat - 3 with
    K_hat = I sum q^2 / (sum q)^2; Joanes & Gill's G2, unbiased for normal draws at one level); 0 below four
    init seeds and where every q is zero."""
    q = (d**2).mean(axis=-2)
    n = q.shape[-1]
    if n < 4:
        return np.zeros(q.shape[:-1])
    tot = q.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(tot > 0, n * (q**2).sum(axis=-1) / tot**2, 3.0 - 6.0 / (n + 1))
    return (n - 1) / ((n - 2) * (n - 3)) * ((n + 1) * (k - 3.0) + 6.0)


def _shared_fraction(d: np.ndarray, ms_e: np.ndarray, n_data: int) -> np.ndarray:
    """c = 1'S_a 1 / (L tr S_a) of the init effects' covariance S_a across the L levels, in [1/L, 1]: the row
    deviations' shared and total sums of squares less the residual's part (MS_E / J per row mean, independent
    across levels), clipped; 1 (no credit for independent levels) where the init part is not positive."""
    n_lev, n_init = d.shape[-2:]
    noise = (n_init - 1) * ms_e / n_data
    shared = (d.mean(axis=-2) ** 2).sum(axis=-1) - noise / n_lev
    total = (d**2).mean(axis=-2).sum(axis=-1) - noise
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(total > 0, shared / total, 1.0)
    return np.clip(c, 1.0 / n_lev, 1.0)


def _init_df(d: np.ndarray, ms_e: np.ndarray, n_data: int) -> tuple[np.ndarray, np.ndarray]:
    """(df_lower, df_upper) of the pooled init mean square from the row deviations ``d[..., L, I]`` and the
    pooled residual mean square (see :func:`init_mean_square_df`)."""
    n_lev, n_init = d.shape[-2:]
    kappa = np.maximum(0.0, KURTOSIS_FACTOR * _init_kurtosis(d))
    df_lower = np.minimum(n_init - 1.0, 2.0 / (2.0 / (n_init - 1) + kappa / n_init))
    scale = TAIL_SCALE if n_lev >= MIN_LEVELS_FOR_TAIL_SCALE else TAIL_SCALE_FEW_LEVELS
    tail = scale * (n_init / _shared_fraction(d, ms_e, n_data)) ** TAIL_EXPONENT
    return df_lower, np.minimum(n_init - 1.0, tail)


def init_mean_square_df(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Degrees of freedom of the pooled init mean square in SD_init's lower and upper bounds.

    Both are at most I - 1, the conservative df of one level. The lower bound's (the "keeps its draw" side)
    shrink with the init seeds' sample kurtosis, so that an outlying draw cannot carry a false "keeps";
    the upper bound's stay under a tail allowance, so that a sample which happens to miss a heavy tail
    cannot carry a false "forgets" (module docstring: the formulas and why).

    Parameters
    ----------
    y : ndarray, shape (..., L, I, J)
        Complete tables (sigma_w level, init seed, data seed); leading dims are independent tables.

    Returns
    -------
    (df_lower, df_upper) : ndarray, shape (...)
        Both at most I - 1. With four or fewer init seeds the tail allowance never binds (``df_upper`` is
        I - 1); with three or fewer there is no kurtosis estimate either (both I - 1).

    Raises
    ------
    UserError
        When ``y`` has fewer than three dims, fewer than two init or data seeds, or a missing cell.
    """
    y = np.asarray(y, dtype=float)
    if y.ndim < 3 or y.shape[-2] < 2 or y.shape[-1] < 2:
        raise UserError(f"init_mean_square_df needs tables (..., sigma_w, init, data) with at least 2 init "
                        f"and 2 data seeds, got shape {y.shape}")
    if not np.isfinite(y).all():
        raise UserError("the crossed table has missing cells: drop incomplete init seeds and data seeds first "
                        "(complete_block)")
    ms = mean_squares(y)
    ms_e = ms.ss_e.sum(-1) / (y.shape[-3] * ms.df_e)
    return _init_df(_row_deviations(y), ms_e, y.shape[-1])


# The vectorised core ------------------------------------------------------------------------------------

def _pooled_reml(ss: np.ndarray, df: np.ndarray, n_init: int, n_data: int) -> np.ndarray:
    """REML (s2_init, s2_data, s2_resid) of balanced tables from pooled sums of squares ``ss[..., 3]`` on
    ``df[3]`` (init, data, residual strata), boundary included: the best feasible of the four active sets
    (as :func:`initmem.stats.reml.reml_balanced`). All zero where every sum of squares is zero."""
    best_ll = np.full(ss.shape[:-1], -np.inf)
    best = np.zeros((*ss.shape[:-1], 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        for zero_a in (False, True):
            for zero_b in (False, True):
                pool = np.array([zero_a, zero_b, True])
                lam_e = ss[..., pool].sum(axis=-1) / df[pool].sum()
                lam_a = lam_e if zero_a else ss[..., 0] / df[0]
                lam_b = lam_e if zero_b else ss[..., 1] / df[1]
                lam = np.stack(np.broadcast_arrays(lam_a, lam_b, lam_e), axis=-1)
                ll = -0.5 * np.sum(df * (_LOG_2PI + np.log(lam)) + ss / lam, axis=-1)
                ok = (lam_e > 0) & (lam_a >= lam_e) & (lam_b >= lam_e) & (ll > best_ll + 1e-12)
                best_ll = np.where(ok, ll, best_ll)
                best = np.where(ok[..., None], lam, best)
    lam_a, lam_b, lam_e = best[..., 0], best[..., 1], best[..., 2]
    return np.stack([np.maximum(0.0, (lam_a - lam_e) / n_data), np.maximum(0.0, (lam_b - lam_e) / n_init),
                     lam_e], axis=-1)


def _mls_difference(s1: np.ndarray, s2: np.ndarray, n1: Any, n2: Any, alpha: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """MLS (1 - alpha) lower and upper bounds of theta = s1 - s2 for independent mean squares s1 (df n1) and
    s2 (df n2), truncated at 0 (Burdick & Graybill 1992, eqs. 3.6-3.7; Ting et al. 1990).

    F quantiles are upper-tail points: F_{a; n, inf} = chi2_{n, 1-a} / n.
    """
    n1, n2 = np.asarray(n1, float), np.asarray(n2, float)
    f_a_n1 = stats.chi2.ppf(1 - alpha, n1) / n1          # F_{alpha; n1, inf}
    f_1a_n1 = stats.chi2.ppf(alpha, n1) / n1             # F_{1-alpha; n1, inf}
    f_a_n2 = stats.chi2.ppf(1 - alpha, n2) / n2
    f_1a_n2 = stats.chi2.ppf(alpha, n2) / n2
    f_a_12 = stats.f.ppf(1 - alpha, n1, n2)              # F_{alpha; n1, n2}
    f_1a_12 = stats.f.ppf(alpha, n1, n2)                 # F_{1-alpha; n1, n2}
    g1, h1 = 1 - 1 / f_a_n1, 1 / f_1a_n1 - 1
    g2, h2 = 1 - 1 / f_a_n2, 1 / f_1a_n2 - 1
    g12 = ((f_a_12 - 1) ** 2 - g1**2 * f_a_12**2 - h2**2) / f_a_12
    h12 = ((1 - f_1a_12) ** 2 - h1**2 * f_1a_12**2 - g2**2) / f_1a_12
    theta = s1 - s2
    v_l = g1**2 * s1**2 + h2**2 * s2**2 + g12 * s1 * s2
    v_u = h1**2 * s1**2 + g2**2 * s2**2 + h12 * s1 * s2
    lower = theta - np.sqrt(np.maximum(v_l, 0.0))
    upper = theta + np.sqrt(np.maximum(v_u, 0.0))
    return np.maximum(lower, 0.0), np.maximum(upper, 0.0)


def _gpq_chi(df: float, draws: int, stream: int) -> np.ndarray:
    """chi^2_df / df draws of one fixed stream (so every table with the same df gets the same draws)."""
    return np.random.default_rng([GPQ_SEED, stream]).chisquare(df, draws) / df


def _share_gpq(ms: np.ndarray, df_init: tuple[np.ndarray, np.ndarray], df_data: float, df_resid: float,
               n_init: int, n_data: int, alpha: float, draws: int = GPQ_DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, 1 - alpha) quantiles of the init share's generalized pivotal quantity, ``ms[..., 3]`` the
    pooled (init, data, residual) mean squares; the init mean square's df ``df_init`` = (for the alpha
    quantile, for the 1 - alpha quantile), arrays over the leading dims."""
    chi_b, chi_e = _gpq_chi(df_data, draws, 1), _gpq_chi(df_resid, draws, 2)
    flat = ms.reshape(-1, 3)
    out = []
    for q, df_a in ((alpha, df_init[0]), (1 - alpha, df_init[1])):
        df_a = np.broadcast_to(np.asarray(df_a, float), ms.shape[:-1]).reshape(-1)
        res = np.empty(flat.shape[0])
        step = max(1, 2_000_000 // draws)
        with np.errstate(divide="ignore", invalid="ignore"):
            for d in np.unique(df_a):
                idx = np.flatnonzero(df_a == d)
                chi_a = _gpq_chi(float(d), draws, 0)
                for s in range(0, idx.size, step):
                    m = flat[idx[s:s + step]]
                    va = np.maximum(0.0, (m[:, :1] / chi_a - m[:, 2:] / chi_e) / n_data)
                    vb = np.maximum(0.0, (m[:, 1:2] / chi_b - m[:, 2:] / chi_e) / n_init)
                    share = va / (va + vb + m[:, 2:] / chi_e)
                    res[idx[s:s + step]] = np.quantile(share, q, axis=-1)
        out.append(res.reshape(ms.shape[:-1]))
    return out[0], out[1]


def _components(y: np.ndarray, alpha: float, *, df_init: Any = None, df_init_upper: Any = None,
                df_resid: Any = None, share: bool = True) -> dict[str, np.ndarray]:
    """The pooled components of ``y[..., L, I, J]`` (complete), vectorised over leading dims.

    Returns arrays (leading dims) keyed ``<quantity>_<estimate|lower|upper>`` for sd_init, sd_data, sd_resid
    and init_share (the share's bounds only with ``share``), and ``df_init_lower`` / ``df_init_upper``.
    ``df_init`` replaces the init mean square's df of both bounds (``df_init_upper`` that of the upper bound
    alone) and ``df_resid`` the residual's conservative df: the calibration study's alternatives.
    """
    n_lev, n_init, n_data = y.shape[-3:]
    ms = mean_squares(y)  # arrays over (..., L)
    d_a, d_b, d_e = ms.df_level, ms.df_seed, ms.df_e
    ss = np.stack([ms.ss_level.sum(-1), ms.ss_seed.sum(-1), ms.ss_e.sum(-1)], axis=-1)
    s2 = _pooled_reml(ss, n_lev * np.array([d_a, d_b, d_e], float), n_init, n_data)
    pooled = ss / (n_lev * np.array([d_a, d_b, d_e], float))          # mean_l MS_k,l
    if df_init is None:
        n_a, n_a_up = _init_df(_row_deviations(y), pooled[..., 2], n_data)
    else:
        n_a = n_a_up = np.broadcast_to(np.asarray(df_init, float), pooled.shape[:-1])
    if df_init_upper is not None:
        n_a_up = np.broadcast_to(np.asarray(df_init_upper, float), pooled.shape[:-1])
    n_e = d_e if df_resid is None else df_resid
    lo_a, _ = _mls_difference(pooled[..., 0] / n_data, pooled[..., 2] / n_data, n_a, n_e, alpha)
    _, up_a = _mls_difference(pooled[..., 0] / n_data, pooled[..., 2] / n_data, n_a_up, n_e, alpha)
    lo_b, up_b = _mls_difference(pooled[..., 1] / n_init, pooled[..., 2] / n_init, d_b, n_e, alpha)
    ms_e = pooled[..., 2]
    n_e_arr = np.asarray(n_e, float)
    out = {
        "sd_init_estimate": np.sqrt(s2[..., 0]), "sd_init_lower": np.sqrt(lo_a), "sd_init_upper": np.sqrt(up_a),
        "sd_data_estimate": np.sqrt(s2[..., 1]), "sd_data_lower": np.sqrt(lo_b), "sd_data_upper": np.sqrt(up_b),
        "sd_resid_estimate": np.sqrt(s2[..., 2]),
        "sd_resid_lower": np.sqrt(n_e_arr * ms_e / stats.chi2.ppf(1 - alpha, n_e_arr)),
        "sd_resid_upper": np.sqrt(n_e_arr * ms_e / stats.chi2.ppf(alpha, n_e_arr)),
        "df_init_lower": np.asarray(n_a, float), "df_init_upper": np.asarray(n_a_up, float),
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        out["init_share_estimate"] = np.where(s2.sum(-1) > 0, s2[..., 0] / s2.sum(-1), np.nan)
    if share:
        out["init_share_lower"], out["init_share_upper"] = _share_gpq(
            pooled, (n_a, n_a_up), float(d_b), float(np.asarray(n_e)), n_init, n_data, alpha)
    return out


def _interval(c: dict[str, np.ndarray], name: str, idx: Any = ()) -> Interval:
    return Interval(float(c[f"{name}_estimate"][idx]), float(c[f"{name}_lower"][idx]),
                    float(c[f"{name}_upper"][idx]))


def _check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, numbers.Real) and 0 < alpha < 0.5):
        raise UserError(f"alpha must be a number in (0, 0.5), got {alpha!r}")
    return float(alpha)


def _check_margin(margin: float) -> float:
    if not (isinstance(margin, numbers.Real) and math.isfinite(margin) and margin > 0):
        raise UserError(f"draw_margin must be a positive number, got {margin!r}")
    return float(margin)


def _as_table(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.ndim == 2:
        y = y[None]
    if y.ndim != 3:
        raise UserError(f"a crossed table has shape (sigma_w, init, data), got {y.shape}")
    if y.shape[0] < 1 or y.shape[1] < 2 or y.shape[2] < 2:
        raise UserError(f"the crossed components need at least 2 init seeds and 2 data seeds "
                        f"with every pair complete, got {y.shape[1]} x {y.shape[2]}")
    if not np.isfinite(y).all():
        raise UserError("the crossed table has missing cells: drop incomplete init seeds and data seeds "
                        "first (complete_block)")
    return y


# Public functions ---------------------------------------------------------------------------------------

def crossed_components(y: np.ndarray, *, alpha: float = ALPHA,
                       sigma_w: Sequence[float] | None = None) -> CrossedComponents:
    """SD_init, SD_data, SD_resid and the init share of one pipeline, with (1 - alpha) one-sided bounds.

    Parameters
    ----------
    y : ndarray, shape (L, I, J) or (I, J)
        The final metric per sigma_w level, init seed and data seed; complete (run :func:`complete_block`
        first). A 2-d table is one level.
    alpha : float
        Each bound is a (1 - alpha) one-sided bound, so [lower, upper] is a (1 - 2 alpha) interval; the draw
        verdict uses the same bounds.
    sigma_w : sequence of float, optional
        The levels' sigma_w values for ``by_sigma_w`` (default: their indices).

    Returns
    -------
    CrossedComponents
        Pooled over levels (conservative df: valid whether the effects are independent or identical across
        levels, and shrunk for non-normal init effects by :func:`init_mean_square_df`) and ``by_sigma_w``,
        each level's own table; all SDs in the metric's units.

    Raises
    ------
    UserError
        When a cell is missing, fewer than two init or data seeds remain, ``sigma_w`` does not match the
        levels, or ``alpha`` is not in (0, 0.5).
    """
    alpha = _check_alpha(alpha)
    y = _as_table(y)
    n_lev, n_init, n_data = y.shape
    levels = list(range(n_lev)) if sigma_w is None else [float(s) for s in sigma_w]
    if len(levels) != n_lev:
        raise UserError(f"sigma_w names {len(levels)} levels, the table has {n_lev}")
    pooled = _components(y, alpha)
    per = _components(y[:, None], alpha)  # each level its own (1, I, J) table
    names = ("sd_init", "sd_data", "sd_resid", "init_share")
    by = tuple(LevelComponents(levels[k], **{n: _interval(per, n, k) for n in names}) for k in range(n_lev))
    d_e = (n_init - 1) * (n_data - 1)
    return CrossedComponents(**{n: _interval(pooled, n) for n in names}, n_levels=n_lev, n_init=n_init,
                             n_data=n_data, alpha=alpha,
                             df=(float(pooled["df_init_lower"]), float(n_data - 1), float(d_e)),
                             by_sigma_w=by, df_init_upper=float(pooled["df_init_upper"]))


def draw_verdict(components_or_y: CrossedComponents | np.ndarray, margin: float, alpha: float = ALPHA) -> str:
    """Whether the pipeline keeps its initial draw: SD_init's bounds against the margin.

    Parameters
    ----------
    components_or_y : CrossedComponents or ndarray (L, I, J)
        Components from :func:`crossed_components` (at the same ``alpha``), or the complete table itself.
    margin : float
        The smallest SD_init that counts as keeping the draw, in the metric's units (0.005 = half a point of
        accuracy).
    alpha : float
        The error rate of each verdict.

    Returns
    -------
    str
        "keeps its draw" when the (1 - alpha) lower bound of SD_init exceeds the margin, "forgets its draw"
        when the (1 - alpha) upper bound is below it, else "undecided".

    Raises
    ------
    UserError
        When the margin is not a positive number, or the components were computed at another alpha.
    """
    alpha, margin = _check_alpha(alpha), _check_margin(margin)
    comp = components_or_y
    if not isinstance(comp, CrossedComponents):
        comp = crossed_components(np.asarray(comp), alpha=alpha)
    elif not math.isclose(comp.alpha, alpha):
        raise UserError(f"the components carry alpha = {comp.alpha}, the verdict asks for alpha = {alpha}")
    if comp.sd_init.lower > margin:
        return KEEPS_DRAW
    if comp.sd_init.upper < margin:
        return FORGETS_DRAW
    return UNDECIDED_DRAW


def init_share_curve(y_t: np.ndarray, epochs: Sequence[Any]) -> dict[str, list[float]]:
    """The draw's forgetting curve: pooled point estimates of SD_init, SD_data and the init share per epoch.

    Descriptive only (no intervals). Each epoch keeps its own largest complete block (:func:`complete_block`);
    an epoch with fewer than two complete init or data seeds gets NaN.

    Parameters
    ----------
    y_t : ndarray, shape (T, L, I, J)
        The metric at each evaluated epoch, NaN where a run has no value.
    epochs : sequence
        The T epochs.

    Returns
    -------
    dict
        ``{"epoch": [...], "init_share": [...], "sd_init": [...], "sd_data": [...]}``, lists of length T.

    Raises
    ------
    UserError
        When ``y_t`` is not 4-d or ``epochs`` does not have one entry per epoch.
    """
    y_t = np.asarray(y_t, dtype=float)
    if y_t.ndim != 4:
        raise UserError(f"the curve table has shape (epoch, sigma_w, init, data), got {y_t.shape}")
    epochs = list(epochs)
    if len(epochs) != y_t.shape[0]:
        raise UserError(f"{len(epochs)} epochs for a curve table of {y_t.shape[0]}")
    out: dict[str, list[float]] = {"epoch": epochs, "init_share": [], "sd_init": [], "sd_data": []}
    for t in range(y_t.shape[0]):
        block, rows, cols = complete_block(y_t[t])
        if rows.size < 2 or cols.size < 2:
            vals = {"init_share": math.nan, "sd_init": math.nan, "sd_data": math.nan}
        else:
            c = _components(block, ALPHA, share=False)
            vals = {k: float(c[f"{k}_estimate"]) for k in ("init_share", "sd_init", "sd_data")}
        for k, v in vals.items():
            out[k].append(v)
    return out


def simulate_tables(rng: np.random.Generator, reps: int, n_levels: int, n_init: int, n_data: int, sd_init: float,
                    sd_data: float, sd_resid: float, *, shared: float = 0.0) -> np.ndarray:
    """Complete crossed tables ``y[rep, l, i, j] = a[l, i] + b[l, j] + e[l, i, j]`` with known components.

    Parameters
    ----------
    rng : numpy.random.Generator
        The random stream.
    reps : int
        Tables to draw.
    n_levels, n_init, n_data : int
        sigma_w levels, init seeds and data seeds of each table.
    sd_init, sd_data, sd_resid : float
        The SDs of the init effects a, the data effects b and the interaction e, in the metric's units.
    shared : float, default 0
        The correlation of an init (and a data) seed's effect across the levels: 0 draws them anew at every
        level, 1 gives a seed the same effect at every level, where the pooled table holds only I - 1 degrees
        of freedom about SD_init (the least power). The interaction is drawn anew at every level.

    Returns
    -------
    ndarray, shape (reps, n_levels, n_init, n_data)
    """
    if not 0.0 <= shared <= 1.0:
        raise ValueError(f"shared must be in [0, 1], got {shared!r}")

    def effect(size: tuple[int, ...], sd: float) -> np.ndarray:
        common = rng.standard_normal((size[0], 1, *size[2:]))
        return sd * (math.sqrt(shared) * common + math.sqrt(1.0 - shared) * rng.standard_normal(size))

    a = effect((reps, n_levels, n_init, 1), sd_init)
    b = effect((reps, n_levels, 1, n_data), sd_data)
    return a + b + sd_resid * rng.standard_normal((reps, n_levels, n_init, n_data))


def draw_verdict_rates(sd_init: float, sd_data: float, sd_resid: float, *, n_levels: int, n_init: int,
                       n_data: int, margin: float, alpha: float = ALPHA, shared: float = 0.0, reps: int = 4000,
                       seed: int = 0) -> dict[str, float]:
    """How often the draw verdict says each thing on a design, when the components are known.

    Why: the verdict's power depends on the init seeds (its SD_init bounds have I - 1 degrees of freedom at
    most) and on how much of the noise the data seeds average away, so the design that decides is found by
    simulating it: the same bounds (:func:`crossed_components`, vectorised) on tables drawn with the given SDs.

    Parameters
    ----------
    sd_init, sd_data, sd_resid : float
        The components to plan for, in the metric's units.
    n_levels, n_init, n_data : int
        The design: sigma_w levels, init seeds (at least 2), data seeds (at least 2).
    margin : float
        The draw verdict's margin on SD_init, in the metric's units.
    alpha : float
        Each bound's error rate, as in the analysis.
    shared : float, default 0
        The correlation of a seed's effect across levels (:func:`simulate_tables`); plan at 1 for the worst
        case.
    reps : int, default 4000
        Simulated tables (the Monte Carlo SE of a rate near 0.8 is then 0.6 points).
    seed : int, default 0
        The random seed.

    Returns
    -------
    dict
        ``keeps``, ``forgets`` and ``undecided``: the fractions of tables with each verdict (they sum to 1).

    Raises
    ------
    UserError
        A design with fewer than 2 init or data seeds or no level, an SD below 0, a margin that is not positive,
        or ``alpha`` outside (0, 0.5).
    """
    alpha = _check_alpha(alpha)
    if n_levels < 1 or n_init < 2 or n_data < 2:
        raise UserError(f"a crossed design needs a sigma_w level and 2 init and 2 data seeds, not "
                        f"{n_levels} x {n_init} x {n_data}")
    if min(sd_init, sd_data, sd_resid) < 0 or not all(map(math.isfinite, (sd_init, sd_data, sd_resid))):
        raise UserError("the components to plan for must be finite SDs >= 0")
    margin = _check_margin(margin)
    rng = np.random.default_rng(seed)
    keeps = forgets = 0
    chunk = max(1, 2_000_000 // (n_levels * n_init * n_data))   # tables per batch: about 16 MB of floats
    for start in range(0, reps, chunk):
        y = simulate_tables(rng, min(chunk, reps - start), n_levels, n_init, n_data, sd_init, sd_data, sd_resid,
                            shared=shared)
        c = _components(y, alpha, share=False)
        keeps += int((c["sd_init_lower"] > margin).sum())
        forgets += int((c["sd_init_upper"] < margin).sum())
    return {"keeps": keeps / reps, "forgets": forgets / reps, UNDECIDED: (reps - keeps - forgets) / reps}


__all__ = ["CrossedComponents", "DRAW_VERDICTS", "FORGETS_DRAW", "Interval", "KEEPS_DRAW", "LevelComponents",
           "UNDECIDED_DRAW", "complete_block", "crossed_components", "draw_verdict", "draw_verdict_rates",
           "init_mean_square_df", "init_share_curve", "simulate_tables"]
