"""Analysis folders in the documented shape (SPEC.md section 3 plus the report's extensions).

The report tests need analysis folders with known contents (verdicts, diagnostics, collapse
results) to check that the report shows exactly what they hold. The numbers here are simple
seed-bootstrap summaries of a simulated cube, not posterior draws: the report only presents, so
what matters is that each value is known to the test. The browser test builds its report from a
real ``initmem analyze`` run instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube as C
from initmem.simulate import SimPipeline, simulate_cube

AXES = ("epoch", "step", "T_eta", "T_sgd", "T_l2", "T_adapt", "T_fit")


def _q(x: Any) -> dict[str, float]:
    x = np.asarray(x, float)
    return {"median": float(np.median(x)), "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}


def pipeline_summary(y: np.ndarray, sigma: np.ndarray, delta: float, rng: np.random.Generator,
                     verdict: str | None = None) -> dict[str, Any]:
    n_sig, n_seed = y.shape
    boots = np.array([y[:, rng.integers(0, n_seed, n_seed)].mean(1) for _ in range(300)])
    spreads = boots.max(1) - boots.min(1)
    sig_sd = float(y.mean(1).std(ddof=1))
    seed_sd = float(y.mean(0).std(ddof=1)) if n_seed > 1 else 0.0
    res = float((y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()).std())
    tot = sig_sd**2 + seed_sd**2 + res**2
    p_gt = float((spreads > delta).mean())
    if verdict is None:
        verdict = "remembers" if p_gt >= 0.95 else "forgets" if p_gt <= 0.05 else "inconclusive"
    return {
        "n_sigma": int(n_sig), "n_seed": int(n_seed),
        "sigma_sd": _q([sig_sd]), "seed_sd": _q([seed_sd]), "residual_sd": _q([res]),
        "memory_share": _q([sig_sd**2 / tot]), "spread": _q(spreads), "p_spread_gt_delta": p_gt,
        "verdict": verdict,
        "expected": {"sigma_w": sigma.tolist(), "median": np.median(boots, 0).tolist(),
                     "q05": np.quantile(boots, 0.05, 0).tolist(), "q95": np.quantile(boots, 0.95, 0).tolist()},
        "shares": {"sigma": _q([sig_sd**2 / tot]), "seed": _q([seed_sd**2 / tot]), "residual": _q([res**2 / tot])},
        "ppc": {"spread": {"observed": float(np.ptp(y.mean(1))), "p_value": 0.41,
                           "q05": float(np.quantile(spreads, 0.05)), "q95": float(np.quantile(spreads, 0.95))},
                "seed_sd": {"observed": seed_sd, "p_value": 0.62, "q05": 0.5 * seed_sd, "q95": 1.5 * seed_sd}},
        "n_excluded": 0,
        "diagnostics": {"max_rhat": 1.002, "min_ess_bulk": 950.0, "divergences": 0},
        "frequentist": {
            "reml": {"sigma_sd": sig_sd, "seed_sd": seed_sd, "residual_sd": res},
            "rm_anova": {"F": 4.5, "p": 0.004, "ng2": 0.31, "p_holm": 0.012},
            "friedman": {"Q": 11.2, "p": 0.048, "p_holm": 0.096},
            "tost": {"p": 0.61, "equivalent": False, "p_holm": 1.0},
            "verdict": verdict,
        },
        "agreement": True,
        "disagreements": [],
        "effect_sizes": {"spread_points": {"estimate": float(np.median(spreads) * 100),
                                           "q05": float(np.quantile(spreads, 0.05) * 100),
                                           "q95": float(np.quantile(spreads, 0.95) * 100)},
                         "spread_over_seed_sd": 1.7, "omega_sq": 0.22},
    }


def write_analysis(ds: xr.Dataset, root: Path, *, delta: float = 0.01, verdicts: dict[str, str] | None = None,
                   diagnostics: dict[str, Any] | None = None, collapse: dict[str, Any] | None = None,
                   with_curves: bool = True, write_cube: bool = True) -> Path:
    """Write ``root/cube.nc`` (unless it is there already) and ``root/analysis/``; return the latter."""
    root.mkdir(parents=True, exist_ok=True)
    cube_path = C.write_cube(ds, root / "cube.nc") if write_cube else root / "cube.nc"
    out = root / "analysis"
    out.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    pipes = {}
    for p in ds[C.PIPELINE].values.tolist():
        y = ds["selected_test_acc"].sel({C.PIPELINE: p}).where(ds["status"].sel({C.PIPELINE: p}) == C.OK)
        keep_sigma = y.notnull().any(C.SEED).values
        keep_seed = y.isel({C.SIGMA: keep_sigma}).notnull().all(C.SIGMA).values
        y = y.isel({C.SIGMA: keep_sigma, C.SEED: keep_seed})
        pipes[p] = pipeline_summary(y.values, y[C.SIGMA].values, delta, rng, (verdicts or {}).get(p))
    summary = {
        "schema": "initmem.summary/1", "metric": "selected_test_acc", "family": "binomial", "delta": delta,
        "pipelines": pipes,
        "priors": {"alpha": "Normal(logit(mean accuracy), 1.5)", "log sigma_sd": "Normal(mu, 1)"},
        "model": "A hierarchical binomial-logit model with crossed sigma_w-level, seed and residual effects.",
        "skipped": [],
        "diagnostics": {"sampler": "nutpie", "max_rhat": 1.004, "min_ess_bulk": 880.0, "divergences": 0,
                        "seconds": 9.5, "compile_seconds": 4.0, "sampling_seconds": 5.5, "retried": False,
                        "flags": [], **(diagnostics or {})},
        "cube": str(cube_path), "command": f"initmem analyze {cube_path} --out {out}",
        "versions": {"initmem": "0.1.0"},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    if with_curves and "kernel_norm" in ds.data_vars:
        kn = np.log(ds["kernel_norm"]).mean(C.SEED)
        ls = np.log(ds[C.SIGMA])
        rho = ((kn - kn.mean(C.SIGMA)) * (ls - ls.mean())).sum(C.SIGMA) / ((ls - ls.mean()) ** 2).sum()
        rho = rho.where(ds["kernel_norm"].notnull().any((C.SIGMA, C.SEED)))
        curves = xr.Dataset({"rho": rho, "rho_q05": rho - 0.05, "rho_q95": rho + 0.05})
        for c in ("step", *C.CLOCKS):
            curves[c] = ds[c].mean((C.SIGMA, C.SEED))
        curves.to_netcdf(out / "curves.nc")
        col = collapse or {
            "schema": "initmem.collapse/1", "memory": "radial",
            "axes": {a: {"loco_error": 3.0 - 0.3 * i, "floor_ratio": 2.6 - 0.2 * i, "overlap": 0.5,
                         "scored_pipelines": ds.sizes[C.PIPELINE]} for i, a in enumerate(AXES)},
            "vs_epoch": {a: {"D": 0.1 * i, "q05": 0.05 * i - 0.1, "q95": 0.2 * i, "p_value": 0.03 if i > 3 else 0.4}
                         for i, a in enumerate(AXES) if a != "epoch"},
            "best": "T_sgd", "verdict": "clock_better", "identifiable": {a: True for a in AXES[1:]},
            "notes": ["fixture note"], "min_p_value": 2.0 ** (1 - ds.sizes[C.PIPELINE]),
            "n_pipelines": ds.sizes[C.PIPELINE],
        }
        (out / "collapse.json").write_text(json.dumps(col, indent=1))
    return out


def small_cube(names: tuple[str, ...] = ("remembering", "forgetting"), *, curves: bool = True,
               epochs: int = 8, grid_yaml: str | None = None) -> xr.Dataset:
    specs = [SimPipeline(n, sigma_sd=0.6 if i == 0 else 0.0, n_sigma=4, n_seed=3, lr=0.01 * (i + 1),
                         optimizer="adam" if i % 2 else "sgd") for i, n in enumerate(names)]
    ds = simulate_cube(specs, curves=curves, epochs=epochs, seed=1)
    if grid_yaml is not None:
        ds.attrs["grid"] = grid_yaml
    return ds
