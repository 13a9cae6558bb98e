"""Analysis folders with known contents, written through the same records as ``initmem analyze``.

The report tests need analysis folders whose every value is known to the test (verdicts,
diagnostics, collapse results, forgetting times). The numbers are simple seed-bootstrap summaries
of a simulated cube, not posterior draws: the report only presents. They are built as the typed
records of :mod:`initmem.results` and written by its writers, so this fixture cannot drift from
the folder ``initmem analyze`` writes (docs/analysis-folder.md). The browser test builds its
report from a real ``initmem analyze`` run instead.

Every summary/2 and collapse/2 field is exercised: an undecided verdict flagged borderline, a censored forgetting
time, a sigma_w level without any interpolating run, a divergence warning, prior sensitivity,
Monte Carlo errors, adjusted p-values and an unattainable 0.05.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import xarray as xr
from scipy import stats

from initmem import cube as C
from initmem import results as R
from initmem.analysis.analyze import verdict_rule
from initmem.models.data import prepare_data
from initmem.models.summaries import N_DRAWS, model_verdict, model_verdict_flagged
from initmem.names import ALPHA, UNDECIDED, verdict_text
from initmem.simulate import SimPipeline, simulate_cube

AXES = (C.EPOCH, C.STEP, C.T_ETA, C.T_SGD, C.T_L2, C.T_ADAPT, R.T_FIT)
CHANCE = 0.1  # ten classes: a diverged run counted at chance accuracy
FRACTION = 0.5  # forgetting time: when rho(t) first falls to half its initial value
N_BOOT = 300
ESTIMAND = ("The spread is the change, from the worst to the best sigma_w level, of the test accuracy a new "
            "seed is expected to reach.")


def _q(x) -> R.Quantiles:
    x = np.asarray(x, float)
    return R.Quantiles(median=float(np.median(x)), q05=float(np.quantile(x, 0.05)), q95=float(np.quantile(x, 0.95)))


def _boot_spreads(y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n_seed = y.shape[1]
    boots = np.array([y[:, rng.integers(0, n_seed, n_seed)].mean(1) for _ in range(N_BOOT)])
    return boots, boots.max(1) - boots.min(1)


def _probs(spreads: np.ndarray, delta: float) -> tuple[float, float, float, float]:
    p_gt, p_lt = float((spreads > delta).mean()), float((spreads < delta).mean())
    n = spreads.size
    return p_gt, p_lt, float(np.sqrt(p_gt * (1 - p_gt) / n)), float(np.sqrt(p_lt * (1 - p_lt) / n))


def rule(p_gt: float, p_lt: float, mcse_gt: float, mcse_lt: float) -> str:
    """The model's own verdict on its probabilities (models/summaries.py, ``model_verdict``), borderline included:
    the fixture has no seeds' tests, so its pipelines decide as where the ordered test and the model agree."""
    return verdict_text(*model_verdict_flagged(p_gt, p_lt, mcse=(mcse_gt, mcse_lt)))


def pipeline_summary(y: np.ndarray, sigma: np.ndarray, delta: float, rng: np.random.Generator,
                     verdict: str | None = None) -> R.PipelineResult:
    n_sig, n_seed = y.shape
    boots, spreads = _boot_spreads(y, rng)
    sig_sd = float(y.mean(1).std(ddof=1))
    seed_sd = float(y.mean(0).std(ddof=1)) if n_seed > 1 else 0.0
    res = float((y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()).std())
    tot = sig_sd**2 + seed_sd**2 + res**2
    p_gt, p_lt, m_gt, m_lt = _probs(spreads, delta)
    shown = verdict or rule(p_gt, p_lt, m_gt, m_lt)     # "undecided (borderline)": the verdict and its flag
    flagged = shown == verdict_text(UNDECIDED, borderline=True)
    verdict = UNDECIDED if flagged else shown
    # The second prior: the same summary from an independent bootstrap (what matters is that it is shown).
    _, spreads2 = _boot_spreads(y, rng)
    q_gt, q_lt, n_gt, n_lt = _probs(spreads2, delta)
    return R.PipelineResult(
        n_sigma=int(n_sig), n_seed=int(n_seed), n_cells=int(n_sig * n_seed),
        sigma_sd=_q([sig_sd]), seed_sd=_q([seed_sd]), residual_sd=_q([res]),
        memory_share=_q([sig_sd**2 / tot]), spread=_q(spreads), p_spread_gt_delta=p_gt, p_spread_lt_delta=p_lt,
        verdict=verdict,
        expected=R.Expected(sigma_w=sigma.tolist(), median=np.median(boots, 0).tolist(),
                            q05=np.quantile(boots, 0.05, 0).tolist(), q95=np.quantile(boots, 0.95, 0).tolist()),
        shares=R.Shares(sigma=_q([sig_sd**2 / tot]), seed=_q([seed_sd**2 / tot]), residual=_q([res**2 / tot])),
        ppc={"spread": R.PpcStat(observed=float(np.ptp(y.mean(1))), p_value=0.41,
                                 q05=float(np.quantile(spreads, 0.05)), q95=float(np.quantile(spreads, 0.95))),
             "seed_sd": R.PpcStat(observed=seed_sd, p_value=0.62, q05=0.5 * seed_sd, q95=1.5 * seed_sd)},
        n_excluded={"diverged": 0, "failed": 0, "missing": 0},
        diagnostics=R.PipelineDiagnostics(max_rhat=1.002, min_ess_bulk=950.0, divergences=0),
        frequentist=R.Frequentist(
            reml=R.Reml(sigma_sd=sig_sd, seed_sd=seed_sd, residual_sd=res),
            rm_anova=R.TestResult(F=4.5, p=0.004, ng2=0.31, p_holm=0.012),
            friedman=R.TestResult(Q=11.2, p=0.048, p_holm=0.096),
            tost=R.TestResult(p=0.61, equivalent=False, p_holm=1.0),
            verdict=verdict),
        agreement=True,
        effect_sizes=R.EffectSizes(
            spread_points=R.Estimate(estimate=float(np.median(spreads) * 100),
                                     q05=float(np.quantile(spreads, 0.05) * 100),
                                     q95=float(np.quantile(spreads, 0.95) * 100)),
            spread_over_seed_sd=1.7, omega_sq=0.22, units="points"),
        mcse=R.Mcse(p_spread_gt_delta=m_gt, p_spread_lt_delta=m_lt),
        borderline=flagged,
        estimand=ESTIMAND, likelihood="counts",
        prior_sensitivity=R.PriorSensitivity(prior="half-normal(0.5) on every component SD", p_spread_gt_delta=q_gt,
                                             p_spread_lt_delta=q_lt,
                                             verdict=model_verdict(q_gt, q_lt, mcse=(n_gt, n_lt))),
    )


def _divergence(ds: xr.Dataset, pipe: str, y_all: xr.DataArray, delta: float,
                rng: np.random.Generator) -> R.Divergence:
    """Diverged runs per level, a chi-square test of independence from sigma_w, and the verdict
    with diverged runs counted at chance accuracy."""
    st = ds[C.STATUS].sel({C.PIPELINE: pipe})
    div = (st == C.DIVERGED).sum(C.SEED).values
    n = st.sizes[C.SEED]
    by = {R.sigma_key(s): int(d) for s, d in zip(ds[C.SIGMA].values, div, strict=True)}
    if div.sum() == 0:
        return R.Divergence(n_diverged=0, by_sigma_w=by)
    p = float(stats.chi2_contingency(np.stack([div, n - div], 1) + 0.5)[1])
    depends = p < 0.05
    at_chance = y_all.where(st != C.DIVERGED, CHANCE).values
    _, spreads = _boot_spreads(at_chance, rng)
    p_gt, p_lt, m_gt, m_lt = _probs(spreads, delta)
    levels = ", ".join(k for k, d in by.items() if d)
    return R.Divergence(
        n_diverged=int(div.sum()), by_sigma_w=by, depends_on_sigma_w=depends, p_value=p,
        warning=(f"{int(div.sum())} run(s) diverged, at sigma_w {levels}: divergence depends on sigma_w "
                 f"(p = {p:.3g}), so the verdict leaves out the runs that sigma_w broke" if depends else None),
        sensitivity=R.DivergenceSensitivity(verdict=model_verdict(p_gt, p_lt, mcse=(m_gt, m_lt)), spread=_q(spreads),
                                            p_spread_gt_delta=p_gt, p_spread_lt_delta=p_lt,
                                            note="diverged runs counted at chance accuracy (10%)"))


def _crossing(x: np.ndarray, r: np.ndarray, level: float) -> float | None:
    """The x at which r first falls to ``level`` (linear between epochs), None if it never does."""
    below = np.flatnonzero(r <= level)
    if below.size == 0:
        return None
    i = below[0]
    if i == 0:
        return float(x[0])
    return float(np.interp(level, [r[i], r[i - 1]], [x[i], x[i - 1]]))


def forgetting_times(curves: xr.Dataset, pipes: list[str]) -> dict[str, R.ForgettingTimes]:
    out = {}
    for axis in AXES:
        if axis != C.EPOCH and axis not in curves:
            continue
        per = {}
        for p in pipes:
            x = (curves[C.EPOCH].values if axis == C.EPOCH else curves[axis].sel({C.PIPELINE: p}).values).astype(float)
            times = [_crossing(x, curves[v].sel({C.PIPELINE: p}).values, FRACTION)
                     for v in (R.CURVE_RHO, R.CURVE_RHO_Q05, R.CURVE_RHO_Q95)]
            med, early, late = times
            per[p] = R.ForgettingTime(median=med, q05=early, q95=late, censored=med is None)
        logs = [np.log(t.median) for t in per.values() if not t.censored and t.median and t.median > 0]
        out[axis] = R.ForgettingTimes(fraction=FRACTION, spread=float(np.std(logs, ddof=1)) if len(logs) > 1 else None,
                                      n_pipelines=len(per), n_censored=sum(t.censored for t in per.values()),
                                      per_pipeline=per)
    return out


def holm(p: dict[str, float]) -> dict[str, float]:
    order = sorted(p, key=p.get)
    out, running = {}, 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (len(p) - i) * p[k]))
        out[k] = running
    return out


def collapse_result(ds: xr.Dataset, curves: xr.Dataset) -> R.CollapseResult:
    n = ds.sizes[C.PIPELINE]
    pipes = [str(p) for p in ds[C.PIPELINE].values]
    raw = {a: (0.03 if i > 3 else 0.4) for i, a in enumerate(AXES) if a != C.EPOCH}
    adj = holm(raw)
    return R.CollapseResult(
        memory="radial",
        axes={a: R.AxisScore(loco_error=3.0 - 0.3 * i, floor_ratio=2.6 - 0.2 * i, overlap=0.5, scored_pipelines=n)
              for i, a in enumerate(AXES)},
        vs_epoch={a: R.VsEpoch(D=0.1 * i, q05=0.05 * i - 0.1, q95=0.2 * i, p_value=raw[a], p_adjusted=adj[a])
                  for i, a in enumerate(AXES) if a != C.EPOCH},
        adjustment="holm", best=C.T_SGD, verdict="clock_better",
        identifiable={a: True for a in AXES[1:]},
        identifiability={a: R.Identifiability(sd_log_ratio=0.4, threshold=0.05) for a in AXES[1:]},
        forgetting_times=forgetting_times(curves, pipes),
        notes=["fixture note"], n_pipelines=n, min_p_possible=2.0 ** (1 - n),
    )


Edit = Callable[[R.Summary], None]


def write_analysis(ds: xr.Dataset, root: Path, *, delta: float = 0.01, verdicts: dict[str, str] | None = None,
                   diagnostics: dict | None = None, with_curves: bool = True, write_cube: bool = True,
                   gate: str = "interpolated", edit: Edit | None = None,
                   edit_collapse: Callable[[R.CollapseResult], None] | None = None) -> Path:
    """Write ``root/cube.nc`` (unless it is there already) and ``root/analysis/``; return the latter.

    ``edit`` / ``edit_collapse`` change the records before they are written (a test's variation)."""
    root.mkdir(parents=True, exist_ok=True)
    cube_path = C.write_cube(ds, root / R.CUBE_NC) if write_cube else root / R.CUBE_NC
    out = root / "analysis"
    out.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    pipes = {}
    gated = gate == "interpolated" and C.TAU_INTERP in ds
    use = C.ok_cells(ds) & np.isfinite(ds[C.TAU_INTERP]) if gated else C.ok_cells(ds)
    interpolation = prepare_data(ds, C.SELECTED_TEST_ACC, "gaussian", gate=gate).interpolation
    for p in ds[C.PIPELINE].values.tolist():
        y_all = ds[C.SELECTED_TEST_ACC].sel({C.PIPELINE: p})
        y = y_all.where(use.sel({C.PIPELINE: p}))
        keep_sigma = y.notnull().any(C.SEED).values
        keep_seed = y.isel({C.SIGMA: keep_sigma}).notnull().all(C.SIGMA).values
        y = y.isel({C.SIGMA: keep_sigma, C.SEED: keep_seed})
        entry = pipeline_summary(y.values, y[C.SIGMA].values, delta, rng, (verdicts or {}).get(p))
        if C.TAU_INTERP in ds and p in interpolation:
            entry.interpolation = R.Interpolation(**interpolation[p])
        entry.divergence = _divergence(ds, p, y_all, delta, rng)
        entry.n_excluded = {"diverged": entry.divergence.n_diverged, "failed": 0, "missing": 0}
        pipes[p] = entry
    collapse = curves = None
    if with_curves and C.KERNEL_NORM in ds.data_vars:
        kn = np.log(ds[C.KERNEL_NORM]).mean(C.SEED)
        ls = np.log(ds[C.SIGMA])
        rho = ((kn - kn.mean(C.SIGMA)) * (ls - ls.mean())).sum(C.SIGMA) / ((ls - ls.mean()) ** 2).sum()
        rho = rho.where(ds[C.KERNEL_NORM].notnull().any((C.SIGMA, C.SEED)))
        curves = xr.Dataset({R.CURVE_RHO: rho, R.CURVE_RHO_Q05: rho - 0.05, R.CURVE_RHO_Q95: rho + 0.05})
        for c in (C.STEP, *C.CLOCKS):
            curves[c] = ds[c].mean((C.SIGMA, C.SEED))
        curves.to_netcdf(out / R.CURVES_NC)
        collapse = collapse_result(ds, curves)
    summary = R.Summary(
        metric=C.SELECTED_TEST_ACC, family="binomial", likelihood="counts", estimand=ESTIMAND, delta=delta, gate=gate,
        is_accuracy=True,
        n_test=int(ds.attrs.get(C.A_N_TEST, 0)) or None, pipelines=pipes,
        priors={"alpha": "Normal(logit(mean accuracy), 1.5)", "log sigma_sd": "Normal(mu, 1)"},
        model="A hierarchical binomial-logit model with crossed sigma_w-level, seed and residual effects.",
        verdict_rule=verdict_rule(ALPHA, N_DRAWS), alpha=ALPHA,
        diagnostics=R.Diagnostics.model_validate({
            "sampler": "nutpie", "max_rhat": 1.004, "min_ess_bulk": 880.0, "divergences": 0, "seconds": 9.5,
            "compile_seconds": 4.0, "sampling_seconds": 5.5, "retried": False, "flags": [], **(diagnostics or {})}),
        cube=str(cube_path), command=["initmem", "analyze", str(cube_path), "--out", str(out)],
        versions={"initmem": "0.2.0"},
        outputs=R.Outputs(curves=R.CURVES_NC if curves is not None else None,
                          collapse=R.COLLAPSE_JSON if collapse is not None else None),
    )
    if collapse is not None:
        R.attach_forgetting_times(summary, collapse)
    if edit is not None:
        edit(summary)
    R.write_summary(out, summary)
    if collapse is not None:
        if edit_collapse is not None:
            edit_collapse(collapse)
        R.write_collapse(out, collapse)
    return out


def small_cube(names: tuple[str, ...] = ("remembering", "forgetting"), *, curves: bool = True,
               epochs: int = 8, grid_yaml: str | None = None) -> xr.Dataset:
    specs = [SimPipeline(n, sigma_sd=0.6 if i == 0 else 0.0, n_sigma=4, n_seed=3, lr=0.01 * (i + 1),
                         optimizer="adam" if i % 2 else "sgd") for i, n in enumerate(names)]
    ds = simulate_cube(specs, curves=curves, epochs=epochs, seed=1)
    if grid_yaml is not None:
        ds.attrs[C.A_GRID] = grid_yaml
    return ds


def edge_cube(grid_yaml: str | None = None) -> xr.Dataset:
    """Three pipelines; 'edge' has no interpolating run at the smallest sigma_w and diverged runs at the
    largest (so divergence depends on sigma_w), and 'remembering' never forgets within the budget."""
    ds = small_cube(("remembering", "forgetting", "edge"), grid_yaml=grid_yaml)
    lo, hi = ds[C.SIGMA].values[0], ds[C.SIGMA].values[-1]
    edge = {C.PIPELINE: "edge"}
    ds[C.TAU_INTERP].loc[{**edge, C.SIGMA: lo}] = np.nan
    ds[C.STATUS].loc[{**edge, C.SIGMA: hi}] = C.DIVERGED
    return ds
