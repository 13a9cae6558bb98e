"""``initmem analyze``: fit the memory model to a cube and write the analysis folder.

One function, :func:`analyze_cube`, runs the whole analysis (docs/analysis.md): the hierarchical
Bayesian memory model (with one automatic, visible retry when the sampler's diagnostics fail),
the frequentist cross-checks, memory curves and the collapse test. It builds the folder's typed
records (:mod:`initmem.results`, fields in docs/analysis-folder.md) and writes ``posterior.nc``,
``summary.json`` (and ``curves.nc`` / ``collapse.json`` when the cube has curves), each atomically.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import xarray as xr

from initmem import cube
from initmem import results as R
from initmem.atomic import atomic_path
from initmem.errors import UserError
from initmem.models import arviz_io
from initmem.models.memory import (
    DEFAULT_TARGET_ACCEPT,
    FAMILIES,
    RETRY_TARGET_ACCEPT,
    SAMPLERS,
    MemoryModel,
    prepare_data,
    versions,
)

MEMORY_KINDS = ("radial", "functional")
ACCURACY_DELTA = 0.01  # one accuracy point: the default smallest spread that matters for accuracies
VERDICT_RULE = ("remembers if P(spread > delta) >= 0.95, forgets if P(spread < delta) >= 0.95, else "
                "inconclusive; borderline when a verdict probability lies within 2 Monte Carlo standard errors "
                "of 0.95 (not counted as decided); spread = max - min over the sigma_w grid of the expected "
                "metric with seed and residual effects averaged out, in outcome units")


def warn(msg: str) -> None:
    """Diagnostics problems go to stderr as well as into summary.json: never hidden."""
    print(f"initmem: warning: {msg}", file=sys.stderr)


def fit_checked(model: MemoryModel, *, sampler: str, draws: int, tune: int, chains: int, seed: int,
                progress: bool, label: str = "") -> dict[str, Any]:
    """Fit, check R-hat / ESS / divergences, and retry once (target_accept 0.99, twice the tuning)
    when any check fails. Returns the diagnostics of the final fit plus the retry record."""
    attempts = []
    target = DEFAULT_TARGET_ACCEPT
    t_sampling = 0.0
    for attempt in range(2):
        model.fit(sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed + attempt,
                  target_accept=target, progress=progress)
        t_sampling += model.sampling_seconds
        diag = model.diagnostics()
        attempts.append({"target_accept": target, "tune": tune, "draws": draws, "flags": diag["flags"],
                         "sampling_seconds": model.sampling_seconds})
        if not diag["flags"] or attempt == 1:
            break
        for flag in diag["flags"]:
            warn(f"{label}{flag}; retrying with target_accept={RETRY_TARGET_ACCEPT} and tune={2 * tune}")
        target, tune = RETRY_TARGET_ACCEPT, 2 * tune
    for flag in diag["flags"]:
        warn(f"{label}{flag} (after {len(attempts)} attempt(s)); the results are reported but flagged")
    diag.update({
        "sampler": model.sampler_used,
        "compile_seconds": model.compile_seconds,
        "sampling_seconds": t_sampling,
        "seconds": model.compile_seconds + t_sampling,
        "retried": len(attempts) > 1,
        "attempts": attempts,
        "target_accept": target,
        "draws": draws, "tune": tune, "chains": chains, "seed": seed,
    })
    if getattr(model, "fallback_reason", None):
        diag["flags"].append(model.fallback_reason)
        warn(model.fallback_reason)
    return diag


def analyze_cube(
    cube_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    metric: str | None = None,
    family: str | None = None,
    delta: float | None = None,
    gate: str = "interpolated",
    sampler: str = "nutpie",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int = 0,
    memory: str = "radial",
    progress: bool = True,
    trend: bool = False,
    command: list[str] | None = None,
) -> R.Summary:
    """Analyze one metric of a cube; writes DIR/posterior.nc and DIR/summary.json (and the
    curve outputs when present) and returns the summary record.

    ``gate="interpolated"`` fits only runs that reached the interpolation threshold (a run that
    never fit its training set says nothing about what it remembers); ``"all"`` fits every run.
    ``delta`` defaults to one point for accuracies and is required for any other metric."""
    if delta is not None and not (isinstance(delta, int | float) and math.isfinite(delta) and delta > 0):
        raise UserError(f"--delta must be a positive number, not {delta!r}")
    if gate not in R.GATES:
        raise UserError(f"--gate must be one of {', '.join(R.GATES)}, not {gate!r}")
    if sampler not in SAMPLERS:
        raise UserError(f"--sampler must be one of {', '.join(SAMPLERS)}, not {sampler!r}")
    if family is not None and family not in FAMILIES:
        raise UserError(f"--family must be one of {', '.join(FAMILIES)}, not {family!r}")
    if memory not in MEMORY_KINDS:
        raise UserError(f"--memory must be one of {', '.join(MEMORY_KINDS)}, not {memory!r}")
    if draws < 1 or chains < 1 or tune < 0:
        raise UserError("--draws and --chains must be >= 1 and --tune >= 0")
    if chains < 2:
        raise UserError("--chains must be >= 2: R-hat needs several chains")
    out = Path(out_dir)
    ds = cube.open_cube(cube_path)
    gate = _usable_gate(ds, gate)
    data = _prepare(ds, metric, family, gate)
    delta = _resolve_delta(data.metric, delta)
    for pipe, reason in data.skipped.items():
        warn(f"pipeline {pipe!r} skipped: {reason}")

    model = MemoryModel(data)
    diag = fit_checked(model, sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress)
    pipelines = model.summarize(delta)
    ppc = model.ppc(seed=seed)
    for pipe, entry in pipelines.items():
        entry["ppc"] = ppc[pipe]
        entry["diagnostics"] = diag["per_pipeline"][pipe]
        if "interpolation" not in entry and cube.TAU_INTERP in ds.data_vars:  # INTEGRATOR: models may report it
            entry["interpolation"] = R.interpolation_from_cube(ds, pipe, gate).model_dump()

    from initmem.stats.frequentist import crosscheck

    freq = crosscheck(ds, data.metric, float(delta), pipelines)
    for pipe, extra in freq.items():
        if pipe in pipelines:
            pipelines[pipe].update(extra)

    from initmem.stats.collapse import collapse_test
    from initmem.stats.curves import memory_curves

    curves = memory_curves(ds, n_boot=200, seed=seed)
    if curves is not None:
        with atomic_path(out / R.CURVES_NC) as tmp:
            curves.to_netcdf(tmp)
    raw_collapse = collapse_test(ds, memory=memory, n_boot=200, seed=seed)
    collapse = R.build_collapse(raw_collapse) if raw_collapse is not None else None
    if collapse is not None:
        R.write_collapse(out, collapse)

    first = next(iter(pipelines.values()), {})
    summary: dict[str, Any] = {
        "metric": data.metric,
        "family": data.family,
        "likelihood": getattr(model, "likelihood", None) or first.get("likelihood"),
        "estimand": first.get("estimand"),
        "delta": float(delta),
        "gate": gate,
        "n_test": data.n_test,
        "pipelines": pipelines,
        "skipped": data.skipped,
        "n_excluded": data.n_excluded,
        "priors": model.priors.describe(),
        "prior_values": model.priors.as_dict(),
        "model": model.describe(),
        "verdict_rule": VERDICT_RULE,
        "diagnostics": {k: v for k, v in diag.items() if k != "per_pipeline"},
        "cube": str(Path(cube_path)),
        "command": list(command) if command is not None else list(sys.argv),
        "versions": versions(),
        "outputs": {"posterior": R.POSTERIOR_NC, "curves": R.CURVES_NC if curves is not None else None,
                    "collapse": R.COLLAPSE_JSON if collapse is not None else None},
    }
    if trend:
        summary["trend"] = _trend_comparison(model, sampler=sampler, draws=draws, tune=tune, chains=chains,
                                             seed=seed, progress=progress, summary=summary)

    record = R.build_summary(summary)
    if collapse is not None:
        R.attach_forgetting_times(record, collapse)
    arviz_io.to_netcdf(model.idata, out / R.POSTERIOR_NC)
    R.write_summary(out, record)
    return record


def _resolve_delta(metric: str, delta: float | None) -> float:
    """The smallest spread that matters: given, or one point for an accuracy.

    INTEGRATOR: replace with the models helper's ``resolve_delta`` once it lands."""
    if delta is not None:
        return float(delta)
    if metric in cube.ACCURACY_VARS:
        return ACCURACY_DELTA
    raise UserError(f"--delta is required for {metric}: it is not an accuracy, so there is no default "
                    "smallest spread that matters (give it in the metric's units)")


def _usable_gate(ds: xr.Dataset, gate: str) -> str:
    """Gate on interpolation only where the cube records it (imported tables may not)."""
    if gate == "interpolated" and cube.TAU_INTERP not in ds.data_vars:
        warn(f"the cube has no {cube.TAU_INTERP}, so runs cannot be gated on interpolation: every run is used")
        return "all"
    return gate


def _prepare(ds: xr.Dataset, metric: str | None, family: str | None, gate: str) -> Any:
    """The model's data with the gate applied.

    INTEGRATOR: when models' ``prepare_data`` takes ``gate`` it applies the gate itself; until
    then runs that did not interpolate are marked missing here, so they are counted as excluded."""
    import inspect

    if "gate" in inspect.signature(prepare_data).parameters:
        return prepare_data(ds, metric, family, gate=gate)
    if gate == "interpolated":
        ds = ds.copy()
        ds[cube.STATUS] = ds[cube.STATUS].where(~cube.ok_cells(ds) | R.interpolated_cells(ds), cube.MISSING)
    return prepare_data(ds, metric, family)


def _trend_comparison(model: MemoryModel, *, sampler: str, draws: int, tune: int, chains: int, seed: int,
                      progress: bool, summary: dict[str, Any]) -> dict[str, Any]:
    """Fit the smooth-trend variant and compare it with exchangeable levels by PSIS-LOO."""
    trend_model = MemoryModel(model.data, levels="trend", priors=model.priors)
    t0 = time.perf_counter()
    diag = fit_checked(trend_model, sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed,
                       progress=progress, label="trend model: ")
    model.add_log_likelihood()
    trend_model.add_log_likelihood()
    rows = arviz_io.compare({"exchangeable": model.idata, "trend": trend_model.idata})
    trend_summary = trend_model.summarize(summary["delta"])
    summary["diagnostics"]["flags"] = summary["diagnostics"]["flags"] + [f"trend model: {f}" for f in diag["flags"]]
    best = rows[0]["model"]
    worse = rows[1]
    decisive = worse["elpd_diff"] > 2 * max(worse["dse"], 1e-12)
    return {
        "comparison": rows,
        "preferred": best if decisive else "neither (difference within 2 standard errors)",
        "pareto_k_warning": any(r["warning"] for r in rows),
        "note": ("LOO is pointwise over cells; for the binomial the residual is a per-cell effect, so "
                 "high Pareto k values are expected and the comparison is indicative only."
                 if model.data.family == "binomial" else "PSIS-LOO over cells."),
        "spread": {p: v["spread"] for p, v in trend_summary.items()},
        "verdict": {p: v["verdict"] for p, v in trend_summary.items()},
        "diagnostics": {"max_rhat": diag["max_rhat"], "min_ess_bulk": diag["min_ess_bulk"],
                        "divergences": diag["divergences"], "seconds": time.perf_counter() - t0},
    }


__all__ = ["analyze_cube", "fit_checked"]
