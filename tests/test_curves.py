"""Memory curves: known truths, the seed pairing of the bootstrap, function-space memory."""

from __future__ import annotations

import numpy as np
import pytest

from initmem import cube
from initmem.simulate import preset_pipelines, read_truth, simulate_cube
from initmem.stats import effects
from initmem.stats.curves import functional_share, memory_curves, seed_bootstrap
from initmem.stats.frequentist import rcbd_anova
from initmem.stats.resample import take_seeds


def _curve_cube(log_kn: np.ndarray, val_acc: np.ndarray | None = None):
    n_p, n_i, n_s, n_t = log_kn.shape
    ds = cube.empty_cube([f"p{i}" for i in range(n_p)], list(np.geomspace(0.25, 8, n_i)), list(range(n_s)),
                         epochs=n_t - 1)
    ds["kernel_norm"] = (cube.CURVE_DIMS, np.exp(log_kn))
    ds["val_acc"] = (cube.CURVE_DIMS, val_acc if val_acc is not None else np.full(log_kn.shape, 0.5))
    ds["status"] = (cube.CELL_DIMS, np.zeros((n_p, n_i, n_s), "int8"))
    return ds


def test_seed_bootstrap_draws_whole_seeds():
    idx = seed_bootstrap([3, 5, 7, 9], 500, np.random.default_rng(0))
    assert idx.shape == (500, 4) and idx.min() == 0 and idx.max() == 3
    arr = np.arange(2 * 3 * 4).reshape(2, 3, 4)  # (pipeline, sigma_w, seed)
    taken = take_seeds(arr, idx, 2)  # (pipeline, sigma_w, boot, seed)
    # The same seed position at every sigma_w level of a draw: seed index = value mod 4.
    np.testing.assert_array_equal(taken % 4, np.broadcast_to(idx, taken.shape))


def test_bootstrap_keeps_the_seed_pairing():
    # A huge seed effect shared by every sigma_w and no residual: the slope is exactly rho in
    # every paired draw, and the functional spread exactly 0. An unpaired bootstrap would not.
    rng = np.random.default_rng(1)
    n_i, n_s, n_t = 6, 5, 4
    log_sigma = np.log(np.geomspace(0.25, 8, n_i))
    rho = np.array([1.0, 0.6, 0.3, 0.1])
    seed_fx = rng.normal(0, 2.0, (1, 1, n_s, 1))
    log_kn = 2.0 + rho[None, None, None, :] * log_sigma[None, :, None, None] + seed_fx
    acc = 0.7 + 0.1 * np.tanh(seed_fx) + np.zeros((1, n_i, n_s, n_t))
    c = memory_curves(_curve_cube(log_kn, acc), n_boot=100, seed=3)
    np.testing.assert_allclose(c["rho"].values[0], rho, atol=1e-9)
    np.testing.assert_allclose(c["rho_q05"].values[0], rho, atol=1e-9)
    np.testing.assert_allclose(c["rho_q95"].values[0], rho, atol=1e-9)
    np.testing.assert_allclose(c["func_spread_q95"].values[0], 0.0, atol=1e-12)
    # The same data resampled per sigma_w (pairing broken) moves the slope by the seed effect.
    unpaired = np.stack([log_kn[0, i][rng.integers(0, n_s, n_s)] for i in range(n_i)])
    y = unpaired.mean(axis=1)[:, 0]
    assert abs(np.polyfit(log_sigma, y, 1)[0] - rho[0]) > 0.05


def test_radial_memory_recovers_the_simulated_truth():
    ds = simulate_cube(preset_pipelines("quick_like"), curves=True, truth_axis="T_sgd", seed=2)
    truth = read_truth(ds)["curves"]
    c = memory_curves(ds, n_boot=100)
    want = np.exp(-c["T_sgd"].values / truth["decay_scale"])
    np.testing.assert_allclose(c["rho"].values, want, atol=0.03)
    inside = (c["rho_q05"].values - 0.01 <= want) & (want <= c["rho_q95"].values + 0.01)
    assert inside.mean() > 0.8
    # Clocks are copied for plotting and the epoch axis is the epoch index.
    np.testing.assert_array_equal(c["epoch_axis"].values[0], np.arange(31))
    assert set(c.data_vars) >= {"rho", "rho_q05", "rho_q95", "func_spread", "func_spread_q05", "func_spread_q95",
                                "func_share", "fs_memory", "fs_memory_q05", "fs_memory_q95", "epoch_axis",
                                "step", "T_eta", "T_sgd", "T_l2", "T_adapt"}


def test_functional_share_matches_expected_mean_squares():
    rng = np.random.default_rng(4)
    table = rng.normal(0, 1, (6, 5)) + np.linspace(0, 3, 6)[:, None] + rng.normal(0, 0.5, (1, 5))
    a = rcbd_anova(table)
    s2 = [max(0, a["s2_level"]), max(0, a["s2_seed"]), a["s2_e"]]
    share = functional_share(table[None, :, :, None])[0, 0]
    assert share == pytest.approx(s2[0] / sum(s2), rel=1e-9)
    # omega^2 treats sigma_w as fixed (factor (I-1)/I); the random-effect share is larger.
    assert share >= effects.omega_squared(table)


def test_function_space_memory_separates_sigma_from_seed():
    rng = np.random.default_rng(5)
    n_i, n_s, n_ex = 4, 5, 2000
    ds = _curve_cube(np.zeros((2, n_i, n_s, 3)))
    labels = rng.integers(0, 10, n_ex)
    pred = np.empty((2, n_i, n_s, n_ex), "int16")
    for i in range(n_i):
        for s in range(n_s):
            # p0: each run flips 10% of the examples at random -> no sigma_w structure.
            flip = rng.random(n_ex) < 0.1
            pred[0, i, s] = np.where(flip, (labels + 1) % 10, labels)
            # p1: each sigma_w level has its own 20% of wrong examples on top.
            lev = np.random.default_rng(100 + i).random(n_ex) < 0.2
            pred[1, i, s] = np.where(flip | lev, (labels + 1 + (lev * i)) % 10, labels)
    ds.coords["example"] = np.arange(n_ex)
    ds["test_pred"] = ((*cube.CELL_DIMS, "example"), pred)
    c = memory_curves(ds, n_boot=200, seed=0)
    fs, lo, hi = c["fs_memory"].values, c["fs_memory_q05"].values, c["fs_memory_q95"].values
    assert abs(fs[0]) < 0.01 and lo[0] < 0 < hi[0]
    assert fs[1] > 0.2 and lo[1] > 0.15


def test_no_curves_gives_none_and_failed_runs_are_ignored():
    ds = simulate_cube(preset_pipelines("contrast"), seed=0)
    assert memory_curves(ds) is None
    rng = np.random.default_rng(0)
    log_sigma = np.log(np.geomspace(0.25, 8, 5))
    log_kn = 0.5 * log_sigma[None, :, None, None] + rng.normal(0, 1e-3, (1, 5, 3, 4))
    ds = _curve_cube(log_kn)
    ds["kernel_norm"][0, 2, 1] = 1e9  # a diverged run's norm must not enter
    ds["status"][0, 2, 1] = cube.DIVERGED
    c = memory_curves(ds, n_boot=20)
    np.testing.assert_allclose(c["rho"].values, 0.5, atol=0.01)
