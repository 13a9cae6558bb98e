"""Two-way mean squares of a levels x seeds table without replication: the one implementation.

Every classical quantity of a randomized complete block design (sigma_w levels as treatments,
seeds as blocks, one value per cell) comes from these mean squares: the ANOVA variance
components, omega squared, the functional variance share of a memory curve and the planner's
decision rule (docs/frequentist.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MeanSquares:
    """Sums of squares, degrees of freedom and mean squares; arrays over any leading dims.

    Expected mean squares (random effects): E[ms_level] = s2_e + J s2_level,
    E[ms_seed] = s2_e + I s2_seed, E[ms_e] = s2_e.
    """

    n_level: int
    n_seed: int
    grand: np.ndarray
    ss_level: np.ndarray
    ss_seed: np.ndarray
    ss_e: np.ndarray
    ss_total: np.ndarray

    @property
    def df_level(self) -> int:
        return self.n_level - 1

    @property
    def df_seed(self) -> int:
        return self.n_seed - 1

    @property
    def df_e(self) -> int:
        return self.df_level * self.df_seed

    @property
    def ms_level(self) -> np.ndarray:
        return _ratio(self.ss_level, self.df_level)

    @property
    def ms_seed(self) -> np.ndarray:
        return _ratio(self.ss_seed, self.df_seed)

    @property
    def ms_e(self) -> np.ndarray:
        return _ratio(self.ss_e, self.df_e)

    @property
    def s2_level(self) -> np.ndarray:
        """ANOVA (method-of-moments) variance of the level effects; may be negative."""
        return (self.ms_level - self.ms_e) / self.n_seed

    @property
    def s2_seed(self) -> np.ndarray:
        return (self.ms_seed - self.ms_e) / self.n_level


def _ratio(ss: np.ndarray, df: int) -> np.ndarray:
    return ss / df if df > 0 else np.full_like(ss, np.nan)


def mean_squares(table: np.ndarray) -> MeanSquares:
    """Mean squares of ``table[..., level, seed]`` (complete: no NaN), vectorised over leading dims."""
    t = np.asarray(table, dtype=float)
    n_lev, n_seed = t.shape[-2], t.shape[-1]
    grand = t.mean(axis=(-2, -1))
    lev_m = t.mean(axis=-1)
    seed_m = t.mean(axis=-2)
    g = grand[..., None]
    ss_lev = n_seed * ((lev_m - g) ** 2).sum(axis=-1)
    ss_seed = n_lev * ((seed_m - g) ** 2).sum(axis=-1)
    resid = t - lev_m[..., :, None] - seed_m[..., None, :] + grand[..., None, None]
    ss_e = (resid**2).sum(axis=(-2, -1))
    ss_total = ((t - grand[..., None, None]) ** 2).sum(axis=(-2, -1))
    return MeanSquares(n_lev, n_seed, grand, ss_lev, ss_seed, ss_e, ss_total)


__all__ = ["MeanSquares", "mean_squares"]
