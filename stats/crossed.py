"""Variance components of a crossed init x data seed design, and the draw verdict (docs/crossed.md).

One pipeline's final metric on a crossed design is a (sigma_w level, init seed, data seed) table,
modelled as

    y[l, i, j] = mu_l + a[l, i] + b[l, j] + e[l, i, j],

with a[l, :] ~ N(0, SD_init_l^2), b[l, :] ~ N(0, SD_data_l^2) and e ~ N(0, SD_resid^2). The effects may be
correlated across the levels l anywhere from independent to identical (the same draw trained at another
scale), and every interval here is valid over that whole range.

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
- SD_resid: the chi-square interval of MS_E on (I - 1)(J - 1) df.
- The init share SD_init^2 / (SD_init^2 + SD_data^2 + SD_resid^2): a generalized pivotal quantity
  (Weerahandi 1993; Hannig, Iyer & Patterson 2006): each expected mean square's pivot
  MS_k df_k / chi^2_{df_k} (the three independent), the components from them truncated at 0, and the
  share's alpha and 1 - alpha quantiles over a fixed set of chi-square draws (seeded, so the interval is a
  deterministic function of the table).

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
from initmem.names import ALPHA
from initmem.stats.anova import mean_squares

KEEPS_DRAW, FORGETS_DRAW, UNDECIDED_DRAW = "keeps its draw", "forgets its draw", "undecided"
DRAW_VERDICTS = (KEEPS_DRAW, FORGETS_DRAW, UNDECIDED_DRAW)
GPQ_DRAWS = 10_000     # chi-square draws of the init share's generalized pivotal quantity
GPQ_SEED = 20_240_917  # their fixed seed: the interval is a deterministic function of the table
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

    ``df`` holds the degrees of freedom the pooled intervals used for the init, data and residual mean squares.
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


def _share_gpq(ms: np.ndarray, dfs: Sequence[float], n_init: int, n_data: int, alpha: float,
               draws: int = GPQ_DRAWS) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, 1 - alpha) quantiles of the init share's generalized pivotal quantity, ``ms[..., 3]`` the
    pooled (init, data, residual) mean squares on ``dfs`` degrees of freedom."""
    rng = np.random.default_rng(GPQ_SEED)
    chi = np.stack([rng.chisquare(d, draws) / d for d in dfs])          # (3, draws)
    flat = ms.reshape(-1, 3)
    lo, hi = np.empty(flat.shape[0]), np.empty(flat.shape[0])
    step = max(1, 2_000_000 // draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in range(0, flat.shape[0], step):
            m = flat[s:s + step, :, None] / chi[None]                     # (chunk, 3, draws) pivots
            va = np.maximum(0.0, (m[:, 0] - m[:, 2]) / n_data)
            vb = np.maximum(0.0, (m[:, 1] - m[:, 2]) / n_init)
            share = va / (va + vb + m[:, 2])
            q = np.quantile(share, [alpha, 1 - alpha], axis=-1)
            lo[s:s + step], hi[s:s + step] = q[0], q[1]
    return lo.reshape(ms.shape[:-1]), hi.reshape(ms.shape[:-1])


def _components(y: np.ndarray, alpha: float, *, df_init: Any = None, df_resid: Any = None,
                share: bool = True) -> dict[str, np.ndarray]:
    """The pooled components of ``y[..., L, I, J]`` (complete), vectorised over leading dims.

    Returns arrays (leading dims) keyed ``<quantity>_<estimate|lower|upper>`` for sd_init, sd_data, sd_resid
    and init_share (the share's bounds only with ``share``). ``df_init`` / ``df_resid`` replace the
    conservative df of the pooled init and residual mean squares (used by the calibration study only).
    """
    n_lev, n_init, n_data = y.shape[-3:]
    ms = mean_squares(y)  # arrays over (..., L)
    d_a, d_b, d_e = ms.df_level, ms.df_seed, ms.df_e
    ss = np.stack([ms.ss_level.sum(-1), ms.ss_seed.sum(-1), ms.ss_e.sum(-1)], axis=-1)
    s2 = _pooled_reml(ss, n_lev * np.array([d_a, d_b, d_e], float), n_init, n_data)
    pooled = ss / (n_lev * np.array([d_a, d_b, d_e], float))          # mean_l MS_k,l
    n_a = d_a if df_init is None else df_init
    n_e = d_e if df_resid is None else df_resid
    lo_a, up_a = _mls_difference(pooled[..., 0] / n_data, pooled[..., 2] / n_data, n_a, n_e, alpha)
    lo_b, up_b = _mls_difference(pooled[..., 1] / n_init, pooled[..., 2] / n_init, d_b, n_e, alpha)
    ms_e = pooled[..., 2]
    n_e_arr = np.asarray(n_e, float)
    out = {
        "sd_init_estimate": np.sqrt(s2[..., 0]), "sd_init_lower": np.sqrt(lo_a), "sd_init_upper": np.sqrt(up_a),
        "sd_data_estimate": np.sqrt(s2[..., 1]), "sd_data_lower": np.sqrt(lo_b), "sd_data_upper": np.sqrt(up_b),
        "sd_resid_estimate": np.sqrt(s2[..., 2]),
        "sd_resid_lower": np.sqrt(n_e_arr * ms_e / stats.chi2.ppf(1 - alpha, n_e_arr)),
        "sd_resid_upper": np.sqrt(n_e_arr * ms_e / stats.chi2.ppf(alpha, n_e_arr)),
    }
    with np.errstate(divide="ignore", invalid="ignore"):
        out["init_share_estimate"] = np.where(s2.sum(-1) > 0, s2[..., 0] / s2.sum(-1), np.nan)
    if share:
        dfs = (float(np.asarray(n_a)), float(d_b), float(np.asarray(n_e)))
        out["init_share_lower"], out["init_share_upper"] = _share_gpq(pooled, dfs, n_init, n_data, alpha)
    return out


def _interval(c: dict[str, np.ndarray], name: str, idx: Any = ()) -> Interval:
    return Interval(float(c[f"{name}_estimate"][idx]), float(c[f"{name}_lower"][idx]),
                    float(c[f"{name}_upper"][idx]))


def _check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, numbers.Real) and 0 < alpha < 0.5):
        raise UserError(f"alpha must be a number in (0, 0.5), got {alpha!r}")
    return float(alpha)


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
        levels) and ``by_sigma_w``, each level's own table; all SDs in the metric's units.

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
    d_a, d_e = n_init - 1, (n_init - 1) * (n_data - 1)
    return CrossedComponents(**{n: _interval(pooled, n) for n in names}, n_levels=n_lev, n_init=n_init,
                             n_data=n_data, alpha=alpha, df=(float(d_a), float(n_data - 1), float(d_e)),
                             by_sigma_w=by)


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
    alpha = _check_alpha(alpha)
    if not (isinstance(margin, numbers.Real) and math.isfinite(margin) and margin > 0):
        raise UserError(f"draw_margin must be a positive number, got {margin!r}")
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


__all__ = ["CrossedComponents", "DRAW_VERDICTS", "FORGETS_DRAW", "Interval", "KEEPS_DRAW", "LevelComponents",
           "UNDECIDED_DRAW", "complete_block", "crossed_components", "draw_verdict", "init_share_curve"]
