"""The error spent at each look of the sequential design (docs/sequential.md). The planner applies the
analysis's rule look by look to simulated tables (models/plan.py, ``sequential_decisions``), which is how the
design is calibrated and how its expected seeds are measured (benchmarks/sequential_calibration.py).

Both designs spend alpha with the Lan-DeMets spending function of the O'Brien-Fleming type,
alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at the information fraction t_k = n_k / n_max, used one-sided
for each claim ("remembers" and "forgets" are separate claims, each of whose false rate must stay <= alpha):

- ``UNION`` (:func:`look_levels`): look k decides at the increment
  alpha*(t_k) - alpha*(t_{k-1}); by the union bound the false rate over all looks is at most their sum, alpha,
  whatever the correlation between looks.
- ``EXACT`` (:func:`exact_levels`): look k decides at the nominal level whose boundary spends exactly that
  increment under the canonical joint distribution of group-sequential statistics. Looks are positively
  correlated, so the nominal levels sum to more than alpha and the last look gets more (0.043 instead of
  0.026 for looks 4, 8, 12, 16). But the canonical form is only approximate for t tests with few degrees of
  freedom: at a spread of exactly delta on two levels (where the intersection-union test is a TOST at its
  boundary) the false "forgets" rate is 5.2% [5.1, 5.4] (100,000 simulated pipelines; docs/sequential.md).
- ``PAIRED_T`` (:func:`paired_t_levels`): the same construction for the statistics
  the rule actually tests, Student t statistics of paired differences on nested seeds (n_k - 1 degrees of
  freedom at look k), whose joint law under the boundary null is free of the noise scale and is simulated
  once (fixed seed, 10^6 paths). Last look 0.0405 for looks 4, 8, 12, 16. **The analysis's design**
  (``SEQUENTIAL_DESIGN``).

benchmarks/sequential_calibration.py measures the whole rule (the model's posterior by the planner's
quadrature and the paired tests) under each design (docs/sequential.md). Under the rule whose "forgets"
splits alpha between its two routes (models/paired.py, ``forgets_levels``) every false verdict of PAIRED_T
stays within 5% on every design measured (two levels at delta, where the intersection-union test decides
alone: 4.3% [3.9, 4.7] over 10,000 pipelines), and it decides 89.5% of demo-scale nulls "forgets" where the
union bound decides 80.3%, with the same expected seeds. Before that split the rule's own model route was
liberal under seed slopes at 16 seeds (5.6% in the fixed design) and PAIRED_T carried it to 6.2%, which is
why the union bound was the design until then.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from initmem.names import ALPHA

UNION = "group-sequential, Lan-DeMets O'Brien-Fleming-type spending, union bound over looks"
EXACT = ("group-sequential, Lan-DeMets O'Brien-Fleming-type spending, exact one-sided boundaries of the canonical "
         "joint distribution (Jennison & Turnbull 2000, ch. 7), per claim")
PAIRED_T = ("group-sequential, Lan-DeMets O'Brien-Fleming-type spending, exact one-sided levels for the seeds' "
            "paired t tests on nested seeds (simulated), per claim")
DESIGNS = {"union": UNION, "exact": EXACT, "paired-t": PAIRED_T}
SEQUENTIAL_DESIGN = PAIRED_T   # the analysis's and the planner's design
N_SIM = 1_000_000   # simulated paths of paired_t_levels: its rates within about 0.0002 of the spending
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


def paired_t_levels(looks: Sequence[int], alpha: float = ALPHA, n_sim: int = N_SIM, seed: int = 0) -> list[float]:
    """The nominal one-sided level a_k of each look's paired t test such that, under the boundary null,
    P(reject at some look <= k) = alpha*(t_k): :func:`exact_levels` for the statistics the rule tests.

    Why: each claim's design-based test is a one-sided t test of the seeds' paired differences with n_k - 1
    degrees of freedom at look k, on nested seeds; at a spread of exactly delta on two levels the false
    "forgets" is exactly such a test at its boundary. Its t statistics are less correlated across looks than
    the canonical normal ones (the seeds' SD is re-estimated), so the canonical levels overspend (5.2% instead
    of 5%). The joint law of (T_1, ..., T_K) does not depend on the noise scale, so it is simulated once from
    N(0, 1) differences (``n_sim`` paths, fixed ``seed``: deterministic); look k's boundary is the quantile
    of the paths still open whose first crossing spends the increment alpha*(t_k) - alpha*(t_{k-1}), and a_k
    is its t tail probability. One look gives alpha exactly."""
    return list(_paired_t_levels(tuple(int(n) for n in looks), float(alpha), int(n_sim), int(seed)))


@functools.lru_cache(maxsize=32)
def _paired_t_levels(looks: tuple[int, ...], alpha: float, n_sim: int, seed: int) -> tuple[float, ...]:
    if len(looks) == 1:
        return (alpha,)
    from scipy.stats import t as student

    rng = np.random.default_rng(seed)
    spent = [obrien_fleming_spent(n / looks[-1], alpha) for n in looks]
    inc = np.diff([0.0, *spent])
    s1, s2 = np.zeros(n_sim), np.zeros(n_sim)
    open_ = np.ones(n_sim, dtype=bool)
    levels, seen = [], 0
    for n_k, a_k in zip(looks, inc, strict=True):
        for _ in range(n_k - seen):     # one seed at a time: memory stays n_sim floats
            x = rng.standard_normal(n_sim)
            s1 += x
            s2 += x * x
        seen = n_k
        mean = s1 / n_k
        t_stat = mean * np.sqrt(n_k) / np.sqrt(np.maximum(s2 - n_k * mean * mean, 1e-300) / (n_k - 1))
        m = int(round(a_k * n_sim))     # paths that first cross at this look
        live = t_stat[open_]
        c = float(np.partition(live, live.size - m)[live.size - m]) if 0 < m <= live.size else np.inf
        levels.append(float(student.sf(c, n_k - 1)))
        open_ &= t_stat < c
    return tuple(levels)


def _crossing(b: float, x: np.ndarray, w: np.ndarray, sd: float, target: float) -> float:
    """P(continued to the previous look, S_k >= b) minus the look's spending increment."""
    return float(w @ norm.sf((b - x) / sd)) - target


def design_levels(looks: Sequence[int], alpha: float = ALPHA, design: str = SEQUENTIAL_DESIGN) -> list[float]:
    """Each look's level under ``design`` (``PAIRED_T``, ``EXACT`` or ``UNION``; also their short names)."""
    design = DESIGNS.get(design, design)
    if design == PAIRED_T:
        return paired_t_levels(looks, alpha)
    if design == EXACT:
        return exact_levels(looks, alpha)
    if design == UNION:
        return look_levels(looks, alpha)
    raise ValueError(f"unknown sequential design {design!r}")


@dataclass(frozen=True)
class Spending:
    """The error a claim may spend at one analysis: a fixed design's ``alpha``, or one look of a sequential design.

    Why: every verdict splits alpha into shares (the ordered test's extreme pair and fallback, the two routes to
    "forgets"). A spending function is not linear in alpha, so a share's level at look k is computed from the
    share's own allotment, ``design_levels(looks, share * alpha)[k]``; multiplying the full-alpha level by the
    share overspends it. With no ``looks`` the design is fixed and a share's level is ``share * alpha``.
    """

    alpha: float = ALPHA
    looks: tuple[int, ...] = ()
    look: int = 0                     # index into ``looks``
    design: str = SEQUENTIAL_DESIGN

    def level(self, share: float = 1.0) -> float:
        """The level at this analysis of a claim allotted ``share`` of alpha over the whole design."""
        if not self.looks:
            return float(self.alpha * share)
        return float(design_levels(self.looks, self.alpha * share, self.design)[self.look])


def as_spending(alpha: float | Spending) -> Spending:
    """``alpha`` as a :class:`Spending` (a plain float is a fixed design)."""
    return alpha if isinstance(alpha, Spending) else Spending(float(alpha))


__all__ = ["DESIGNS", "EXACT", "PAIRED_T", "SEQUENTIAL_DESIGN", "UNION", "Spending", "as_spending", "design_levels",
           "exact_levels", "look_levels", "obrien_fleming_spent", "paired_t_levels"]
