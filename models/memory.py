"""The memory model of one metric for all pipelines at once (docs/memory-model.md).

For pipeline p, sigma_w level i and seed s, on the pipeline's noise-standardised scale,

    z[p,i,s] = alpha[p] + a[p] x[p,i] + u[p,i] + v[p,s] + b[p,s] x[p,i] + e[p,i,s]
    a flat                    initialization memory: its linear trend in log sigma_w ...
    u ~ N(0, sigma_sd[p]^2)   ... and the sigma_w-level effects around it
    v ~ N(0, seed_sd[p]^2)    the seed effect shared by every sigma_w level (common random numbers)
    b ~ N(0, slope_sd[p]^2)   each seed's own drift along x = centred log sigma_w (unit RMS)
    e ~ N(0, residual_sd[p]^2)

so the seeds' noise is not assumed compound-symmetric: a seed may respond to sigma_w in its own
way (an audit of real grids; docs/memory-model.md, "Likelihood"). Every group effect is integrated out
analytically (models/core.py), so NUTS samples four SDs per pipeline plus the values of cells a
pipeline lacks inside its levels x seeds rectangle
(imputed with a flat prior, which integrates them out exactly). With no group effect left there
is no funnel, so well-filled tables sample without divergences; tables whose holes leave under 2
residual degrees of freedom are skipped in models/data.py, because there the imputed cells make
one. Pipelines share nothing, least of all sigma_sd.

Why a class: ``MemoryModel(data).fit().summarize(delta)`` keeps the data, the PyMC model, the
compiled nutpie sampler and the posterior together. Every array the model reads is ``pm.Data``
of fixed shape, so the compiled sampler depends only on the model's structure
(:meth:`MemoryModel.structure`): :meth:`refit` and any other model of the same structure in this
process (calibration, the divergence sensitivity refit, plan checks, sequential looks) reuse it,
and later processes load it from the disk cache (models/compiled.py) instead of compiling.

Slots: the compiled sampler's shape can be larger than the table (``slots``, a smallest (pipelines,
sigma_w levels, seeds) shape). The extra cells are padding, outside every pipeline's rectangle and so
exactly absent: their free values are pinned standard normals and a padded pipeline contributes only its
SDs' priors (a pipeline mask zeroes its likelihood), both independent of everything real, so the
posterior of the real parameters is the unpadded one; only the Monte Carlo draws differ. Padding to
the last look's seeds is what lets every look of a sequential design (docs/sequential.md) run on one
compiled sampler, and analyses of different small cubes share one (docs/memory-model.md, "Compiled
model cache").
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.errors import OptionError
from initmem.models import arviz_io, checks, compiled, core
from initmem.models.data import FAMILIES, MemoryData, prepare_data, resolve_delta
from initmem.models.priors import Priors, default_priors
from initmem.models.sequential import Spending
from initmem.models.summaries import quantiles, summarize_model, verdict
from initmem.names import ALPHA
from initmem.results.records import PipelineResult, sampler_flags
from initmem.results.spec import SAMPLERS

REPORTED = ("sigma_sd", "seed_sd", "slope_sd", "residual_sd", "memory_share", "spread", "expected")
DEFAULT_TARGET_ACCEPT, RETRY_TARGET_ACCEPT = 0.9, 0.99
_SAMPLED = ("sigma_sd_z", "seed_sd_z", "slope_sd_z", "residual_sd_z")

# PyTensor warns at import that it found no BLAS for its C backend; nutpie compiles with numba.
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation")


def sigma_scales(d: MemoryData, priors: Priors, delta: float | None) -> np.ndarray:
    """Per pipeline, sigma_sd's prior scale in noise units (models/priors.py: neutral about the
    verdict for the pipeline's delta and number of levels)."""
    lev = d.level_mask
    return np.array([priors.sigma_scale(None if delta is None else delta / d.scale[a], int(lev[a].sum()))
                     for a in range(len(d.pipelines))])


def padded(arr: dict[str, np.ndarray], shape: tuple[int, int, int]) -> dict[str, np.ndarray]:
    """The model's arrays grown to ``shape`` (pipeline, sigma_w, seed) with empty padding: no cell
    observed, imputed or inside a rectangle; a padded pipeline has mask 0 and prior scale 1."""
    grow = [n - m for n, m in zip(shape, arr["z"].shape, strict=True)]
    if min(grow) < 0:
        raise ValueError(f"slots {shape} are smaller than the table {arr['z'].shape}")
    axes = {"z": (0, 1, 2), "obs": (0, 1, 2), "imputed": (0, 1, 2), "lev": (0, 1), "sd": (0, 2), "x": (0, 1),
            "sigma_scale": (0,), "pipe": (0,), "seed_effect": (0,)}
    fill = {"sigma_scale": 1.0}
    return {k: np.pad(v, [(0, grow[a]) for a in axes[k]], constant_values=fill.get(k, 0.0)) for k, v in arr.items()}


def _slot_labels(real: list[Any], n: int, start: float) -> list[Any]:
    """Coordinate labels for ``n`` padding slots after ``real``, unlike any real label."""
    return [*real, *(start - k for k in range(n))]


def _model_arrays(d: MemoryData, priors: Priors, delta: float | None) -> dict[str, np.ndarray]:
    rect = d.level_mask[:, :, None] & d.seed_mask[:, None, :]
    imputed = rect & ~d.used
    x = core.slope_axis(d.sigma_w, d.level_mask, d.seed_design == cube.SEED_PAIRED)
    return {"z": d.standardized(), "obs": d.used.astype(float), "imputed": imputed.astype(float),
            "lev": d.level_mask.astype(float), "sd": d.seed_mask.astype(float), "x": x,
            "sigma_scale": sigma_scales(d, priors, delta), "pipe": np.ones(len(d.pipelines)),
            # 1 where seeds are paired (a seed effect shared by every level), 0 for independent seeds
            "seed_effect": np.full(len(d.pipelines), 1.0 if d.seed_design == cube.SEED_PAIRED else 0.0)}


class MemoryModel(compiled.NutpieFit):
    """Build, fit and summarize the memory model of one metric."""

    def __init__(self, data: MemoryData, *, delta: float | None = None, priors: Priors | None = None,
                 slots: tuple[int, int, int] | None = None) -> None:
        self.data = data
        # The compiled sampler's (pipeline, sigma_w, seed) shape: the table's, or larger (padding; above).
        self.shape = tuple(max(int(a), int(b)) for a, b in zip(data.used.shape, slots or (0, 0, 0), strict=True))
        # Independent seeds share nothing across sigma_w: the seed effect is fixed at 0, so the seed
        # sum of squares joins the residual one (the one-way REML likelihood; docs/memory-model.md).
        self.paired = data.seed_design == cube.SEED_PAIRED
        self.priors = priors or default_priors()
        # sigma_sd's prior is neutral about the verdict at this delta (models/priors.py); the
        # default is the metric's own (one point for accuracies), none for other metrics.
        self.delta = delta if delta is not None else _default_delta(data)
        self._arr: dict[str, np.ndarray] | None = None
        super().__init__(self._build())
        self.idata: Any = None
        self.sampler_used: str | None = None
        self.fallback_reason: str | None = None
        self._fit_kwargs: dict[str, Any] = {}
        self._summary_cache: dict[str, Any] = {}

    def _arrays(self) -> dict[str, np.ndarray]:
        """The model's data arrays, computed once per model object (its data never change; a refit
        is a new object)."""
        if self._arr is None:
            self._arr = _model_arrays(self.data, self.priors, self.delta)
        return self._arr

    def _inputs(self) -> dict[str, np.ndarray]:
        """The arrays the sampler reads: the model's arrays padded to its compiled shape."""
        return padded(self._arrays(), self.shape)

    @property
    def coords(self) -> dict[str, Any]:
        d = self.data
        return {cube.PIPELINE: d.pipelines, cube.SIGMA: d.sigma_w.tolist(), cube.SEED: [int(s) for s in d.seeds]}

    def _real_sizes(self) -> dict[str, int]:
        """The table's own size along each dim of the posterior, padding slots cut (the sampled SDs'
        unconstrained values carry PyMC's unnamed per-pipeline dim)."""
        p, n_l, n_s = self.data.used.shape
        return {cube.PIPELINE: p, cube.SIGMA: n_l, cube.SEED: n_s, **{f"{n}_log___dim_0": p for n in _SAMPLED}}

    def _slot_coords(self) -> dict[str, Any]:
        """The coordinates of the compiled shape: the real labels, then the padding slots' own."""
        real, extra = self.coords, [n - m for n, m in zip(self.shape, self.data.used.shape, strict=True)]
        seeds = real[cube.SEED]
        return {cube.PIPELINE: [*real[cube.PIPELINE], *(f"(slot {k})" for k in range(extra[0]))],
                cube.SIGMA: _slot_labels(real[cube.SIGMA], extra[1], -1.0),
                cube.SEED: _slot_labels(seeds, extra[2], min(seeds, default=0) - 1)}

    def structure(self) -> dict[str, Any]:
        """What the compiled sampler depends on besides the code: the compiled shape and the prior
        constants in the graph (everything else, the seed design included, is ``pm.Data``). Every prior
        number is included, not only those the graph reads today, so a new one can never be
        missed."""
        arr = self._inputs()
        return {"shape": list(arr["z"].shape), "priors": self.priors.as_dict(),
                "dtypes": {k: str(v.dtype) for k, v in sorted(arr.items())}}

    def _build(self):
        import pymc as pm

        arr, pr = self._inputs(), self.priors
        dims3 = (cube.PIPELINE, cube.SIGMA, cube.SEED)
        with pm.Model(coords=self._slot_coords()) as model:
            z = pm.Data("z", arr["z"], dims=dims3)
            obs = pm.Data("obs", arr["obs"], dims=dims3)
            imputed = pm.Data("imputed", arr["imputed"], dims=dims3)
            lev = pm.Data("lev", arr["lev"], dims=(cube.PIPELINE, cube.SIGMA))
            sd = pm.Data("sd", arr["sd"], dims=(cube.PIPELINE, cube.SEED))
            sigma_scale = pm.Data("sigma_scale", arr["sigma_scale"], dims=cube.PIPELINE)
            x = pm.Data("x", arr["x"], dims=(cube.PIPELINE, cube.SIGMA))
            pipe = pm.Data("pipe", arr["pipe"], dims=cube.PIPELINE)   # 0 for a padding slot: no likelihood
            seed_effect = pm.Data("seed_effect", arr["seed_effect"], dims=cube.PIPELINE)
            free = pm.Flat("y_free", dims=dims3)
            # Cells that are not imputed get a standard normal so their free value is proper
            # and independent of everything (a constant in the posterior of interest).
            pm.Potential("pin", -0.5 * ((1.0 - imputed) * free**2).sum())
            table = obs * z + imputed * free
            scales = {"sigma_sd_z": sigma_scale, "slope_sd_z": pr.slope_scale}
            s = {name: pm.HalfStudentT(name, nu=pr.sd_nu, sigma=scales.get(name, pr.sd_scale), dims=cube.PIPELINE)
                 for name in _SAMPLED}
            sums = core.table_sums(table, lev, sd, x)
            import pytensor.tensor as pt

            s2v = s["seed_sd_z"] ** 2 * seed_effect
            pm.Potential("reml", (pipe * core.reml_loglik(sums, s["sigma_sd_z"] ** 2, s2v, s["residual_sd_z"] ** 2,
                                                          log=pt.log, s2b=s["slope_sd_z"] ** 2)).sum())
        return model

    def describe(self) -> str:
        """One paragraph for summary.json and the report."""
        lik = {
            "per_example": "accuracies on the fixed test set from the per-example predictions, with the noise "
                           "scale from the independent-errors variance of those predictions (near 100% accuracy "
                           "at least the pooled SD across seeds within levels)",
            "counts": "accuracies from counts of correct predictions (no per-example predictions), with the "
                      "binomial bound as noise scale (near 100% accuracy at least the pooled SD across seeds "
                      "within levels)",
            "gaussian": "the metric in its units, with the pooled SD across seeds within levels as noise scale",
        }[self.data.likelihood]
        return (f"Memory model of {self.data.metric}: y = alpha + a x + u[sigma_w] + v[seed] + b[seed] x + e per "
                f"pipeline, gaussian, on {lik}; x is centred log sigma_w, so the memory has a linear trend (flat "
                "prior) "
                "and exchangeable level effects, and each seed its own intercept and its own drift along sigma_w "
                "(with 3 or more levels and paired seeds). The group effects, the trend and alpha are integrated out "
                "(restricted likelihood of the four SDs); NUTS samples the SDs, which are not pooled across pipelines; "
                "level effects are drawn from their exact conditional. memory_share = sigma_sd^2 / (sigma_sd^2 + "
                "seed_sd^2 + slope_sd^2 + residual_sd^2), the denominator including the run-to-run "
                "(observation) variance. 'remembers' also needs the seeds' paired differences (models/paired.py). "
                "See docs/memory-model.md.")

    # fitting ----------------------------------------------------------------------------
    def fit(self, *, sampler: str = "nutpie", draws: int = 1000, tune: int = 1000, chains: int = 4,
            seed: int = 0, target_accept: float = DEFAULT_TARGET_ACCEPT, progress: bool = True) -> Any:
        """Sample the posterior with nutpie (PyMC's NUTS as option and fallback); returns and keeps an
        ArviZ InferenceData whose posterior also holds the derived, outcome-unit quantities."""
        if sampler not in SAMPLERS:
            raise OptionError("sampler", f"{{option}} must be one of {', '.join(SAMPLERS)}, not {sampler!r}")
        if draws < 1 or tune < 0 or chains < 1:
            raise OptionError("draws", "{option}, chains must be >= 1 and tune >= 0")
        self._fit_kwargs = {"sampler": sampler, "draws": draws, "tune": tune, "chains": chains, "seed": seed,
                            "target_accept": target_accept, "progress": progress}
        self.fallback_reason = None
        self._summary_cache = {}
        if sampler == "nutpie":
            try:
                idata = self._fit_nutpie(draws, tune, chains, seed, target_accept, progress)
            except ImportError as exc:
                self.fallback_reason = f"nutpie unavailable ({exc}); fell back to PyMC NUTS"
                idata = self._fit_pymc(draws, tune, chains, seed, target_accept, progress)
        else:
            idata = self._fit_pymc(draws, tune, chains, seed, target_accept, progress)
        # The posterior kept: the padding slots cut, the outcome-unit quantities added, the imputed cells dropped.
        derived = self._derived(idata.posterior, seed)
        self.idata = arviz_io.with_posterior_vars(idata, derived, drop=["y_free"], coords=self.coords,
                                                  sizes=self._real_sizes())
        return self.idata

    def _fit_nutpie(self, draws, tune, chains, seed, target_accept, progress):
        idata = self._nutpie_sample(self._inputs(), draws=draws, tune=tune, chains=chains, seed=seed,
                                    target_accept=target_accept, progress=progress)
        self.sampler_used = "nutpie"
        return idata

    def _fit_pymc(self, draws, tune, chains, seed, target_accept, progress):
        import pymc as pm

        with self.model:
            t0 = time.perf_counter()
            step = pm.NUTS(target_accept=target_accept)
            self.compile_seconds = time.perf_counter() - t0
            self.compile_cache = {"source": "compiled", "cache_hit": False, "note": "PyMC's NUTS is not cached"}
            t0 = time.perf_counter()
            idata = pm.sample(draws=draws, tune=tune, chains=chains, step=step, random_seed=seed,
                              cores=min(chains, os.cpu_count() or 1), progressbar=progress,
                              compute_convergence_checks=False)
            self.sampling_seconds = time.perf_counter() - t0
        self.sampler_used = "pymc"
        return idata

    def fit_retrying(self, *, sampler: str, draws: int, tune: int, chains: int, seed: int, progress: bool,
                     warn: Callable[[str], None] | None = None, label: str = "") -> dict[str, Any]:
        """Fit, check R-hat / ESS / divergences, and retry once (target_accept :data:`RETRY_TARGET_ACCEPT`, twice
        the tuning) when any check fails: the one automatic, visible retry of an analysis (docs/analysis.md).

        Returns the diagnostics of the final fit (:meth:`diagnostics`) with the sampler used, the compile and
        sampling times, every attempt and the settings of the last. ``warn`` is told each flag, and the retry
        (analysis/analyze.py prints them on stderr); ``label`` prefixes them."""
        say = warn or (lambda _message: None)
        attempts = []
        target = DEFAULT_TARGET_ACCEPT
        t_sampling = 0.0
        for attempt in range(2):
            self.fit(sampler=sampler, draws=draws, tune=tune, chains=chains, seed=seed + attempt,
                     target_accept=target, progress=progress)
            t_sampling += self.sampling_seconds
            diag = self.diagnostics()
            attempts.append({"target_accept": target, "tune": tune, "draws": draws, "flags": diag["flags"],
                             "sampling_seconds": self.sampling_seconds})
            if not diag["flags"] or attempt == 1:
                break
            for flag in diag["flags"]:
                say(f"{label}{flag}; retrying with target_accept={RETRY_TARGET_ACCEPT} and tune={2 * tune}")
            target, tune = RETRY_TARGET_ACCEPT, 2 * tune
        for flag in diag["flags"]:
            say(f"{label}{flag} (after {len(attempts)} attempt(s)); the results are reported but flagged, and "
                "the model decides no verdict: the seeds' design-based tests decide alone")
        diag.update({
            "sampler": self.sampler_used,
            "compile_seconds": self.compile_seconds,
            "sampling_seconds": t_sampling,
            "seconds": self.compile_seconds + t_sampling,
            "retried": len(attempts) > 1,
            "attempts": attempts,
            "target_accept": target,
            "draws": draws, "tune": tune, "chains": chains, "seed": seed,
        })
        if self.fallback_reason:
            diag["flags"].append(self.fallback_reason)
            say(self.fallback_reason)
        return diag

    def refit(self, data: MemoryData, **fit_kwargs: Any) -> MemoryModel:
        """A fitted model of new data of the same shape, reusing this model's compiled sampler
        (no recompilation); fit settings default to this model's last fit."""
        if data.used.shape != self.data.used.shape:
            raise ValueError("refit needs data of the same (pipeline, sigma_w, seed) shape")
        new = object.__new__(MemoryModel)
        new.__dict__.update({**self.__dict__, "data": data, "idata": None, "_summary_cache": {}, "_arr": None})
        import pymc as pm

        arr = new._inputs()
        with new.model:
            pm.set_data(arr)
        self._share_sampler(new, arr)
        new.fit(**{**self._fit_kwargs, **fit_kwargs})
        return new

    # derived quantities -----------------------------------------------------------------
    def _derived(self, post: xr.Dataset, seed: int) -> dict[str, xr.DataArray]:
        """Outcome-unit SDs, shares, level values, spread per draw, from the sampled posterior ``post`` (read on
        the table's own cells: a padded model's slots are left out)."""
        d = self.data
        arr = self._arrays()
        coords_ = self.coords
        n_p, n_l, n_s = d.used.shape
        sz = {n: post[n].transpose("chain", "draw", cube.PIPELINE).values[..., :n_p] for n in _SAMPLED}
        if not self.paired:  # no seed effect in an independent design: report it as exactly 0
            sz["seed_sd_z"] = np.zeros_like(sz["seed_sd_z"])
        # no slope where the table has no slope axis (fewer than 3 levels or independent seeds)
        sz["slope_sd_z"] = np.where(arr["x"].any(axis=1)[None, None, :], sz["slope_sd_z"], 0.0)
        s2 = {n: v**2 for n, v in sz.items()}
        cells = ("chain", "draw", cube.PIPELINE, cube.SIGMA, cube.SEED)
        free = post["y_free"].transpose(*cells).values[..., :n_p, :n_l, :n_s]
        table = arr["obs"] * arr["z"] + arr["imputed"] * free
        sums = core.table_sums(table, arr["lev"], arr["sd"])
        rng = np.random.default_rng(seed + 7919)
        lev = d.level_mask[None, None]
        base, u = core.draw_levels(sums["level_means"], sums["grand"], lev, sums["n_seed"],
                                   s2["sigma_sd_z"], s2["seed_sd_z"], s2["residual_sd_z"], rng,
                                   x=np.broadcast_to(arr["x"], sums["level_means"].shape), s2b=s2["slope_sd_z"])
        scale, center = d.scale[None, None, :], d.center[None, None, :]
        expected = np.where(lev, center[..., None] + scale[..., None] * (base[..., None] + u), np.nan)
        total = s2["sigma_sd_z"] + s2["seed_sd_z"] + s2["slope_sd_z"] + s2["residual_sd_z"]
        cd = ("chain", "draw")
        coords = {"chain": post["chain"].values, "draw": post["draw"].values, cube.PIPELINE: coords_[cube.PIPELINE],
                  cube.SIGMA: coords_[cube.SIGMA]}

        def da(x, dims):
            return xr.DataArray(x, dims=dims, coords={k: coords[k] for k in dims})

        return {
            "sigma_sd": da(scale * sz["sigma_sd_z"], (*cd, cube.PIPELINE)),
            "seed_sd": da(scale * sz["seed_sd_z"], (*cd, cube.PIPELINE)),
            "slope_sd": da(scale * sz["slope_sd_z"], (*cd, cube.PIPELINE)),
            "residual_sd": da(scale * sz["residual_sd_z"], (*cd, cube.PIPELINE)),
            "expected": da(expected, (*cd, cube.PIPELINE, cube.SIGMA)),
            "spread": da(scale * core.spread(u, lev), (*cd, cube.PIPELINE)),
            "memory_share": da(s2["sigma_sd_z"] / total, (*cd, cube.PIPELINE)),
            "seed_share": da(s2["seed_sd_z"] / total, (*cd, cube.PIPELINE)),
            "slope_share": da(s2["slope_sd_z"] / total, (*cd, cube.PIPELINE)),
            "residual_share": da(s2["residual_sd_z"] / total, (*cd, cube.PIPELINE)),
        }

    # diagnostics --------------------------------------------------------------------------
    def diagnostics(self) -> dict[str, Any]:
        """R-hat, bulk ESS (per pipeline and overall, over every reported quantity) and
        divergences, with human-readable flags (empty when all is well)."""
        names = list(REPORTED)
        st = arviz_io.rhat_ess(self.idata, names)
        per: dict[str, dict[str, float]] = {}
        for pipe in self.data.pipelines:
            rh = np.concatenate([st["rhat"][n].sel({cube.PIPELINE: pipe}).values.ravel() for n in names])
            es = np.concatenate([st["ess_bulk"][n].sel({cube.PIPELINE: pipe}).values.ravel() for n in names])
            per[pipe] = {"max_rhat": float(np.nanmax(rh)), "min_ess_bulk": float(np.nanmin(es))}
        div = arviz_io.divergences(self.idata)
        flags = sampler_flags("all pipelines", math.nan, math.nan, div)
        for pipe, s in per.items():
            flags += sampler_flags(pipe, s["max_rhat"], s["min_ess_bulk"])
            s["divergences"] = div
        # compile_cache: where the compiled sampler came from ("compiled", or a cache hit from
        # "memory" or "disk"; models/compiled.py), so summary.json shows whether a run paid the compile.
        return {"per_pipeline": per, "max_rhat": max(s["max_rhat"] for s in per.values()),
                "min_ess_bulk": min(s["min_ess_bulk"] for s in per.values()), "divergences": div,
                "flags": flags, "compile_cache": dict(self.compile_cache)}

    # posterior predictive check -----------------------------------------------------------
    def ppc(self, *, n_draws: int = 1000, seed: int = 0) -> dict[str, dict[str, dict[str, float]]]:
        """The model checks (models/checks.py) of each pipeline's complete seeds against replicates
        with the same level values and fresh seeds and residuals: the spread, the seed SD, and the
        structure the model assumes away (unequal noise across sigma_w, residuals correlated
        between neighbouring levels, seed-specific slopes). p_value = P(T_rep >= T_obs)."""
        rng = np.random.default_rng(seed)
        post = self.idata.posterior
        d = self.data
        flat = {n: post[n].values.reshape(-1, *post[n].shape[2:])
                for n in ("expected", "seed_sd", "slope_sd", "residual_sd")}
        xs = self._arrays()["x"]
        take = rng.choice(flat["seed_sd"].shape[0], size=min(n_draws, flat["seed_sd"].shape[0]), replace=False)
        out: dict[str, dict[str, dict[str, float]]] = {}
        for a, pipe in enumerate(d.pipelines):
            lev = d.level_mask[a]
            complete = d.used[a][lev].all(axis=0)
            if complete.sum() < 2:
                out[pipe] = {}
                continue
            obs = d.y[a][lev][:, complete]
            x = np.log(d.sigma_w[lev])
            rep = core.predictive_tables(np.zeros(take.size), flat["expected"][take, a][:, lev],
                                         flat["seed_sd"][take, a], flat["residual_sd"][take, a],
                                         int(complete.sum()), rng, x=xs[a][lev], slope_sd=flat["slope_sd"][take, a])
            out[pipe] = checks.compare(checks.table_statistics(obs[None], x), checks.table_statistics(rep, x))
        return out

    # summary ------------------------------------------------------------------------------
    def results(self, delta: float, alpha: float | Spending = ALPHA, failed: dict[str, str | None] | None = None,
                *, checks_seed: int | None = None, fit: dict[str, Any] | None = None) -> dict[str, PipelineResult]:
        """Per-pipeline entries of summary.json (docs/memory-model.md, "Verdict"), typed, including the divergence
        sensitivity refit when some runs diverged. ``delta`` arrives resolved (results/margins.py,
        ``resolve_margins``); ``failed``: per pipeline, what failed in the fit's sampler diagnostics. With
        ``checks_seed`` the model checks (:meth:`ppc`, their replicates drawn from that seed) go into the entries as
        they are made; so do the fit's diagnostics ``fit`` (:meth:`fit_retrying`), each pipeline's its own, and
        where ``failed`` is not given it is read from them (:func:`failed_fits`)."""
        ppc = None if checks_seed is None else self.ppc(seed=checks_seed)
        if fit is not None and failed is None:
            failed = failed_fits(fit)
        return summarize_model(self, float(delta), alpha, failed, ppc=ppc,
                               diagnostics=None if fit is None else fit["per_pipeline"])

    def summarize(self, delta: float, alpha: float | Spending = ALPHA,
                  failed: dict[str, str | None] | None = None) -> dict[str, dict[str, Any]]:
        """:meth:`results` as plain dicts (``entry["verdict"]``), for scripts and studies that read them so."""
        return {pipe: entry.model_dump() for pipe, entry in self.results(delta, alpha, failed).items()}


def failed_fits(diag: dict[str, Any]) -> dict[str, str | None]:
    """Per pipeline, what its fit missed of the sampler goals after the retry (R-hat, bulk ESS, divergences, which
    the sampler counts over every pipeline at once), None where nothing did: a verdict never rests on a failed fit
    (models/summaries.py, ``verdict``'s ``model_ok``). ``diag``: :meth:`MemoryModel.fit_retrying`'s diagnostics."""
    out: dict[str, str | None] = {}
    for pipe, s in diag["per_pipeline"].items():
        flags = sampler_flags(pipe, s["max_rhat"], s["min_ess_bulk"], diag.get("divergences", 0))
        out[pipe] = "; ".join(f.split(": ", 1)[1] for f in flags) or None
    return out


def _default_delta(data: MemoryData) -> float | None:
    """The data's own default delta (one point for an accuracy, decided by ``MemoryData.is_accuracy``), None for
    a metric without a natural unit."""
    try:
        return resolve_delta(data, None)
    except OptionError:
        return None


def placeholder_data(shape: tuple[int, int, int]) -> MemoryData:
    """A standard-normal table of ``shape`` (pipeline, sigma_w, seed), every cell used, noise scale 1: data of
    the compiled structure every real table of that shape (or padded to it) shares (:meth:`MemoryModel.structure`
    reads shapes, dtypes and prior constants only)."""
    n_p, n_l, n_s = (int(n) for n in shape)
    if min(n_p, n_l, n_s) < 1 or n_l < 2 or n_s < 2:
        raise ValueError(f"a memory model needs >= 1 pipeline, 2 sigma_w levels and 2 seeds, not {shape}")
    y = np.random.default_rng(0).standard_normal((n_p, n_l, n_s))
    used = np.ones(y.shape, dtype=bool)
    names = [f"p{k}" for k in range(n_p)]
    return MemoryData(metric="placeholder", family="gaussian", likelihood="gaussian", gate="all", pipelines=names,
                      sigma_w=np.geomspace(0.25, 4.0, n_l), seeds=np.arange(n_s), y=y, used=used,
                      scale=np.ones(n_p), center=y.reshape(n_p, -1).mean(axis=1), n_test=None,
                      diverged=np.zeros(y.shape, dtype=bool))


def compile_sampler(shape: tuple[int, int, int], *, priors: Priors | None = None) -> compiled.Compiled:
    """Compile the memory model's sampler for tables of ``shape`` (pipeline, sigma_w, seed), or load it from the
    caches (models/compiled.py), before any data exist.

    Why: the compiled code depends on the shape alone, and a run knows its shape from the grid. ``initmem run``
    compiles it in a background process while the grid trains, so that the analysis loads it from the disk
    cache instead of compiling for 10-20 s on cores that just finished training.

    Parameters
    ----------
    shape : tuple of int
        (pipelines, sigma_w levels, seeds) of the table the analysis will fit, or the slots it is padded to.
    priors : Priors, optional
        The prior constants (they are part of the compiled graph); None: the defaults.

    Returns
    -------
    Compiled
        The sampler and where it came from (``source`` "compiled", "disk" or "memory").
    """
    model = MemoryModel(placeholder_data(shape), priors=priors)
    return compiled.compile_model(model.model, compiled.structure_key(model.structure()), model._inputs())


def versions() -> dict[str, str]:
    import nutpie
    import pymc
    import pytensor
    import scipy

    return {"pymc": pymc.__version__, "pytensor": pytensor.__version__, "nutpie": nutpie.__version__,
            "arviz": arviz_io.version(), "numpy": np.__version__, "scipy": scipy.__version__,
            "xarray": xr.__version__}


__all__ = ["DEFAULT_TARGET_ACCEPT", "FAMILIES", "MemoryData", "MemoryModel", "RETRY_TARGET_ACCEPT", "SAMPLERS",
           "compile_sampler", "failed_fits", "placeholder_data", "prepare_data", "quantiles", "resolve_delta",
           "verdict", "versions"]
