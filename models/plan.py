"""``initmem plan``: how many seeds per cell would make each pipeline's verdict decisive?

METHODS.md section 5. From a finished analysis folder we simulate future experiments with the
same sigma_w grid and S seeds per cell, for a ladder of S, and report per pipeline the smallest
S for which a decisive verdict ("remembers" or "forgets") comes out with probability >= 80%.

Two sources of "truth" for the simulations:

- posterior: each simulated experiment takes one posterior draw of the pipeline's population
  intercept, its sigma_w-level effects, seed SD and residual SD (and, for accuracies, binomial
  test-set noise with the same n_test), then draws fresh seeds and residuals;
- REML (a check, when the frequentist cross-check is in summary.json): the REML standard
  deviations in outcome units, with fresh level effects, seed effects and residuals per
  simulation.

The decision rule is a cheap, documented APPROXIMATION of the Bayesian verdict, not a refit of
the hierarchical model (a refit per simulated dataset would take hours). Per simulated dataset:
level means m_i over seeds; the residual mean square MSE of the additive two-way (level + seed)
fit; the standard error of a difference of two level means, sqrt(2 MSE / S) (seeds are paired,
so seed effects cancel); a one-sided t quantile at 5% / K with K = L(L-1)/2 pairs (Bonferroni)
and (L-1)(S-1) degrees of freedom. "remembers" if some pair's |m_i - m_j| - t SE > delta (the
spread, which is at least every pairwise difference, then exceeds delta); "forgets" if every
pair's |m_i - m_j| + t SE < delta; otherwise "inconclusive". The rule is conservative
relative to the Bayesian model (no pooling across pipelines, Bonferroni), so the seed counts it
gives are, if anything, on the safe side.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from initmem.errors import UserError
from initmem.models import arviz_io

SEED_LADDER = (2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
TARGET = 0.8
ALPHA = 0.05

RULE = ("approximate decision rule (not a refit): Bonferroni one-sided t bounds on pairwise "
        "differences of seed-averaged level means, SE = sqrt(2 MSE / S) from the additive "
        "level + seed fit; remembers if a lower bound exceeds delta, forgets if every upper "
        "bound is below delta")


def decide(y: np.ndarray, delta: float) -> np.ndarray:
    """Approximate verdict per simulated dataset. ``y`` has shape (n_sim, L, S) on the outcome
    scale; returns an int array: 1 remembers, -1 forgets, 0 inconclusive."""
    n_sim, n_lev, n_seed = y.shape
    m = y.mean(axis=2)
    resid = y - m[:, :, None] - y.mean(axis=1)[:, None, :] + y.mean(axis=(1, 2))[:, None, None]
    df = (n_lev - 1) * (n_seed - 1)
    mse = (resid**2).sum(axis=(1, 2)) / df
    se = np.sqrt(2.0 * mse / n_seed)
    k = n_lev * (n_lev - 1) / 2
    t = stats.t.ppf(1.0 - ALPHA / k, df)
    diffs = np.abs(m[:, :, None] - m[:, None, :])
    biggest = diffs.max(axis=(1, 2))
    out = np.zeros(n_sim, dtype=int)
    out[biggest + t * se < delta] = -1
    out[biggest - t * se > delta] = 1
    return out


def simulate_posterior(draws: dict[str, np.ndarray], n_seed: int, family: str, n_test: int | None,
                       rng: np.random.Generator) -> np.ndarray:
    """Future experiments from posterior draws: arrays alpha (n,), u (n, L), seed_sd (n,),
    residual_sd (n,) [, nu (n,)] -> outcome-scale data (n, L, S)."""
    n, n_lev = draws["u"].shape
    eta = draws["alpha"][:, None, None] + draws["u"][:, :, None]
    v = rng.standard_normal((n, 1, n_seed)) * draws["seed_sd"][:, None, None]
    if family == "student_t":
        e = rng.standard_t(draws["nu"][:, None, None], size=(n, n_lev, n_seed))
    else:
        e = rng.standard_normal((n, n_lev, n_seed))
    eta = eta + v + e * draws["residual_sd"][:, None, None]
    if family == "binomial":
        return rng.binomial(n_test, 1.0 / (1.0 + np.exp(-eta))) / n_test
    return eta


def simulate_reml(reml: dict[str, float], n_lev: int, n_seed: int, n_sim: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Future experiments from REML standard deviations (outcome units), fresh effects each time."""
    u = rng.standard_normal((n_sim, n_lev, 1)) * reml["sigma_sd"]
    v = rng.standard_normal((n_sim, 1, n_seed)) * reml["seed_sd"]
    e = rng.standard_normal((n_sim, n_lev, n_seed)) * reml["residual_sd"]
    return u + v + e


def _power(simulate, delta: float, ladder: tuple[int, ...]) -> dict[str, Any]:
    p_dec, p_rem, p_for = {}, {}, {}
    for s in ladder:
        verdicts = decide(simulate(s), delta)
        p_rem[s] = float(np.mean(verdicts == 1))
        p_for[s] = float(np.mean(verdicts == -1))
        p_dec[s] = p_rem[s] + p_for[s]
    needed = next((s for s in ladder if p_dec[s] >= TARGET), None)
    return {"seeds_needed": needed, "p_decisive": p_dec, "p_remembers": p_rem, "p_forgets": p_for}


def plan(analysis_dir: str | os.PathLike, delta: float | None = None, *, n_sim: int = 400, seed: int = 0,
         ladder: tuple[int, ...] = SEED_LADDER) -> dict[str, Any]:
    """Seeds per cell needed for a decisive verdict with probability >= 0.8, per pipeline."""
    folder = Path(analysis_dir)
    summary_path = folder / "summary.json"
    if not summary_path.exists():
        raise UserError(f"no summary.json in {folder}: run 'initmem analyze CUBE.nc --out {folder}' first")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{summary_path} is not valid JSON ({exc})") from None
    delta = float(summary.get("delta", 0.01)) if delta is None else float(delta)
    if not (np.isfinite(delta) and delta > 0):
        raise UserError(f"--delta must be a positive number, not {delta!r}")
    if n_sim < 10:
        raise UserError("--n-sim must be at least 10")
    idata = arviz_io.from_netcdf(folder / "posterior.nc")
    post = idata.posterior
    for name in ("alpha_pop", "u_pop", "seed_sd", "residual_sd"):
        if name not in post:
            raise UserError(f"{folder / 'posterior.nc'} lacks {name!r}: rerun 'initmem analyze' with this version")
    family = summary["family"]
    n_test = summary.get("n_test")
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {
        "delta": delta, "target": TARGET, "n_sim": n_sim, "ladder": list(ladder), "rule": RULE,
        "family": family, "metric": summary.get("metric"), "pipelines": {},
    }

    def flat(name: str, pipe: str) -> np.ndarray:
        x = post[name].sel(pipeline=pipe).values
        return x.reshape(-1, *x.shape[2:])

    for pipe, entry in summary["pipelines"].items():
        levels = np.isin(post["sigma_w"].values, np.asarray(entry["expected"]["sigma_w"], dtype=float))
        n_draws = post.sizes["chain"] * post.sizes["draw"]
        take = rng.choice(n_draws, size=n_sim, replace=n_draws < n_sim)
        draws = {
            "alpha": flat("alpha_pop", pipe)[take],
            "u": flat("u_pop", pipe)[take][:, levels],
            "seed_sd": flat("seed_sd", pipe)[take],
            "residual_sd": flat("residual_sd", pipe)[take],
        }
        if family == "student_t":
            draws["nu"] = post["nu"].values.reshape(-1)[take]
        n_now = entry.get("n_seed")
        lad = tuple(sorted(set(ladder) | ({int(n_now)} if n_now and n_now >= 2 else set())))
        result: dict[str, Any] = {
            "n_seed_now": n_now, "n_sigma": int(levels.sum()), "verdict_now": entry.get("verdict"),
            "posterior": _power(lambda s, d=draws: simulate_posterior(d, s, family, n_test, rng), delta, lad),
        }
        reml = (entry.get("frequentist") or {}).get("reml") or {}
        if all(isinstance(reml.get(k), int | float) and np.isfinite(reml[k])
               for k in ("sigma_sd", "seed_sd", "residual_sd")):
            result["reml"] = _power(lambda s, r=reml, n_lev=int(levels.sum()): simulate_reml(r, n_lev, s, n_sim, rng),
                                    delta, lad)
        else:
            result["reml"] = None
        out["pipelines"][pipe] = result
    return out


def render_table(result: dict[str, Any]) -> str:
    """A plain-text table of the plan (one row per pipeline)."""
    lad = result["ladder"]
    top = lad[-1]
    head = (f"seeds per cell for a decisive verdict with probability >= {result['target']:.0%} "
            f"(delta = {result['delta']:g}, {result['n_sim']} simulations per size)")
    cols = f"{'pipeline':<20} {'now':>4} {'verdict now':<13} {'posterior':>10} {'REML':>6}  P(decisive) now"
    lines = [head, cols, "-" * len(cols)]
    for pipe, r in result["pipelines"].items():
        def need(x):
            if x is None:
                return "-"
            return str(x["seeds_needed"]) if x["seeds_needed"] is not None else f">{top}"
        now = r["n_seed_now"]
        p_now = r["posterior"]["p_decisive"].get(now) if now is not None else None
        p_txt = f"{p_now:.2f}" if p_now is not None else "-"
        lines.append(f"{pipe:<20} {now if now is not None else '-':>4} {str(r['verdict_now']):<13} "
                     f"{need(r['posterior']):>10} {need(r['reml']):>6}  {p_txt}")
    lines.append(f"rule: {result['rule']}")
    return "\n".join(lines)
