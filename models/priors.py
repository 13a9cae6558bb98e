"""Weakly informative priors for the memory model, scaled to the data and stated in words.

Why scaled: the same model runs on accuracies (logit scale, SDs of a few tenths) and on
imported metrics in arbitrary units (a loss, a log kernel norm). A prior fixed in absolute
units would be informative on one and useless on the other. We therefore take one data scale
per fit, ``s0``, and put every standard-deviation prior around it with wide log-scale spread.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

COMPONENTS = ("sigma", "seed", "residual")


@dataclass(frozen=True)
class Priors:
    """The numbers that define the priors (see :meth:`describe` for the words)."""

    family: str
    alpha_mu: float          # centre of the intercepts (logit of the pooled accuracy, or the pooled mean)
    alpha_sd: float          # spread of the intercepts around it
    log_sd_mu: float         # log of the data scale s0: centre of every component's log SD
    log_sd_mu_sd: float      # uncertainty about that centre (per component)
    log_sd_tau_rate: float   # between-pipeline SD of log SDs ~ Gamma(2, rate): boundary-avoiding
    nu_rate: float = 0.1     # Student-t degrees of freedom ~ Gamma(2, nu_rate) (Juarez & Steel 2010)

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)

    def describe(self) -> dict[str, str]:
        """Human-readable priors for summary.json and the report."""
        scale = "logit" if self.family == "binomial" else "outcome-unit"
        s0 = float(np.exp(self.log_sd_mu))
        out = {
            "alpha[pipeline]": f"Normal({self.alpha_mu:.3g}, {self.alpha_sd:.3g}) on the {scale} scale "
                               f"(centred on the pooled {'logit accuracy' if self.family == 'binomial' else 'mean'})",
            "mu_log_sd[component]": f"Normal(log {s0:.3g}, {self.log_sd_mu_sd:g}): the typical log SD of each "
                                    f"component (sigma_w levels, seeds, residual), centred on the data scale "
                                    f"s0 = {s0:.3g} (pooled within-pipeline SD on the {scale} scale)",
            "tau_log_sd[component]": f"Gamma(2, {self.log_sd_tau_rate:g}) (mean {2 / self.log_sd_tau_rate:g}): how "
                                     "much a component's log SD varies between pipelines; boundary-avoiding "
                                     "(zero density at 0) because with few pipelines a tau near 0 would "
                                     "force every pipeline to share one SD and makes the sampler diverge; "
                                     "large values let one pipeline have no memory while another has a lot",
            "log_sd[pipeline, component]": "mu_log_sd + tau_log_sd * z, z ~ Normal(0, 1) (non-centred)",
            "u[pipeline, sigma_w]": "sigma_sd * z, z iid Normal(0, 1), sampled as a zero-sum (centred) vector "
                                    "with the mean restored from its prior afterwards (non-centred)",
            "v[pipeline, seed]": "seed_sd * z, z iid Normal(0, 1), shared by every sigma_w; zero-sum like u "
                                 "(non-centred)",
        }
        if self.family == "binomial":
            out["e[cell]"] = "residual_sd * z, z ~ Normal(0, 1) (non-centred, one per cell, logit scale)"
        elif self.family == "student_t":
            out["nu"] = f"Gamma(2, {self.nu_rate:g}) degrees of freedom of the Student-t residual"
        return out


def default_priors(family: str, y: np.ndarray, n: np.ndarray | None, p_idx: np.ndarray) -> Priors:
    """Priors scaled to the observations ``y`` (counts out of ``n`` for the binomial).

    s0 is the root-mean-square over pipelines of the within-pipeline SD of the data on the
    model's scale (empirical logits for counts), floored so that a degenerate pipeline cannot
    collapse the scale. Every component's log SD is centred on log s0 with SD 1 and may vary
    between pipelines by a Gamma(2, 2) amount (mean 1): together roughly a factor 20 either way.
    """
    if family == "binomial":
        z = np.log((y + 0.5) / (n - y + 0.5))
        pooled = float(np.clip(y.sum() / n.sum(), 1e-3, 1 - 1e-3))
        alpha_mu = float(np.log(pooled / (1 - pooled)))
        floor = 0.05
    else:
        z = np.asarray(y, dtype=float)
        alpha_mu = float(z.mean())
        floor = 1e-6 * max(1.0, float(np.abs(z).max()))
    sds, means = [], []
    for p in np.unique(p_idx):
        zp = z[p_idx == p]
        means.append(zp.mean())
        if zp.size > 1:
            sds.append(zp.std(ddof=1))
    s0 = float(np.sqrt(np.mean(np.square(sds)))) if sds else 1.0
    s0 = max(s0, floor)
    between = float(np.std(means, ddof=1)) if len(means) > 1 else 0.0
    alpha_sd = max(2.5 * between, 2.5 * s0, 1.5 if family == "binomial" else 0.0)
    return Priors(family=family, alpha_mu=alpha_mu, alpha_sd=float(alpha_sd), log_sd_mu=float(np.log(s0)),
                  log_sd_mu_sd=1.0, log_sd_tau_rate=2.0)
