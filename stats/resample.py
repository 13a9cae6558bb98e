"""Seed resampling that keeps the common-random-numbers pairing.

A seed fixes the init direction, the data order and the augmentation draws identically at every
sigma_w (docs/cube.md), so the seed is the replication unit: a bootstrap must draw whole seeds
and use the same draw at every sigma_w level. Resampling cells independently per sigma_w would
break the pairing and inflate every between-level difference by the seed variance.
"""

from __future__ import annotations

import numpy as np


def seed_bootstrap(seeds, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws of seed *positions*: an int array of shape (n_boot, n_seeds).

    Row b lists which positions along the seed axis form replicate b. Index the seed axis of an
    array shaped (..., sigma_w, seed, ...) with a row and every sigma_w level gets the same seeds.
    """
    n = len(seeds)
    if n < 1:
        raise ValueError("seed_bootstrap needs at least one seed")
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    return rng.integers(0, n, size=(int(n_boot), n))


def take_seeds(values: np.ndarray, idx: np.ndarray, seed_axis: int) -> np.ndarray:
    """``values`` with its seed axis replaced by the positions ``idx`` (same for every sigma_w)."""
    return np.take(values, idx, axis=seed_axis)
