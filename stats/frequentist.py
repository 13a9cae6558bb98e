"""Frequentist cross-checks of the memory model, one pipeline at a time (docs/frequentist.md).

Each pipeline is a randomized complete block design: treatment sigma_w, block seed (with paired
seeds, common random numbers shared by every sigma_w; with independent seeds the blocks are
arbitrary labels, which costs degrees of freedom but not validity). For every pipeline we report

- REML variance components of y ~ 1 + (1|sigma_w) + (1|seed), crossed, at the exact optimum
  (stats/reml.py), as standard deviations, with singular fits flagged;
- a repeated-measures ANOVA (within = sigma_w, subject = seed) with the Greenhouse-Geisser p and
  generalized eta squared, and the rank-based Friedman test;
- two one-sided tests (TOST) that the spread over the grid lies inside +-delta, and the mirror
  minimum-effect test that it exceeds delta;
- Holm corrections across pipelines, a frequentist verdict, and an agreement flag against the
  Bayesian verdict with every disagreement explained in words. A borderline Bayesian verdict
  ("undecided" with a probability within two Monte Carlo errors of its threshold) agrees with no
  frequentist verdict, since another sampler run could decide it, and the reason says so.

Why both: the Bayesian model (docs/memory-model.md) fits each pipeline on its own, nothing pooled
across pipelines, with half-Student-t priors on its four SDs in units of a noise scale taken from
the test set (per-example predictions or the binomial bound of counts) or, for other metrics, the
pooled seed SD; its spread is that of the expected metric over new seeds. The classical tests
have no prior and see only the scatter between seeds. When the two agree the reader can trust
the verdict without trusting the sampler; when they differ the reason is usually one of a few
(few seeds, a binomial floor, an outlier seed, a spread close to delta) and we say which.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from initmem import cube
from initmem.errors import UserError
from initmem.names import ALPHA, FORGETS, REMEMBERS, UNDECIDED, VERDICTS
from initmem.results.margins import check_margin
from initmem.results.records import PipelineResult
from initmem.stats import effects
from initmem.stats.anova import mean_squares
from initmem.stats.reml import reml_fit

# Data --------------------------------------------------------------------------------------

def cell_values(ds: xr.Dataset, metric: str) -> xr.DataArray:
    """``ds[metric]`` on (pipeline, sigma_w, seed) with every cell that is not status ok as NaN."""
    if metric not in ds.data_vars:
        raise UserError(f"the cube has no variable {metric!r}; choose one of {', '.join(map(str, ds.data_vars))}")
    da = ds[metric]
    if set(da.dims) != set(cube.CELL_DIMS):
        raise UserError(
            f"metric {metric!r} has dims {tuple(da.dims)}; the cross-checks need one value per "
            "(pipeline, sigma_w, seed) cell, e.g. selected_test_acc")
    da = da.transpose(*cube.CELL_DIMS).astype(float)
    da = da.where(cube.ok_cells(ds))
    return da


def _long_table(da: xr.DataArray) -> pd.DataFrame:
    sig = da[cube.SIGMA].values
    seeds = da[cube.SEED].values
    y = da.values
    ii, ss = np.nonzero(np.isfinite(y))
    return pd.DataFrame({cube.SIGMA: sig[ii], cube.SEED: seeds[ss], "y": y[ii, ss]})


def complete_block(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The largest complete (level x seed) table the classical RCBD tests can use.

    Levels without any value are dropped first; then the seeds observed at every remaining level
    are kept. Returns (table, kept level mask, kept seed mask).
    """
    fin = np.isfinite(y)
    lev = fin.any(axis=1)
    seeds = fin[lev].all(axis=0) if lev.any() else np.zeros(y.shape[1], bool)
    return y[np.ix_(lev, seeds)], lev, seeds


# Closed-form two-way ANOVA (one value per cell) ------------------------------------------------

def rcbd_anova(table: np.ndarray) -> dict[str, float]:
    """Sums of squares, mean squares and ANOVA variance components of a complete levels x seeds
    table without replication, as plain floats (see :mod:`initmem.stats.anova`)."""
    ms = mean_squares(table)
    return {
        "I": ms.n_level, "J": ms.n_seed, "ss_level": float(ms.ss_level), "ss_seed": float(ms.ss_seed),
        "ss_e": float(ms.ss_e), "ss_total": float(ms.ss_total), "df_level": ms.df_level,
        "df_seed": ms.df_seed, "df_e": ms.df_e, "ms_level": float(ms.ms_level), "ms_seed": float(ms.ms_seed),
        "ms_e": float(ms.ms_e), "s2_level": float(ms.s2_level), "s2_seed": float(ms.s2_seed),
        "s2_e": float(ms.ms_e),
    }


# REML --------------------------------------------------------------------------------------

def reml_components(df: pd.DataFrame) -> dict[str, Any]:
    """REML standard deviations of y ~ 1 + (1|sigma_w) + (1|seed), crossed (stats/reml.py).

    Exact for balanced complete tables (closed form, boundary included), multi-start profiled
    REML otherwise; ``singular`` flags a component at zero. Raises ValueError when the data
    cannot identify the model (fewer than 2 levels or seeds, no residual df, constant y).
    """
    if df[cube.SIGMA].nunique() < 2 or df[cube.SEED].nunique() < 2:
        raise ValueError("REML needs at least 2 sigma_w levels and 2 seeds")
    if len(df) <= df[cube.SIGMA].nunique() + df[cube.SEED].nunique() - 1:
        raise ValueError("REML needs more cells than levels + seeds - 1 (no residual degrees of freedom)")
    if np.ptp(df["y"].to_numpy()) == 0:
        raise ValueError("the metric is constant over the pipeline's cells")
    return reml_fit(df["y"].to_numpy(float), df[cube.SIGMA].to_numpy(), df[cube.SEED].to_numpy()).as_dict()


# Classical tests on the complete block ----------------------------------------------------------

def greenhouse_geisser(table: np.ndarray) -> np.ndarray:
    """Greenhouse-Geisser epsilon of ``table[..., level, seed]`` (vectorised), in [1/(I-1), 1].

    From the double-centred covariance of the levels over seeds: eps = tr(C)^2 / ((I-1) tr(C^2)).
    """
    t = np.asarray(table, float)
    n_lev = t.shape[-2]
    dev = t - t.mean(axis=-1, keepdims=True)
    cov = dev @ np.swapaxes(dev, -1, -2) / max(t.shape[-1] - 1, 1)
    h = np.eye(n_lev) - 1.0 / n_lev
    c = h @ cov @ h
    tr = np.trace(c, axis1=-2, axis2=-1)
    tr2 = (c * c).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        eps = tr**2 / ((n_lev - 1) * tr2)
    return np.clip(eps, 1.0 / (n_lev - 1), 1.0)


def rm_anova(table: np.ndarray) -> dict[str, float]:
    """One-way repeated-measures ANOVA (within sigma_w, subject seed) with the Greenhouse-Geisser p.

    F = MS_level / MS_error from the block design's mean squares; the uncorrected p assumes
    sphericity, which seeds that interact with sigma_w break (measured: 16% rejections of true
    nulls), so ``p`` is the Greenhouse-Geisser p (degrees of freedom times epsilon; also under
    ``p_gg``) and the one Holm corrects; ``p_uncorrected`` is kept for reference.
    ng2 = SS_level / (SS_level + SS_seed + SS_error), the generalized eta squared of one within factor.
    """
    ms = mean_squares(table)
    f = float(ms.ms_level / ms.ms_e) if ms.ms_e > 0 else math.inf
    eps = float(greenhouse_geisser(table))
    p_gg = float(stats.f.sf(f, eps * ms.df_level, eps * ms.df_e))
    return {"F": f, "p": p_gg, "p_gg": p_gg, "p_uncorrected": float(stats.f.sf(f, ms.df_level, ms.df_e)),
            "eps_gg": eps,
            "ng2": float(ms.ss_level / (ms.ss_level + ms.ss_seed + ms.ss_e))}


def friedman(table: np.ndarray) -> dict[str, float]:
    """Friedman's rank test (levels ranked within each seed), with the tie correction.

    Written out rather than calling scipy so that two sigma_w levels work too (scipy wants 3);
    for >= 3 levels it equals scipy.stats.friedmanchisquare.
    """
    n_lev, n_seed = table.shape
    ranks = stats.rankdata(table, axis=0)
    rsum = ranks.sum(axis=1)
    q = 12.0 / (n_seed * n_lev * (n_lev + 1)) * (rsum**2).sum() - 3.0 * n_seed * (n_lev + 1)
    ties = 0.0
    for j in range(n_seed):
        _, counts = np.unique(table[:, j], return_counts=True)
        ties += (counts**3 - counts).sum()
    corr = 1.0 - ties / (n_seed * (n_lev**3 - n_lev))
    if corr <= 0:
        return {"Q": 0.0, "p": 1.0}
    q /= corr
    return {"Q": float(q), "p": float(stats.chi2.sf(q, n_lev - 1))}


def spread_tests(table: np.ndarray, delta: float) -> dict[str, float]:
    """TOST (spread < delta) and the minimum-effect test (spread > delta).

    The spread is below delta iff every pairwise level difference lies in (-delta, delta): an
    intersection-union test, so its p-value is the largest pairwise TOST p-value, which is the
    one of the pair that sets the spread: t.sf((delta - spread) / se, df). Differences use the
    block residual mean square (paired by seed), se = sqrt(2 MS_e / J) on (I-1)(J-1) df.
    The spread exceeds delta iff some pairwise |difference| does; under that null the studentized
    range bounds the maximum error, so p = P(Q_range > (spread - delta) / sqrt(MS_e / J)).
    """
    a = rcbd_anova(table)
    n_lev, n_seed, df_e = a["I"], a["J"], a["df_e"]
    lev_m = table.mean(axis=1)
    spread = float(lev_m.max() - lev_m.min())
    ms_e = max(a["ms_e"], 1e-300)
    se_diff = math.sqrt(2.0 * ms_e / n_seed)
    p_tost = float(stats.t.sf((delta - spread) / se_diff, df_e))
    q = (spread - delta) / math.sqrt(ms_e / n_seed)
    if q <= 0:
        p_min = 1.0
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p_min = float(stats.studentized_range.sf(q, n_lev, df_e))
        p_min = min(max(p_min, 0.0), 1.0)
    return {"spread": spread, "se_diff": se_diff, "df": df_e, "tost_p": min(max(p_tost, 0.0), 1.0),
            "min_effect_p": p_min}


def holm(pvals: dict[str, float]) -> dict[str, float]:
    """Holm step-down adjusted p-values over the finite entries (NaN stays NaN).

    pingouin's, not statsmodels' ``multipletests``: the latter runs a full ``gc.collect()`` on every Holm
    call, 0.18 s each in an analysis process (four calls per analysis: 0.72 s of a 9.5 s ``analyze``,
    the largest single cost in its profile) and more in a long-lived one. The adjusted values are the same."""
    keys = [k for k, p in pvals.items() if p is not None and math.isfinite(p)]
    out = {k: math.nan for k in pvals}
    if not keys:
        return out
    import pingouin

    adj = pingouin.multicomp(np.asarray([pvals[k] for k in keys], dtype=float), method="holm")[1]
    out.update({k: float(v) for k, v in zip(keys, adj, strict=True)})
    return out


# Per pipeline ------------------------------------------------------------------------------

def _analyse_pipeline(da: xr.DataArray, delta: float) -> dict[str, Any]:
    """Everything that does not need the other pipelines (no Holm yet)."""
    y = da.values
    df = _long_table(da)
    res: dict[str, Any] = {"notes": [], "n_sigma": int(df[cube.SIGMA].nunique()),
                           "n_seed": int(df[cube.SEED].nunique())}
    try:
        res["reml"] = reml_components(df)
    except ValueError as exc:
        res["reml"] = {"sigma_sd": math.nan, "seed_sd": math.nan, "residual_sd": math.nan, "singular": False,
                       "method": "not fitted", "reml_loglik": math.nan}
        res["notes"].append(f"REML not fitted: {exc}")
    table, lev, seeds = complete_block(y)
    res["table"] = table
    res["seed_labels"] = da[cube.SEED].values[seeds]
    res["n_complete_seed"], res["n_complete_sigma"] = int(table.shape[1]), int(table.shape[0])
    dropped = int(np.isfinite(y).sum() - table.size)
    if dropped:
        res["notes"].append(
            f"{dropped} cell(s) of seeds not observed at every sigma_w level left out of the ANOVA, "
            "Friedman and TOST (they need complete seed blocks); REML uses every cell")
    if table.shape[0] < 2 or table.shape[1] < 2:
        res["notes"].append(
            f"classical tests refused: {table.shape[1]} seed(s) observed at all {table.shape[0]} "
            "sigma_w level(s); they need >= 2 seeds at >= 2 levels")
        res["rm"] = {"F": math.nan, "p": math.nan, "p_gg": math.nan, "p_uncorrected": math.nan, "eps_gg": math.nan,
                     "ng2": math.nan}
        res["fr"] = {"Q": math.nan, "p": math.nan}
        res["sp"] = {"spread": math.nan, "se_diff": math.nan, "df": 0, "tost_p": math.nan, "min_effect_p": math.nan}
        return res
    if np.ptp(table) == 0:
        res["notes"].append("the metric is identical in every complete cell: no sigma_w effect is measurable")
        res["rm"] = {"F": math.nan, "p": 1.0, "p_gg": 1.0, "p_uncorrected": 1.0, "eps_gg": math.nan, "ng2": 0.0}
        res["fr"] = {"Q": 0.0, "p": 1.0}
    else:
        res["rm"] = rm_anova(table)
        res["fr"] = friedman(table)
    res["sp"] = spread_tests(table, delta)
    return res


def _verdict(p_min_holm: float, p_tost_holm: float) -> str:
    if math.isfinite(p_min_holm) and p_min_holm < ALPHA:
        return REMEMBERS
    if math.isfinite(p_tost_holm) and p_tost_holm < ALPHA:
        return FORGETS
    return UNDECIDED


def crosscheck(ds: xr.Dataset, metric: str, delta: float, bayes: dict[str, dict]) -> dict[str, dict]:
    """Frequentist cross-checks, effect sizes and agreement with the Bayesian verdict, per pipeline.

    ``bayes[p]`` is the Bayesian summary of pipeline p (docs/analysis.md keys); it may be missing or
    empty, in which case there is nothing to disagree with. Cells whose status is not ok are left
    out. Never raises for thin or unbalanced data: what cannot be computed is NaN and a note says
    why. NaN values are returned as float('nan'); callers writing JSON should map them to null.
    """
    # a delta from a caller of this function: the sign, by the one check of a margin (results/margins.py); an
    # analysis hands its resolved margins to _crosscheck (crosschecked) and is not checked again
    check_margin("delta", delta, metric, accuracy=False)
    return _crosscheck(ds, metric, delta, bayes)


def _crosscheck(ds: xr.Dataset, metric: str, delta: float, bayes: dict[str, dict]) -> dict[str, dict]:
    """:func:`crosscheck` at a delta already resolved (results/margins.py, ``resolve_margins``)."""
    da = cell_values(ds, metric)
    bayes = bayes or {}
    pipes = [str(p) for p in da[cube.PIPELINE].values.tolist()]
    raw = {p: _analyse_pipeline(da.sel({cube.PIPELINE: p}), delta) for p in pipes}

    p_adj = {
        name: holm({p: raw[p][sec][key] for p in pipes})
        for name, sec, key in (("rm", "rm", "p_gg"), ("fr", "fr", "p"), ("tost", "sp", "tost_p"),
                               ("min", "sp", "min_effect_p"))
    }
    scale = cube.points_scale(metric)
    n_test = ds.attrs.get(cube.A_N_TEST)
    out: dict[str, dict] = {}
    for p in pipes:
        r = raw[p]
        verdict = _verdict(p_adj["min"][p], p_adj["tost"][p])
        freq = {
            "reml": r["reml"],
            "rm_anova": {**r["rm"], "p_holm": p_adj["rm"][p]},
            "friedman": {**r["fr"], "p_holm": p_adj["fr"][p]},
            "tost": {"p": r["sp"]["tost_p"], "equivalent": bool(p_adj["tost"][p] < ALPHA), "p_holm": p_adj["tost"][p],
                     "delta": float(delta)},
            "min_effect": {"p": r["sp"]["min_effect_p"], "p_holm": p_adj["min"][p], "delta": float(delta)},
            "spread": r["sp"]["spread"],
            "n_sigma": r["n_sigma"],
            "n_seed": r["n_seed"],
            "n_complete_seed": r["n_complete_seed"],
            "verdict": verdict,
        }
        eff = effects.effect_sizes(r["table"], scale=scale)
        bay = bayes.get(p) or {}
        agreement, reasons, notes = explain(freq, r, bay, delta=delta, scale=scale,
                                           metric=metric, n_test=n_test, p_adj=p_adj)
        out[p] = {"frequentist": freq, "agreement": agreement, "disagreements": reasons,
                  "effect_sizes": eff, "notes": r["notes"] + notes}
    return out


def crosschecked(ds: xr.Dataset, metric: str, delta: float,
                 pipelines: dict[str, PipelineResult]) -> dict[str, PipelineResult]:
    """Each pipeline's summary entry with its frequentist cross-check (:func:`crosscheck`: the tests, the
    effect sizes and the agreement with the entry's Bayesian verdict) added, as new records: the entries given are
    left as they were. The cross-check's notes follow the model's, never replace them. ``delta`` is the analysis's,
    resolved once (results/margins.py, ``resolve_margins``)."""
    freq = _crosscheck(ds, metric, delta, {p: e.model_dump() for p, e in pipelines.items()})
    out = dict(pipelines)
    for pipe, extra in freq.items():
        if pipe in out:
            entry = out[pipe]
            out[pipe] = entry.replaced(**{k: v for k, v in extra.items() if k != "notes"},
                                       notes=[*entry.notes, *extra.get("notes", [])])
    return out


# Agreement ---------------------------------------------------------------------------------

def _loso_verdicts(table: np.ndarray, delta: float, n_tests: int) -> list[str]:
    """Frequentist verdict with each seed left out (Bonferroni-approximate Holm for n_tests)."""
    out = []
    for j in range(table.shape[1]):
        sub = np.delete(table, j, axis=1)
        if sub.shape[1] < 2:
            out.append(UNDECIDED)
            continue
        sp = spread_tests(sub, delta)
        out.append(_verdict(min(1.0, sp["min_effect_p"] * n_tests), min(1.0, sp["tost_p"] * n_tests)))
    return out


def _test_notes(freq: dict) -> list[str]:
    """Where the frequentist tests qualify each other: ANOVA against Friedman, detectable but below delta."""
    notes: list[str] = []
    rm_p = freq["rm_anova"]["p_holm"]
    fr_p = freq["friedman"]["p_holm"]
    if isinstance(rm_p, float) and isinstance(fr_p, float) and math.isfinite(rm_p) and math.isfinite(fr_p):
        if (rm_p < ALPHA) != (fr_p < ALPHA):
            notes.append(f"the ANOVA (Holm p={rm_p:.3g}) and the rank-based Friedman test (Holm p={fr_p:.3g}) "
                         "disagree on whether sigma_w matters at all: non-normal errors or an outlier seed")
    if freq["verdict"] == "forgets" and math.isfinite(rm_p) and rm_p < ALPHA:
        notes.append("a sigma_w effect is detectable (ANOVA) but smaller than delta: negligible memory, not none")
    return notes


def explain(freq: dict, raw: dict, bay: dict, *, delta: float, scale: float, metric: str,
            n_test: Any, p_adj: dict) -> tuple[bool, list[str], list[str]]:
    """(agreement, disagreements, notes): compare the verdicts and name the likely causes."""
    notes = _test_notes(freq)
    b_verdict = bay.get("verdict")
    f_verdict = freq["verdict"]
    if bay.get("borderline"):
        return False, [f"the Bayesian verdict is undecided (borderline): a verdict probability lies within two "
                       f"Monte Carlo errors of its threshold, so another sampler run could decide it either way; the "
                       f"frequentist verdict is {f_verdict!r}"], notes
    if b_verdict not in VERDICTS:
        notes.append("no Bayesian verdict for this pipeline: nothing to compare with")
        return True, [], notes
    if b_verdict == f_verdict:
        return True, [], notes

    reasons: list[str] = []
    table = raw["table"]
    n_seed, n_lev = raw["n_complete_seed"], raw["n_complete_sigma"]
    if n_seed < 2 or n_lev < 2:
        reasons.append("the frequentist tests could not run (too few complete seed blocks), so their verdict is "
                       "undecided by default; the Bayesian model still uses every cell (a missing cell is "
                       "integrated out)")
        return False, reasons, notes
    sp = raw["sp"]
    if n_seed < 5:
        reasons.append(f"few seeds: only {n_seed} seeds at every sigma_w, so the tests have {sp['df']} residual "
                       "degrees of freedom and little power; the Bayesian model adds its priors, scaled by the "
                       "test-set noise, which the tests do not have")
    res_sd = freq["reml"]["residual_sd"]
    mean_acc = float(np.nanmean(table))
    if isinstance(n_test, int | float | np.integer | np.floating) and n_test and 0 < mean_acc < 1 and \
            metric in cube.ACCURACY_VARS:
        floor = math.sqrt(mean_acc * (1 - mean_acc) / float(n_test))
        if math.isfinite(res_sd) and res_sd <= 1.5 * floor:
            reasons.append(f"binomial floor: the residual SD ({res_sd * scale:.3g} points) is about the test-set "
                           f"sampling SD of an accuracy of {mean_acc:.3f} on {int(n_test)} examples "
                           f"({floor * scale:.3g} points); the Bayesian model measures its SDs in units of this "
                           "noise scale, the tests see only the scatter between seeds")
    if n_seed >= 3:
        loso = _loso_verdicts(table, delta, max(1, sum(math.isfinite(v) for v in p_adj["tost"].values())))
        flips = [(raw["seed_labels"][j], v) for j, v in enumerate(loso) if v != f_verdict]
        if flips and len(flips) <= max(1, n_seed // 3):
            s, v = flips[0]
            reasons.append(f"outlier seed: leaving out seed {s} turns the frequentist verdict into {v!r}")
        seed_means = table.mean(axis=0)
        med = np.median(seed_means)
        mad = 1.4826 * np.median(np.abs(seed_means - med))
        if mad > 0:
            z = np.abs(seed_means - med) / mad
            j = int(np.argmax(z))
            if z[j] > 3.5:
                reasons.append(f"outlier seed: seed {raw['seed_labels'][j]} lies {z[j]:.1f} robust SDs from "
                               "the other seeds")
    spread = sp["spread"]
    if math.isfinite(spread) and math.isfinite(sp["se_diff"]) and abs(spread - delta) < 2 * sp["se_diff"]:
        reasons.append(f"the spread ({spread * scale:.3g}) is within two standard errors of delta "
                       f"({delta * scale:.3g}): both analyses sit near the decision boundary")
    bsp = bay.get("spread") or {}
    if isinstance(bsp, dict) and all(isinstance(bsp.get(k), int | float) for k in ("q05", "q95")):
        if math.isfinite(spread) and not (bsp["q05"] <= spread <= bsp["q95"]):
            reasons.append(f"the observed spread ({spread * scale:.3g}) lies outside the Bayesian 90% interval "
                           f"({bsp['q05'] * scale:.3g} to {bsp['q95'] * scale:.3g}): the model's spread is of the "
                           "expected metric over new seeds, whose level effects shrink towards the mean when "
                           "seed noise is comparable to the memory")
    if not reasons:
        reasons.append(f"no specific cause found: the Bayesian rule (posterior probability >= 0.95) and the "
                       f"Holm-corrected tests at {ALPHA} draw the line in different places "
                       f"(Bayesian {b_verdict!r}, frequentist {f_verdict!r})")
    return False, reasons, notes
