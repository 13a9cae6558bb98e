"""Priors of the memory model, per pipeline, in units of its run-to-run noise.

Why in noise units (docs/memory-model.md, "Priors"): the model runs on accuracies measured on
450 or 10,000 examples and on imported metrics in arbitrary units. Each pipeline's data are
divided by its own run-to-run noise scale (``MemoryData.scale``: the independent-errors SD
from per-example predictions, the binomial bound from counts, or the pooled SD across seeds
within sigma_w levels), which never contains the memory under test. Every SD then gets a
half-Student-t(3) prior with scale 1 noise unit: mass near zero (a pipeline without memory is
not pushed away from zero) and a tail heavy enough that memory of tens of noise units is not
shrunk. Nothing is pooled across pipelines, least of all sigma_sd, the tested component.

The second prior (``prior_sensitivity``) is a half-Cauchy with scale 2 noise units on sigma_sd:
wider and heavier-tailed, so it leans towards "remembers"; the verdict under it is computed by
importance reweighting of the same posterior draws (the weight ratio grows only polynomially,
so the reweighting is stable where the posterior lives).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Priors:
    """Numbers that define the priors (all SDs in units of each pipeline's noise scale)."""

    sd_nu: float = 3.0          # half-Student-t degrees of freedom of every SD
    sd_scale: float = 1.0       # its scale (noise units)
    alt_scale: float = 2.0      # half-Cauchy scale of sigma_sd under the second prior

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def logpdf(self, sigma_sd: np.ndarray) -> np.ndarray:
        return stats.t.logpdf(sigma_sd, self.sd_nu, scale=self.sd_scale) + np.log(2.0)

    def alt_logpdf(self, sigma_sd: np.ndarray) -> np.ndarray:
        return stats.cauchy.logpdf(sigma_sd, scale=self.alt_scale) + np.log(2.0)

    def alt_description(self) -> str:
        return (f"sigma_sd ~ half-Cauchy(0, {self.alt_scale:g} noise SD) instead of half-Student-t({self.sd_nu:g}, "
                f"{self.sd_scale:g}): wider, heavier tail (posterior reweighted by the prior ratio)")

    def describe(self) -> dict[str, str]:
        """Human-readable priors for summary.json and the report."""
        ht = f"half-Student-t({self.sd_nu:g}, scale {self.sd_scale:g} noise SD)"
        return {
            "noise SD (per pipeline)": "run-to-run SD of the metric at a fixed sigma_w without the memory under "
                                       "test: independent-errors SD from per-example predictions, the binomial "
                                       "bound from counts, or the pooled SD across seeds within levels",
            "sigma_sd[pipeline]": f"{ht}; not pooled across pipelines (the tested component)",
            "seed_sd[pipeline]": ht,
            "residual_sd[pipeline]": ht,
            "alpha[pipeline]": "flat (integrated out: the likelihood is the restricted, REML, likelihood)",
            "u, v, e": "Normal(0, sd^2) each; integrated out analytically, level effects drawn afterwards from "
                       "their exact conditional",
            "second prior": self.alt_description(),
        }


def default_priors() -> Priors:
    return Priors()


__all__ = ["Priors", "default_priors"]
