"""Forgetting times with planted clock exponents, for the known-truth controls of the clock-exponent model
(models/exponents.py; docs/reading-the-clocks.md).

The design is the clocks preset's 13 L2 pipelines (configs/clocks.yaml): per-seed forgetting times in steps,
log t = a + beta . (log eta, log lambda, log b) + tau z_p + sigma e_ps, right-censored at a per-pipeline budget.
The tests and ``studies/exponent_calibration.py`` draw from the same generator, so a test's truth is the
study's truth. Torch-free and model-free: the caller turns the times into the model's data
(``initmem.models.exponents.build_data``).
"""

from __future__ import annotations

import numpy as np

# The clocks preset's L2 pipelines (configs/clocks.yaml).
ETA = np.array([0.4, 0.1, 0.2, 0.2, 0.1, 0.2, 0.4, 0.1, 0.4, 0.2, 0.4, 0.2, 0.4])
LAM = np.array([0.005, 0.02, 0.01, 0.02, 0.04, 0.02, 0.01, 0.04, 0.02, 0.04, 0.02, 0.04, 0.02])
BATCH = np.array([32, 32, 64, 16, 32, 32, 64, 64, 32, 64, 64, 128, 128.0])
NAMES = tuple(f"p{i}" for i in range(len(ETA)))
# Planted exponents of (eta, lambda, b): the two clocks the model is asked about.
TRUTHS = {"T_l2": np.array([-1.0, -1.0, 0.0]), "T_sgd": np.array([-2.0, 0.0, 1.0])}


def forgetting_times(beta: np.ndarray, rng: np.random.Generator, *, tau: float = 0.1, sigma: float = 0.15,
                     n_seed: int = 2, censor_share: float = 0.15) -> tuple[np.ndarray, np.ndarray]:
    """Per-seed forgetting times with exponents ``beta``, some seeds censored at their pipeline's budget.

    Parameters
    ----------
    beta : numpy.ndarray
        The planted exponents of (eta, lambda, b), shape (3,).
    rng : numpy.random.Generator
        The source of every draw, so that a seed reproduces a data set.
    tau, sigma : float
        SD of the pipeline effect and of the per-seed noise, on the log-time scale.
    n_seed : int
        Seeds per pipeline.
    censor_share : float
        About this share of the seeds is cut off by its budget, as a run that ends before the network
        forgets.

    Returns
    -------
    times : numpy.ndarray
        Shape (13, n_seed), in steps; ``+inf`` where censored.
    budget : numpy.ndarray
        Shape (13,), each pipeline's budget in steps.
    """
    x = np.stack([np.log(ETA), np.log(LAM), np.log(BATCH)], 1)
    mu = 7.0 + (x - x.mean(0)) @ beta + rng.normal(0, tau, len(ETA))
    logt = mu[:, None] + rng.normal(0, sigma, (len(ETA), n_seed))
    # Budgets: most pipelines run well past their time; about censor_share of the seeds are cut off.
    budget = np.exp(mu + np.where(rng.random(len(ETA)) < censor_share * 2, 0.0, 1.0))
    t = np.exp(logt)
    return np.where(t > budget[:, None], np.inf, t), budget
