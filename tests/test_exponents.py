"""The clock-exponent model (models/exponents.py) against planted exponents.

Known truth: per-seed forgetting times simulated on the clocks preset's 13 L2 pipelines with
exponents (-1, -1, 0) (T_l2) and (-2, 0, +1) (T_sgd), some seeds right-censored. One compile,
then refits; the 90% intervals must cover the planted exponents at about the nominal rate
(the larger study: studies/exponent_calibration.py, figures in docs/reading-the-clocks.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from initmem.models.exponents import ExponentModel, build_data, design_matrix
from initmem.simulate.exponents import BATCH, ETA, LAM, NAMES, TRUTHS, forgetting_times
from initmem.stats.forgetting import censored_sd


def data_for(beta: np.ndarray, rng: np.random.Generator):
    """The model's data from one draw of the planted-exponent generator (the study's own)."""
    t, budget = forgetting_times(beta, rng)
    return build_data(list(NAMES), ETA, LAM, BATCH, np.zeros(len(ETA)), ["sgd"] * len(ETA), t, budget)


REPS = 8  # per truth: 2 x 8 x 3 = 48 intervals


@pytest.fixture(scope="module")
def model():
    return ExponentModel(data_for(TRUTHS["T_l2"], np.random.default_rng(99))).fit(
        draws=400, tune=400, seed=0)


@pytest.mark.slow
def test_planted_exponents_are_covered_at_the_nominal_rate(model):
    rng = np.random.default_rng(1)
    hits, n, n_cens, probs = 0, 0, 0, {}
    for name, beta in TRUTHS.items():
        probs[name] = []
        for r in range(REPS):
            d = data_for(beta, rng)
            n_cens += int(d.censored.sum())
            s = model.refit(d, draws=400, tune=400, seed=r).summary()
            assert s["diagnostics"]["rhat_max"] < 1.1  # 2 chains x 400 draws: a loose convergence check
            for k, c in enumerate(("eta", "lambda", "b")):
                hits += s["exponents"][c]["q05"] <= beta[k] <= s["exponents"][c]["q95"]
                n += 1
            probs[name].append(s["clocks"][name]["probability"])
            other = "T_sgd" if name == "T_l2" else "T_l2"
            assert s["clocks"][other]["probability"] < 0.05  # the wrong clock is ruled out
    assert n_cens > 0  # censored seeds were part of the data
    # 48 intervals at 90%: P(fewer than 38 hits) = 1.6% under the nominal rate.
    assert hits >= 38, f"coverage {hits}/{n}"
    assert stats.binom.cdf(hits, n, 0.9) > 0.005
    assert np.median(probs["T_l2"]) > 0.5 and np.median(probs["T_sgd"]) > 0.5


def test_design_matrix_drops_constant_columns_and_lambda_without_l2():
    x, cols = design_matrix(np.array([0.1, 0.2, 0.4]), np.array([0.01, 0.01, 0.0]), np.array([32, 32, 32.0]),
                            np.zeros(3), ["sgd"] * 3)
    assert cols == ["eta"] and x.shape == (3, 1)
    x, cols = design_matrix(np.array([0.1, 0.2]), np.array([0.01, 0.02]), np.array([32, 64.0]),
                            np.array([0.0, 0.9]), ["sgd", "adam"])
    assert cols == ["eta", "lambda", "b", "momentum", "family_sgd"]
    assert np.isclose(x[1, 3], np.log(10.0))  # log 1 / (1 - 0.9)


def test_build_data_keeps_censored_seeds_and_fits_l2_pipelines_only():
    t = np.array([[10.0, np.inf], [20.0, 30.0], [np.nan, np.nan], [5.0, 6.0], [1, 2], [3, 4], [7, 8], [9, 9]])
    names = [f"p{i}" for i in range(8)]
    l2 = np.array([0.01, 0.02, 0.01, 0.0, 0.01, 0.02, 0.005, 0.005])
    d = build_data(names, np.full(8, 0.1) * np.arange(1, 9), l2, np.full(8, 32.0), np.zeros(8), ["sgd"] * 8, t,
                   np.full(8, 100.0))
    assert "p3" not in d.pipelines and "p2" not in d.pipelines  # no L2; no curve
    assert d.censored.sum() == 1 and np.isclose(d.y[d.censored][0], np.log(100.0))
    assert any("coupled L2" in n for n in d.notes)


def test_censored_sd_equals_the_sample_sd_without_censoring_and_grows_with_it():
    x = [0.0, 1.0, 2.0, 0.5]
    assert np.isclose(censored_sd(x, []), np.std(x, ddof=1))
    # Pipelines censored far above the uncensored ones widen the spread; dropping them hides it.
    assert censored_sd(x, [4.0, 4.0]) > np.std(x, ddof=1)
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1.0, 4000)
    cut = 0.5
    est = censored_sd(z[z < cut].tolist(), [cut] * int((z >= cut).sum()))
    assert abs(est - 1.0) < 0.05


@pytest.mark.slow
def test_a_refit_reuses_the_compiled_sampler_and_keeps_its_shape(model):
    # The censored likelihood's normal CDF calls scipy through a pointer of this process: numba cannot store
    # that code, so the disk level is skipped with its reason (compiled once, not a second time to store it).
    assert model.compile_cache["source"] == "compiled"
    assert "cannot be stored in the disk cache" in model.summary()["diagnostics"]["compile_cache"]["note"]
    again = model.refit(data_for(TRUTHS["T_sgd"], np.random.default_rng(5)), draws=100, tune=100, seed=3)
    assert again.compile_cache["source"] == "memory"
    t, budget = forgetting_times(TRUTHS["T_sgd"], np.random.default_rng(6))
    fewer = build_data(list(NAMES[:-1]), ETA[:-1], LAM[:-1], BATCH[:-1], np.zeros(len(ETA) - 1),
                       ["sgd"] * (len(ETA) - 1), t[:-1], budget[:-1])
    with pytest.raises(ValueError, match="same shape"):
        model.refit(fewer)
