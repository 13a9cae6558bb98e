"""The memory model's calibration designs: simulated tables whose truth is known, and one compiled model they share.

The designs (nulls, steps, ramps, peaks, count-like and lattice-bound tables, the late held-out designs) are
what every null and power control of the verdict rules draws: the test suite and the studies in studies/
both read them from here, so a study runs from an installed package. They produce the model's own data
(:class:`~initmem.models.data.MemoryData`) and fit the compiled :class:`~initmem.models.memory.MemoryModel`,
so they sit with the model, above the cube simulator (initmem.simulate), which knows nothing of the model.

Every calibration dataset is brought to one shape, (24 pipelines, 7 sigma_w, 6 seeds): smaller
designs leave seeds unused (outside a pipeline's rectangle nothing is imputed, so an unused
seed is exactly absent), and ``MemoryModel.refit`` runs each new dataset on the compiled
sampler (compiling costs ~20 s, once).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from scipy import optimize, special, stats

from initmem import names as N
from initmem.models.data import MemoryData, prepare_data
from initmem.models.memory import MemoryModel

P, L, S = 24, 7, 6
# The compiled shape of the suite's small cubes (2-4 pipelines, 2-6 levels, 3-6 seeds): every test that
# analyzes one pads it to this (MemoryModel slots, ``--compile-shape``), so they share one compile.
SMALL = (4, 6, 6)
FIT = {"draws": 500, "tune": 500, "chains": 2, "progress": False}


def pad_seeds(d: MemoryData, n_seed: int = S) -> MemoryData:
    """The same data with unused seeds appended up to ``n_seed``."""
    extra = n_seed - d.used.shape[2]
    if extra <= 0:
        return d
    pad = ((0, 0), (0, 0), (0, extra))
    return replace(d, y=np.pad(d.y, pad, constant_values=np.nan), used=np.pad(d.used, pad),
                   diverged=None if d.diverged is None else np.pad(d.diverged, pad),
                   seeds=np.arange(n_seed))


def table_data(y: np.ndarray, used: np.ndarray, scale: float | np.ndarray, metric: str = "sim") -> MemoryData:
    """MemoryData straight from (P, L, S) tables in outcome units with a given noise scale."""
    p, n_l, n_s = y.shape
    scale = np.broadcast_to(np.asarray(scale, dtype=float), (p,)).copy()
    center = np.array([y[k][used[k]].mean() for k in range(p)])
    names = [f"t{k}" for k in range(p)]
    return MemoryData(metric=metric, family="gaussian", likelihood="gaussian", gate="all", pipelines=names,
                      sigma_w=np.geomspace(0.25, 8.0, n_l), seeds=np.arange(n_s), y=np.where(used, y, np.nan),
                      used=used, scale=scale, center=center, n_test=None,
                      diverged=np.zeros_like(used), n_excluded={n: {} for n in names},
                      interpolation={n: {"n_cells": int(used[k].sum()), "n_interpolated": int(used[k].sum()),
                                         "by_sigma_w": {}, "levels_without_interpolation": [], "gate": "all"}
                                     for k, n in enumerate(names)}, divergence_p={n: None for n in names})


def log_density(model) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """A PyMC model's log density as a function of a point, for exact-identity tests that evaluate a few
    points: PyTensor's FAST_COMPILE mode skips the C compilation of the graph, which only a sampler's
    thousands of evaluations repay and which a fresh machine pays in full."""
    return model.compile_logp(mode="FAST_COMPILE")


@functools.lru_cache(maxsize=2)
def compiled_model(n_seed: int = S, **fit: int) -> MemoryModel:
    """A fitted model of the shared shape (standard-normal tables), compiled once per session;
    sigma_sd's prior is neutral at delta = 0.01 (one point)."""
    rng = np.random.default_rng(0)
    d = table_data(rng.standard_normal((P, L, n_seed)), np.ones((P, L, n_seed), dtype=bool), 1.0)
    m = MemoryModel(d, delta=0.01)
    m.fit(seed=0, **{**FIT, **fit})
    return m


def fit_cube(ds, seed: int = 0) -> MemoryModel:
    return compiled_model().refit(pad_seeds(prepare_data(ds)), seed=seed)


def fit_tables(d: MemoryData, seed: int = 0) -> MemoryModel:
    return compiled_model().refit(d, seed=seed)


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, float(c - h)), min(1.0, float(c + h))   # clipped: rounding puts 0/n a hair below 0


# Designs outside the model (an audit of real grids; docs/memory-model.md, "Calibration"): tables in
# outcome units with a known run-to-run noise scale, at the demo's scale (720 examples, 6 levels,
# 3-5 seeds) and the paper's (10,000 examples, 7 levels, 5 seeds). The noise scale is 0.6 x the
# binomial SD at 90% accuracy (the independent-errors SD of real predictions is about 0.6 of it).
SCALES = {"demo": {"n_test": 720, "levels": 6, "seeds": (3, 4, 5)},
          "paper": {"n_test": 10_000, "levels": 7, "seeds": (5,)}}
DESIGNS = ("null", "slopes", "noisy_level", "step", "ramp", "single", "three_levels", "slopes_at_delta",
           "noisy_at_delta", "power2")
# the verdict each design must not give: nulls (spread 0) must not "remember"; at a spread of
# exactly delta (the boundary designs) neither verdict is true, and the audit's cases are a
# "remembers" on plateaus and a "forgets" on 3 levels x 3 seeds; "power2" is a 2-point memory at
# 10 seeds that should be found.
FALSE = {"null": N.REMEMBERS, "slopes": N.REMEMBERS, "noisy_level": N.REMEMBERS, "step": N.REMEMBERS,
         "ramp": N.REMEMBERS, "single": N.REMEMBERS, "three_levels": N.FORGETS, "slopes_at_delta": N.FORGETS,
         "noisy_at_delta": N.FORGETS, "power2": None}
BOUNDARY = ("step", "ramp", "single", "three_levels", "slopes_at_delta", "noisy_at_delta")


def noise_sd(n_test: int, acc: float = 0.9) -> float:
    return 0.6 * float(np.sqrt(acc * (1 - acc) / n_test))


def design_tables(kind: str, scale: str, rng: np.random.Generator, *, n_pipe: int = P, n_level: int = L,
                  n_seed: int = 10, delta: float = 0.01) -> tuple[MemoryData, np.ndarray]:
    """(n_pipe, n_level, n_seed) tables of one design (unused cells beyond each pipeline's own
    levels and seeds) and the true spreads, in outcome units."""
    sc = SCALES[scale]
    sig = noise_sd(sc["n_test"])
    n_l = 3 if kind == "three_levels" else sc["levels"]
    x = np.log(np.geomspace(0.25, 8.0, n_l))
    x = (x - x.mean()) / np.sqrt(np.mean((x - x.mean()) ** 2))
    y = np.full((n_pipe, n_level, n_seed), np.nan)
    used = np.zeros((n_pipe, n_level, n_seed), dtype=bool)
    truth = np.zeros(n_pipe)
    for p in range(n_pipe):
        s = {"three_levels": 3, "power2": 10}.get(kind, int(rng.choice(sc["seeds"])))
        u = np.zeros(n_l)
        if kind in ("step", "noisy_at_delta"):
            u[n_l // 2:] = delta
        elif kind in ("ramp", "slopes_at_delta"):
            u = np.linspace(0.0, delta, n_l)
        elif kind == "single":
            u[-1] = delta
        elif kind == "three_levels":
            u = np.array([0.0, rng.uniform(0, delta), delta])[rng.permutation(3)]
        elif kind == "power2":
            g = rng.standard_normal(n_l)
            u = 0.02 * (g - g.min()) / np.ptp(g)
        res = np.ones(n_l)
        if kind in ("noisy_level", "noisy_at_delta"):
            res[-1] = rng.uniform(10.0, 20.0)
        slope = rng.uniform(1.0, 3.0) if kind in ("slopes", "slopes_at_delta") else 0.0
        tab = (0.9 + u[:, None] + sig * (1.5 * rng.standard_normal((1, s)) + slope * x[:, None]
                                         * rng.standard_normal((1, s)) + res[:, None] * rng.standard_normal((n_l, s))))
        y[p, :n_l, :s] = tab
        used[p, :n_l, :s] = True
        truth[p] = np.ptp(u)
    d = table_data(np.where(used, y, 0.0), used, sig, metric="sim")
    return replace(d, y=np.where(used, y, np.nan), sigma_w=np.geomspace(0.25, 8.0, n_level)), truth


# Fast rule-level designs (vectorised numpy, no model): complete or MNAR (n, L, S) tables in
# outcome units, levels in sigma_w order, for the design-based tests of models/paired.py. Each
# design: (true spread relative to delta, the false verdict(s), levels, seeds or None for the
# scale's own, description). At a spread of exactly delta neither verdict is true.
RULE_DESIGNS: dict[str, dict] = {
    "null": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, compound symmetric"},
    "slopes": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, seed slopes 1-3 noise units"},
    "noisy_level": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, top level 10-20x noisier"},
    "t3": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, t3 seed effects and residuals"},
    "mnar": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, worst 2 of 5 seeds dropped at the top level"},
    "step": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "plateaus 0 / delta"},
    "ramp": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "linear ramp 0 -> delta"},
    "single": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "one level at delta"},
    "two_levels": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "levels": 2, "doc": "2 levels, delta apart"},
    "three_levels": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "levels": 3, "seeds": 3,
                     "doc": "3 levels x 3 seeds, middle level uniform in [0, delta]"},
    "slopes_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "ramp at delta under seed slopes"},
    "noisy_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "step at delta, top level noisier"},
    "t3_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "doc": "ramp at delta, t3 noise"},
    "mnar_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "seeds": 5,
                      "doc": "ramp falling by delta, worst 2 of 5 seeds dropped at the top level"},
    "ramp16": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS), "seeds": 16, "doc": "ramp at delta, 16 seeds"},
    "null16": {"spread": 0.0, "false": (N.REMEMBERS,), "seeds": 16, "doc": "no memory, 16 seeds"},
    "power2": {"spread": 2.0, "false": (N.FORGETS,), "seeds": 10, "doc": "2-point exchangeable memory, 10 seeds"},
    "ramp2": {"spread": 2.0, "false": (N.FORGETS,), "seeds": 10, "levels": 5,
              "doc": "2-point ramp, 5 levels, 10 seeds"},
    "big3": {"spread": None, "false": (N.FORGETS,), "seeds": 3, "levels": 6,
             "doc": "12-19 point exchangeable memory, 6 levels x 3 seeds"},
    # Held out late (added after the rules were fixed; none was tuned on): other covariances and other
    # shapes than the designs above -- noise that grows along sigma_w, seeds that wander along sigma_w on
    # their own paths, one wild run, and memory that peaks in the middle of the sweep.
    "hetero": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, run noise rising 0.5x -> 3x along sigma_w"},
    "hetero_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS),
                        "doc": "ramp at delta, run noise rising 0.5x -> 3x along sigma_w"},
    "walk": {"spread": 0.0, "false": (N.REMEMBERS,), "doc": "no memory, each seed a random walk along sigma_w"},
    "walk_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS),
                      "doc": "ramp at delta, each seed a random walk along sigma_w"},
    "u_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS),
                   "doc": "inner levels at delta, outer two at 0 (extreme pair equal)"},
    "outlier_at_delta": {"spread": 1.0, "false": (N.REMEMBERS, N.FORGETS),
                         "doc": "ramp at delta, one run per table off by 8 noise units"},
}
LATE_HELD_OUT = ("hetero", "hetero_at_delta", "walk", "walk_at_delta", "u_at_delta", "outlier_at_delta")


def simulator_memories(n_cubes: int, n_seed: int, delta: float = 0.01, min_points: float = 12.0):
    """The simulator's own memory (initmem simulate: exchangeable level effects, not monotone in sigma_w): 32
    pipelines per cube, 6 levels, 720 examples, level SD 0.6 logit, seed and run noise 0.1 logit each (about
    1.3 points per run). Yields, per pipeline whose true spread is at least ``min_points`` x delta, its table
    in outcome units (6, n_seed), the table standardised as the analysis does (centred, over the noise
    scale), delta on that scale, and the levels' sigma_w."""
    from initmem.simulate import SimPipeline, read_truth, simulate_cube

    for seed in range(n_cubes):
        ds = simulate_cube([SimPipeline(f"m{k}", sigma_sd=0.6, seed_sd=0.1, residual_sd=0.1, n_sigma=6,
                                        n_seed=n_seed) for k in range(32)], n_test=720, seed=seed)
        truth, d = read_truth(ds)["pipelines"], prepare_data(ds)
        for a, pipe in enumerate(d.pipelines):
            if truth[pipe]["spread"] >= min_points * delta:
                tab = d.y[a][d.level_mask[a]]
                yield tab, (tab - tab.mean()) / d.scale[a], delta / d.scale[a], d.sigma_w[d.level_mask[a]]


def _logit_levels(means: np.ndarray, sd: float) -> np.ndarray:
    """Logit locations whose expected accuracy over logit noise of SD ``sd`` is exactly ``means``."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    return np.array([optimize.brentq(lambda z, m=m: float(w @ special.expit(z + sd * x)) - m, -20, 20)
                     for m in means])


def ceiling_tables(means: np.ndarray, seeds: int, seed_sd: float, inter_sd: float, n: int,
                   rng: np.random.Generator, n_test: int = 10_000) -> np.ndarray:
    """Near-ceiling designs (studies/ceiling_check.py): (n, L, S) accuracies, binomial counts out of
    ``n_test`` of per-run probabilities with a seed effect shared across levels and a level x seed
    interaction, both on the logit scale, whose expected accuracies are ``means``."""
    z = _logit_levels(means, float(np.hypot(seed_sd, inter_sd)))
    eta = (z[None, :, None] + rng.normal(0, seed_sd, (n, 1, seeds))
           + rng.normal(0, inter_sd, (n, means.size, seeds)))
    return rng.binomial(n_test, special.expit(eta)) / n_test


def counts_scale(tables: np.ndarray, n_test: int = 10_000) -> float:
    """The noise scale `initmem analyze` gives imported counts (models/data.py ``noise_scale``), averaged over the
    first 200 of a design's (n, L, S) tables, so that one quadrature serves them all."""
    from initmem.models.data import noise_scale

    used = np.ones(tables.shape[1:], dtype=bool)
    return float(np.mean([noise_scale("counts", t, used, None, n_test) for t in tables[:200]]))


def rule_tables(kind: str, scale: str, n: int, rng: np.random.Generator, *, n_seed: int | None = None,
                delta: float = 0.01) -> np.ndarray:
    """``n`` tables (n, L, S) of one rule-level design at one scale (NaN for runs dropped not at
    random), in outcome units; the noise as in :func:`design_tables` (seed SD 1.5, residual SD 1 noise
    unit of 0.6 x the binomial SD at 90% accuracy)."""
    sc, spec = SCALES[scale], RULE_DESIGNS[kind]
    sig = noise_sd(sc["n_test"])
    n_l = spec.get("levels", sc["levels"])
    s = n_seed or spec.get("seeds") or int(sc["seeds"][-1])
    x = np.log(np.geomspace(0.25, 8.0, n_l))
    x = (x - x.mean()) / np.sqrt(np.mean((x - x.mean()) ** 2))
    u = np.zeros((n, n_l))
    if kind in ("step", "noisy_at_delta"):
        u[:, n_l // 2:] = delta
    elif kind in ("ramp", "slopes_at_delta", "t3_at_delta", "ramp16", "hetero_at_delta", "walk_at_delta",
                  "outlier_at_delta"):
        u[:] = np.linspace(0.0, delta, n_l)
    elif kind == "u_at_delta":
        u[:, 1:-1] = delta
    elif kind == "mnar_at_delta":
        u[:] = np.linspace(delta, 0.0, n_l)
    elif kind == "single":
        u[:, -1] = delta
    elif kind == "two_levels":
        u[:, 1] = delta
    elif kind == "three_levels":
        mid = np.column_stack([np.zeros(n), rng.uniform(0, delta, n), np.full(n, delta)])
        u = np.take_along_axis(mid, np.argsort(rng.random((n, 3)), axis=1), axis=1)
    elif kind in ("power2", "big3"):
        g = rng.standard_normal((n, n_l))
        size = 2 * delta if kind == "power2" else rng.uniform(12, 19, (n, 1)) * delta
        u = size * (g - g.min(axis=1, keepdims=True)) / np.ptp(g, axis=1, keepdims=True)
    elif kind == "ramp2":
        u[:] = np.linspace(0.0, 2 * delta, n_l)
    res = np.ones((n, n_l, 1))
    if kind in ("noisy_level", "noisy_at_delta"):
        res[:, -1, 0] = rng.uniform(10.0, 20.0, n)
    elif kind in ("hetero", "hetero_at_delta"):
        res[:] = np.geomspace(0.5, 3.0, n_l)[None, :, None]
    heavy = kind in ("t3", "t3_at_delta")

    def draw(*shape: int) -> np.ndarray:
        return rng.standard_t(3, shape) if heavy else rng.standard_normal(shape)

    slope = rng.uniform(1.0, 3.0, (n, 1, 1)) if kind in ("slopes", "slopes_at_delta") else 0.0
    tab = 0.9 + u[:, :, None] + sig * (1.5 * draw(n, 1, s) + slope * x[None, :, None] * draw(n, 1, s)
                                       + res * draw(n, n_l, s))
    if kind in ("walk", "walk_at_delta"):     # each seed's own path along sigma_w: steps of 0.8 noise units
        tab += sig * np.cumsum(0.8 * draw(n, n_l, s), axis=1)
    if kind == "outlier_at_delta":            # one run per table, at a random cell, 8 noise units off
        rows = np.arange(n)
        tab[rows, rng.integers(0, n_l, n), rng.integers(0, s, n)] += 8.0 * sig * rng.choice([-1.0, 1.0], n)
    if kind in ("mnar", "mnar_at_delta"):
        worst = np.argsort(tab[:, -1, :], axis=1)[:, :2]   # the 2 lowest runs at the top sigma_w
        np.put_along_axis(tab[:, -1, :], worst, np.nan, axis=1)
    return tab


def pooled_pair_se(tables: np.ndarray) -> tuple[np.ndarray, int]:
    """Every pair's SE from the residual mean square of complete (..., L, S) tables, and its (L - 1)(S - 1)
    degrees of freedom: what pooling over the table would give each pair's test. Valid only when every pair's
    difference has the same variance (sphericity); the benchmarks measure what it costs where that fails."""
    n_lev, n_seed = tables.shape[-2:]
    r = (tables - tables.mean(axis=-1, keepdims=True) - tables.mean(axis=-2, keepdims=True)
         + tables.mean(axis=(-2, -1), keepdims=True))
    df = (n_lev - 1) * (n_seed - 1)
    return np.sqrt(2.0 * (r**2).sum(axis=(-2, -1)) / df / n_seed), df


def rule_rates(kind: str, scale: str, n: int, rng: np.random.Generator, delta: float = 0.01,
               alpha: float | None = None) -> dict[str, tuple[int, int]]:
    """(k, n) of "remembers" (ordered test), "forgets" (intersection-union test) and, for
    comparison, the former Bonferroni check, over ``n`` tables per seed count of the scale."""
    from initmem.models.paired import bonferroni_bounds, forgets_bounds, remembers_at
    from initmem.names import ALPHA

    a = ALPHA if alpha is None else alpha
    spec = RULE_DESIGNS[kind]
    seeds = [None] if spec.get("seeds") else list(SCALES[scale]["seeds"])
    out = {N.REMEMBERS: [0, 0], N.FORGETS: [0, 0], "bonferroni": [0, 0]}
    for s in seeds:
        t = rule_tables(kind, scale, n // len(seeds), rng, n_seed=s, delta=delta)
        for name, hit in ((N.REMEMBERS, remembers_at(t, delta, a)), (N.FORGETS, forgets_bounds(t, a) < delta),
                          ("bonferroni", bonferroni_bounds(t, a) > delta)):
            out[name][0] += int(hit.sum())
            out[name][1] += hit.size
    return {k: (v[0], v[1]) for k, v in out.items()}


# Count-like designs of the ordered test's peak step (studies/peak_contrast.py): accuracies near 97% as counts out
# of 10,000 test examples, a seed effect shared by the levels (1 point) and run noise of 2 points, levels on a
# log2 grid around sigma_w = 1. Shapes: a ramp along log sigma_w, a plateau (a step at the middle of the grid)
# and a peak at sigma_w = 1 falling alike to 0 at both ends (the extreme pair is equal).
PEAK_SHAPES = ("ramp", "plateau", "peak")


def peak_grid(n_levels: int) -> np.ndarray:
    """sigma_w levels 2^k, k = -floor((L - 1) / 2) ... : 5 levels 0.25-4, 6 levels 0.25-8, 7 levels 0.125-8."""
    k0 = (n_levels - 1) // 2
    return 2.0 ** (np.arange(n_levels) - k0)


def shape_effects(shape: str, height: float, sigma_w: np.ndarray) -> np.ndarray:
    """The memory of one shape at its levels, max - min = ``height``: a ramp linear in log sigma_w, a plateau of
    the levels above the grid's middle level, or a peak at sigma_w = 1 falling linearly in log sigma_w to 0 at
    either end."""
    x = np.log2(np.asarray(sigma_w, dtype=float))
    if shape == "ramp":
        return height * (x - x[0]) / (x[-1] - x[0])
    if shape == "plateau":
        from initmem.models.paired import middle_level

        return np.where(np.arange(x.size) > middle_level(sigma_w), height, 0.0)
    if shape == "peak":
        return height * np.where(x <= 0, 1.0 - x / x[0], 1.0 - x / x[-1])
    raise ValueError(shape)


def count_tables(shape: str, height: float, n_levels: int, n: int, rng: np.random.Generator, *, n_seed: int = 10,
                 top: float = 0.97, run_sd: float = 0.02, seed_sd: float = 0.01,
                 n_test: int = 10_000) -> np.ndarray:
    """``n`` paired (n, L, S) accuracy tables of one count-like design: the best level at ``top``, the others
    the shape's profile below it (the worst at top - height), a seed effect and run noise (outcome units), then
    a binomial count of the run's accuracy out of ``n_test``."""
    u = shape_effects(shape, height, peak_grid(n_levels))
    p = (top - height + u)[None, :, None] + seed_sd * rng.standard_normal((n, 1, n_seed)) \
        + run_sd * rng.standard_normal((n, n_levels, n_seed))
    return rng.binomial(n_test, np.clip(p, 0.0, 1.0)) / n_test


def lattice_tables(n_test: int, top: float, delta: float, n_levels: int, n_seed: int, spread: float, n: int,
                   rng: np.random.Generator) -> np.ndarray:
    """``n`` (n, L, S) accuracy tables on the 1 / n_test lattice (studies/lattice_calibration.py,
    tests/test_lattice.py): each run a binomial count out of ``n_test`` at its level's accuracy, a ramp from
    ``top`` down to ``top - spread x delta`` along the levels (spread 0: every level at ``top``)."""
    acc = top - np.linspace(0.0, spread * delta, n_levels)
    return rng.binomial(n_test, np.broadcast_to(acc[None, :, None], (n, n_levels, n_seed))) / n_test
