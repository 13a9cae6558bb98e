"""Priors of the memory model, per pipeline, in units of its run-to-run noise.

Why in noise units (docs/memory-model.md, "Priors"): the model runs on accuracies measured on
450 or 10,000 examples and on imported metrics in arbitrary units. Each pipeline's data are
divided by its own run-to-run noise scale (``MemoryData.scale``: the independent-errors SD
from per-example predictions or the binomial bound from counts (near the ceiling at least the seeds'
pooled SD), or the pooled SD across seeds within sigma_w levels), which never contains the memory
under test. Every SD then gets a
half-Student-t(3) prior: mass near zero (a pipeline without memory is not pushed away from
zero) and a tail heavy enough that memory of tens of noise units is not shrunk. Nothing is
pooled across pipelines, least of all sigma_sd, the tested component.

Why sigma_sd's scale depends on delta and on the number of levels: with a fixed scale of one
noise unit the prior alone decided few-level pipelines (with L = 3 levels and delta several noise
units, the prior P(spread < delta) was above 0.95 before any data: 20% false "forgets" at a true
spread of delta). Its scale is chosen per pipeline so that the prior P(spread > delta) is one
half for that pipeline's levels (:func:`neutral_scale`), but never below one noise unit: where delta
is under about two noise units the neutral scale would shrink real memory of a few noise units,
so there the prior leans towards "remembers" -- which the paired check guards
(models/paired.py) -- and never towards "forgets". summary.json reports the prior's own
probabilities beside the posterior's (:func:`prior_p_spread_gt`).

The second prior (``prior_sensitivity``) is a half-Cauchy with twice that scale on sigma_sd:
wider and heavier-tailed, so it leans towards "remembers"; the verdict under it is computed by
importance reweighting of the same posterior draws (the weight ratio grows only polynomially,
so the reweighting is stable where the posterior lives).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

_N_MC = 40_000


@functools.lru_cache(maxsize=64)
def _unit_spreads(n_levels: int) -> np.ndarray:
    """Sorted prior draws of the spread at sigma_sd scale 1: a half-t(3) sigma_sd times the range
    of n_levels i.i.d. N(0, 1) level effects. A fixed seed: a pipeline always gets the same prior."""
    rng = np.random.default_rng(20_181)
    sd = np.abs(stats.t.rvs(3, size=_N_MC, random_state=rng))
    return np.sort(sd * np.ptp(rng.standard_normal((_N_MC, max(int(n_levels), 2))), axis=1))


def prior_p_spread_gt(delta: float, scale: float, n_levels: int) -> float:
    """Prior P(spread > delta) of exchangeable level effects when sigma_sd ~ half-t(3, scale);
    delta (the analysis's, divided by the pipeline's noise scale) and scale in noise units."""
    draws = _unit_spreads(n_levels)
    return float(1.0 - np.searchsorted(draws, delta / scale, side="right") / draws.size)


def neutral_scale(delta: float, n_levels: int, floor: float = 1.0) -> float:
    """sigma_sd's half-t(3) scale (noise units) that makes the prior P(spread > delta) = 1/2 for
    L exchangeable levels (the spread scales with sigma_sd, so it is delta over the median unit
    spread), never below ``floor`` noise units; ``delta`` in noise units."""
    return float(max(delta / float(np.median(_unit_spreads(n_levels))), floor))


@dataclass(frozen=True)
class Priors:
    """Numbers that define the priors (all SDs in units of each pipeline's noise scale)."""

    sd_nu: float = 3.0          # half-Student-t degrees of freedom of every SD
    sd_scale: float = 1.0       # its scale for seed_sd and residual_sd (noise units)
    slope_scale: float = 2.0    # slope_sd's scale (noise units per unit of x)
    sigma_floor: float = 1.0    # sigma_sd's scale: neutral about the verdict, at least this (noise units)
    alt_factor: float = 2.0     # half-Cauchy scale of sigma_sd under the second prior, x sigma_sd's scale

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def sigma_scale(self, delta: float | None, n_levels: int) -> float:
        """sigma_sd's scale (noise units) for one pipeline with ``n_levels`` levels and ``delta`` in noise units;
        without a delta, the floor."""
        if delta is None:
            return self.sigma_floor
        return neutral_scale(delta, n_levels, self.sigma_floor)

    def logpdf(self, sigma_sd: np.ndarray, scale: float | np.ndarray = 1.0) -> np.ndarray:
        """Log density of sigma_sd (noise units) under the prior of scale ``scale``; also the
        prior of the other SDs at ``sd_scale``."""
        return stats.t.logpdf(sigma_sd, self.sd_nu, scale=scale) + np.log(2.0)

    def alt_logpdf(self, sigma_sd: np.ndarray, scale: float | np.ndarray = 1.0) -> np.ndarray:
        return stats.cauchy.logpdf(sigma_sd, scale=self.alt_factor * scale) + np.log(2.0)

    def alt_description(self) -> str:
        return (f"sigma_sd ~ half-Cauchy(0, {self.alt_factor:g} x its scale) instead of half-Student-t({self.sd_nu:g}, "
                "scale): wider, heavier tail (posterior reweighted by the prior ratio)")

    def describe(self) -> dict[str, str]:
        """Human-readable priors for summary.json and the report."""
        ht = f"half-Student-t({self.sd_nu:g}, scale {self.sd_scale:g} noise SD)"
        return {
            "noise SD (per pipeline)": "run-to-run SD of the metric at a fixed sigma_w without the memory under "
                                       "test: independent-errors SD from per-example predictions or the binomial "
                                       "bound from counts (near 100% accuracy at least the pooled SD across seeds "
                                       "within levels), or the pooled SD across seeds within levels",
            "sigma_sd[pipeline]": f"half-Student-t({self.sd_nu:g}, s) with s chosen per pipeline so that the prior "
                                  "P(spread > delta) = 1/2 for its sigma_w levels, but s >= "
                                  f"{self.sigma_floor:g} noise SD; not pooled across pipelines (the tested component)",
            "seed_sd[pipeline]": ht,
            "residual_sd[pipeline]": ht,
            "alpha[pipeline]": "flat (integrated out: the likelihood is the restricted, REML, likelihood)",
            "memory trend a[pipeline]": "flat: the linear trend of the level values in x = centred log sigma_w (unit "
                                        "RMS; with 3 or more levels and paired seeds) is a fixed effect, never shrunk "
                                        "towards no memory; the prior probabilities reported are the exchangeable "
                                        "level effects' alone",
            "slope_sd[pipeline]": f"half-Student-t({self.sd_nu:g}, scale {self.slope_scale:g} noise SD) per unit of x "
                                  "(with 3 or more levels and paired seeds)",
            "v, b, e": "Normal(0, sd^2) each; integrated out analytically with u, level effects drawn afterwards "
                       "from their exact conditional",
            "second prior": self.alt_description(),
        }


def default_priors() -> Priors:
    return Priors()


__all__ = ["Priors", "default_priors", "neutral_scale", "prior_p_spread_gt"]
