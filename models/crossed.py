"""The crossed random-effects model of a crossed (init seed x data seed) design, for all pipelines at once.

For pipeline p, sigma_w level l, init seed i and data seed j (docs/crossed.md),

    y[p,l,i,j] = mu[p,l] + a[p,l,i] + b[p,l,j] + e[p,l,i,j]
    a[p,l,i] = sd_init[p] (sqrt(w_init[p]) za[p,i] + sqrt(1 - w_init[p]) za_l[p,l,i])   the initial draw's effect
    b[p,l,j] = sd_data[p] (sqrt(w_data[p]) zb[p,j] + sqrt(1 - w_data[p]) zb_l[p,l,j])   the data order's effect
    e[p,l,i,j] ~ N(0, sd_resid[p]^2)        their interaction and the evaluation noise
    za, za_l, zb, zb_l ~ N(0, 1)

Each effect is a part shared by every sigma_w level (the same draw seen at every scale: za[p,i], SD
s_init_shared = sd_init sqrt(w_init)) plus a part of the level's own (za_l[p,l,i], SD s_init_level), so the
correlation of a draw's effects at two levels, the shared fraction ``init_shared`` = w_init, may be anything from
0 (independent) to 1 (identical), the range docs/crossed.md allows. ``sd_init`` = sqrt(s_init_shared^2 +
s_init_level^2) is the within-level SD of the draw's effect, as docs/crossed.md defines it; ``sd_data`` and
``data_shared`` alike; ``init_share`` is sd_init^2 / (sd_init^2 + sd_data^2 + sd_resid^2). A model with effects
independent across levels counts a draw shared by L levels L times: its 90% intervals of sd_init covered 68-75
of 100 tables with identical effects (8 x 4 and 4 x 4 seeds, 3 levels). studies/crossed_bayes_coverage.py
measures this model in both regimes (its table is at the end of that module's docstring). The frequentist route
(:mod:`initmem.stats.crossed`) gives the verdict; this posterior describes the same components.

Priors, per pipeline, on the data divided by the pipeline's own scale s_p, the pooled SD of its observed runs
around their level means (every component of the model is inside it, so the priors adapt to the metric's units,
fractions or points, and to how noisy the pipeline is):

    sd_init, sd_data, sd_resid ~ half-Student-t(3, scale s_p)   weakly informative: mass near 0 (a pipeline that
                                                                 forgets its draw is not pushed away from 0) and a
                                                                 tail that does not shrink components of several s_p
    w_init, w_data ~ Beta(1/2, 1/2)                             the split of sd_init^2 (sd_data^2) between parts
    mu[p,l] ~ N(level mean, (2 s_p)^2)                          weak: the level means are far better measured

Why this split. The prior of sd_init, the quantity reported and compared with the margin, is the one-component
model's whatever the split, so a pipeline without init memory is not pushed away from 0 (a half-t on each part
would be: two parts near 0 give a total whose density rises from 0, and in a check on 60 tables of 8 x 4 seeds
it called "keeps" at SD_init = m in 6/60, with divergent transitions in 31-42 of 60 fits, the parts trading
variance along a curved ridge). The split is measured from few degrees of freedom (I - 1 shared against
(L - 1)(I - 1) level-specific; J - 1 against (L - 1)(J - 1) for the data), so its prior matters at the ends:
where the data pin one part near 0 (identical effects pin the level part), the prior mass left to w within eps of
the end is about eps / sd^2 under a uniform w, a pull of the other part's variance S of 1/S, and the 90% intervals
of sd_data covered 70 of 100 tables of 8 x 4 seeds with identical effects. Beta(1/2, 1/2) leaves sqrt(eps) / sd,
a pull of 1/sqrt(S), which with the flat density of sd near 0 makes the prior of S about the Jeffreys 1/S,
whose intervals are about the chi-square ones; it is also the split that two half-normal parts of equal scale induce.

All parts are non-centred (as above), which keeps a component near zero sampleable (the case that matters: a
pipeline that forgets its draw). The split still leaves a few divergent transitions in many fits at
target_accept 0.9 (13-32 of 60 fits in the study), so :meth:`CrossedModel.fit` refits at 0.99 when one diverges.
Missing runs (NaN) leave the likelihood through a 0/1 mask, so
the table keeps its shape and one compiled sampler serves every table of the same (P, L, I, J) shape: the model
is compiled once per shape and process (and cached on disk, models/compiled.py), and :meth:`CrossedModel.refit`
swaps in new data at no compile cost. NUTS runs in nutpie with a fixed seed, so a fit is reproducible draw for
draw.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import xarray as xr

from initmem.errors import OptionError, UserError
from initmem.models import arviz_io, compiled
from initmem.names import ALPHA
from initmem.results.records import sampler_flags

PIPELINE, SIGMA, INIT, DATA = "pipeline", "sigma_w", "init_seed", "data_seed"
DIMS = (PIPELINE, SIGMA, INIT, DATA)
SD_NU = 3.0              # half-Student-t degrees of freedom of every SD
SD_SCALE = 1.0           # its scale, in units of the pipeline's scale s_p
MU_SCALE = 2.0           # the level means' prior SD around the observed level means, in units of s_p
SHARE_PRIOR = (0.5, 0.5)  # Beta prior of the shared fractions of sd_init^2 and sd_data^2
DEFAULT_TARGET_ACCEPT, RETRY_TARGET_ACCEPT = 0.9, 0.99
REPORTED = ("sd_init", "sd_data", "sd_resid", "init_share")
SHARED = ("init_shared", "data_shared")   # the fractions of sd_init^2 and sd_data^2 shared by all levels
_SAMPLED = ("sd_init_z", "sd_data_z", "sd_resid_z")
_SHARES = tuple(f"{n}_w" for n in SHARED)


def _labels(given: Any, n: int, what: str) -> list[Any]:
    """``given`` as a list of n labels (default 0..n-1); a list of another length is a UserError."""
    if given is None:
        return list(range(n))
    out = [v.item() if isinstance(v, np.generic) else v for v in list(given)]
    if len(out) != n:
        raise UserError(f"{len(out)} {what} labels for {n} {what} positions of the table")
    return out


def check_table(y: Any) -> np.ndarray:
    """The table as a float (P, L, I, J) array, checked.

    Parameters
    ----------
    y : array-like
        Final metric per (pipeline, sigma_w level, init seed, data seed), NaN for a run that is missing.

    Returns
    -------
    numpy.ndarray
        A float64 copy.

    Raises
    ------
    UserError
        When the table is not 4-D, has fewer than 2 init or data seeds (the two effects cannot be told apart
        from the residual), holds infinities, or a pipeline has no two different runs at any level (its scale,
        and so its priors, would be 0).
    """
    arr = np.array(y, dtype=float)
    if arr.ndim != 4:
        raise UserError(f"the crossed table must have 4 dims (pipeline, sigma_w, init seed, data seed), not "
                        f"{arr.ndim}")
    p, n_l, n_i, n_j = arr.shape
    if min(p, n_l) < 1 or min(n_i, n_j) < 2:
        raise UserError(f"a crossed table needs at least 2 init seeds and 2 data seeds (got {n_i} x {n_j}) and one "
                        "pipeline and level")
    if np.isinf(arr).any():
        raise UserError("the crossed table holds infinite values")
    return arr


def pipeline_scale(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pipeline, the pooled SD of its observed runs around their level means, and those level means.

    Parameters
    ----------
    y : numpy.ndarray
        (P, L, I, J) table, NaN where missing (:func:`check_table`).

    Returns
    -------
    scale : numpy.ndarray
        (P,) the pooled within-level SD (ddof 1 per level), the unit of the priors.
    center : numpy.ndarray
        (P, L) the level means (the pipeline's mean where a level has no run).

    Raises
    ------
    UserError
        When a pipeline has no run at all or no two different runs at one level.
    """
    flat = y.reshape(*y.shape[:2], -1)
    n = np.isfinite(flat).sum(axis=-1)
    if (n.sum(axis=1) == 0).any():
        raise UserError(f"pipeline {int(np.flatnonzero(n.sum(axis=1) == 0)[0])} of the crossed table has no run")
    level_mean = np.nansum(flat, axis=-1) / np.maximum(n, 1)
    ss = np.nansum((flat - level_mean[..., None]) ** 2, axis=-1)
    df = np.maximum(n - 1, 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.sqrt(ss.sum(axis=1) / df)
    bad = ~(np.isfinite(scale) & (scale > 0))
    if bad.any():
        raise UserError(f"pipeline {int(np.flatnonzero(bad)[0])} of the crossed table has no two different runs at "
                        "any sigma_w level: its seed components cannot be estimated")
    grand = np.nansum(flat, axis=(1, 2)) / n.sum(axis=1)
    center = np.where(n > 0, level_mean, grand[:, None])
    return scale, center


def model_arrays(y: np.ndarray) -> dict[str, np.ndarray]:
    """The arrays the compiled model reads: the standardised table with 0 where missing and the 0/1 mask of
    observed runs, both flattened in (P, L, I, J) order; besides them (not read by the graph) each pipeline's
    scale and level means."""
    scale, center = pipeline_scale(y)
    obs = np.isfinite(y)
    z = np.where(obs, (y - center[:, :, None, None]) / scale[:, None, None, None], 0.0)
    return {"z": z.ravel(), "obs": obs.astype(float).ravel(), "scale": scale, "center": center}


class CrossedModel(compiled.NutpieFit):
    """Build, fit and summarize the crossed random-effects model of one metric's (P, L, I, J) table.

    Parameters
    ----------
    y : array-like
        (pipeline, sigma_w level, init seed, data seed) final metric in its own units, NaN for missing runs
        (dropped from the likelihood).
    pipelines, sigma_w, init_seeds, data_seeds : sequence, optional
        Labels of each axis (default 0, 1, ...); they name the posterior's coordinates and the summary's keys.

    Raises
    ------
    UserError
        A malformed table (:func:`check_table`, :func:`pipeline_scale`) or labels of the wrong length.
    """

    def __init__(self, y: Any, *, pipelines: Any = None, sigma_w: Any = None, init_seeds: Any = None,
                 data_seeds: Any = None) -> None:
        self.y = check_table(y)
        p, n_l, n_i, n_j = self.y.shape
        self.coords: dict[str, list[Any]] = {
            PIPELINE: [str(v) for v in _labels(pipelines, p, "pipeline")],
            SIGMA: _labels(sigma_w, n_l, "sigma_w"), INIT: _labels(init_seeds, n_i, "init seed"),
            DATA: _labels(data_seeds, n_j, "data seed")}
        self._arr = model_arrays(self.y)
        super().__init__(self._build())
        self.idata: Any = None
        self.attempts: list[dict[str, Any]] = []
        self._fit_kwargs: dict[str, Any] = {}

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return tuple(int(n) for n in self.y.shape)  # type: ignore[return-value]

    @property
    def n_obs(self) -> dict[str, int]:
        """Observed runs per pipeline: the runs in the likelihood."""
        counts = np.isfinite(self.y).reshape(self.y.shape[0], -1).sum(axis=1)
        return {name: int(c) for name, c in zip(self.coords[PIPELINE], counts, strict=True)}

    def structure(self) -> dict[str, Any]:
        """What the compiled sampler depends on besides the libraries: the shape, the prior constants and the
        source of this module (the graph is written here)."""
        return {"model": "crossed", "shape": list(self.shape), "source": compiled.source_hash(__file__),
                "priors": {"sd_nu": SD_NU, "sd_scale": SD_SCALE, "mu_scale": MU_SCALE,
                           "share_prior": list(SHARE_PRIOR)}}

    def _build(self) -> Any:
        """The PyMC model on the flat vector of cells (gathers compile and run faster in numba than the
        broadcasting of 4-D arrays: 12 s against 17 s to compile, a third of the sampling time)."""
        import pymc as pm
        import pytensor.tensor as pt

        arr = self._arr
        p, n_l, n_i, n_j = self.shape
        ip, il, ii, ij = np.indices(self.shape).reshape(4, -1)
        with pm.Model() as model:
            z = pm.Data("z", arr["z"])
            obs = pm.Data("obs", arr["obs"])
            pipe = pm.Data("cell_pipeline", ip)
            level = pm.Data("cell_level", ip * n_l + il)
            init = pm.Data("cell_init", (ip * n_l + il) * n_i + ii)
            data = pm.Data("cell_data", (ip * n_l + il) * n_j + ij)
            init_shared = pm.Data("cell_init_shared", ip * n_i + ii)
            data_shared = pm.Data("cell_data_shared", ip * n_j + ij)
            s = {name: pm.HalfStudentT(name, nu=SD_NU, sigma=SD_SCALE, shape=p) for name in _SAMPLED}
            w = {name: pm.Beta(name, SHARE_PRIOR[0], SHARE_PRIOR[1], shape=p) for name in _SHARES}
            part = {f"{kind}_{side}": s[f"sd_{kind}_z"][pipe] * pt.sqrt(frac)
                    for kind in ("init", "data")
                    for side, frac in (("shared", w[f"{kind}_shared_w"][pipe]),
                                       ("level", 1.0 - w[f"{kind}_shared_w"][pipe]))}
            mu = pm.Normal("mu_z", 0.0, MU_SCALE, shape=p * n_l)
            a_shared = pm.Normal("a_shared_raw", 0.0, 1.0, shape=p * n_i)
            a_level = pm.Normal("a_level_raw", 0.0, 1.0, shape=p * n_l * n_i)
            b_shared = pm.Normal("b_shared_raw", 0.0, 1.0, shape=p * n_j)
            b_level = pm.Normal("b_level_raw", 0.0, 1.0, shape=p * n_l * n_j)
            a = part["init_shared"] * a_shared[init_shared] + part["init_level"] * a_level[init]
            b = part["data_shared"] * b_shared[data_shared] + part["data_level"] * b_level[data]
            mean = mu[level] + a + b
            sd_e = s["sd_resid_z"][pipe]
            pm.Potential("loglik", (obs * (-0.5 * ((z - mean) / sd_e) ** 2 - pt.log(sd_e))).sum())
        return model

    def describe(self) -> str:
        """One paragraph for summary.json and the report."""
        return ("Crossed random-effects model per pipeline: y = mu[sigma_w] + a[sigma_w, init] + b[sigma_w, data] + e, "
                "with a ~ N(0, sd_init^2), b ~ N(0, sd_data^2) each the sum of a part shared by all sigma_w levels "
                "and a part of each level's own (so any correlation across levels from none to identical; a "
                "Beta(1/2, 1/2) prior on the shared fraction), and e ~ N(0, sd_resid^2); half-Student-t(3) priors "
                "on the SDs scaled to the pipeline's pooled SD within levels; missing runs leave the likelihood. "
                "Sampled with NUTS (nutpie). The draw verdict uses the frequentist bounds; the posterior is shown "
                "beside them.")

    # fitting ----------------------------------------------------------------------------
    def fit(self, *, draws: int = 1000, tune: int = 1000, chains: int = 4, seed: int = 0,
            target_accept: float = DEFAULT_TARGET_ACCEPT, retry: bool = True, progress: bool = False) -> Any:
        """Sample the posterior with nutpie; reproducible for a given seed.

        Parameters
        ----------
        draws, tune, chains : int
            Draws kept per chain, warm-up steps per chain, chains (run on up to that many cores).
        seed : int
            nutpie's seed: the same seed gives the same draws.
        target_accept : float
            NUTS's target acceptance rate.
        retry : bool
            When a diagnostic misses its goal (R-hat, bulk ESS, a divergence), fit once more with target_accept
            0.99, twice the warm-up and seed + 1, as the memory model does; the second fit is the one kept.
        progress : bool
            Show nutpie's progress bar.

        Returns
        -------
        arviz.InferenceData
            The posterior, with ``sd_init``, ``sd_data``, ``sd_resid`` (metric units) and ``init_share`` added.

        Raises
        ------
        OptionError
            draws or chains below 1, tune below 0.
        """
        if draws < 1 or tune < 0 or chains < 1:
            raise OptionError("draws", "{option}, chains must be >= 1 and tune >= 0")
        self._fit_kwargs = {"draws": draws, "tune": tune, "chains": chains, "seed": seed,
                            "target_accept": target_accept, "retry": retry, "progress": progress}
        self.attempts = []
        for attempt in range(2 if retry else 1):
            self._sample(draws, tune, chains, seed + attempt, target_accept, progress)
            flags = self.diagnostics()["flags"]
            self.attempts.append({"target_accept": target_accept, "tune": tune, "seed": seed + attempt,
                                  "flags": flags, "sampling_seconds": self.sampling_seconds})
            if not flags:
                break
            target_accept, tune = RETRY_TARGET_ACCEPT, 2 * tune
        return self.idata

    def _sample(self, draws: int, tune: int, chains: int, seed: int, target_accept: float, progress: bool) -> None:
        data = {k: self._arr[k] for k in ("z", "obs")}
        idata = self._nutpie_sample(data, draws=draws, tune=tune, chains=chains, seed=seed,
                                    target_accept=target_accept, progress=progress)
        self.idata = self._add_derived(idata)

    def refit(self, y: Any, **fit_kwargs: Any) -> CrossedModel:
        """A fitted model of a new table of the same shape and labels on this model's compiled sampler (no
        compile); fit settings default to this model's last fit.

        Parameters
        ----------
        y : array-like
            The new (P, L, I, J) table.
        **fit_kwargs
            Overrides of :meth:`fit`'s settings (``seed``, say).

        Returns
        -------
        CrossedModel
            A new fitted model; this one is unchanged. The two share the PyMC model object (``model``, which
            keeps the first table's data and serves only to compile); the new sampler reads the new table.

        Raises
        ------
        UserError
            A malformed table, or one of another shape.
        """
        arr = check_table(y)
        if arr.shape != self.y.shape:
            raise UserError(f"refit needs a table of shape {self.shape}, not {arr.shape}")
        new = object.__new__(CrossedModel)
        new.__dict__.update({**self.__dict__, "y": arr, "_arr": model_arrays(arr), "idata": None, "attempts": []})
        self._share_sampler(new, {"z": new._arr["z"], "obs": new._arr["obs"]})
        new.fit(**{**self._fit_kwargs, **fit_kwargs})
        return new

    def _add_derived(self, idata: Any) -> Any:
        """The posterior in metric units with this table's labels: the SDs, the init share, the level means mu and
        the effects a and b per draw (the sampler's flat, standardised variables dropped)."""
        post = idata.posterior
        scale, center = self._arr["scale"], self._arr["center"]
        p, n_l, n_i, n_j = self.shape
        sz = {n: post[n].values for n in _SAMPLED}
        w = {n: post[f"{n}_w"].values for n in SHARED}
        part = {f"sd_{kind}_{side}_z": sz[f"sd_{kind}_z"] * np.sqrt(frac)
                for kind in ("init", "data")
                for side, frac in (("shared", w[f"{kind}_shared"]), ("level", 1.0 - w[f"{kind}_shared"]))}
        s2 = {n: v**2 for n, v in sz.items()}
        cd = ("chain", "draw")
        n_c, n_d = sz["sd_init_z"].shape[:2]
        coords = {"chain": post["chain"].values, "draw": post["draw"].values, **self.coords}

        def da(x: np.ndarray, dims: tuple[str, ...]) -> xr.DataArray:
            return xr.DataArray(x, dims=(*cd, *dims), coords={k: coords[k] for k in (*cd, *dims)})

        def effect(kind: str, sd: str, n: int) -> np.ndarray:
            shared = post[f"{kind}_shared_raw"].values.reshape(n_c, n_d, p, 1, n)
            level = post[f"{kind}_level_raw"].values.reshape(n_c, n_d, p, n_l, n)
            return scale[:, None, None] * (part[f"{sd}_shared_z"][..., None, None] * shared
                                           + part[f"{sd}_level_z"][..., None, None] * level)

        mu = center + scale[:, None] * post["mu_z"].values.reshape(n_c, n_d, p, n_l)
        extra = {"sd_init": da(scale * sz["sd_init_z"], (PIPELINE,)),
                 "sd_data": da(scale * sz["sd_data_z"], (PIPELINE,)),
                 "sd_resid": da(scale * sz["sd_resid_z"], (PIPELINE,)),
                 "init_share": da(s2["sd_init_z"] / (s2["sd_init_z"] + s2["sd_data_z"] + s2["sd_resid_z"]),
                                  (PIPELINE,)),
                 **{n: da(w[n], (PIPELINE,)) for n in SHARED},
                 "mu": da(mu, (PIPELINE, SIGMA)),
                 "a": da(effect("a", "sd_init", n_i), (PIPELINE, SIGMA, INIT)),
                 "b": da(effect("b", "sd_data", n_j), (PIPELINE, SIGMA, DATA))}
        drop = [n for n in post.data_vars if n not in extra]
        post = post.drop_vars(drop)
        post = post.drop_vars([d for d in post.coords if d not in cd])
        idata.posterior = post
        return arviz_io.with_posterior_vars(idata, extra)

    # diagnostics and summary ----------------------------------------------------------------
    def diagnostics(self) -> dict[str, Any]:
        """R-hat (rank-normalised, split) and bulk ESS of the reported quantities per pipeline, divergences, and
        one flag per missed goal (names.RHAT_MAX, names.ESS_MIN, no divergence); empty flags when all is well.

        Raises
        ------
        RuntimeError
            Before :meth:`fit`.
        """
        if self.idata is None:
            raise RuntimeError("fit the model first")
        names = list(REPORTED)
        st = arviz_io.rhat_ess(self.idata, names)
        div = arviz_io.divergences(self.idata)
        per: dict[str, dict[str, float]] = {}
        flags = sampler_flags("all pipelines", math.nan, math.nan, div)
        for pipe in self.coords[PIPELINE]:
            rh = np.array([float(st["rhat"][n].sel({PIPELINE: pipe})) for n in names])
            es = np.array([float(st["ess_bulk"][n].sel({PIPELINE: pipe})) for n in names])
            per[pipe] = {"max_rhat": float(np.nanmax(rh)), "min_ess_bulk": float(np.nanmin(es)), "divergences": div}
            flags += sampler_flags(pipe, per[pipe]["max_rhat"], per[pipe]["min_ess_bulk"])
        return {"per_pipeline": per, "max_rhat": max(s["max_rhat"] for s in per.values()),
                "min_ess_bulk": min(s["min_ess_bulk"] for s in per.values()), "divergences": div, "flags": flags,
                "retried": len(self.attempts) > 1, "compile_cache": dict(self.compile_cache),
                "compile_seconds": self.compile_seconds, "sampling_seconds": self.sampling_seconds}

    def summary(self, margin: float | None = None, alpha: float = ALPHA) -> dict[str, dict[str, Any]]:
        """Per pipeline, the posterior of the components in summary.json's ``bayes`` shape (docs/crossed.md).

        Parameters
        ----------
        margin : float, optional
            The draw verdict's margin on sd_init, in the metric's units; None: no probability is reported.
        alpha : float
            Each bound is the alpha (lower) or 1 - alpha (upper) posterior quantile: 90% intervals at 0.05.

        Returns
        -------
        dict
            ``{pipeline: {"sd_init": {"median", "lower", "upper"}, "sd_data": ..., "sd_resid": ...,
            "init_share": ..., "init_shared": the fraction of sd_init^2 shared by all sigma_w levels,
            "data_shared": that of sd_data^2, "p_sd_init_gt_margin": P(sd_init > margin) or None, "n_obs": runs
            in the likelihood, "max_rhat", "min_ess_bulk", "divergences"}}``. The shared fractions are weakly
            measured (I - 1 and J - 1 degrees of freedom against (L - 1)(I - 1) and (L - 1)(J - 1)) and are not
            in the diagnostics.

        Raises
        ------
        OptionError
            A negative or non-finite margin, or alpha outside (0, 0.5).
        RuntimeError
            Before :meth:`fit`.
        """
        if margin is not None and not (math.isfinite(margin) and margin >= 0):
            raise OptionError("draw_margin", "{option} must be a non-negative number")
        if not 0 < alpha < 0.5:
            raise OptionError("alpha", "{option} must be between 0 and 0.5")
        diag = self.diagnostics()
        post = self.idata.posterior
        out: dict[str, dict[str, Any]] = {}
        for pipe in self.coords[PIPELINE]:
            draws = {n: post[n].sel({PIPELINE: pipe}).values.ravel() for n in (*REPORTED, *SHARED)}
            block: dict[str, Any] = {n: interval(v, alpha) for n, v in draws.items()}
            block["p_sd_init_gt_margin"] = None if margin is None else float(np.mean(draws["sd_init"] > margin))
            block["n_obs"] = self.n_obs[pipe]
            block.update(diag["per_pipeline"][pipe])
            out[pipe] = block
        return out


def interval(x: np.ndarray, alpha: float = ALPHA) -> dict[str, float]:
    """Posterior median and the alpha and 1 - alpha quantiles of draws ``x``."""
    lo, med, hi = np.quantile(np.asarray(x, dtype=float), [alpha, 0.5, 1.0 - alpha])
    return {"median": float(med), "lower": float(lo), "upper": float(hi)}


def fit_crossed(y: Any, *, pipelines: Any = None, sigma_w: Any = None, init_seeds: Any = None,
                data_seeds: Any = None, **fit_kwargs: Any) -> CrossedModel:
    """Build and fit the crossed model of a (P, L, I, J) table in one call.

    Parameters
    ----------
    y : array-like
        (pipeline, sigma_w level, init seed, data seed) final metric, NaN for missing runs.
    pipelines, sigma_w, init_seeds, data_seeds : sequence, optional
        Axis labels (:class:`CrossedModel`).
    **fit_kwargs
        :meth:`CrossedModel.fit`'s settings (draws, tune, chains, seed, target_accept, retry, progress).

    Returns
    -------
    CrossedModel
        The fitted model: ``.summary(margin)``, ``.diagnostics()``, ``.idata``.

    Raises
    ------
    UserError
        A malformed table or labels.
    """
    model = CrossedModel(y, pipelines=pipelines, sigma_w=sigma_w, init_seeds=init_seeds, data_seeds=data_seeds)
    model.fit(**fit_kwargs)
    return model


__all__ = ["CrossedModel", "check_table", "fit_crossed", "interval", "model_arrays", "pipeline_scale"]
