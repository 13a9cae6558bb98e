"""The simulator: its truth can be read back, seeds are paired, clocks follow the schedule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from initmem import cube
from initmem.simulate import (
    SimPipeline,
    clocks,
    example_offsets,
    expected_accuracy,
    preset_pipelines,
    read_truth,
    simulate_cube,
)
from initmem.tests._cli import invoke


def test_truth_is_read_back_from_the_written_cube(tmp_path):
    proc = invoke("simulate", "--out", tmp_path / "s.nc", "--pipelines", "2", "--sigma-sd", "0.4",
                  "--seed-sd", "0.2", "--residual-sd", "0.05", "--n-seed", "5", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(tmp_path / "s.nc")
    truth = read_truth(ds)
    assert set(truth["pipelines"]) == {"p0", "p1"}
    t = truth["pipelines"]["p0"]
    assert (t["sigma_sd"], t["seed_sd"], t["residual_sd"], t["n_seed"]) == (0.4, 0.2, 0.05, 5)
    assert len(t["u"]) == 6 and len(t["v"]) == 5
    assert len(t["expected"]) == 6
    assert t["spread"] == pytest.approx(max(t["expected"]) - min(t["expected"]))


def test_seed_effects_are_shared_across_sigma_w():
    # No sigma_w effect and no residual: every level of a seed has the same linear predictor,
    # so with a gaussian family each seed's column is constant across sigma_w.
    ds = simulate_cube([SimPipeline("g", sigma_sd=0.0, seed_sd=1.0, residual_sd=0.0, family="gaussian", n_seed=5)])
    y = ds["selected_test_acc"].sel(pipeline="g").values  # (sigma_w, seed)
    np.testing.assert_allclose(y, np.broadcast_to(y[0], y.shape), rtol=1e-6)
    v = read_truth(ds)["pipelines"]["g"]["v"]
    np.testing.assert_allclose(y[0], 1.5 + np.asarray(v), rtol=1e-6)


def test_binomial_counts_match_accuracy_and_n_test():
    ds = simulate_cube([SimPipeline("b")], n_test=300, seed=3)
    k = ds["selected_test_correct"].values
    np.testing.assert_allclose(ds["selected_test_acc"].values, k / 300, rtol=1e-6)
    assert ds.attrs["n_test"] == 300
    assert (ds["test_pred"] == ds["test_label"]).sum("example").values.tolist() == k.tolist()


def test_components_are_recovered_on_a_large_gaussian_draw():
    ds = simulate_cube([SimPipeline("g", sigma_sd=0.5, seed_sd=0.3, residual_sd=0.2, family="gaussian",
                                    n_sigma=60, n_seed=60)], seed=1)
    y = ds["selected_test_acc"].sel(pipeline="g").values.astype(float)
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    assert resid.std() == pytest.approx(0.2, rel=0.1)
    assert y.mean(1).std() == pytest.approx(0.5, rel=0.25)
    assert y.mean(0).std() == pytest.approx(0.3, rel=0.25)


def test_smaller_pipelines_get_missing_cells():
    ds = simulate_cube([SimPipeline("big", n_sigma=6, n_seed=4), SimPipeline("small", n_sigma=3, n_seed=2)])
    counts = cube.status_counts(ds)
    assert counts["big"]["ok"] == 24 and counts["small"]["ok"] == 6 and counts["small"]["missing"] == 18


def test_clocks_are_exact_sums_over_the_schedule():
    p = SimPipeline("c", optimizer="adam", lr=0.1, batch_size=100, weight_decay=0.01, schedule="cosine")
    c = clocks(p, epochs=3, n_train=1000)  # 10 steps per epoch
    k = np.arange(30)
    eta = 0.1 * 0.5 * (1 + np.cos(np.pi * k / 30))
    np.testing.assert_allclose(c["T_eta"], [0, eta[:10].sum(), eta[:20].sum(), eta.sum()])
    np.testing.assert_allclose(c["T_sgd"], np.array([0, (eta[:10] ** 2).sum(), (eta[:20] ** 2).sum(),
                                                     (eta**2).sum()]) / 100)
    np.testing.assert_allclose(c["T_l2"], 0.01 * c["T_eta"])
    np.testing.assert_allclose(c["T_adapt"], c["T_eta"])
    assert clocks(SimPipeline("w", optimizer="adamw", weight_decay=0.1), 2, 100)["T_l2"].max() == 0


def test_curves_have_the_stated_radial_memory():
    ds = simulate_cube(preset_pipelines("quick_like"), curves=True, truth_axis="T_sgd", seed=2)
    truth = read_truth(ds)["curves"]
    logk = np.log(ds["kernel_norm"].mean("seed"))
    x = np.log(ds["sigma_w"])
    slope = ((logk - logk.mean("sigma_w")) * (x - x.mean())).sum("sigma_w") / ((x - x.mean()) ** 2).sum()
    rho = np.exp(-ds["T_sgd"].isel(sigma_w=0, seed=0) / truth["decay_scale"])
    np.testing.assert_allclose(slope.values, rho.values, atol=0.05)
    assert cube.errors(ds) == []


def test_degenerate_preset_makes_every_clock_proportional_to_epochs():
    ds = simulate_cube(preset_pipelines("degenerate"), curves=True, epochs=5)
    for clock in ("T_eta", "T_sgd", "T_l2"):
        t = ds[clock].isel(sigma_w=0, seed=0).values
        np.testing.assert_allclose(t / t[:, [-1]], np.broadcast_to(np.arange(6) / 5, t.shape), atol=0.04)


def test_truth_attribute_is_json():
    ds = simulate_cube([SimPipeline("a")])
    assert json.loads(ds.attrs["truth"])["pipelines"]["a"]["family"] == "binomial"


def test_expected_accuracy_is_the_mean_over_seeds_on_this_test_set():
    # The truth is the expected accuracy on the cube's own test examples over new seeds: the
    # average over many seeds converges to it (within 4 standard errors at every level).
    ds = simulate_cube([SimPipeline("b", sigma_sd=0.4, seed_sd=0.2, residual_sd=0.1, n_sigma=3, n_seed=300)],
                       n_test=200, seed=5)
    acc = ds[cube.SELECTED_TEST_ACC].sel(pipeline="b").values.astype(float)
    t = read_truth(ds)["pipelines"]["b"]
    se = acc.std(axis=1, ddof=1) / np.sqrt(acc.shape[1])
    assert np.all(np.abs(acc.mean(axis=1) - np.asarray(t["expected"])) < 4 * se)


def test_run_to_run_noise_is_below_the_binomial_as_with_independent_errors():
    # No seed or residual effect: runs differ only by which examples they get right, and the
    # variance of the accuracy is sum_x p_x (1 - p_x) / n^2, below the binomial p (1 - p) / n.
    n = 400
    ds = simulate_cube([SimPipeline("b", sigma_sd=0.0, seed_sd=0.0, residual_sd=0.0, n_sigma=2, n_seed=400)],
                       n_test=n, seed=2)
    acc = ds[cube.SELECTED_TEST_ACC].sel(pipeline="b").values.astype(float).ravel()
    p_x = 1.0 / (1.0 + np.exp(-(1.5 + example_offsets(n, np.random.default_rng(2)))))
    predicted = np.sqrt((p_x * (1 - p_x)).sum()) / n
    assert acc.std(ddof=1) == pytest.approx(predicted, rel=0.1)
    binomial = np.sqrt(acc.mean() * (1 - acc.mean()) / n)
    assert acc.std(ddof=1) < 0.8 * binomial
    assert expected_accuracy(np.array([1.5]), 0.0, p_x * 0 + example_offsets(n, np.random.default_rng(2)))[0] \
        == pytest.approx(p_x.mean(), rel=1e-9)


def test_tau_interp_marks_runs_that_did_not_interpolate():
    ds = simulate_cube([SimPipeline("b", p_not_interpolating=0.5, n_seed=6)], seed=1)
    tau = ds[cube.TAU_INTERP].values
    ok = ds[cube.STATUS].values == cube.OK
    assert np.isfinite(tau[ok]).any() and np.isnan(tau[ok]).any()
    assert np.isfinite(simulate_cube([SimPipeline("c")], seed=1)[cube.TAU_INTERP].values).all()
