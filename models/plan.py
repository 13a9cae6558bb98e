"""``initmem plan``: how many seeds, or which delta, would make each pipeline's verdict decisive?

From a finished analysis folder we simulate future experiments with the same sigma_w grid and S
seeds per cell, for a ladder of S, from the posterior (each simulated experiment takes one
posterior draw of the pipeline's expected metric per level, seed, slope and residual SDs and
draws fresh seeds, slopes and residuals, models/core.py). Each simulated experiment is then
decided by THE SAME rule the analysis applies: the same posterior (same restricted likelihood,
same priors, same noise scale), evaluated by quadrature over the four SDs instead of NUTS (the
posterior of a complete table depends on the data only through four sums of squares, and four
dimensions are cheap to integrate on a grid), and the same design-based tests (models/paired.py):
the ordered paired test that "remembers" also needs, the intersection-union test that is the
second route to "forgets". tests/test_plan.py checks the plan against real NUTS refits.

Per pipeline the plan reports the smallest S with P(decisive verdict) >= 0.8 and, at the
current S, the deltas that would decide: ``delta_forgets`` (the smallest delta with "forgets"
in >= 80% of experiments) and ``delta_remembers`` (the largest delta with "remembers" in
>= 80%); either is None (``-`` in the table) when no positive delta decides that way.
An analysis of a crossed init x data seed design is refused (:func:`refuse_crossed`): the posterior has no
init and data seeds to simulate; ``initmem plan`` gives its draw plan instead (stats/crossed_plan.py). Docs:
docs/memory-model.md, "Planning".
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from initmem import cube
from initmem.errors import OptionError, UserError
from initmem.models import arviz_io, core
from initmem.models.paired import forgets_bounds, forgets_levels, remembers_at, remembers_bounds
from initmem.models.priors import Priors, default_priors
from initmem.models.sequential import SEQUENTIAL_DESIGN, Spending, as_spending
from initmem.models.summaries import AGREE, MIN_LEVELS_MODEL_FORGETS, binomial_mcse, model_thresholds
from initmem.names import ALPHA
from initmem.results import POSTERIOR_NC, SUMMARY_JSON, Summary, load_summary
from initmem.results.display import PlanResult
from initmem.results.margins import resolve_margins

SEED_LADDER = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
TARGET = 0.8
N_POST = 400
N_EFF = 4000.0  # effective draws of a default analysis (4 chains x 1000 draws, near-independent)
_SU = np.linspace(-7.0, 5.0, 40)
_SV = np.linspace(-7.0, 3.0, 10)
_SE = np.linspace(-3.0, 2.5, 28)
_SB = np.linspace(-5.0, 2.0, 8)

RULE = ("the analysis's own rule: its posterior (restricted likelihood of the four SDs, seed slopes and the memory's "
        "flat trend included, "
        "the same priors and noise scale), computed by quadrature over the SDs for each simulated experiment, "
        "'remembers' by the ordered paired test of the seeds' differences with the posterior agreeing "
        "(P(spread > delta) >= 1/2); 'forgets' by the posterior or by the "
        "intersection-union test of every pair of levels (P(spread < delta) >= 1 - alpha/2 or the test at 0.8 alpha), "
        "by both for a pipeline near the ceiling (summary.json's near_ceiling; the skew gate of the analysis, which "
        "needs the tables in accuracy units, is not simulated, so near the ceiling the plan can be optimistic where "
        "the seeds' errors are strongly multiplicative); at a sequential look each share of alpha is spent from its "
        "own allotment, and a model threshold the posterior's draws cannot resolve (within 4 MCSE floors of 1) "
        "closes the model's route to 'forgets'")


@functools.lru_cache(maxsize=32)
def _grid(priors: Priors, sigma_scale: float, slopes: bool) -> dict[str, np.ndarray]:
    """The quadrature grid over the log SDs (su, sv, se, and with slopes sb), flattened, with the
    log prior density (Jacobian included) of each point; sigma_sd's prior at the pipeline's own
    scale (models/priors.py). Kept per (priors, scale, slopes), read-only: a plan evaluates the same grid for
    every pipeline, look and simulated table batch, and building it (89,600 prior densities) cost more than
    using it."""
    axes = {"u": (_SU, sigma_scale), "v": (_SV, priors.sd_scale), "e": (_SE, priors.sd_scale)}
    if slopes:
        axes["b"] = (_SB, priors.slope_scale)
    mesh = np.meshgrid(*(g for g, _ in axes.values()), indexing="ij")
    out = {"shape": mesh[0].shape, "logprior": np.zeros(mesh[0].size)}
    for (name, (_, scale)), m in zip(axes.items(), mesh, strict=True):
        out[name] = np.exp(2 * m.ravel())
        out["logprior"] += priors.logpdf(np.exp(m.ravel()), scale) + m.ravel()
    out.setdefault("b", np.zeros(mesh[0].size))
    for v in out.values():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
    return out


@functools.lru_cache(maxsize=32)
def _data_free(priors: Priors, sigma_scale: float, slopes: bool, n_lev: int, n_seed: int
               ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The grid, and the data-free part of the log posterior on it with the coefficients of the four sums of
    squares (models/core.py): what every table of one shape shares. Read-only, kept per shape."""
    g = _grid(priors, sigma_scale, slopes)
    xx = float(n_lev) if slopes else 0.0
    zero = {"n_level": n_lev, "n_seed": n_seed, "xx": xx,
            **{k: 0.0 for k in ("ss_level", "ss_seed", "ss_e", "ss_level_x", "ss_inter_x")}}
    base = core.reml_loglik(zero, g["u"], g["v"], g["e"], s2b=g["b"]) + g["logprior"]
    coef = -0.5 / np.stack([g["e"] + n_seed * g["u"], g["e"] + n_lev * g["v"], g["e"], g["e"] + xx * g["b"]])
    base.setflags(write=False)
    coef.setflags(write=False)
    return g, base, coef


def posterior_spread(tables: np.ndarray, delta: float, rng: np.random.Generator,
                     priors: Priors | None = None, n_post: int = N_POST, chunk: int = 16,
                     sigma_w: np.ndarray | None = None, alpha: float | Spending = ALPHA, n_test: int | None = None,
                     unit: float = 1.0) -> dict[str, np.ndarray]:
    """The memory model's posterior of the spread for complete standardised tables (n, L, S):
    P(spread > delta), P(spread < delta), the 5% / 95% quantiles and the quantile at the model's
    "forgets" threshold (``q_forgets``, 97.5% at alpha 0.05), per table, plus the paired test's bound
    (models/paired.py) that a "remembers" also needs at ``alpha`` and the intersection-union test's
    bound, at its share of ``alpha`` (``forgets_levels``), that is the second route to "forgets" (``alpha`` a
    :class:`Spending` at a sequential look: each share spent from its own allotment). With
    ``sigma_w`` (L,) the
    seeds' own slopes and the memory's flat trend on log sigma_w are part of the model, as in the
    analysis.

    The log posterior on the grid of the SDs is a data-free part plus a linear function of the
    four sums of squares (models/core.py), so a batch of tables is one matrix product."""
    priors = priors or default_priors()
    n, n_lev, n_seed = tables.shape
    lev = np.ones((1, n_lev), dtype=bool)
    x = None if sigma_w is None else core.slope_axis(np.asarray(sigma_w, dtype=float), lev[0])
    x = x if x is not None and x.any() else None
    g, base, coef = _data_free(priors, float(priors.sigma_scale(delta, n_lev)), x is not None, n_lev, n_seed)
    sums = core.table_sums(tables, np.ones((n, n_lev)), np.ones((n, n_seed)), x)
    # sums of squares per stratum: level contrasts but the trend's, seeds, other interaction, x interaction
    lx = np.broadcast_to(np.asarray(sums["ss_level_x"], dtype=float), (n,))
    ix = np.broadcast_to(np.asarray(sums["ss_inter_x"], dtype=float), (n,))
    ss = np.stack([sums["ss_level"] - lx, sums["ss_seed"], sums["ss_e"] - ix, ix], axis=1)  # (n, 4)
    alpha = as_spending(alpha)
    iut_alpha, f_level = forgets_levels(alpha)
    out = {k: np.empty(n) for k in ("p_gt", "p_lt", "q05", "q95", "q_forgets")}
    lattice = {"n_test": n_test, "unit": unit}            # an accuracy's lattice floors every SE
    out["paired_ok"] = remembers_at(tables, delta, alpha, sigma_w=sigma_w, **lattice)   # the ordered test
    out["iut_bound"] = forgets_bounds(tables, iut_alpha, **lattice)    # the intersection-union test of "forgets"
    out["model_forgets_ok"] = np.full(n, n_lev >= MIN_LEVELS_MODEL_FORGETS)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        lp = base[None, :] + ss[lo:hi] @ coef
        cdf = np.cumsum(np.exp(lp - lp.max(axis=1, keepdims=True)), axis=1)
        cdf /= cdf[:, -1:]
        pick = np.stack([np.searchsorted(row, rng.random(n_post)) for row in cdf])   # (m, n_post)
        pick = np.minimum(pick, base.size - 1)
        iu = np.unravel_index(pick, g["shape"])[0]
        # jitter sigma_sd within its grid cell so that the draws are continuous
        su2 = np.exp(2 * (_SU[iu] + rng.uniform(-0.5, 0.5, pick.shape) * (_SU[1] - _SU[0])))
        m = hi - lo
        _, u = core.draw_levels(np.broadcast_to(sums["level_means"][lo:hi, None, :], (m, n_post, n_lev)),
                                np.broadcast_to(sums["grand"][lo:hi, None], (m, n_post)), lev[None],
                                np.full((m, n_post), float(n_seed)), su2, g["v"][pick], g["e"][pick], rng,
                                x=None if x is None else np.broadcast_to(x, (m, n_post, n_lev)),
                                s2b=g["b"][pick])
        sp = core.spread(u, lev[None])
        out["p_gt"][lo:hi], out["p_lt"][lo:hi] = (sp > delta).mean(axis=1), (sp < delta).mean(axis=1)
        out["q05"][lo:hi], out["q95"][lo:hi], out["q_forgets"][lo:hi] = np.quantile(sp, [0.05, 0.95, f_level],
                                                                                     axis=1)
    return out


def _clears(p: np.ndarray, threshold: float, n_eff: float) -> np.ndarray:
    """Whether a probability reaches its threshold and clears the borderline band of an analysis with ``n_eff``
    effective draws: more than 2 binomial MCSE at ``p`` itself above it, the MCSE floored as
    models/summaries.py's ``probability_with_mcse`` floors it (q within [1/(n+1), n/(n+1)])."""
    return (p >= threshold) & (p - threshold > 2.0 * binomial_mcse(p, n_eff))


def decide(post: dict[str, np.ndarray], delta: float, n_eff: float = N_EFF,
           alpha: float | Spending = ALPHA) -> np.ndarray:
    """1 remembers, -1 forgets, 0 undecided (borderline or not) per simulated experiment: the
    analysis's rule at ``alpha`` (models/summaries.py, ``verdict``): "remembers" needs the ordered paired test
    (``paired_ok``) and the model's agreement, P(spread > delta) >= AGREE; "forgets" comes from
    P(spread < delta) >= 1 - alpha/2 (with at least 3 levels) or from the intersection-union test
    (``iut_bound``, computed by :func:`posterior_spread` at its share of the same alpha). The model's
    probabilities must clear the borderline band, at each threshold, of an analysis whose sampler
    gives ``n_eff`` effective draws (2 binomial MCSE), and the thresholds are models/summaries.py's
    ``model_thresholds`` for that many draws (the model's route to "forgets" closed where a sequential look's
    level is finer than the draws resolve); the design-based tests have no Monte Carlo
    error. Near the ceiling (``near_ceiling``, a bool or one per experiment) "forgets" needs both routes and, where
    the caller has the tables in accuracy units, the skew gate (``skew_ok``, models/paired.py ``multiplicative_ok``;
    absent, it is taken as passed: the planner's tables are in noise units, so its predictions near the ceiling
    leave the gate out)."""
    _, t_lt = model_thresholds(alpha, int(round(n_eff)))
    out = np.zeros(post["p_gt"].shape, dtype=int)
    out[_clears(post["p_gt"], AGREE, n_eff) & post["paired_ok"]] = 1
    model = np.zeros(out.shape, dtype=bool) if t_lt is None else _clears(post["p_lt"], t_lt, n_eff)
    model = model & post.get("model_forgets_ok", True)
    iut = post["iut_bound"] < delta
    out[np.where(post.get("near_ceiling", False), model & iut & post.get("skew_ok", True), model | iut)] = -1
    return out


def simulate_reml(reml: dict[str, float], n_lev: int, n_seed: int, n_sim: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Future experiments from REML standard deviations (outcome units), fresh level effects."""
    u = rng.standard_normal((n_sim, n_lev)) * reml["sigma_sd"]
    return core.predictive_tables(np.zeros(n_sim), u, np.full(n_sim, reml["seed_sd"]),
                                  np.full(n_sim, reml["residual_sd"]), n_seed, rng)


def rule_decisions(tables: np.ndarray, delta: float, alpha: float | Spending, rng: np.random.Generator,
                   sigma_w: np.ndarray | None, n_eff: float = N_EFF,
                   near_ceiling: bool | np.ndarray = False, n_test: int | None = None, unit: float = 1.0) -> np.ndarray:
    """1 remembers, -1 forgets, 0 undecided per standardised table (n, L, S): the analysis's rule at level
    ``alpha`` (a float, or a sequential look's :class:`Spending`; models/summaries.py; :func:`decide`), the model's
    probabilities by quadrature, clear of the borderline band."""
    post = posterior_spread(tables, delta, rng, sigma_w=sigma_w, alpha=alpha, n_test=n_test, unit=unit)
    return decide({**post, "near_ceiling": near_ceiling}, delta, n_eff, alpha)


def sequential_decisions(tables: np.ndarray, delta: float, looks: Sequence[int], rng: np.random.Generator,
                         sigma_w: np.ndarray | None, alpha: float = ALPHA, design: str = SEQUENTIAL_DESIGN,
                         near_ceiling: bool = False, n_test: int | None = None, unit: float = 1.0,
                         decide_open: Callable[[np.ndarray, int, Spending], np.ndarray] | None = None,
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The sequential design on standardised tables holding the last look's seeds: look k uses the first n_k
    seeds, spends each share of ``alpha`` at look k from its own allotment under ``design``
    (models/sequential.py, :class:`Spending`), and the first decision stands. Returns (verdict per table, seeds
    it used). ``decide_open(idx, n_k, spend)``, when given, decides the tables still open at a look (their
    indices, the look's seeds and spending; 1 / -1 / 0 per index) in place of :func:`rule_decisions`: a caller
    that needs each look's evidence, not only its verdict (studies/family_calibration.py), runs the same looks."""
    verdict = np.zeros(tables.shape[0], dtype=int)
    seeds = np.full(tables.shape[0], int(looks[-1]))
    open_ = np.ones(tables.shape[0], dtype=bool)
    for k, n_k in enumerate(looks):
        idx = np.flatnonzero(open_)
        if not idx.size:
            break
        spend = Spending(float(alpha), tuple(int(n) for n in looks), k, design)
        d = (decide_open(idx, int(n_k), spend) if decide_open is not None else
             rule_decisions(tables[idx, :, :n_k], delta, spend, rng, sigma_w, near_ceiling=near_ceiling,
                            n_test=n_test, unit=unit))
        hit = d != 0
        verdict[idx[hit]], seeds[idx[hit]] = d[hit], n_k
        open_[idx[hit]] = False
    return verdict, seeds


def deciding_deltas(upper: np.ndarray, bound: np.ndarray, scale: float) -> dict[str, float | None]:
    """The deltas that would decide 80% of the simulated experiments, in outcome units, or None when none does.

    ``upper`` (per experiment): "forgets" holds at every delta above it, so ``delta_forgets`` is its 80% quantile
    (None when that is infinite: 80% of experiments cannot show "forgets" at any delta). ``bound``: "remembers"
    holds at every delta up to it, so ``delta_remembers`` is its 20% quantile; a spread that matters is positive,
    so a quantile <= 0 (or -inf: the paired test rejects nowhere) means no positive delta gives "remembers" in
    80% of experiments, and it is None rather than a negative smallest spread."""
    with np.errstate(invalid="ignore"):  # inf - inf between infinite bounds: NaN, read as "none"
        df = float(np.quantile(upper, TARGET) * scale)
        dr = float(np.quantile(bound, 1 - TARGET) * scale)
    return {"delta_forgets": max(df, 0.0) if np.isfinite(df) else None,
            "delta_remembers": dr if np.isfinite(dr) and dr > 0 else None}


def power(simulate, scale: float, delta: float, ladder: tuple[int, ...], rng: np.random.Generator,
          n_now: int | None = None, n_eff: float = N_EFF, sigma_w: np.ndarray | None = None,
          near_ceiling: bool = False, n_test: int | None = None) -> dict[str, Any]:
    """P(remembers), P(forgets) per seed count; seeds needed; deltas that decide at ``n_now``. ``n_test``: the
    test set of an accuracy, whose lattice floors the paired tests' SEs as in the analysis."""
    lattice = {"n_test": n_test, "unit": scale}
    p_dec, p_rem, p_for = {}, {}, {}
    deltas: dict[str, float | None] = {"delta_forgets": None, "delta_remembers": None}
    for s in ladder:
        if p_dec and max(p_dec.values()) >= TARGET and (n_now is None or s > n_now):
            break  # decided already: larger experiments are not needed
        tables = simulate(s) / scale
        post = {**posterior_spread(tables, delta / scale, rng, sigma_w=sigma_w, **lattice),
                "near_ceiling": near_ceiling}
        v = decide(post, delta / scale, n_eff)
        p_rem[s], p_for[s] = float(np.mean(v == 1)), float(np.mean(v == -1))
        p_dec[s] = p_rem[s] + p_for[s]
        if s == n_now:
            bound = np.minimum(post["q05"], remembers_bounds(tables, sigma_w=sigma_w, **lattice))
            join = np.maximum if near_ceiling else np.minimum   # both routes near the ceiling, else either
            upper = np.where(post["model_forgets_ok"], join(post["q_forgets"], post["iut_bound"]),
                             np.inf if near_ceiling else post["iut_bound"])
            deltas = deciding_deltas(upper, bound, scale)
    needed = next((s for s in ladder if p_dec[s] >= TARGET), None)
    return {"seeds_needed": needed, "p_decisive": p_dec, "p_remembers": p_rem, "p_forgets": p_for, **deltas}


def sequential_plan(simulate, scale: float, delta: float, looks: Sequence[int], rng: np.random.Generator,
                    sigma_w: np.ndarray | None = None, near_ceiling: bool = False,
                    n_test: int | None = None) -> dict[str, Any]:
    """What ``initmem run --until-decided`` would spend on this pipeline: the chance of each verdict and the
    expected and largest seeds, from experiments simulated with the last look's seeds (docs/sequential.md)."""
    verdict, seeds = sequential_decisions(simulate(int(looks[-1])) / scale, delta / scale, looks, rng, sigma_w,
                                          near_ceiling=near_ceiling, n_test=n_test, unit=scale)
    return {"looks": [int(n) for n in looks], "p_remembers": float(np.mean(verdict == 1)),
            "p_forgets": float(np.mean(verdict == -1)), "p_decided": float(np.mean(verdict != 0)),
            "seeds_mean": float(seeds.mean()), "seeds_max": int(seeds.max())}


def refuse_crossed(summary: Summary, folder: Path) -> None:
    """Refuse to plan an analysis of a crossed seed design.

    Why: the plan simulates future experiments from the memory model's posterior, which has one seed SD and no
    init or data seeds, with S independent seeds per cell, and decides them by tests that read each run as one
    seed. A crossed design's runs share init and data seeds, its scale tests read the crossed blocks and its
    "forgets" needs the intersection-union test (models/summaries.py, ``verdict``); "more seeds" there means
    more init seeds, more data seeds or both, which the posterior cannot simulate. A plan would price the
    wrong experiment, so none is made.

    Parameters
    ----------
    summary : Summary
        The analysis's summary.json.
    folder : pathlib.Path
        The analysis folder, for the message.

    Raises
    ------
    UserError
        When the summary has a ``crossed`` block (a cube with a crossed seed design).
    """
    if summary.crossed is not None:
        raise UserError(f"{folder / SUMMARY_JSON} is an analysis of a crossed seed design "
                        f"({summary.crossed.n_init} init x {summary.crossed.n_data} data seeds): 'initmem plan' is "
                        "for designs with one seed per run (a list of seeds); the init seeds a crossed design needs "
                        "come from its draw plan (initmem.stats.crossed_plan.plan_draw, docs/crossed.md)")


def plan(analysis_dir: str | os.PathLike, delta: float | None = None, *, n_sim: int = 200, seed: int = 0,
         ladder: tuple[int, ...] = SEED_LADDER, looks: tuple[int, ...] = (4, 8, 12, 16)) -> PlanResult:
    """Seeds per cell needed for a decisive verdict with probability >= 0.8, per pipeline, and what the
    sequential design with ``looks`` would spend, by the analysis's own rule on experiments simulated from its
    posterior (docs/memory-model.md, "Planning").

    Parameters
    ----------
    analysis_dir : str or os.PathLike
        A folder written by ``initmem analyze``.
    delta : float, optional
        The smallest spread that matters; None: the analysis's own.
    n_sim : int, default 200
        Simulated experiments per seed count (at least 10).
    seed : int, default 0
        The random seed of the simulations.
    ladder : tuple of int
        The seed counts to try.
    looks : tuple of int, default (4, 8, 12, 16)
        The sequential design to price (``initmem run --until-decided --looks``).

    Returns
    -------
    PlanResult
        A dict: per pipeline the seeds needed, P(decisive) per seed count, the deltas that would decide now, and
        the sequential design's expected and largest seeds; it prints as one line per pipeline, and ``to_frame()``
        gives one row per pipeline, rule and seed count.

    Raises
    ------
    UserError
        Not an analysis folder, one written without the posterior the plan needs, or an analysis of a cube whose
        seeds are a crossed init x data design (summary.json's ``crossed`` block): the plan simulates
        independent seeds, one per run, and a crossed design's runs share init and data seeds.
    OptionError
        ``delta`` not positive or ``n_sim`` below 10.

    Examples
    --------
    The analysis folder of [`initmem.analyze`][initmem.analyze]'s example (20 simulated experiments per seed
    count, for speed; the default is 200):

    >>> import initmem
    >>> planned = initmem.plan("analysis", n_sim=20)
    >>> sorted(planned["pipelines"]), planned["ladder"][:4]
    (['flat', 'steep'], [2, 3, 4, 5])
    >>> planned["pipelines"]["steep"]["n_seed_now"]
    3
    >>> frame = planned.to_frame()
    >>> sorted(frame["rule"].unique()), bool(frame["p_decisive"].between(0, 1).all())
    (['posterior', 'reml'], True)
    """
    folder = Path(analysis_dir)
    summary = load_summary(folder)
    refuse_crossed(summary, folder)
    # a delta given here is checked by the one check of a margin (results/margins.py); the stored one was
    delta = summary.delta if delta is None else resolve_margins(summary.metric, delta=delta,
                                                                accuracy=summary.is_accuracy).delta
    if n_sim < 10:
        raise OptionError("n_sim", "{option} must be at least 10")
    post = arviz_io.from_netcdf(folder / POSTERIOR_NC).posterior
    for name in ("expected", "seed_sd", "residual_sd"):
        if name not in post:
            raise UserError(f"{folder / POSTERIOR_NC} lacks {name!r}: rerun 'initmem analyze' with this version")
    rng = np.random.default_rng(seed)
    n_test = summary.n_test if summary.is_accuracy else None     # an accuracy's lattice, as the analysis floors it
    out: dict[str, Any] = {"delta": delta, "target": TARGET, "n_sim": n_sim, "ladder": list(ladder), "rule": RULE,
                           "family": summary.family, "metric": summary.metric, "pipelines": {}}

    def flat(name: str, pipe: str) -> np.ndarray:
        x = post[name].sel({cube.PIPELINE: pipe}).values
        return x.reshape(-1, *x.shape[2:])

    for pipe, entry in summary.pipelines.items():
        scale = entry.noise_scale
        if scale is None or not scale > 0:
            raise UserError(f"{folder / SUMMARY_JSON} has no noise_scale for {pipe!r}: rerun 'initmem analyze' "
                            "with this version")
        levels = np.isin(post[cube.SIGMA].values, np.asarray(entry.expected.sigma_w, dtype=float))
        n_draws = post.sizes["chain"] * post.sizes["draw"]
        take = rng.choice(n_draws, size=n_sim, replace=n_draws < n_sim)
        exp_, sd_seed, sd_res = flat("expected", pipe)[take][:, levels], flat("seed_sd", pipe)[take], \
            flat("residual_sd", pipe)[take]
        sd_slope = flat("slope_sd", pipe)[take] if "slope_sd" in post else np.zeros(n_sim)
        sig = np.asarray(entry.expected.sigma_w, dtype=float)
        x = core.slope_axis(sig, np.ones(sig.size, dtype=bool)) if sd_slope.any() else None
        n_now, near = entry.n_seed, bool(entry.near_ceiling)
        lad = tuple(sorted(set(ladder) | ({int(n_now)} if n_now and n_now >= 2 else set())))
        def simulate(s: int, e=exp_, a=sd_seed, b=sd_res, c=sd_slope, x=x) -> np.ndarray:
            return core.predictive_tables(np.zeros(n_sim), e, a, b, s, rng, x=x, slope_sd=c)

        result: dict[str, Any] = {
            "n_seed_now": n_now, "n_sigma": int(levels.sum()), "verdict_now": entry.verdict,
            "posterior": power(simulate, scale, delta, lad, rng, n_now, sigma_w=None if x is None else sig,
                               near_ceiling=near, n_test=n_test),
            "sequential": sequential_plan(simulate, scale, delta, looks, rng, None if x is None else sig, near,
                                          n_test=n_test),
        }
        reml = entry.frequentist.reml.model_dump() if entry.frequentist is not None else {}
        if all(isinstance(reml.get(k), int | float) and np.isfinite(reml[k])
               for k in ("sigma_sd", "seed_sd", "residual_sd")):
            result["reml"] = power(lambda s, r=reml, n_lev=int(levels.sum()): simulate_reml(r, n_lev, s, n_sim, rng),
                                   scale, delta, lad, rng, n_now, sigma_w=None if x is None else sig, near_ceiling=near,
                                   n_test=n_test)
        else:
            result["reml"] = None
        out["pipelines"][pipe] = result
    return PlanResult(out, is_accuracy=summary.is_accuracy)


def render_table(result: dict[str, Any]) -> str:
    """A plain-text table of the plan (one row per pipeline)."""
    top = result["ladder"][-1]
    head = (f"seeds per cell for a decisive verdict with probability >= {result['target']:.0%} "
            f"(delta = {result['delta']:g}, {result['n_sim']} simulations per size)")
    cols = (f"{'pipeline':<20} {'now':>4} {'verdict now':<13} {'posterior':>10} {'REML':>6}  P(decisive) now"
            "  delta to forget / remember now  sequential: E[seeds] / max (P decided)")
    lines = [head, cols, "-" * len(cols)]
    for pipe, r in result["pipelines"].items():
        def need(x):
            if x is None:
                return "-"
            return str(x["seeds_needed"]) if x["seeds_needed"] is not None else f">{top}"
        now = r["n_seed_now"]
        p_now = r["posterior"]["p_decisive"].get(now) if now is not None else None
        p_txt = f"{p_now:.2f}" if p_now is not None else "-"
        df, dr = r["posterior"]["delta_forgets"], r["posterior"]["delta_remembers"]
        d_txt = " / ".join("-" if d is None else f"{d:.4g}" for d in (df, dr))  # "-": no positive delta decides
        sq = r.get("sequential")
        s_txt = f"{sq['seeds_mean']:.1f} / {sq['seeds_max']} ({sq['p_decided']:.2f})" if sq else "-"
        lines.append(f"{pipe:<20} {now if now is not None else '-':>4} {str(r['verdict_now']):<13} "
                     f"{need(r['posterior']):>10} {need(r['reml']):>6}  {p_txt:>15}  {d_txt:<31}  {s_txt}")
    lines.append(f"rule: {result['rule']}")
    return "\n".join(lines)
