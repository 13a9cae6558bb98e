"""The error spent at each look of the sequential design (docs/sequential.md). The planner applies the
analysis's rule look by look to simulated tables (models/plan.py, ``sequential_decisions``), which is how the
design is calibrated and how its expected seeds are measured (benchmarks/sequential_calibration.py).

Each look k decides at alpha_k, the increment of the Lan-DeMets spending function of the O'Brien-Fleming
type, alpha*(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)), at t_k = n_k / n_max. By the union bound the false
verdict rate over all looks is at most sum_k alpha_k = alpha, whatever the correlation between looks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy.stats import norm

from initmem.names import ALPHA


def obrien_fleming_spent(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type spending: the error spent by information fraction ``t`` in (0, 1]."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(min(t, 1.0))))


def look_levels(looks: Sequence[int], alpha: float = ALPHA) -> list[float]:
    """Each look's level: the increment of the spending function at its share of the last look's seeds."""
    spent = [obrien_fleming_spent(n / looks[-1], alpha) for n in looks]
    return [s - p for s, p in zip(spent, [0.0, *spent[:-1]], strict=True)]


__all__ = ["look_levels", "obrien_fleming_spent"]
