"""The statistics of the sequential design (docs/sequential.md): the error spent at each look, and the
analysis's rule applied look by look to simulated tables (the planner's quadrature), which is how the
design is calibrated and how its expected seeds are measured (benchmarks/sequential_calibration.py).

Each look k decides at alpha_k, the increment of the Lan-DeMets spending function of the O'Brien-Fleming
type, alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at t_k = n_k / n_max. By the union bound the false
verdict rate over all looks is at most sum_k alpha_k = alpha, whatever the correlation between looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import norm

from initmem.models.paired import forgets_bounds, remembers_bounds
from initmem.models.plan import N_EFF, posterior_spread
from initmem.names import ALPHA


def obrien_fleming_spent(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: the error spent by information fraction ``t`` in (0, 1]."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(min(t, 1.0))))


def look_levels(looks: Sequence[int], alpha: float = ALPHA) -> list[float]:
    """Each look's level: the increment of the spending function at its share of the last look's seeds."""
    spent = [obrien_fleming_spent(n / looks[-1], alpha) for n in looks]
    return [s - p for s, p in zip(spent, [0.0, *spent[:-1]], strict=True)]


def rule_decisions(tables: np.ndarray, delta: float, alpha: float, rng: np.random.Generator,
                   sigma_w: np.ndarray, n_eff: float = N_EFF) -> np.ndarray:
    """1 remembers, -1 forgets, 0 undecided per standardised table (n, L, S): the analysis's rule at level
    ``alpha`` (models/summaries.py), the model's probabilities by quadrature, clear of the borderline band."""
    post = posterior_spread(tables, delta, rng, sigma_w=sigma_w)
    level = 1.0 - alpha
    band = 2.0 * np.sqrt(level * (1 - level) / n_eff)
    out = np.zeros(tables.shape[0], dtype=int)
    out[(post["p_gt"] >= level + band) & (remembers_bounds(tables, alpha) > delta)] = 1
    model_forgets = (post["p_lt"] >= level + band) & post["model_forgets_ok"]
    out[model_forgets | (forgets_bounds(tables, alpha) < delta)] = -1
    return out


def sequential_decisions(tables: np.ndarray, delta: float, looks: Sequence[int], rng: np.random.Generator,
                         sigma_w: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """The sequential design on standardised tables holding the last look's seeds: look k uses the first n_k
    seeds at level alpha_k and the first decision stands. Returns (verdict per table, seeds it used)."""
    verdict = np.zeros(tables.shape[0], dtype=int)
    seeds = np.full(tables.shape[0], int(looks[-1]))
    open_ = np.ones(tables.shape[0], dtype=bool)
    for n_k, a_k in zip(looks, look_levels(looks, alpha), strict=True):
        idx = np.flatnonzero(open_)
        if not idx.size:
            break
        d = rule_decisions(tables[idx, :, :n_k], delta, a_k, rng, sigma_w)
        hit = d != 0
        verdict[idx[hit]], seeds[idx[hit]] = d[hit], n_k
        open_[idx[hit]] = False
    return verdict, seeds


__all__ = ["look_levels", "obrien_fleming_spent", "rule_decisions", "sequential_decisions"]
