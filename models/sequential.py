"""The error spent at each look of the sequential design (docs/sequential.md). The planner applies the
analysis's rule look by look to simulated tables (models/plan.py, ``sequential_decisions``), which is how the
design is calibrated and how its expected seeds are measured (benchmarks/sequential_calibration.py).

Both designs spend alpha with the Lan-DeMets spending function of the O'Brien-Fleming type,
alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at the information fraction t_k = n_k / n_max, used one-sided
for each claim ("remembers" and "forgets" are separate claims, each of whose false rate must stay <= alpha):

- ``UNION`` (:func:`look_levels`): look k decides at the increment alpha*(t_k) - alpha*(t_{k-1}); by the union
  bound the false rate over all looks is at most their sum, alpha, whatever the correlation between looks.
- ``EXACT`` (:func:`exact_levels`, the analysis's design): look k decides at the nominal level whose boundary
  spends exactly that increment under the canonical joint distribution of group-sequential statistics. Looks
  are positively correlated, so the nominal levels sum to more than alpha and the last look gets more (0.043
  instead of 0.026 for looks 4, 8, 12, 16). The canonical form is an approximation for t tests with few
  degrees of freedom and for the model's posterior; benchmarks/sequential_calibration.py measures the rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from initmem.names import ALPHA

UNION = "group-sequential, Lan-DeMets O'Brien-Fleming-type spending, union bound over looks"
EXACT = ("group-sequential, Lan-DeMets O'Brien-Fleming-type spending, exact one-sided boundaries of the canonical "
         "joint distribution (Jennison & Turnbull 2000, ch. 7), per claim")
DESIGNS = {"union": UNION, "exact": EXACT}
_GRID = 1201     # points of the recursion's grid of the score statistic (levels to about 1e-6)
_LOW = -10.0     # the grid's lower end, in SDs of the score at the last look (var(S_k) = t_k <= 1)


def obrien_fleming_spent(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: the error spent by information fraction ``t`` in (0, 1]."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(min(t, 1.0))))


def look_levels(looks: Sequence[int], alpha: float = ALPHA) -> list[float]:
    """The union bound's levels: each look decides at the increment of the spending function at its share of
    the last look's seeds; the levels sum to alpha."""
    spent = [obrien_fleming_spent(n / looks[-1], alpha) for n in looks]
    return [s - p for s, p in zip(spent, [0.0, *spent[:-1]], strict=True)]


def exact_levels(looks: Sequence[int], alpha: float = ALPHA) -> list[float]:
    """The nominal one-sided level a_k of each look such that, under the null, P(reject at some look <= k) =
    alpha*(t_k) exactly (not just at most) in the canonical joint distribution: Z_k ~ N(0, 1) with
    corr(Z_i, Z_j) = sqrt(t_i / t_j), t_k = n_k / n_max, i.e. the score S_k = Z_k sqrt(t_k) has independent
    N(0, t_k - t_{k-1}) increments (Jennison & Turnbull 2000, ch. 7; Armitage, McPherson & Rowe's recursion).

    Why: the union bound (:func:`look_levels`) pays for looks as if they were disjoint chances; they share
    seeds, so a claim rejected at look k is likely rejected at k+1 too, and the last look can spend more.
    The recursion carries the sub-density of S_k on the continuation region (S_k < b_k) on a grid, finds b_k
    by root-finding so that the probability of first crossing at look k is the spending increment, and
    convolves with the next increment. One look gives alpha exactly. A claim stopped early by the other
    claim's verdict can only lose false verdicts, so per claim these levels keep its false rate at alpha*(1)."""
    t = np.asarray(looks, dtype=float) / float(looks[-1])
    spent = [obrien_fleming_spent(x, alpha) for x in t]
    inc = np.diff([0.0, *spent])
    levels: list[float] = []
    x = w = None
    t_prev = 0.0
    for t_k, a_k in zip(t, inc, strict=True):
        sd = math.sqrt(t_k - t_prev)
        if w is None:   # first look: S_1 ~ N(0, t_1), its boundary straight from the normal
            b = float(norm.isf(a_k)) * sd
        else:           # first crossing at look k: P(S_{k-1} continued, S_k >= b) = a_k
            b = brentq(_crossing, -20.0, 20.0, args=(x, w, sd, a_k), xtol=1e-12)
        levels.append(float(norm.sf(b / math.sqrt(t_k))))
        y = np.linspace(_LOW, b, _GRID)    # the continuation region at look k, S_k < b
        dens = norm.pdf(y / sd) / sd if w is None else norm.pdf((y[:, None] - x[None, :]) / sd) @ w / sd
        step = np.full(_GRID, y[1] - y[0])
        step[[0, -1]] /= 2.0              # trapezoid weights
        x, w, t_prev = y, dens * step, t_k
    return levels


def _crossing(b: float, x: np.ndarray, w: np.ndarray, sd: float, target: float) -> float:
    """P(continued to the previous look, S_k >= b) minus the look's spending increment."""
    return float(w @ norm.sf((b - x) / sd)) - target


def design_levels(looks: Sequence[int], alpha: float = ALPHA, design: str = EXACT) -> list[float]:
    """Each look's level under ``design`` (``EXACT`` or ``UNION``; also their short names)."""
    design = DESIGNS.get(design, design)
    if design == EXACT:
        return exact_levels(looks, alpha)
    if design == UNION:
        return look_levels(looks, alpha)
    raise ValueError(f"unknown sequential design {design!r}")


__all__ = ["DESIGNS", "EXACT", "UNION", "design_levels", "exact_levels", "look_levels", "obrien_fleming_spent"]
