"""Posterior predictive checks of the memory model's assumptions about the run-to-run noise.

Why these statistics (docs/memory-model.md, "Model checks"): the verdict's uncertainty comes
from how the seeds scatter around the level values, so a check must see the *structure* of that
scatter, not only its size. Computed on the seed x sigma_w interaction residuals of the
complete seeds of a table, r[i, s] = y[i, s] - ybar_i - ybar_s + grand:

- ``spread``: max - min of the level means (the quantity the verdict is about);
- ``seed_sd``: SD across seeds of the seed means;
- ``var_ratio``: largest over smallest per-level residual variance (unequal noise across sigma_w);
- ``neighbour_corr``: correlation, within seed, of the residuals of neighbouring sigma_w levels
  (smooth seed-specific drifts make it positive; i.i.d. residuals make it about -1/(L-1));
- ``linear_share``: the share of the interaction sum of squares on the linear contrast in log
  sigma_w (seed-specific slopes).

Each is compared with replicates from the posterior predictive (fresh seeds, slopes and
residuals around each draw's level values); p = P(T_rep >= T_obs). With k checks computed, a
p-value below ``ALPHA`` / (2k) or above 1 - ``ALPHA`` / (2k) is a failed check and puts a
warning on the verdict: Bonferroni over the checks, so that a pipeline that follows the model is
warned about at most ``ALPHA`` of the time (the Bonferroni bound).
"""

from __future__ import annotations

import numpy as np

from initmem.names import ALPHA

STRUCTURE_CHECKS = ("var_ratio", "neighbour_corr", "linear_share")
ALL_CHECKS = ("spread", "seed_sd", *STRUCTURE_CHECKS)
LABELS = {"spread": "spread of the level means", "seed_sd": "SD of the seed means",
          "var_ratio": "largest / smallest per-level residual variance",
          "neighbour_corr": "neighbouring-level residual correlation within seed",
          "linear_share": "share of the interaction on the linear contrast in log sigma_w"}


def table_statistics(y: np.ndarray, x: np.ndarray) -> dict[str, np.ndarray]:
    """The check statistics of complete (..., L, S) tables; x (L,) centred log sigma_w."""
    lm = y.mean(axis=-1)
    sm = y.mean(axis=-2)
    grand = lm.mean(axis=-1)
    n_l, n_s = y.shape[-2], y.shape[-1]
    out = {"spread": lm.max(axis=-1) - lm.min(axis=-1), "seed_sd": sm.std(axis=-1, ddof=1)}
    r = y - lm[..., :, None] - sm[..., None, :] + grand[..., None, None]
    tiny = 1e-300
    if n_s >= 2:
        v = (r**2).sum(axis=-1) / max(n_s - 1, 1)
        out["var_ratio"] = v.max(axis=-1) / np.maximum(v.min(axis=-1), tiny)
    if n_l >= 3 and n_s >= 2:
        a, b = r[..., :-1, :], r[..., 1:, :]
        out["neighbour_corr"] = (a * b).sum(axis=(-2, -1)) / np.maximum(
            np.sqrt((a * a).sum(axis=(-2, -1)) * (b * b).sum(axis=(-2, -1))), tiny)
    if n_l >= 3 and n_s >= 2:
        xc = x - x.mean()
        proj = (r * xc[:, None]).sum(axis=-2) ** 2 / float(xc @ xc)
        out["linear_share"] = proj.sum(axis=-1) / np.maximum((r**2).sum(axis=(-2, -1)), tiny)
    return out


def compare(observed: dict[str, np.ndarray], replicated: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Observed statistic, predictive p-value and the replicates' 90% interval per check."""
    out = {}
    for name in ALL_CHECKS:
        if name not in observed:
            continue
        t, r = float(np.asarray(observed[name]).ravel()[0]), np.asarray(replicated[name])
        out[name] = {"observed": t, "p_value": float(np.mean(r >= t)),
                     "q05": float(np.quantile(r, 0.05)), "q95": float(np.quantile(r, 0.95))}
    return out


def failures(ppc: dict[str, dict[str, float]], alpha: float = ALPHA) -> list[str]:
    """Names of the checks whose predictive p-value is in either tail of size alpha / (2k),
    k the number of checks with a p-value."""
    k = max(sum(s.get("p_value") is not None for s in ppc.values()), 1)
    return [name for name, s in ppc.items()
            if s.get("p_value") is not None and min(s["p_value"], 1.0 - s["p_value"]) < alpha / (2 * k)]


def warning_text(failed: list[str], ppc: dict[str, dict[str, float]]) -> str | None:
    """One sentence for the verdict's notes when a check failed."""
    if not failed:
        return None
    parts = ", ".join(f"{LABELS[n]} (predictive p = {ppc[n]['p_value']:.3f})" for n in failed)
    return ("the model's noise assumptions do not fit these runs: " + parts
            + "; the verdict may be over- or under-confident (docs/memory-model.md, 'Model checks')")


__all__ = ["ALL_CHECKS", "LABELS", "STRUCTURE_CHECKS", "compare", "failures", "table_statistics",
           "warning_text"]
