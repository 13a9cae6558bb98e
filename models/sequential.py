"""The error spent at each look of the sequential design (docs/sequential.md). The planner applies the
analysis's rule look by look to simulated tables (models/plan.py, ``sequential_decisions``), which is how the
design is calibrated and how its expected seeds are measured (studies/spending_families.py,
studies/sequential_calibration.py).

A design is a spending function alpha*(t), the error spent by the information fraction t_k = n_k / n_max,
used one-sided for each claim ("remembers" and "forgets" are separate claims, each of whose false rate must
stay <= alpha), and a construction of each look's nominal level from it:

- spending functions (:func:`spent`): Lan-DeMets O'Brien-Fleming type, 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))
  (almost nothing early); Lan-DeMets Pocock type, alpha log(1 + (e - 1) t) (about evenly); Hwang-Shih-DeCani,
  alpha (1 - exp(-gamma t)) / (1 - exp(-gamma)) (between them as gamma runs from -4 to 1).
- ``union`` (:func:`look_levels`): look k decides at the increment alpha*(t_k) - alpha*(t_{k-1}); by the union
  bound the false rate over all looks is at most their sum, alpha, whatever the correlation between looks.
- ``exact`` (:func:`exact_levels`): the nominal level whose boundary spends exactly that increment under the
  canonical joint distribution of group-sequential statistics; only approximate for t tests with few degrees
  of freedom (5.2% at a spread of exactly delta on two levels, docs/sequential.md).
- ``paired-t`` (:func:`paired_t_levels`): the same construction for the statistics the rule actually tests,
  Student t statistics of paired differences on nested seeds (n_k - 1 degrees of freedom at look k), whose
  joint law under the boundary null is free of the noise scale and is simulated once (fixed seed, 10^6 paths).

**The analysis's design** (``SEQUENTIAL_DESIGN``) is ``paired-t`` with Pocock-type spending, chosen by expected
seeds on the designs users run (studies/spending_families.py, docs/sequential.md "Choosing the spending
function"): its first look (level 0.018 at looks 4, 8, 12, 16) decides demo-like memories of 7 points or more
(199 or 200 of 200 at 4 seeds, where O'Brien-Fleming's 1e-4 decided 4-27 of 200), every false verdict measured stays
within alpha, and its price is late power on the hardest nulls (73.5% "forgets" by 16 seeds instead of 89%).

Every verdict splits alpha into shares; :class:`Spending` computes each share's level at a look from the
share's own allotment, because a spending function is not linear in alpha.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from initmem.names import ALPHA

OBRIEN_FLEMING = "obrien-fleming"   # alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))
POCOCK = "pocock"                   # alpha*(t) = alpha log(1 + (e - 1) t)


def obrien_fleming_spent(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: the error spent by information fraction ``t`` in (0, 1]."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(min(t, 1.0))))


def hsd(gamma: float) -> str:
    """The Hwang-Shih-DeCani spending function with parameter ``gamma``, by name:
    alpha*(t) = alpha (1 - exp(-gamma t)) / (1 - exp(-gamma)) (alpha t at gamma = 0). gamma = -4 spends about as
    late as O'Brien-Fleming, gamma = 1 about as early as Pocock."""
    return f"hsd({float(gamma):g})"


_HSD = re.compile(r"^hsd\((-?[0-9.]+(?:e-?[0-9]+)?)\)$")
_LABELS = {OBRIEN_FLEMING: "Lan-DeMets O'Brien-Fleming-type", POCOCK: "Lan-DeMets Pocock-type"}


def spending_label(spending: str) -> str:
    """The spending function's name as a design's description states it."""
    m = _HSD.match(spending)
    if m:
        return f"Hwang-Shih-DeCani (gamma = {float(m.group(1)):g})"
    if spending not in _LABELS:
        raise ValueError(f"unknown spending function {spending!r} (obrien-fleming, pocock or hsd(GAMMA))")
    return _LABELS[spending]


def spent(t: float, alpha: float = ALPHA, spending: str = OBRIEN_FLEMING) -> float:
    """The error ``spending`` has spent by information fraction ``t`` in (0, 1]; alpha at t = 1."""
    if t <= 0:
        return 0.0
    t = min(float(t), 1.0)
    if spending == OBRIEN_FLEMING:
        return obrien_fleming_spent(t, alpha)
    if spending == POCOCK:
        return float(alpha * math.log1p((math.e - 1.0) * t))
    m = _HSD.match(spending)
    if m is None:
        spending_label(spending)     # raises: unknown
    gamma = float(m.group(1))
    if abs(gamma) < 1e-12:
        return float(alpha * t)
    return float(alpha * math.expm1(-gamma * t) / math.expm1(-gamma))


_CONSTRUCTIONS = {
    "union": "union bound over looks",
    "exact": ("exact one-sided boundaries of the canonical joint distribution (Jennison & Turnbull 2000, ch. 7), "
              "per claim"),
    "paired-t": "exact one-sided levels for the seeds' paired t tests on nested seeds (simulated), per claim",
}


def design_name(construction: str = "paired-t", spending: str = OBRIEN_FLEMING) -> str:
    """The description of a design (how each look's level is computed, and the spending function it spends by),
    as summary.json and look.json state it."""
    return f"group-sequential, {spending_label(spending)} spending, {_CONSTRUCTIONS[construction]}"


def parse_design(design: str) -> tuple[str, str]:
    """(construction, spending) of a design given by :func:`design_name`'s description or by a short name:
    ``paired-t``, ``exact``, ``union`` (O'Brien-Fleming spending) or ``CONSTRUCTION/SPENDING``
    (``paired-t/pocock``, ``paired-t/hsd(-2)``)."""
    short = design.split("/", 1)
    if short[0] in _CONSTRUCTIONS:
        spending = short[1] if len(short) == 2 else OBRIEN_FLEMING
        spending_label(spending)     # raises on an unknown spending function
        return short[0], spending
    for construction, tail in _CONSTRUCTIONS.items():
        if design.startswith("group-sequential, ") and design.endswith(f" spending, {tail}"):
            label = design[len("group-sequential, "):-len(f" spending, {tail}")]
            for spending in (OBRIEN_FLEMING, POCOCK):
                if _LABELS[spending] == label:
                    return construction, spending
            m = re.fullmatch(r"Hwang-Shih-DeCani \(gamma = (.+)\)", label)
            if m:
                return construction, hsd(float(m.group(1)))
    raise ValueError(f"unknown sequential design {design!r}")


UNION = design_name("union")
EXACT = design_name("exact")
PAIRED_T = design_name("paired-t")
PAIRED_T_POCOCK = design_name("paired-t", POCOCK)
DESIGNS = {"union": UNION, "exact": EXACT, "paired-t": PAIRED_T, "paired-t/pocock": PAIRED_T_POCOCK}
SEQUENTIAL_DESIGN = PAIRED_T_POCOCK   # the analysis's and the planner's design (docs/sequential.md)
N_SIM = 1_000_000   # simulated paths of paired_t_levels: its rates within about 0.0002 of the spending
_GRID = 1201     # points of the recursion's grid of the score statistic (levels to about 1e-6)
_LOW = -10.0     # the grid's lower end, in SDs of the score at the last look (var(S_k) = t_k <= 1)


def look_levels(looks: Sequence[int], alpha: float = ALPHA, spending: str = OBRIEN_FLEMING) -> list[float]:
    """The union bound's levels: each look decides at the increment of the spending function at its share of
    the last look's seeds; the levels sum to alpha."""
    cum = [spent(n / looks[-1], alpha, spending) for n in looks]
    return [s - p for s, p in zip(cum, [0.0, *cum[:-1]], strict=True)]


def exact_levels(looks: Sequence[int], alpha: float = ALPHA, spending: str = OBRIEN_FLEMING) -> list[float]:
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
    inc = np.diff([0.0, *(spent(x, alpha, spending) for x in t)])
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


def paired_t_levels(looks: Sequence[int], alpha: float = ALPHA, n_sim: int = N_SIM, seed: int = 0,
                    spending: str = OBRIEN_FLEMING) -> list[float]:
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
    return list(_paired_t_levels(tuple(int(n) for n in looks), float(alpha), int(n_sim), int(seed), spending))


@functools.lru_cache(maxsize=128)
def _paired_t_levels(looks: tuple[int, ...], alpha: float, n_sim: int, seed: int,
                     spending: str) -> tuple[float, ...]:
    if len(looks) == 1:
        return (alpha,)
    from scipy.stats import t as student

    rng = np.random.default_rng(seed)
    inc = np.diff([0.0, *(spent(n / looks[-1], alpha, spending) for n in looks)])
    t_all = nested_t(looks, n_sim, rng)
    open_ = np.ones(n_sim, dtype=bool)
    levels = []
    for k, (n_k, a_k) in enumerate(zip(looks, inc, strict=True)):
        t_stat = t_all[:, k]
        m = int(round(a_k * n_sim))     # paths that first cross at this look
        live = t_stat[open_]
        c = float(np.partition(live, live.size - m)[live.size - m]) if 0 < m <= live.size else np.inf
        levels.append(float(student.sf(c, n_k - 1)))
        open_ &= t_stat < c
    return tuple(levels)


def nested_t(looks: Sequence[int], n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, K) one-sided t statistics of N(0, 1) paired differences on nested seeds, the first ``looks[k]`` seeds at
    look k: the boundary null of every claim's paired test. Seeds are drawn one at a time (n floats each), so
    the same ``rng`` gives the same paths whatever the looks after them."""
    s1, s2, out, seen = np.zeros(n), np.zeros(n), [], 0
    for n_k in looks:
        for _ in range(int(n_k) - seen):
            x = rng.standard_normal(n)
            s1 += x
            s2 += x * x
        seen = int(n_k)
        mean = s1 / n_k
        out.append(mean * np.sqrt(n_k) / np.sqrt(np.maximum(s2 - n_k * mean * mean, 1e-300) / (n_k - 1)))
    return np.stack(out, axis=1)


def crossings(t_stat: np.ndarray, looks: Sequence[int], levels: Sequence[float]) -> int:
    """How many paths of :func:`nested_t` cross some look's one-sided boundary at ``levels`` (a level of 0 never
    crosses): the false rejections of a claim tested at those levels, look by look."""
    from scipy.stats import t as student

    crit = np.where(np.asarray(levels) > 0, student.isf(np.asarray(levels), np.array(looks) - 1), np.inf)
    return int((t_stat >= crit).any(axis=1).sum())


def _crossing(b: float, x: np.ndarray, w: np.ndarray, sd: float, target: float) -> float:
    """P(continued to the previous look, S_k >= b) minus the look's spending increment."""
    return float(w @ norm.sf((b - x) / sd)) - target


def design_levels(looks: Sequence[int], alpha: float = ALPHA, design: str = SEQUENTIAL_DESIGN) -> list[float]:
    """Each look's level under ``design`` (a :func:`design_name` description or a short name, :func:`parse_design`)."""
    construction, spending = parse_design(design)
    if construction == "paired-t":
        return paired_t_levels(looks, alpha, spending=spending)
    if construction == "exact":
        return exact_levels(looks, alpha, spending)
    return look_levels(looks, alpha, spending)


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

    def __post_init__(self) -> None:
        looks = tuple(int(n) for n in self.looks)
        object.__setattr__(self, "looks", looks)
        object.__setattr__(self, "design", design_name(*parse_design(self.design)))
        if looks and not 0 <= self.look < len(looks):
            raise ValueError(f"look index {self.look} outside looks {looks}")

    def level(self, share: float = 1.0) -> float:
        """The level at this analysis of a claim allotted ``share`` of alpha over the whole design."""
        if not self.looks:
            return float(self.alpha * share)
        return float(design_levels(self.looks, self.alpha * share, self.design)[self.look])

    def describe(self) -> dict[str, object]:
        """summary.json's ``spending``: the design's alpha, and for a look of a sequential design its looks, the
        look (1 = first) and the design, with the level of the full share at this look."""
        if not self.looks:
            return {"alpha": float(self.alpha), "looks": None, "look": None, "design": None,
                    "level": self.level(1.0)}
        return {"alpha": float(self.alpha), "looks": list(self.looks), "look": self.look + 1, "design": self.design,
                "level": self.level(1.0)}


def as_spending(alpha: float | Spending) -> Spending:
    """``alpha`` as a :class:`Spending` (a plain float is a fixed design)."""
    return alpha if isinstance(alpha, Spending) else Spending(float(alpha))


__all__ = ["DESIGNS", "EXACT", "OBRIEN_FLEMING", "PAIRED_T", "PAIRED_T_POCOCK", "POCOCK", "SEQUENTIAL_DESIGN", "UNION",
           "Spending", "as_spending", "crossings", "design_levels", "design_name", "exact_levels", "hsd",
           "look_levels", "nested_t", "obrien_fleming_spent", "paired_t_levels", "parse_design", "spending_label",
           "spent"]
