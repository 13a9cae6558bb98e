"""The design-based check of a "remembers" verdict: paired differences between sigma_w levels.

Why (docs/memory-model.md, "Verdict"): the memory model pools its run-to-run noise over the
whole levels x seeds table under one covariance structure. When the seeds do not follow it --
each seed drifting with log sigma_w in its own direction, one sigma_w level much noisier than
the others -- the model's interval for the spread is too narrow, and several levels tied at an
extreme bias max - min upward (the winner's curse). A "remembers" must then also be carried by
the seeds themselves, with no assumption on how the levels co-vary:

    for every pair of levels (j, k): the per-seed difference d_s = y[j, s] - y[k, s];
    t_jk = (|mean d| - delta) / (SD(d) / sqrt(n)),  n - 1 degrees of freedom,
    p = m x min over pairs of P(T_{n-1} >= t_jk)      (Bonferroni over the m pairs).

Each pair's t is exact for gaussian seeds whatever the levels' covariance (only the pair's own
seeds enter), and the Bonferroni bound holds for every configuration of the level means with
max - min <= delta, plateaus included; so P(p < alpha) <= alpha under any null (tested on
designs outside the model in tests/test_paired.py). With independent seeds (imported runs that
share nothing across sigma_w) the pair is compared by Welch's t.

Small pure functions over arrays (the table of one pipeline), no model import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from initmem.names import ALPHA


def _pairs(table: np.ndarray, paired: bool) -> tuple[np.ndarray, ...]:
    """Per pair of levels (j < k): indices, mean difference y_j - y_k, its SE and degrees of
    freedom; pairs without two runs a side (two shared seeds when paired) are dropped."""
    j, k = np.triu_indices(table.shape[0], 1)
    a, b = table[j], table[k]
    with np.errstate(invalid="ignore", divide="ignore"):
        if paired:
            d = a - b
            n = np.isfinite(d).sum(axis=1)
            keep = n >= 2
            diff = np.nanmean(np.where(keep[:, None], d, 0.0), axis=1)
            se = np.nanstd(np.where(keep[:, None], d, 0.0), axis=1, ddof=1) / np.sqrt(np.maximum(n, 1))
            df = (n - 1).astype(float)
        else:
            na, nb = np.isfinite(a).sum(axis=1), np.isfinite(b).sum(axis=1)
            keep = (na >= 2) & (nb >= 2)
            a, b = np.where(keep[:, None], a, 0.0), np.where(keep[:, None], b, 0.0)
            va, vb = np.nanvar(a, axis=1, ddof=1) / na, np.nanvar(b, axis=1, ddof=1) / nb
            se2 = va + vb
            welch = se2**2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
            df = np.where(se2 > 0, welch, na + nb - 2.0)
            diff, se = np.nanmean(a, axis=1) - np.nanmean(b, axis=1), np.sqrt(se2)
    return j[keep], k[keep], diff[keep], se[keep], df[keep]


def _exceed_p(diff: np.ndarray, se: np.ndarray, df: np.ndarray, delta: float) -> np.ndarray:
    """One-sided p-values of H0: |true difference| <= delta, each in its observed direction."""
    excess = np.abs(diff) - delta
    with np.errstate(invalid="ignore", divide="ignore"):
        p = stats.t.sf(excess / se, df)
    return np.where(se > 0, p, np.where(excess > 0, 0.0, 1.0))


def paired_check(table: np.ndarray, sigma_w: np.ndarray, delta: float, *, paired: bool = True,
                 alpha: float = ALPHA) -> dict[str, Any]:
    """The seeds' own evidence that some pair of levels differs by more than ``delta``.

    ``table``: (L, S) values in outcome units, NaN where a run is absent; ``sigma_w``: (L,).
    Returns the Bonferroni-adjusted p-value, whether it supports "remembers" at ``alpha``, and
    the pair that carries it (its mean difference, standard error and degrees of freedom).
    """
    j, k, diff, se, df = _pairs(np.asarray(table, dtype=float), paired)
    if j.size == 0:
        return {"p_value": None, "supports_remembers": False, "n_pairs": 0, "pair": None, "alpha": alpha,
                "test": _test_name(paired), "note": "no pair of sigma_w levels with two runs each"}
    p = _exceed_p(diff, se, df, delta)
    i = int(np.argmin(p))
    hi, lo = (j[i], k[i]) if diff[i] >= 0 else (k[i], j[i])
    adjusted = float(min(1.0, j.size * p[i]))
    return {"p_value": adjusted, "supports_remembers": bool(adjusted < alpha), "n_pairs": int(j.size),
            "alpha": alpha, "test": _test_name(paired),
            "pair": {"higher": float(sigma_w[hi]), "lower": float(sigma_w[lo]), "difference": float(abs(diff[i])),
                     "se": float(se[i]), "df": float(df[i]), "p_unadjusted": float(p[i])}}


def paired_bounds(tables: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """For complete paired (..., L, S) tables: the largest delta the check still rejects, i.e.
    max over pairs of |mean d| - t_{1 - alpha/m, S-1} SE(d). "remembers" is carried at delta
    exactly when this bound exceeds delta (the planner's vectorised form of :func:`paired_check`)."""
    tables = np.asarray(tables, dtype=float)
    n_lev, n_seed = tables.shape[-2], tables.shape[-1]
    j, k = np.triu_indices(n_lev, 1)
    d = tables[..., j, :] - tables[..., k, :]
    se = d.std(axis=-1, ddof=1) / np.sqrt(n_seed)
    crit = stats.t.ppf(1.0 - alpha / j.size, n_seed - 1)
    return (np.abs(d.mean(axis=-1)) - crit * se).max(axis=-1)


def _test_name(paired: bool) -> str:
    kind = "paired t on per-seed differences" if paired else "Welch t (independent seeds)"
    return f"{kind}, one-sided against delta, Bonferroni over pairs of sigma_w levels"


__all__ = ["paired_bounds", "paired_check"]
