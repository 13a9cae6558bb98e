"""Permutation inference for the collapse test (docs/clocks-and-collapse.md, "Inference").

The statistic D_m (mean over pipelines of the bounded log error ratio, epochs vs clock m) comes
from leave-one-pipeline-out fits that share their training pipelines, so the per-pipeline ratios
are dependent and flipping their signs as if they were independent is not a valid test.
Instead a sign pattern s in {+1, -1}^C *swaps the two coordinates* of every pipeline with
s_p = -1 (its epochs play the clock and its clock plays epochs, both as pooled-ECDF coordinates)
and the whole leave-one-out analysis is recomputed. Under the randomization null that, for
every pipeline, the labels "epoch" and "clock" of its two coordinates are exchangeable with
respect to its memory curve (what "the clock is no better than epochs" means for a design-based
test), every D_m(s) has the distribution of the observed D_m, whatever the dependence between
folds: the p-value is exact. Flat curves (no forgetting) are the practical null; the controls
in tests/test_collapse.py measure the test there. Swapping every pipeline negates D
exactly, so the null distribution is symmetric and the smallest two-sided p-value is 2^(1-C).

Several clocks are tried: the same pattern is applied to all of them and the adjusted p-values
are Westfall-Young min-p (a max-statistic procedure), which keeps the family-wise error at alpha
under any dependence between the clocks. Up to EXACT_MAX pipelines every pattern is enumerated;
beyond, Monte Carlo patterns with the add-one correction.
"""

from __future__ import annotations

import numpy as np

EXACT_MAX = 10  # 2^(10-1) = 512 distinct half patterns
N_MONTE_CARLO = 499  # random half patterns beyond EXACT_MAX
TOL = 1e-9


def half_patterns(c: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Sign patterns with s_0 = +1, the identity first; the other half are their negations.

    Returns (patterns (N, C) of +-1, exact). Monte Carlo draws repeat the identity once as the
    add-one term of an unbiased-conservative p-value.
    """
    if c <= EXACT_MAX:
        bits = (np.arange(2 ** (c - 1))[:, None] >> np.arange(c - 1)[None, :]) & 1
        return np.concatenate([np.ones((bits.shape[0], 1)), 1 - 2 * bits], 1), True
    rest = rng.choice([-1.0, 1.0], size=(N_MONTE_CARLO, c - 1))
    pats = np.concatenate([np.ones((N_MONTE_CARLO, 1)), rest], 1)
    return np.concatenate([np.ones((1, c)), pats]), False


def full_null(d_half: np.ndarray) -> np.ndarray:
    """(N, M) statistics on the half patterns -> (2N, M) on all patterns (D(-s) = -D(s))."""
    return np.concatenate([d_half, -d_half])


def _p_of(ref: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each column m: share of |ref[:, m]| >= |values[..., m]| (two-sided), NaN columns stay NaN."""
    a = np.abs(ref)
    out = np.full(np.broadcast_shapes(values.shape, (ref.shape[1],)), np.nan)
    for m in range(ref.shape[1]):
        col = a[:, m]
        if not np.isfinite(col).all():
            continue
        srt = np.sort(col)
        v = np.abs(values[..., m])
        scale = TOL * max(1.0, float(srt[-1]))
        out[..., m] = (srt.size - np.searchsorted(srt, v - scale, side="left")) / srt.size
    return out


def permutation_p(d_obs: np.ndarray, null: np.ndarray) -> np.ndarray:
    """Two-sided permutation p-values (M,) of the observed statistics against the null rows."""
    return _p_of(null, d_obs)


def min_p_adjust(d_obs: np.ndarray, null: np.ndarray, family: np.ndarray) -> np.ndarray:
    """Westfall-Young min-p adjusted p-values over the columns in ``family`` (NaN elsewhere)."""
    fam = np.flatnonzero(family)
    out = np.full(d_obs.shape, np.nan)
    if not fam.size:
        return out
    p_obs = _p_of(null[:, fam], d_obs[fam])
    p_rows = _p_of(null[:, fam], null[:, fam])  # (N, |F|): each pattern's own p-value per clock
    with np.errstate(invalid="ignore"):
        min_p = np.min(np.where(np.isnan(p_rows), np.inf, p_rows), axis=1)
    out[fam] = np.array([np.mean(min_p <= p + TOL) for p in p_obs])
    return out


__all__ = ["EXACT_MAX", "N_MONTE_CARLO", "full_null", "half_patterns", "min_p_adjust", "permutation_p"]
