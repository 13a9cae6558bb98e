"""``initmem plan``: how many seeds, or which delta, would make each pipeline's verdict decisive?

From a finished analysis folder we simulate future experiments with the same sigma_w grid and S
seeds per cell, for a ladder of S, from the posterior (each simulated experiment takes one
posterior draw of the pipeline's expected metric per level, seed SD and residual SD and draws
fresh seeds and residuals, models/core.py). Each simulated experiment is then decided by THE
SAME posterior the analysis computes (same restricted likelihood, same priors, same noise
scale), evaluated by quadrature over the three SDs instead of NUTS: the model's posterior for a
complete table depends on the data only through the two-way mean squares, and three
dimensions are cheap to integrate on a grid. So the plan agrees with the analysis by
construction (tests/test_plan.py checks it against real NUTS refits), where the former rule
(Bonferroni t bounds) disagreed with the model by a factor of five in seeds.

Per pipeline the plan reports the smallest S with P(decisive verdict) >= 0.8 and, at the
current S, the deltas that would decide: ``delta_forgets`` (the smallest delta with "forgets"
in >= 80% of experiments) and ``delta_remembers`` (the largest delta with "remembers" in
>= 80%). Docs: docs/memory-model.md, "Planning".
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from initmem import cube
from initmem.errors import OptionError, UserError
from initmem.models import arviz_io, core
from initmem.models.priors import Priors, default_priors
from initmem.models.summaries import DECISION
from initmem.results import POSTERIOR_NC, SUMMARY_JSON, load_summary
from initmem.stats.anova import mean_squares

SEED_LADDER = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
TARGET = 0.8
N_POST = 400
N_EFF = 4000.0  # effective draws of a default analysis (4 chains x 1000 draws, near-independent)
_SU = np.linspace(-7.0, 5.0, 48)
_SV = np.linspace(-7.0, 3.0, 16)
_SE = np.linspace(-3.0, 2.5, 40)

RULE = ("the analysis's own posterior (restricted likelihood of the three SDs, the same priors and noise "
        "scale), computed by quadrature over the SDs for each simulated experiment")


def _grid_logprior(priors: Priors) -> np.ndarray:
    """Log prior density of the log-SD grid (su, sv, se), Jacobian included."""
    def lp(x: np.ndarray) -> np.ndarray:
        return priors.logpdf(np.exp(x)) + x
    return lp(_SU)[:, None, None] + lp(_SV)[None, :, None] + lp(_SE)[None, None, :]


def posterior_spread(tables: np.ndarray, delta: float, rng: np.random.Generator,
                     priors: Priors | None = None, n_post: int = N_POST, chunk: int = 64) -> dict[str, np.ndarray]:
    """The memory model's posterior of the spread for complete standardised tables (n, L, S):
    P(spread > delta), P(spread < delta), and the 5% / 95% quantiles, per table.

    The log posterior on the grid is a data-free part plus a linear function of the three sums
    of squares (models/core.py), so a batch of tables is one matrix product."""
    priors = priors or default_priors()
    ms = mean_squares(tables)
    n, n_lev, n_seed = tables.shape
    s2u, s2v, s2e = (np.exp(2 * g).ravel() for g in np.meshgrid(_SU, _SV, _SE, indexing="ij"))
    zero = {"n_level": n_lev, "n_seed": n_seed, "ss_level": 0.0, "ss_seed": 0.0, "ss_e": 0.0}
    base = core.reml_loglik(zero, s2u, s2v, s2e) + _grid_logprior(priors).ravel()
    coef = -0.5 / np.stack([s2e + n_seed * s2u, s2e + n_lev * s2v, s2e])        # (3, G)
    ss = np.stack([ms.ss_level, ms.ss_seed, ms.ss_e], axis=1)                  # (n, 3)
    level_means = tables.mean(axis=-1)
    lev = np.ones((1, n_lev), dtype=bool)
    out = {k: np.empty(n) for k in ("p_gt", "p_lt", "q05", "q95")}
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        lp = base[None, :] + ss[lo:hi] @ coef
        cdf = np.cumsum(np.exp(lp - lp.max(axis=1, keepdims=True)), axis=1)
        cdf /= cdf[:, -1:]
        pick = np.stack([np.searchsorted(row, rng.random(n_post)) for row in cdf])   # (m, n_post)
        pick = np.minimum(pick, s2u.size - 1)
        iu = np.unravel_index(pick, (_SU.size, _SV.size, _SE.size))[0]
        # jitter sigma_sd within its grid cell so that the draws are continuous
        su2 = np.exp(2 * (_SU[iu] + rng.uniform(-0.5, 0.5, pick.shape) * (_SU[1] - _SU[0])))
        m = hi - lo
        _, u = core.draw_levels(np.broadcast_to(level_means[lo:hi, None, :], (m, n_post, n_lev)),
                                np.broadcast_to(ms.grand[lo:hi, None], (m, n_post)), lev[None],
                                np.full((m, n_post), float(n_seed)), su2, s2v[pick], s2e[pick], rng)
        sp = core.spread(u, lev[None])
        out["p_gt"][lo:hi], out["p_lt"][lo:hi] = (sp > delta).mean(axis=1), (sp < delta).mean(axis=1)
        out["q05"][lo:hi], out["q95"][lo:hi] = np.quantile(sp, [0.05, 0.95], axis=1)
    return out


def decide(post: dict[str, np.ndarray], n_eff: float = N_EFF) -> np.ndarray:
    """1 remembers, -1 forgets, 0 inconclusive or borderline per simulated experiment: the
    analysis's rule, with the borderline band of an analysis whose sampler gives ``n_eff``
    effective draws (2 binomial MCSE around 0.95)."""
    out = np.zeros(post["p_gt"].shape, dtype=int)
    band = 2.0 * np.sqrt(DECISION * (1 - DECISION) / n_eff)
    out[post["p_gt"] >= DECISION + band] = 1
    out[post["p_lt"] >= DECISION + band] = -1
    return out


def simulate_reml(reml: dict[str, float], n_lev: int, n_seed: int, n_sim: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Future experiments from REML standard deviations (outcome units), fresh level effects."""
    u = rng.standard_normal((n_sim, n_lev)) * reml["sigma_sd"]
    return core.predictive_tables(np.zeros(n_sim), u, np.full(n_sim, reml["seed_sd"]),
                                  np.full(n_sim, reml["residual_sd"]), n_seed, rng)


def power(simulate, scale: float, delta: float, ladder: tuple[int, ...], rng: np.random.Generator,
          n_now: int | None = None, n_eff: float = N_EFF) -> dict[str, Any]:
    """P(remembers), P(forgets) per seed count; seeds needed; deltas that decide at ``n_now``."""
    p_dec, p_rem, p_for = {}, {}, {}
    deltas: dict[str, float | None] = {"delta_forgets": None, "delta_remembers": None}
    for s in ladder:
        if p_dec and max(p_dec.values()) >= TARGET and (n_now is None or s > n_now):
            break  # decided already: larger experiments are not needed
        post = posterior_spread(simulate(s) / scale, delta / scale, rng)
        v = decide(post, n_eff)
        p_rem[s], p_for[s] = float(np.mean(v == 1)), float(np.mean(v == -1))
        p_dec[s] = p_rem[s] + p_for[s]
        if s == n_now:
            deltas = {"delta_forgets": float(np.quantile(post["q95"], TARGET) * scale),
                      "delta_remembers": float(np.quantile(post["q05"], 1 - TARGET) * scale)}
    needed = next((s for s in ladder if p_dec[s] >= TARGET), None)
    return {"seeds_needed": needed, "p_decisive": p_dec, "p_remembers": p_rem, "p_forgets": p_for, **deltas}


def plan(analysis_dir: str | os.PathLike, delta: float | None = None, *, n_sim: int = 200, seed: int = 0,
         ladder: tuple[int, ...] = SEED_LADDER) -> dict[str, Any]:
    """Seeds per cell needed for a decisive verdict with probability >= 0.8, per pipeline."""
    folder = Path(analysis_dir)
    summary = load_summary(folder)
    delta = summary.delta if delta is None else float(delta)
    if not (delta is not None and np.isfinite(delta) and delta > 0):
        raise OptionError("delta", f"{{option}} must be a positive number, not {delta!r}")
    if n_sim < 10:
        raise OptionError("n_sim", "{option} must be at least 10")
    post = arviz_io.from_netcdf(folder / POSTERIOR_NC).posterior
    for name in ("expected", "seed_sd", "residual_sd"):
        if name not in post:
            raise UserError(f"{folder / POSTERIOR_NC} lacks {name!r}: rerun 'initmem analyze' with this version")
    rng = np.random.default_rng(seed)
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
        n_now = entry.n_seed
        lad = tuple(sorted(set(ladder) | ({int(n_now)} if n_now and n_now >= 2 else set())))
        result: dict[str, Any] = {
            "n_seed_now": n_now, "n_sigma": int(levels.sum()), "verdict_now": entry.verdict,
            "posterior": power(lambda s, e=exp_, a=sd_seed, b=sd_res: core.predictive_tables(
                np.zeros(n_sim), e, a, b, s, rng), scale, delta, lad, rng, n_now),
        }
        reml = entry.frequentist.reml.model_dump() if entry.frequentist is not None else {}
        if all(isinstance(reml.get(k), int | float) and np.isfinite(reml[k])
               for k in ("sigma_sd", "seed_sd", "residual_sd")):
            result["reml"] = power(lambda s, r=reml, n_lev=int(levels.sum()): simulate_reml(r, n_lev, s, n_sim, rng),
                                   scale, delta, lad, rng, n_now)
        else:
            result["reml"] = None
        out["pipelines"][pipe] = result
    return out


def render_table(result: dict[str, Any]) -> str:
    """A plain-text table of the plan (one row per pipeline)."""
    top = result["ladder"][-1]
    head = (f"seeds per cell for a decisive verdict with probability >= {result['target']:.0%} "
            f"(delta = {result['delta']:g}, {result['n_sim']} simulations per size)")
    cols = (f"{'pipeline':<20} {'now':>4} {'verdict now':<13} {'posterior':>10} {'REML':>6}  P(decisive) now"
            "  delta to forget / remember now")
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
        d_txt = f"{df:.4g} / {dr:.4g}" if df is not None and dr is not None else "-"
        lines.append(f"{pipe:<20} {now if now is not None else '-':>4} {str(r['verdict_now']):<13} "
                     f"{need(r['posterior']):>10} {need(r['reml']):>6}  {p_txt:>15}  {d_txt}")
    lines.append(f"rule: {result['rule']}")
    return "\n".join(lines)
