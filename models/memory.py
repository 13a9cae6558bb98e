"""The hierarchical Bayesian memory model (METHODS.md section 1), in the style of bambi.

One model per metric for all pipelines at once:

    eta[p,i,s] = alpha[p] + u[p,i] + v[p,s] + e[p,i,s]
    u ~ Normal(0, sigma_sd[p])     sigma_w-level effect = initialization memory
    v ~ Normal(0, seed_sd[p])      seed effect shared by every sigma_w level
    e ~ Normal(0, residual_sd[p])  what is left (sigma_w x seed)

Binomial counts of correct test predictions use a logit link and e as an observation-level
effect, so the finite test set's sampling noise is not mistaken for seed variance. Continuous
metrics use a gaussian (or Student-t) likelihood whose scale is residual_sd. The log SDs of
each component are partially pooled across pipelines; every group effect is non-centred.

Why a class: ``MemoryModel(data).fit().summarize(delta)`` keeps the data, the PyMC model, the
compiled sampler and the posterior together, so tests and benchmarks can refit new data of the
same design without recompiling (``update_observations``).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.errors import UserError
from initmem.models import arviz_io
from initmem.models.priors import COMPONENTS, Priors, default_priors

FAMILIES = ("binomial", "gaussian", "student_t")
SAMPLERS = ("nutpie", "pymc")
LEVEL_MODELS = ("exchangeable", "trend")
REPORTED = ("sigma_sd", "seed_sd", "residual_sd", "memory_share", "spread", "expected")
DEFAULT_TARGET_ACCEPT, RETRY_TARGET_ACCEPT = 0.95, 0.99
COUNT_METRICS = ("selected_test_acc", "selected_test_correct")
NOT_METRICS = ("status", "tau_interp", "tau_best", "wall_seconds")
RHAT_MAX, ESS_MIN = 1.01, 400.0
DECISION = 0.95

# PyTensor warns at import that it found no BLAS for its C backend; nutpie compiles with numba
# and does not use it, so the warning is noise on every analyze.
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation")

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(40)
_GH_W = _GH_W / _GH_W.sum()


# Data --------------------------------------------------------------------------------------

@dataclass
class MemoryData:
    """The analyzable cells of one metric in long form, plus what was left out and why."""

    metric: str
    family: str
    pipelines: list[str]
    sigma_w: np.ndarray
    seeds: np.ndarray
    p_idx: np.ndarray
    i_idx: np.ndarray
    s_idx: np.ndarray
    y: np.ndarray                 # counts (binomial) or values
    n: np.ndarray | None          # trials per cell (binomial)
    n_test: int | None
    level_mask: np.ndarray        # (pipeline, sigma_w): level observed in this pipeline
    seed_mask: np.ndarray         # (pipeline, seed)
    n_excluded: dict[str, dict[str, int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def n_obs(self) -> int:
        return int(self.y.size)

    def outcome(self) -> np.ndarray:
        """The observations on the outcome scale (accuracy as a fraction for counts)."""
        return self.y / self.n if self.family == "binomial" else self.y.astype(float)


def choose_metric(ds: xr.Dataset, metric: str | None) -> str:
    """The metric to analyze: the one asked for, else the selected test accuracy, else the first
    run-shaped variable (for imported cubes)."""
    candidates = [str(v) for v in ds.data_vars
                  if tuple(ds[v].dims) == cube.CELL_DIMS and v not in NOT_METRICS]
    if metric is not None:
        if metric not in ds.data_vars:
            raise UserError(f"metric {metric!r} is not in the cube; choose one of: {', '.join(candidates) or 'none'}")
        if tuple(ds[metric].dims) != cube.CELL_DIMS:
            raise UserError(f"metric {metric!r} has dims {tuple(ds[metric].dims)}; the memory model needs a run "
                            f"variable with dims {cube.CELL_DIMS} (choose one of: {', '.join(candidates)})")
        return metric
    for name in COUNT_METRICS:
        if name in candidates:
            return name
    if not candidates:
        raise UserError("the cube has no run variable with dims (pipeline, sigma_w, seed) to analyze")
    return candidates[0]


def _has_counts(ds: xr.Dataset, metric: str) -> bool:
    return metric in COUNT_METRICS and "selected_test_correct" in ds.data_vars and "n_test" in ds.attrs


def choose_family(ds: xr.Dataset, metric: str, family: str | None) -> str:
    if family is None:
        return "binomial" if _has_counts(ds, metric) else "gaussian"
    if family not in FAMILIES:
        raise UserError(f"--family must be one of {', '.join(FAMILIES)}, not {family!r}")
    if family == "binomial" and not _has_counts(ds, metric):
        raise UserError(f"--family binomial needs counts of correct test predictions ('selected_test_correct' "
                        f"and the attribute 'n_test'); metric {metric!r} has none: use --family gaussian")
    return family


def prepare_data(ds: xr.Dataset, metric: str | None = None, family: str | None = None) -> MemoryData:
    """Long-form analyzable cells: status ok and a finite value (diverged/failed cells excluded
    and counted). Pipelines with fewer than two sigma_w levels or two seeds are skipped with the
    reason; if none remains, UserError."""
    metric = choose_metric(ds, metric)
    family = choose_family(ds, metric, family)
    pipes = [str(p) for p in ds[cube.PIPELINE].values.tolist()]
    n_test = int(ds.attrs["n_test"]) if family == "binomial" else None
    if family == "binomial":
        vals = ds["selected_test_correct"].values.astype(float)
        finite = vals >= 0
    else:
        vals = ds[metric].values.astype(float)
        finite = np.isfinite(vals)
    status = ds["status"].values if "status" in ds.data_vars else np.where(finite, cube.OK, cube.MISSING)
    good = (status == cube.OK) & finite

    n_excluded: dict[str, dict[str, int]] = {}
    skipped: dict[str, str] = {}
    keep: list[int] = []
    for a, pipe in enumerate(pipes):
        st = status[a]
        n_excluded[pipe] = {
            "diverged": int((st == cube.DIVERGED).sum()),
            "failed": int((st == cube.FAILED).sum()),
            "missing": int((st == cube.MISSING).sum() + ((st == cube.OK) & ~finite[a]).sum()),
        }
        n_lev = int(good[a].any(axis=1).sum())
        n_sd = int(good[a].any(axis=0).sum())
        if n_lev < 2:
            skipped[pipe] = (f"only {n_lev} sigma_w level(s) with results: the level effect needs at least 2")
        elif n_sd < 2:
            skipped[pipe] = (f"only {n_sd} seed(s) with results: seed and level effects cannot be separated "
                             "with fewer than 2 seeds")
        elif family == "gaussian" or family == "student_t":
            v = vals[a][good[a]]
            if np.ptp(v) == 0:
                skipped[pipe] = "the metric is constant in this pipeline: nothing to decompose"
            else:
                keep.append(a)
        else:
            keep.append(a)
    if not keep:
        reasons = "; ".join(f"{p}: {r}" for p, r in skipped.items())
        raise UserError(f"no pipeline can be analyzed ({reasons}); the memory model needs >= 2 sigma_w levels "
                        "and >= 2 seeds with results per pipeline")

    g = good[keep]
    p_idx, i_idx, s_idx = np.nonzero(g)
    y = vals[keep][g]
    n = np.full(y.shape, n_test, dtype="int64") if family == "binomial" else None
    return MemoryData(
        metric=metric, family=family, pipelines=[pipes[a] for a in keep],
        sigma_w=ds[cube.SIGMA].values.astype(float), seeds=ds[cube.SEED].values,
        p_idx=p_idx.astype("int64"), i_idx=i_idx.astype("int64"), s_idx=s_idx.astype("int64"),
        y=(y.astype("int64") if family == "binomial" else y.astype(float)), n=n, n_test=n_test,
        level_mask=g.any(axis=2), seed_mask=g.any(axis=1),
        n_excluded={p: n_excluded[p] for p in pipes}, skipped=skipped,
    )


# The model ---------------------------------------------------------------------------------

class MemoryModel:
    """Build, fit and summarize the memory model of one metric.

    ``levels="exchangeable"`` (default) gives sigma_sd as a variance component comparable with
    REML; ``levels="trend"`` replaces the exchangeable level effects by a random walk over the
    ordered log sigma_w grid (a smooth trend), for a LOO comparison.
    """

    def __init__(self, data: MemoryData, *, levels: str = "exchangeable", priors: Priors | None = None) -> None:
        if levels not in LEVEL_MODELS:
            raise UserError(f"levels must be one of {', '.join(LEVEL_MODELS)}")
        self.data = data
        self.levels = levels
        self.priors = priors or default_priors(data.family, data.y.astype(float), data.n, data.p_idx)
        self.model = self._build()
        self._compiled: Any = None
        self.idata: Any = None
        self.compile_seconds = 0.0
        self.sampling_seconds = 0.0
        self.sampler_used: str | None = None

    # building ---------------------------------------------------------------------------
    @property
    def coords(self) -> dict[str, Any]:
        d = self.data
        return {
            "pipeline": d.pipelines,
            "sigma_w": d.sigma_w.tolist(),
            "seed": [int(s) for s in d.seeds],
            "component": list(COMPONENTS),
            "obs": np.arange(d.n_obs),
        }

    def _build(self):
        import pymc as pm
        import pytensor.tensor as pt

        d, pr = self.data, self.priors
        with pm.Model(coords=self.coords) as model:
            y = pm.Data("y", d.y, dims="obs")
            alpha = pm.Normal("alpha", pr.alpha_mu, pr.alpha_sd, dims="pipeline")
            mu_log_sd = pm.Normal("mu_log_sd", pr.log_sd_mu, pr.log_sd_mu_sd, dims="component")
            tau_log_sd = pm.Gamma("tau_log_sd", alpha=2.0, beta=pr.log_sd_tau_rate, dims="component")
            z_log_sd = pm.Normal("z_log_sd", 0.0, 1.0, dims=("pipeline", "component"))
            sd = pt.exp(mu_log_sd[None, :] + tau_log_sd[None, :] * z_log_sd)
            sigma_sd = pm.Deterministic("sigma_sd", sd[:, 0], dims="pipeline")
            seed_sd = pm.Deterministic("seed_sd", sd[:, 1], dims="pipeline")
            residual_sd = pm.Deterministic("residual_sd", sd[:, 2], dims="pipeline")

            if self.levels == "exchangeable":
                z_u = pm.ZeroSumNormal("z_u", 1.0, dims=("pipeline", "sigma_w"))
                u = pm.Deterministic("u", sigma_sd[:, None] * z_u, dims=("pipeline", "sigma_w"))
            else:
                z_u = pm.Normal("z_u", 0.0, 1.0, dims=("pipeline", "sigma_w"))
                # Random walk over log sigma_w: increments with variance proportional to the gap,
                # so sigma_sd is the SD per unit log sigma_w; centred over levels (alpha is the mean).
                logs = np.log(d.sigma_w)
                gaps = np.sqrt(np.diff(logs, prepend=logs[0] - (np.median(np.diff(logs)) if logs.size > 1 else 1.0)))
                walk = pt.cumsum(sigma_sd[:, None] * z_u * gaps[None, :], axis=1)
                u = pm.Deterministic("u", walk - walk.mean(axis=1, keepdims=True), dims=("pipeline", "sigma_w"))
            z_v = pm.ZeroSumNormal("z_v", 1.0, dims=("pipeline", "seed"))
            v = pm.Deterministic("v", seed_sd[:, None] * z_v, dims=("pipeline", "seed"))

            eta = alpha[d.p_idx] + u[d.p_idx, d.i_idx] + v[d.p_idx, d.s_idx]
            if d.family == "binomial":
                n = pm.Data("n", d.n, dims="obs")
                z_e = pm.Normal("z_e", 0.0, 1.0, dims="obs")
                eta = eta + residual_sd[d.p_idx] * z_e
                pm.Binomial("y_obs", n=n, logit_p=eta, observed=y, dims="obs")
            elif d.family == "gaussian":
                pm.Normal("y_obs", mu=eta, sigma=residual_sd[d.p_idx], observed=y, dims="obs")
            else:
                nu = pm.Gamma("nu", alpha=2.0, beta=pr.nu_rate)
                pm.StudentT("y_obs", nu=nu, mu=eta, sigma=residual_sd[d.p_idx], observed=y, dims="obs")
        return model

    def describe(self) -> str:
        """One paragraph for summary.json and the report."""
        lik = {
            "binomial": "binomial counts of correct test predictions out of n_test with a logit link; the "
                        "residual is an observation-level effect on the logit scale, so the finite test "
                        "set's sampling noise is modelled rather than mistaken for seed variance",
            "gaussian": "a gaussian likelihood whose SD is the residual SD (outcome units)",
            "student_t": "a Student-t likelihood (robust to outlying runs) whose scale is the residual SD",
        }[self.data.family]
        lev = ("exchangeable sigma_w-level effects" if self.levels == "exchangeable" else
               "a random-walk trend over the ordered log sigma_w grid")
        return (f"Hierarchical memory model of {self.data.metric}: eta = alpha[pipeline] + u[pipeline, sigma_w] "
                f"+ v[pipeline, seed] + e[pipeline, sigma_w, seed] with {lev}, seed effects shared by every "
                f"sigma_w level (seeds are common random numbers) and {lik}. The log standard deviations of "
                "the three components are partially pooled across pipelines (a pipeline with few seeds "
                "borrows strength without being forced to agree); every group effect is non-centred. "
                "Outcome-scale summaries average the seed and residual effects over their population "
                "distribution (Gauss-Hermite quadrature); memory_share = sigma_sd^2 / (sigma_sd^2 + "
                "seed_sd^2 + residual_sd^2) on the model scale.")

    # data updates (same design) ---------------------------------------------------------
    def update_observations(self, y: np.ndarray) -> None:
        """Replace the observations by new values for the same cells (same design), keeping the
        compiled sampler: used by calibration tests and benchmarks to avoid recompiling."""
        import pymc as pm

        y = np.asarray(y)
        if y.shape != self.data.y.shape:
            raise ValueError("update_observations needs the same cells: build a new model for a new design")
        self.data.y = y.astype(self.data.y.dtype)
        with self.model:
            pm.set_data({"y": self.data.y})
        if self._compiled is not None:
            self._compiled = self._compiled.with_data(y=self.data.y)
        self.idata = None

    # fitting ----------------------------------------------------------------------------
    def fit(self, *, sampler: str = "nutpie", draws: int = 1000, tune: int = 1000, chains: int = 4,
            seed: int = 0, target_accept: float = DEFAULT_TARGET_ACCEPT, progress: bool = True) -> Any:
        """Sample the posterior; returns (and keeps) an ArviZ InferenceData.

        nutpie (compiled with numba once per model) by default; PyMC's NUTS as the option and as
        the fallback when nutpie cannot compile the model. Compile and sampling times are kept
        separately in ``compile_seconds`` and ``sampling_seconds``.
        """
        if sampler not in SAMPLERS:
            raise UserError(f"--sampler must be one of {', '.join(SAMPLERS)}, not {sampler!r}")
        if draws < 1 or tune < 0 or chains < 1:
            raise UserError("--draws and --chains must be >= 1 and --tune >= 0")
        self.fallback_reason = None
        if sampler == "nutpie":
            try:
                idata = self._fit_nutpie(draws, tune, chains, seed, target_accept, progress)
            except ImportError as exc:  # nutpie or numba unusable here: say so, use PyMC
                self.fallback_reason = f"nutpie unavailable ({exc}); fell back to PyMC NUTS"
                idata = self._fit_pymc(draws, tune, chains, seed, target_accept, progress)
        else:
            idata = self._fit_pymc(draws, tune, chains, seed, target_accept, progress)
        self.idata = idata
        return idata

    def _fit_nutpie(self, draws, tune, chains, seed, target_accept, progress):
        import nutpie

        if self._compiled is None:
            t0 = time.perf_counter()
            self._compiled = nutpie.compile_pymc_model(self.model)
            self.compile_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        idata = nutpie.sample(self._compiled, draws=draws, tune=tune, chains=chains, seed=seed,
                              cores=min(chains, os.cpu_count() or 1), progress_bar=progress,
                              target_accept=target_accept, save_warmup=False)
        self.sampling_seconds = time.perf_counter() - t0
        self.sampler_used = "nutpie"
        return idata

    def _fit_pymc(self, draws, tune, chains, seed, target_accept, progress):
        import pymc as pm

        with self.model:
            t0 = time.perf_counter()
            step = pm.NUTS(target_accept=target_accept)  # compiles logp and its gradient
            self.compile_seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            idata = pm.sample(draws=draws, tune=tune, chains=chains, step=step, random_seed=seed,
                              cores=min(chains, os.cpu_count() or 1), progressbar=progress,
                              compute_convergence_checks=False)
            self.sampling_seconds = time.perf_counter() - t0
        self.sampler_used = "pymc"
        return idata

    def add_log_likelihood(self) -> None:
        """Pointwise log likelihood for LOO (nutpie does not store it)."""
        import pymc as pm

        if "log_likelihood" not in self.idata.groups():
            pm.compute_log_likelihood(self.idata, model=self.model, extend_inferencedata=True, progressbar=False)

    # derived quantities -----------------------------------------------------------------
    def derived(self) -> dict[str, xr.DataArray]:
        """Outcome-scale and share quantities per posterior draw, added to the posterior."""
        post = self.idata.posterior
        d = self.data
        sig, sd_seed, sd_res = (post[n].values for n in ("sigma_sd", "seed_sd", "residual_sd"))
        alpha, u = self.population_effects()
        exp_ = expected_metric(alpha, u, np.hypot(sd_seed, sd_res), d.family)
        mask = d.level_mask[None, None, :, :]
        hi = np.where(mask, exp_, -np.inf).max(axis=-1)
        lo = np.where(mask, exp_, np.inf).min(axis=-1)
        total = sig**2 + sd_seed**2 + sd_res**2
        cd = ("chain", "draw")
        coords = {"chain": post["chain"].values, "draw": post["draw"].values, "pipeline": d.pipelines,
                  "sigma_w": d.sigma_w}
        exp_masked = np.where(mask, exp_, np.nan)

        def da(x, dims):
            return xr.DataArray(x, dims=dims, coords={k: coords[k] for k in dims})

        return {
            "alpha_pop": da(alpha, (*cd, "pipeline")),
            "u_pop": da(u, (*cd, "pipeline", "sigma_w")),
            "expected": da(exp_masked, (*cd, "pipeline", "sigma_w")),
            "spread": da(hi - lo, (*cd, "pipeline")),
            "memory_share": da(sig**2 / total, (*cd, "pipeline")),
            "seed_share": da(sd_seed**2 / total, (*cd, "pipeline")),
            "residual_share": da(sd_res**2 / total, (*cd, "pipeline")),
        }

    def population_effects(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Population intercept and level effects, per draw: (chain, draw, P), (chain, draw, P, L).

        The level and seed effects are sampled as zero-sum (centred) effects, which removes the
        ridge between the intercept and their means that the data cannot resolve. That is a
        reparameterisation of the iid model: given the SDs, the means of the iid effects are
        independent of the centred effects and distributed N(0, sd^2 / n) a priori, and the
        likelihood does not see them. We restore them here by drawing them from that
        distribution (the intercept prior is wide, so this is the iid model's posterior), so
        the population intercept excludes the observed seeds' mean effect and outcome-scale
        summaries average over new seeds, as the simulator's truth does.
        """
        post = self.idata.posterior
        rng = np.random.default_rng(seed)
        alpha = post["alpha"].values
        u = post["u"].values
        n_lev, n_seed = u.shape[-1], post["v"].shape[-1]
        v_bar = rng.standard_normal(alpha.shape) * post["seed_sd"].values / np.sqrt(n_seed)
        if self.levels == "exchangeable":
            u_bar = rng.standard_normal(alpha.shape) * post["sigma_sd"].values / np.sqrt(n_lev)
        else:
            u_bar = np.zeros_like(alpha)
        return alpha - u_bar - v_bar, u + u_bar[..., None]

    def add_derived(self) -> None:
        arviz_io.with_posterior_vars(self.idata, self.derived())

    # diagnostics --------------------------------------------------------------------------
    def diagnostics(self) -> dict[str, Any]:
        """R-hat, bulk ESS (per pipeline and overall, over every reported quantity) and
        divergences, with a list of human-readable flags (empty when all is well)."""
        if "spread" not in self.idata.posterior:
            self.add_derived()
        names = list(REPORTED)
        stats = arviz_io.rhat_ess(self.idata, names)
        per: dict[str, dict[str, float]] = {}
        for pipe in self.data.pipelines:
            rh, es = [], []
            for name in names:
                r = stats["rhat"][name].sel(pipeline=pipe).values.ravel()
                e = stats["ess_bulk"][name].sel(pipeline=pipe).values.ravel()
                rh.extend(r[np.isfinite(r)].tolist())
                es.extend(e[np.isfinite(e)].tolist())
            per[pipe] = {"max_rhat": float(max(rh)) if rh else float("nan"),
                         "min_ess_bulk": float(min(es)) if es else float("nan")}
        div = arviz_io.divergences(self.idata)
        flags = []
        if div:
            flags.append(f"{div} divergent transition(s)")
        for pipe, s in per.items():
            if s["max_rhat"] > RHAT_MAX:
                flags.append(f"{pipe}: R-hat {s['max_rhat']:.4f} > {RHAT_MAX} on a reported quantity")
            if s["min_ess_bulk"] < ESS_MIN:
                flags.append(f"{pipe}: bulk ESS {s['min_ess_bulk']:.0f} < {ESS_MIN:.0f} on a reported quantity")
        for pipe in per:
            per[pipe]["divergences"] = div
        return {
            "per_pipeline": per,
            "max_rhat": float(max(s["max_rhat"] for s in per.values())),
            "min_ess_bulk": float(min(s["min_ess_bulk"] for s in per.values())),
            "divergences": div,
            "flags": flags,
        }

    # posterior predictive check -----------------------------------------------------------
    def ppc(self, *, n_draws: int = 1000, seed: int = 0) -> dict[str, dict[str, dict[str, float]]]:
        """Observed spread and seed SD against their predictive distributions.

        Replicates keep each draw's sigma_w-level effects and draw fresh seeds and residuals
        (and binomial test noise): "if I reran this grid with new seeds, would it look like
        this?". p_value = P(T_rep >= T_obs); values near 0 or 1 signal misfit.
        """
        rng = np.random.default_rng(seed)
        d = self.data
        if "alpha_pop" not in self.idata.posterior:
            self.add_derived()
        post = self.idata.posterior
        flat = lambda name: post[name].values.reshape(-1, *post[name].shape[2:])  # noqa: E731
        alpha, u, sig_seed, sig_res = flat("alpha_pop"), flat("u_pop"), flat("seed_sd"), flat("residual_sd")
        take = rng.choice(alpha.shape[0], size=min(n_draws, alpha.shape[0]), replace=False)
        out: dict[str, dict[str, dict[str, float]]] = {}
        y_out = d.outcome()
        for a, pipe in enumerate(d.pipelines):
            sel = d.p_idx == a
            cells = np.zeros(d.level_mask.shape[1:] + d.seed_mask.shape[1:], dtype=bool)
            cells[d.i_idx[sel], d.s_idx[sel]] = True
            obs = np.full(cells.shape, np.nan)
            obs[d.i_idx[sel], d.s_idx[sel]] = y_out[sel]
            lev, sds = d.level_mask[a], d.seed_mask[a]
            cells, obs = cells[lev][:, sds], obs[lev][:, sds]
            t_spread, t_seed = _spread_and_seed_sd(obs[None])
            m = take.size
            v = rng.normal(size=(m, 1, cells.shape[1])) * sig_seed[take, a][:, None, None]
            e = rng.normal(size=(m, *cells.shape)) * sig_res[take, a][:, None, None]
            eta = alpha[take, a][:, None, None] + u[take, a][:, lev][:, :, None] + v
            if d.family == "binomial":
                p = 1.0 / (1.0 + np.exp(-(eta + e)))
                rep = rng.binomial(d.n_test, p) / d.n_test
            elif d.family == "gaussian":
                rep = eta + e
            else:
                nu = post["nu"].values.reshape(-1)[take][:, None, None]
                rep = eta + sig_res[take, a][:, None, None] * rng.standard_t(nu, size=(m, *cells.shape))
            rep = np.where(cells[None], rep, np.nan)
            r_spread, r_seed = _spread_and_seed_sd(rep)
            out[pipe] = {
                "spread": {"observed": float(t_spread[0]), "p_value": float(np.mean(r_spread >= t_spread[0])),
                           "q05": float(np.quantile(r_spread, 0.05)), "q95": float(np.quantile(r_spread, 0.95))},
                "seed_sd": {"observed": float(t_seed[0]), "p_value": float(np.mean(r_seed >= t_seed[0])),
                            "q05": float(np.quantile(r_seed, 0.05)), "q95": float(np.quantile(r_seed, 0.95))},
            }
        return out

    # summary ------------------------------------------------------------------------------
    def summarize(self, delta: float) -> dict[str, dict[str, Any]]:
        """Per-pipeline posterior summaries, P(spread > delta) and the verdict (SPEC section 3)."""
        if delta <= 0:
            raise UserError("--delta must be positive")
        if "spread" not in self.idata.posterior:
            self.add_derived()
        post = self.idata.posterior
        d = self.data
        out: dict[str, dict[str, Any]] = {}
        for a, pipe in enumerate(d.pipelines):
            def q(name: str, _pipe: str = pipe) -> dict[str, float]:
                return quantiles(post[name].sel(pipeline=_pipe).values.ravel())

            spread = post["spread"].sel(pipeline=pipe).values.ravel()
            p_gt = float(np.mean(spread > delta))
            p_lt = float(np.mean(spread < delta))
            lev = d.level_mask[a]
            exp_ = post["expected"].sel(pipeline=pipe).values.reshape(-1, lev.size)[:, lev]
            out[pipe] = {
                "n_sigma": int(lev.sum()),
                "n_seed": int(d.seed_mask[a].sum()),
                "n_cells": int((d.p_idx == a).sum()),
                "sigma_sd": q("sigma_sd"),
                "seed_sd": q("seed_sd"),
                "residual_sd": q("residual_sd"),
                "memory_share": q("memory_share"),
                "spread": quantiles(spread),
                "p_spread_gt_delta": p_gt,
                "p_spread_lt_delta": p_lt,
                "verdict": verdict(p_gt, p_lt),
                "expected": {
                    "sigma_w": d.sigma_w[lev].tolist(),
                    "median": np.median(exp_, axis=0).tolist(),
                    "q05": np.quantile(exp_, 0.05, axis=0).tolist(),
                    "q95": np.quantile(exp_, 0.95, axis=0).tolist(),
                },
                "shares": {"sigma": q("memory_share"), "seed": q("seed_share"), "residual": q("residual_share")},
                "n_excluded": d.n_excluded[pipe],
            }
        return out


# helpers ---------------------------------------------------------------------------------

def expected_metric(alpha: np.ndarray, u: np.ndarray, noise_sd: np.ndarray, family: str) -> np.ndarray:
    """E over seed and residual effects of the metric at each level (vectorised over draws).

    alpha and noise_sd have shape (..., P), u (..., P, L). For the binomial the inverse logit
    is averaged over N(0, seed_sd^2 + residual_sd^2) by 40-point Gauss-Hermite quadrature.
    """
    eta = alpha[..., None] + u
    if family != "binomial":
        return eta
    z = eta[..., None] + noise_sd[..., None, None] * _GH_X
    return (1.0 / (1.0 + np.exp(-z))) @ _GH_W


def _spread_and_seed_sd(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed-scale statistics of (..., level, seed) arrays with NaN for absent cells:
    max - min of the level means, and the SD across seeds of the per-seed means."""
    lev = np.nanmean(y, axis=-1)
    seed = np.nanmean(y, axis=-2)
    return np.nanmax(lev, axis=-1) - np.nanmin(lev, axis=-1), np.nanstd(seed, axis=-1, ddof=1)


def quantiles(x: np.ndarray) -> dict[str, float]:
    x = np.asarray(x, dtype=float)
    return {"median": float(np.median(x)), "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}


def verdict(p_gt: float, p_lt: float, level: float = DECISION) -> str:
    """SPEC section 3: remembers if P(spread > delta) >= 0.95, forgets if P(spread < delta) >= 0.95."""
    if p_gt >= level:
        return "remembers"
    if p_lt >= level:
        return "forgets"
    return "inconclusive"


def versions() -> dict[str, str]:
    import nutpie
    import pymc
    import pytensor
    import scipy

    return {"pymc": pymc.__version__, "pytensor": pytensor.__version__, "nutpie": nutpie.__version__,
            "arviz": arviz_io.version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "xarray": xr.__version__}


__all__ = ["FAMILIES", "MemoryData", "MemoryModel", "SAMPLERS", "expected_metric", "prepare_data",
           "quantiles", "verdict", "versions"]
