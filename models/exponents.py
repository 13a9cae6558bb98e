"""Fitted clock exponents: how does the forgetting time scale with eta, lambda, b and momentum?

Each named clock predicts how many optimizer steps a constant-rate pipeline needs to accumulate a
fixed amount of it: T_l2 = lambda * eta * steps gives steps ~ eta^-1 lambda^-1 b^0, T_sgd =
eta^2 / b * steps gives eta^-2 lambda^0 b^+1, T_eta gives eta^-1. The model below measures these
exponents instead of assuming one (docs/reading-the-clocks.md):

    log t_ps = alpha + X_p . beta + tau * z_p + sigma * e_ps,

t_ps the forgetting time in steps of seed s of pipeline p (its own memory curve crossing the
forgetting threshold, stats/forgetting.py), X_p the centred log eta, log lambda, log b,
log 1/(1 - mu) and optimizer-family indicators of pipeline p (a column that does not vary is left
out), z_p ~ N(0, 1) a pipeline effect (pipelines, not seeds, are the replication unit of the
exponents) and e_ps ~ N(0, 1) the seed noise. A seed whose curve never crosses within its budget
is a right-censored observation at log budget (``pm.Censored``), not dropped: dropping the slow
pipelines would bias the exponents towards 0.

Priors: beta ~ N(0, 2) (exponents of order one, either sign), alpha ~ N(mean log t, 5),
tau, sigma ~ HalfNormal(1) on the log scale. Sampled with nutpie (PyMC's NUTS as fallback).
Torch-free: models/ never imports torch.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from initmem import cube
from initmem.models import compiled

warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS installation")

ETA, LAMBDA, BATCH, MOMENTUM = "eta", "lambda", "b", "momentum"
NAMED_CLOCKS = {  # predicted exponents of steps-to-forget on (eta, lambda, b)
    cube.T_L2: {ETA: -1.0, LAMBDA: -1.0, BATCH: 0.0},
    cube.T_SGD: {ETA: -2.0, LAMBDA: 0.0, BATCH: 1.0},
    cube.T_ETA: {ETA: -1.0, LAMBDA: 0.0, BATCH: 0.0},
}
DEFAULT_TOLERANCE = 0.25  # |fitted - predicted| on every exponent: "the clock's exponents hold"
INTERVAL = (0.05, 0.95)
MIN_L2_PIPELINES = 5  # with at least this many L2 pipelines, the fit uses only those (one mechanism)
MIN_PIPELINES = 8  # fewer: up to 5 exponents and a pipeline SD are barely identified; a dose design has more
ALPHA_SD, BETA_SD, SCALE_SD = 5.0, 2.0, 1.0  # priors: alpha ~ N(mean log t, 5), beta ~ N(0, 2), tau, sigma ~ HN(1)
TARGET_ACCEPT = 0.95


@dataclass
class ExponentData:
    """Per-seed forgetting times (in steps) and the pipelines' design, ready for the model."""

    pipelines: list[str]
    columns: list[str]
    x: np.ndarray  # (P, K) centred covariates
    pipe: np.ndarray  # (N,) observation -> pipeline index
    y: np.ndarray  # (N,) log steps; = upper where censored
    upper: np.ndarray  # (N,) log budget in steps
    censored: np.ndarray  # (N,) bool
    notes: list[str] = field(default_factory=list)


def design_matrix(lr, l2, batch, momentum, family) -> tuple[np.ndarray, list[str]]:
    """Columns that vary among the pipelines, uncentred: log eta, log lambda, log b, log 1/(1-mu), family."""
    cols: dict[str, np.ndarray] = {ETA: np.log(lr), BATCH: np.log(batch),
                                   MOMENTUM: -np.log1p(-np.asarray(momentum, float))}
    if np.all(np.asarray(l2) > 0):
        cols[LAMBDA] = np.log(l2)
    fam = np.asarray(family, dtype=object)
    for f in sorted(set(fam.tolist()))[1:]:
        cols[f"family_{f}"] = (fam == f).astype(float)
    order = [c for c in (ETA, LAMBDA, BATCH,
                         MOMENTUM) if c in cols] + sorted(c for c in cols if c.startswith("family_"))
    keep = [c for c in order if np.ptp(np.asarray(cols[c], float)) > 1e-9]
    x = np.stack([np.asarray(cols[c], float) for c in keep], 1) if keep else np.zeros((len(lr), 0))
    return x, keep


def build_data(names, lr, l2, batch, momentum, family, times: np.ndarray, budget: np.ndarray) -> ExponentData:
    """From per-pipeline settings and per-seed times (P, S) in steps (+inf censored, NaN undefined).

    With >= MIN_L2_PIPELINES pipelines with coupled L2, only those are fitted (the pipelines without
    L2 forget by another mechanism, or not at all), and a note says so.
    """
    names = list(names)
    lr, l2, batch, momentum = (np.asarray(a, float) for a in (lr, l2, batch, momentum))
    family = np.asarray(family, dtype=object)
    notes = []
    use = np.ones(len(names), bool)
    if (l2 > 0).sum() >= MIN_L2_PIPELINES and (l2 == 0).any():
        use = l2 > 0
        notes.append(f"fitted on the {int(use.sum())} pipelines with coupled L2 (lambda > 0); the "
                     f"{int((~use).sum())} without L2 forget by another mechanism")
    has_obs = np.isfinite(budget) & (budget > 0) & ~np.all(np.isnan(times), axis=1)
    use &= has_obs
    idx = np.flatnonzero(use)
    x, cols = design_matrix(lr[idx], l2[idx], batch[idx], momentum[idx], family[idx])
    x = x - x.mean(0, keepdims=True)
    pipe, y, upper, cens = [], [], [], []
    for j, p in enumerate(idx):
        for t in times[p]:
            if np.isnan(t):
                continue
            pipe.append(j)
            upper.append(math.log(budget[p]))
            cens.append(bool(np.isinf(t)))
            y.append(math.log(budget[p]) if np.isinf(t) else math.log(max(float(t), 1e-12)))
    return ExponentData([names[i] for i in idx], cols, x, np.asarray(pipe, int), np.asarray(y, float),
                        np.asarray(upper, float), np.asarray(cens, bool), notes)


def _arrays(d: ExponentData) -> dict[str, np.ndarray]:
    """The model's ``pm.Data`` arrays: everything that changes between tables of one shape, so that one compiled
    sampler serves them all (models/compiled.py). ``center`` is alpha's prior mean, the mean observed log time."""
    obs_y = d.y[~d.censored]
    center = float(np.mean(obs_y)) if obs_y.size else float(np.mean(d.y))
    return {"x": np.asarray(d.x, float), "pipe": np.asarray(d.pipe, np.int64), "upper": np.asarray(d.upper, float),
            "y": np.asarray(d.y, float), "center": np.asarray(center, float)}


def build_model(d: ExponentData) -> Any:
    """The PyMC model of the forgetting times ``d`` (the module docstring writes it out)."""
    import pymc as pm

    arr = _arrays(d)
    with pm.Model(coords={"column": d.columns, "pipeline": d.pipelines}) as model:
        x = pm.Data("x", arr["x"])
        pipe = pm.Data("pipe", arr["pipe"])
        upper = pm.Data("upper", arr["upper"])
        y = pm.Data("y", arr["y"])
        center = pm.Data("center", arr["center"])
        alpha = pm.Normal("alpha", center, ALPHA_SD)
        beta = pm.Normal("beta", 0.0, BETA_SD, dims="column")
        tau = pm.HalfNormal("tau", SCALE_SD)
        z = pm.Normal("z", 0.0, 1.0, dims="pipeline")
        sigma = pm.HalfNormal("sigma", SCALE_SD)
        mu_p = alpha + pm.math.dot(x, beta) + tau * z
        pm.Censored("log_t", pm.Normal.dist(mu_p[pipe], sigma), lower=None, upper=upper, observed=y)
    return model


class ExponentModel(compiled.NutpieFit):
    """Compile once, fit, refit on data of the same shape (the known-truth controls).

    The compiled sampler depends on the shape of the forgetting-time table only (observations, pipelines,
    exponent columns): a refit, or another table of that shape in this process, gets it from the process's table
    of compiled samplers (models/compiled.py) instead of compiling it again, which is most of a fit's time. Its
    code calls scipy through a pointer of the running process, so it is not stored in the disk cache.

    Parameters
    ----------
    data : ExponentData
        The forgetting times and the pipelines' design (:func:`build_data`).
    """

    def __init__(self, data: ExponentData) -> None:
        self.data = data
        super().__init__(build_model(data))
        self.sampler_used = ""
        self.idata: Any = None

    def structure(self) -> dict[str, Any]:
        """What the compiled sampler depends on besides the libraries: the table's shape, the prior constants
        and this module's source (the graph is written here)."""
        d = self.data
        return {"model": "exponents", "observations": int(d.y.size), "pipelines": len(d.pipelines),
                "columns": len(d.columns), "source": compiled.source_hash(__file__),
                "priors": {"alpha_sd": ALPHA_SD, "beta_sd": BETA_SD, "scale_sd": SCALE_SD}}

    def fit(self, *, draws: int = 1000, tune: int = 1000, chains: int = 2, seed: int = 0,
            progress: bool = False, sampler: str = "nutpie") -> ExponentModel:
        """Sample the posterior (nutpie; PyMC's NUTS when nutpie is missing or asked for).

        Parameters
        ----------
        draws, tune, chains : int
            Draws kept per chain, warm-up steps per chain, chains.
        seed : int
            The sampler's seed: the same seed gives the same draws.
        progress : bool
            Show the sampler's progress bar.
        sampler : {"nutpie", "pymc"}
            Which NUTS implementation draws.

        Returns
        -------
        ExponentModel
            This model, with ``idata`` holding the posterior.
        """
        if sampler == "nutpie":
            try:
                import nutpie  # noqa: F401
            except ImportError:
                sampler = "pymc"
        if sampler == "nutpie":
            self.idata = self._nutpie_sample(_arrays(self.data), draws=draws, tune=tune, chains=chains, seed=seed,
                                             target_accept=TARGET_ACCEPT, progress=progress)
        else:
            import pymc as pm

            t0 = time.perf_counter()
            with self.model:
                self.idata = pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=progress,
                                       target_accept=TARGET_ACCEPT, cores=1, compute_convergence_checks=False)
            self.sampling_seconds = time.perf_counter() - t0
        self.sampler_used = sampler
        return self

    def refit(self, data: ExponentData, **kw: Any) -> ExponentModel:
        """The same model on new forgetting times of the same shape, on this model's compiled sampler with the new
        times and initial point swapped in.

        Parameters
        ----------
        data : ExponentData
            New times; their table must have this model's shape.
        **kw
            :meth:`fit`'s options.

        Returns
        -------
        ExponentModel
            A new fitted model; this one is unchanged.
        """
        new = ExponentModel(data)
        if new.structure() != self.structure():
            raise ValueError("refit needs forgetting times of the same shape as the compiled model's")
        return new.fit(**kw)   # this process's table of compiled samplers has the sampler (models/compiled.py)

    def beta_draws(self) -> np.ndarray:
        b = self.idata.posterior["beta"].values
        return b.reshape(-1, b.shape[-1])

    def summary(self, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
        """Exponents with 90% intervals, P(named clock's exponents within tolerance), diagnostics."""
        from initmem.models import arviz_io

        d = self.data
        draws = self.beta_draws()
        post = self.idata.posterior
        exps = {}
        for k, c in enumerate(d.columns):
            q = np.quantile(draws[:, k], [*INTERVAL, 0.5])
            exps[c] = {"median": float(q[2]), "q05": float(q[0]), "q95": float(q[1]),
                       "sd": float(draws[:, k].std(ddof=1))}
        clocks = {}
        for name, pred in NAMED_CLOCKS.items():
            cols = [c for c in pred if c in d.columns]
            if not cols:
                continue
            dev = np.stack([np.abs(draws[:, d.columns.index(c)] - pred[c]) for c in cols], 1)
            clocks[name] = {"predicted": {c: pred[c] for c in cols}, "tolerance": float(tolerance),
                            "probability": float(np.mean(dev.max(1) <= tolerance)),
                            "compared": cols}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = arviz_io.rhat_ess(self.idata, ["alpha", "beta", "tau", "sigma"])
        rhat_max = float(max(np.nanmax(st["rhat"][v].values) for v in st["rhat"].data_vars))
        ess_min = float(min(np.nanmin(st["ess_bulk"][v].values) for v in st["ess_bulk"].data_vars))
        div = arviz_io.divergences(self.idata)
        best = max(clocks, key=lambda c: clocks[c]["probability"]) if clocks else None
        return {
            "response": "log optimizer steps to forgetting, per seed",
            "pipelines": list(d.pipelines), "n_observations": int(d.y.size),
            "n_censored": int(d.censored.sum()), "exponents": exps,
            "clocks": clocks, "most_probable_clock": best,
            "sigma_seed": _q(post["sigma"].values), "tau_pipeline": _q(post["tau"].values),
            "interval": "90% posterior interval (5% and 95% quantiles)",
            "diagnostics": {"rhat_max": rhat_max, "ess_min": ess_min, "divergences": div,
                            "sampler": self.sampler_used, "compile_seconds": self.compile_seconds,
                            "compile_cache": dict(self.compile_cache),
                            "sampling_seconds": self.sampling_seconds},
            "notes": list(d.notes),
        }


def _q(a: np.ndarray) -> dict[str, float]:
    q = np.quantile(a.ravel(), [*INTERVAL, 0.5])
    return {"median": float(q[2]), "q05": float(q[0]), "q95": float(q[1])}


def fit_exponents(data: ExponentData, *, tolerance: float = DEFAULT_TOLERANCE, seed: int = 0,
                  draws: int = 1000, tune: int = 1000, chains: int = 2) -> dict[str, Any] | None:
    """The exponents entry of collapse.json, or None (with the reason) when the design cannot fit."""
    k = len(data.columns)
    n_p = len(data.pipelines)
    need = max(k + 3, MIN_PIPELINES)
    if k == 0 or n_p < need:
        return {"skipped": f"{n_p} pipeline(s) with forgetting times for {k} varying exponent(s): the fit "
                           f"needs >= {need} (and at least one varying eta, lambda or b); a dose design "
                           "such as the clocks preset has them"}
    if data.censored.all():
        return {"skipped": "every seed is censored: no pipeline forgot within its budget"}
    m = ExponentModel(data).fit(draws=draws, tune=tune, chains=chains, seed=seed)
    return m.summary(tolerance)


def exponents_entry_of(memory: str, pipelines: list[str], design: dict[str, np.ndarray], times: np.ndarray,
                       budget: np.ndarray, *, tolerance: float = DEFAULT_TOLERANCE, seed: int = 0, draws: int = 1000,
                       tune: int = 1000) -> dict[str, Any]:
    """collapse.json's ``exponents`` entry from numbers: the exponent model fitted to each seed's forgetting time in
    steps (``times`` (pipeline, seed), +inf censored; ``budget`` per pipeline), read on ``memory`` by the collapse
    statistics (stats/collapse.py, ``SeedSteps``), with the pipelines' ``design`` (analysis/collapse.py,
    ``pipeline_design``: lr, l2, batch, momentum, family), or why it was skipped."""
    if not (np.isfinite(design["lr"]).all() and np.isfinite(design["batch"]).all()):
        return {"skipped": "the cube does not record every pipeline's lr and batch_size"}
    data = build_data(pipelines, design["lr"], design["l2"], design["batch"], design["momentum"], design["family"],
                      times, budget)
    out = fit_exponents(data, tolerance=tolerance, seed=seed, draws=draws, tune=tune) or {}
    out.update({"memory": memory, "axis": cube.STEP,
                "per_seed_steps": {n: [None if not math.isfinite(t) else float(t) for t in times[i]]
                                   for i, n in enumerate(pipelines)},
                "budget_steps": {n: float(budget[i]) for i, n in enumerate(pipelines)}})
    return out


__all__ = ["DEFAULT_TOLERANCE", "NAMED_CLOCKS", "ExponentData", "ExponentModel", "build_data", "design_matrix",
           "exponents_entry_of", "fit_exponents"]
