"""The report's tables: one row dict per pipeline (or axis), in the units the report speaks in.

Rows are read from the analysis folder's records (:mod:`initmem.results`, fields in
docs/analysis-folder.md) and the cube; missing statistics become NaN, shown as a dash. Nothing
here computes a statistic the analysis did not.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from initmem import cube as C
from initmem import names as N
from initmem import optimizers
from initmem import results as R
from initmem.plot.load import Analysis, failed_checks, finite, num, ok_mask, q
from initmem.results.records import DRAW_VERDICTS, SURVIVORSHIP_MARK


def excluded_text(v: int | dict[str, int] | None) -> str:
    """Excluded cells: a count, or counts by reason (diverged, failed, missing)."""
    if isinstance(v, dict):
        parts = [f"{int(n)} {k}" for k, n in v.items() if n]
        return ", ".join(parts) if parts else "0"
    return "—" if v is None else str(v)


def _cell_stats(a: Analysis, var: str, pipe: str) -> np.ndarray:
    if not a.cube_has(var):
        return np.array([])
    da = a.cube[var].sel({C.PIPELINE: pipe}).where(ok_mask(a.cube).sel({C.PIPELINE: pipe}))
    return finite(da.values)


def _median(x: np.ndarray) -> float:
    return float(np.median(x)) if x.size else math.nan


def marked_verdict(info: R.PipelineResult) -> str:
    """The verdict as the tables show it: the shown verdict ("undecided (borderline)" for a flagged one), with
    :data:`SURVIVORSHIP_MARK` after a verdict that the survivorship refit overturns.

    Why: such a verdict hinges on leaving out the runs that never interpolated; shown bare it reads as decided."""
    return info.marked_verdict


def counts_as_decided(info: R.PipelineResult) -> bool:
    """Whether a row counts among the decided ones: "remembers" or "forgets", not overturned by survivorship."""
    return str(info.verdict) in (N.REMEMBERS, N.FORGETS) and not info.survivorship_overturned


def error_ratio(a: Analysis, info: R.PipelineResult) -> float:
    """The ratio of the error rates at the two extreme sigma_w levels, larger over smaller: (1 - acc) at one end
    over (1 - acc) at the other, from the expected accuracy per level (posterior medians, summary.json's
    ``expected``) that the spread is read from.

    Why beside the spread: near the ceiling a small spread in points can be a large relative change; at 97%
    accuracy a 1.5-point spread is an error rate of 3% against 4.5%, a ratio of 1.5. "forgets" says the memory is
    below delta, not that the error rate does not move. NaN for a metric that is not an accuracy, without
    per-level estimates, or with a zero error rate at both ends; infinite with a zero error rate at one end only."""
    ex = info.expected
    if not a.is_accuracy or ex is None or len(ex.sigma_w) < 2:
        return math.nan
    sw = np.asarray(ex.sigma_w, dtype=float)
    acc = np.array([num(m) for m in ex.median], dtype=float)
    ends = 1.0 - acc[[int(np.argmin(sw)), int(np.argmax(sw))]]
    if not np.isfinite(ends).all() or (ends <= 0).all():
        return math.nan
    lo, hi = float(ends.min()), float(ends.max())
    return math.inf if lo <= 0 else hi / lo


def summary_rows(a: Analysis) -> list[dict[str, Any]]:
    k = a.scale
    def row(p: str, info: R.PipelineResult) -> dict[str, Any]:
        sp, ms, sd = info.spread, info.memory_share, info.seed_sd
        ti = _cell_stats(a, C.TAU_INTERP, p)
        tb = _cell_stats(a, C.TAU_BEST, p)
        sel = _cell_stats(a, C.SELECTED_TEST_ACC, p) * C.points_scale(C.SELECTED_TEST_ACC)
        fin = _cell_stats(a, C.FINAL_TEST_ACC, p) * C.points_scale(C.FINAL_TEST_ACC)
        return {
            "name": p,
            "verdict": info.verdict, "borderline": bool(info.borderline),
            "overturned": info.survivorship_overturned, "shown": marked_verdict(info),
            "mark": SURVIVORSHIP_MARK if info.survivorship_overturned else None,
            "spread": q(sp) * k, "spread_lo": q(sp, "q05") * k, "spread_hi": q(sp, "q95") * k,
            "error_ratio": error_ratio(a, info), "error_ratio_known": not math.isnan(error_ratio(a, info)),
            "p_gt": num(info.p_spread_gt_delta), "p_lt": num(info.p_spread_lt_delta),
            "share": q(ms), "share_lo": q(ms, "q05"), "share_hi": q(ms, "q95"),
            "seed_sd": q(sd) * k, "seed_sd_lo": q(sd, "q05") * k, "seed_sd_hi": q(sd, "q95") * k,
            "tau_interp": _median(ti), "n_interp": int(ti.size), "n_runs": int(tb.size),
            "interp_recorded": a.cube is None or a.cube_has(C.TAU_INTERP),
            "tau_best": _median(tb),
            "sel": float(sel.mean()) if sel.size else math.nan,
            "sel_sd": float(sel.std(ddof=1)) if sel.size > 1 else math.nan,
            "fin": float(fin.mean()) if fin.size else math.nan,
            "fin_sd": float(fin.std(ddof=1)) if fin.size > 1 else math.nan,
            "n_sigma": info.n_sigma, "n_seed": info.n_seed,
            "n_excluded": info.n_excluded_total,
            "agreement": info.agreement,
            "radial": info.radial.verdict if info.radial is not None else None,
            "radial_slope": num(info.radial.slope) if info.radial is not None else math.nan,
            "radial_lo": num(info.radial.q05) if info.radial is not None else math.nan,
            "radial_hi": num(info.radial.q95) if info.radial is not None else math.nan,
            "looks": " → ".join(f"{lk.seeds}: {lk.verdict}" for lk in info.looks),
        }

    return [row(p, a.pipe(p)) for p in a.pipelines]


def interpolation_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline: how many cells interpolated, per sigma_w, and the levels left out."""
    rows: list[dict[str, Any]] = []
    if a.cube is not None and not a.cube_has(C.TAU_INTERP):
        return rows  # the table did not record interpolation: no counts to show
    for p in a.pipelines:
        it = a.pipe(p).interpolation
        if it is None:
            continue
        rows.append({
            "name": p, "gate": it.gate, "n_cells": it.n_cells, "n_interpolated": it.n_interpolated,
            "by_sigma_w": [(f"{num(k):.3g}", n) for k, n in sorted(it.by_sigma_w.items(), key=lambda kv: num(kv[0]))],
            "left_out": [f"{s:.3g}" for s in it.levels_without_interpolation],
        })
    return rows


def verdict_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline: the verdict with its probabilities, their Monte Carlo error, and its qualifiers."""
    k = a.scale
    def row(p: str, info: R.PipelineResult) -> dict[str, Any]:
        mcse = info.mcse or R.Mcse()
        ps = info.prior_sensitivity
        dv = info.divergence
        sens = dv.sensitivity if dv is not None else None
        mi = info.missingness
        return {
            "name": p, "verdict": info.verdict, "borderline": bool(info.borderline),
            "overturned": info.survivorship_overturned,
            "mark": SURVIVORSHIP_MARK if info.survivorship_overturned else None,
            "p_gt": num(info.p_spread_gt_delta), "p_lt": num(info.p_spread_lt_delta),
            "mcse_gt": num(mcse.p_spread_gt_delta), "mcse_lt": num(mcse.p_spread_lt_delta),
            "likelihood": info.likelihood or a.summary.likelihood,
            "estimand": info.estimand or a.summary.estimand,
            "prior": ps.prior if ps else None, "prior_verdict": ps.verdict if ps else None,
            "prior_p_gt": num(ps.p_spread_gt_delta) if ps else math.nan,
            "prior_p_lt": num(ps.p_spread_lt_delta) if ps else math.nan,
            "prior_changes": ps is not None and ps.verdict != info.verdict,
            "n_diverged": dv.n_diverged if dv else None,
            "divergence_warning": dv.warning if dv else None,
            "divergence_p": num(dv.p_value) if dv else math.nan,
            "n_gated": mi.n_gated if mi else None,
            "gated_p": num(mi.p_value) if mi else math.nan,
            "gated_warning": mi.warning if mi else None,
            "gated_verdict": mi.sensitivity.verdict if mi and mi.sensitivity else None,
            "gated_spread": q(mi.sensitivity.spread) * k if mi and mi.sensitivity else math.nan,
            "sens_verdict": sens.verdict if sens else None,
            "sens_spread": q(sens.spread) * k if sens else math.nan,
            "sens_note": sens.note if sens else "",
        }

    return [row(p, a.pipe(p)) for p in a.pipelines]


def frequentist_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline: the cross-checks, with the REML SDs in report units (points for accuracies)."""
    k = a.scale

    def row(p: str, info: R.PipelineResult) -> dict[str, Any]:
        fq = info.frequentist or R.Frequentist()
        reml, rm, fr, tost = fq.reml, fq.rm_anova, fq.friedman, fq.tost
        eff = info.effect_sizes or R.EffectSizes()
        sp = eff.spread_points
        return {
            "name": p, "verdict": info.verdict, "freq_verdict": fq.verdict,
            "reml_sigma": num(reml.sigma_sd) * k, "reml_seed": num(reml.seed_sd) * k,
            "reml_resid": num(reml.residual_sd) * k,
            "F": num(rm.F), "rm_p": num(rm.p), "rm_p_holm": num(rm.p_holm), "ng2": num(rm.ng2),
            "Q": num(fr.Q), "fr_p": num(fr.p), "fr_p_holm": num(fr.p_holm),
            "tost_p": num(tost.p), "tost_p_holm": num(tost.p_holm), "equivalent": tost.equivalent,
            "agreement": info.agreement,
            "disagreements": list(info.disagreements),
            "notes": list(info.notes),
            "effect": info.effect_sizes is not None,
            "eff_spread": num(sp.estimate), "eff_spread_lo": num(sp.q05), "eff_spread_hi": num(sp.q95),
            "eff_over_seed": num(eff.spread_over_seed_sd), "eff_omega": num(eff.omega_sq),
        }

    return [row(p, a.pipe(p)) for p in a.pipelines]


def diagnostics_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per-pipeline sampler diagnostics and posterior predictive checks (statistics in report units)."""
    k = a.scale
    def row(p: str, info: R.PipelineResult) -> dict[str, Any]:
        d = info.diagnostics
        sp, sd = info.ppc.get("spread"), info.ppc.get("seed_sd")
        failed = failed_checks(info)
        return {
            "name": p,
            "rhat": num(d.max_rhat), "ess": num(d.min_ess_bulk), "div": num(d.divergences),
            "ppc_spread_obs": k * q(sp, "observed"), "ppc_spread_p": q(sp, "p_value"),
            "ppc_spread_lo": k * q(sp, "q05"), "ppc_spread_hi": k * q(sp, "q95"),
            "ppc_sd_obs": k * q(sd, "observed"), "ppc_sd_p": q(sd, "p_value"),
            "ppc_sd_lo": k * q(sd, "q05"), "ppc_sd_hi": k * q(sd, "q95"),
            "n_excluded": info.n_excluded_total,
            "excluded_text": excluded_text(info.n_excluded),
            "spread_failed": "spread" in failed, "sd_failed": "seed_sd" in failed,
        }

    return [row(p, a.pipe(p)) for p in a.pipelines]


def assumption_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline, the model's assumptions checked and whether they held: the structure checks
    (models/checks.py), the paired check of "remembers" (models/paired.py), the model's own
    verdict beside the final one, and the prior's own P(spread > delta)."""
    from initmem.models.checks import LABELS, STRUCTURE_CHECKS

    def row(p: str, info: R.PipelineResult) -> dict[str, Any]:
        checks = []
        for name in STRUCTURE_CHECKS:
            st = info.ppc.get(name)
            if st is not None:
                checks.append({"label": LABELS[name], "observed": q(st, "observed"), "p": q(st, "p_value"),
                               "failed": name in info.checks_failed})
        pc = info.paired_check
        pair = pc.pair if pc is not None else None
        return {
            "name": p, "checks": checks, "failed": list(info.checks_failed),
            "paired_p": num(pc.p_value) if pc is not None else float("nan"),
            "paired_ok": bool(pc.supports_remembers) if pc is not None else None,
            "pair_text": (f"σ_w {pair['higher']:g} vs {pair['lower']:g}: {a.scale * pair['difference']:.2f} "
                          f"± {a.scale * pair['se']:.2f} ({pair['df']:.0f} df)") if pair else "—",
            "model_verdict": info.model_verdict or info.verdict, "verdict": info.verdict,
            "prior_gt": num(info.prior.p_spread_gt_delta) if info.prior is not None else float("nan"),
            "posterior_gt": num(info.p_spread_gt_delta),
        }

    return [row(p, a.pipe(p)) for p in a.pipelines]


def collapse_rows(a: Analysis) -> list[dict[str, Any]]:
    c = a.collapse
    if c is None:
        return []
    rows = []
    for axis, d in c.axes.items():
        v = c.vs_epoch.get(axis) or R.VsEpoch()
        ft = c.forgetting_times.get(axis)
        scored = d.scored_pipelines
        rows.append({
            "axis": axis, "best": axis == c.best,
            "loco_error": num(d.loco_error), "floor_ratio": num(d.floor_ratio), "overlap": num(d.overlap),
            "D": num(v.D), "q05": num(v.q05), "q95": num(v.q95), "p": num(v.p_value), "p_adj": num(v.p_adjusted),
            "identifiable": c.identifiable.get(axis, None if axis == C.EPOCH else True),
            "scored": len(scored) if isinstance(scored, list) else scored,
            "ft_spread": num(ft.spread) if ft else math.nan,
            "ft_censored": f"{ft.n_censored}/{ft.n_pipelines}" if ft else "",
            "note": d.note or "",
        })
    return rows


def settings_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline, how it trained (the cube's pipeline coordinates) and how many runs finished ok."""
    if a.cube is None:
        return []
    settings, counts = C.pipeline_settings(a.cube), C.status_counts(a.cube)
    rows = []
    for pipe in a.pipelines:
        s = settings.get(pipe, {})
        if not s:
            continue
        opt = str(s.get("optimizer") or "")
        kind = optimizers.BY_NAME.get(opt)
        wd = s.get("weight_decay") or 0.0
        mom = s.get("momentum") or 0.0
        n = counts.get(pipe, {})
        rows.append({
            "name": pipe, "optimizer": optimizers.display_name(opt) if opt else "—",
            "lr": num(s.get("lr")), "batch_size": s.get("batch_size"),
            "momentum": (f"{mom:g}" + (" (Nesterov)" if s.get("nesterov") else "")) if mom else "—",
            "weight_decay": (f"{wd:g} " + ("decoupled" if kind and kind.l2 == optimizers.DECOUPLED else "L2"))
            if wd else "—",
            "schedule": (str(s.get("schedule") or "—")
                         + (f" after {s['warmup_epochs']} warm-up epochs" if s.get("warmup_epochs") else "")),
            "epochs": s.get("epochs"),
            "runs": f"{n.get('ok', 0)} / {sum(n.values())}" if n else "—",
        })
    return rows


# The draw verdicts (results/records.py, DRAW_VERDICTS) -> the badge class the report colours them by.
DRAW_BADGE = dict(zip(DRAW_VERDICTS, ("keeps", N.FORGETS, N.UNDECIDED), strict=True))


def _bounds(b: Any, k: float, key: str = "estimate") -> tuple[float, float, float]:
    """(estimate or median, lower, upper) of a crossed block's interval record, times ``k``; NaN where absent."""
    if b is None:
        return math.nan, math.nan, math.nan
    return num(getattr(b, key, None)) * k, num(b.lower) * k, num(b.upper) * k


def crossed_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline of a crossed design: the draw verdict beside the scale verdict, the variance components pooled
    over sigma_w (SDs in report units, points for accuracies) with their 90% intervals, the init share, and the
    Bayesian model's posterior of the same; empty for an analysis without a crossed block."""
    block = getattr(a.summary, "crossed", None)
    if block is None:
        return []
    k = a.scale
    rows = []
    order = [p for p in a.pipelines if p in block.pipelines] + [p for p in block.pipelines if p not in a.pipelines]
    for p in order:
        e = block.pipelines[p]
        b = e.bayes
        scale = a.summary.pipelines.get(p)
        row: dict[str, Any] = {"name": p, "draw_verdict": e.draw_verdict,
                               "draw_badge": DRAW_BADGE.get(str(e.draw_verdict), "unknown"),
                               "scale_verdict": scale.verdict if scale is not None else None,
                               "p_gt_margin": num(b.p_sd_init_gt_margin) if b is not None else math.nan}
        for field in ("sd_init", "sd_data", "sd_resid", "init_share"):
            kk = 1.0 if field == "init_share" else k
            row[field], row[f"{field}_lo"], row[f"{field}_hi"] = _bounds(getattr(e, field), kk)
            post = getattr(b, field, None) if b is not None else None
            row[f"b_{field}"], row[f"b_{field}_lo"], row[f"b_{field}_hi"] = _bounds(post, kk, "median")
        rows.append(row)
    return rows


def crossed_level_rows(a: Analysis) -> list[dict[str, Any]]:
    """Per pipeline and sigma_w level of a crossed design: the variance components within the level (descriptive:
    the draw verdict pools the levels), SDs in report units; empty without a crossed block."""
    block = getattr(a.summary, "crossed", None)
    if block is None:
        return []
    k = a.scale
    rows = []
    for p, e in block.pipelines.items():
        for lv in sorted(e.by_sigma_w, key=lambda v: v.sigma_w):
            row: dict[str, Any] = {"name": p, "sigma_w": float(lv.sigma_w)}
            for field in ("sd_init", "sd_data", "sd_resid", "init_share"):
                row[field], row[f"{field}_lo"], row[f"{field}_hi"] = _bounds(
                    getattr(lv, field), 1.0 if field == "init_share" else k)
            rows.append(row)
    return rows


__all__ = ["DRAW_BADGE", "SURVIVORSHIP_MARK", "assumption_rows", "collapse_rows", "counts_as_decided",
           "crossed_level_rows", "crossed_rows", "diagnostics_rows", "error_ratio", "excluded_text", "failed_checks",
           "frequentist_rows", "interpolation_rows", "marked_verdict", "num", "q", "settings_rows", "summary_rows",
           "verdict_rows"]
