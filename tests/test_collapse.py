"""The collapse test: its building blocks against known answers, and its controls on simulated curves.

Controls (METHODS section 4.8), on the simulator's quick-like design (6 pipelines varying lr,
batch size, weight decay and optimizer independently): truth = epochs -> epoch_better; truth =
T_l2 -> clock_better with T_l2 or T_fit best; truth = T_sgd -> clock_better with T_sgd or T_fit
best; eta proportional to b with one lambda -> not_identifiable or no_difference; 4 pipelines ->
no significant verdict, and the output says why. The slow versions require 9 of 10 replicates.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from initmem.errors import UserError
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.stats.collapse import AXES, _isotonic_bins, collapse_test, sign_flip_p

N_BOOT = 30  # bootstrap draws per control replicate (enough for a 5% quantile)


def _cube(truth: str, seed: int, preset: str = "quick_like", pipelines=None):
    return simulate_cube(pipelines or preset_pipelines(preset), curves=True, truth_axis=truth, seed=seed)


# Building blocks --------------------------------------------------------------------------------

def test_sign_flip_p_is_exact():
    assert sign_flip_p(np.array([1.0, 2.0, 3.0])) == pytest.approx(2 / 8)
    assert sign_flip_p(np.ones(6)) == pytest.approx(2 ** (1 - 6))
    rng = np.random.default_rng(0)
    d = rng.normal(0.3, 1, 7)
    brute = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12
                     for s in itertools.product([-1, 1], repeat=7)])
    assert sign_flip_p(d) == pytest.approx(brute)


def test_isotonic_bins_match_pava():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(1)
    for _ in range(20):
        g = 12
        n = rng.integers(0, 4, g).astype(float)
        ybar = np.cumsum(rng.normal(0, 1, g)) * 0.3 + rng.normal(0, 1, g)
        f = _isotonic_bins(n[None], (n * ybar)[None])[0]
        has = n > 0
        ref = IsotonicRegression().fit(np.arange(g)[has], ybar[has], sample_weight=n[has]).predict(np.arange(g)[has])
        np.testing.assert_allclose(f[has], ref, atol=1e-10)


def test_output_schema_epoch_zero_and_partial_axes():
    ds = _cube("T_sgd", seed=3)
    r = collapse_test(ds, n_boot=0)
    assert r["schema"] == "initmem.collapse/1" and r["memory"] == "radial"
    assert set(r["axes"]) == set(AXES) and set(r["vs_epoch"]) == set(AXES[1:])
    assert r["verdict"] in ("clock_better", "epoch_better", "no_difference", "not_identifiable")
    # Epoch 0 is never scored: 6 pipelines x 30 epochs (not 31).
    assert r["axes"]["epoch"]["n_points"] == 6 * 30
    # T_adapt exists only for the two Adam-family pipelines: scored only there, and said so.
    assert r["axes"]["T_adapt"]["scored_pipelines"] == []
    assert "not scored" in r["axes"]["T_adapt"]["note"]
    # T_l2 is zero without coupled L2 (sgd_low_lr, adamw): scored on the other four.
    assert set(r["axes"]["T_l2"]["scored_pipelines"]) == {"sgd_l2", "sgd_mom_wd", "adam", "sgd_b128"}
    assert "scored only where defined" in r["axes"]["T_l2"]["note"]
    assert r["vs_epoch"]["T_l2"]["min_p_value"] == pytest.approx(2 ** -3)
    assert r["n_pipelines"] == 6 and r["min_p_value"] == pytest.approx(2 ** -5)
    assert set(r["t_fit_weights"]) == set(ds.pipeline.values.tolist())


def test_no_curves_and_bad_memory():
    ds = simulate_cube(preset_pipelines("contrast"), seed=0)
    assert collapse_test(ds) is None
    with pytest.raises(UserError, match="memory"):
        collapse_test(_cube("T_sgd", 0), memory="spooky")


def test_functional_memory_and_refit_bootstrap_run():
    r = collapse_test(_cube("T_sgd", seed=4), memory="functional", n_boot=5)
    assert r["memory"] == "functional"
    r2 = collapse_test(_cube("T_sgd", seed=4), n_boot=12, refit_pipelines=True)
    assert "refitted" in r2["method"]["bootstrap"] and r2["vs_epoch"]["T_sgd"]["n_boot"] > 0
    assert r["axes"]["epoch"]["loco_error"] is not None and r["verdict"] in (
        "clock_better", "epoch_better", "no_difference", "not_identifiable")


# Controls -------------------------------------------------------------------------------------

def _control(kind: str, seed: int) -> tuple[bool, dict]:
    if kind == "degenerate":
        r = collapse_test(_cube("T_sgd", seed, preset="degenerate"), n_boot=N_BOOT, seed=seed)
        return r["verdict"] in ("not_identifiable", "no_difference"), r
    if kind == "four":
        r = collapse_test(_cube("T_sgd", seed, pipelines=preset_pipelines("quick_like")[:4]), n_boot=N_BOOT,
                          seed=seed)
        why = any("no verdict can be significant" in n for n in r["notes"])
        return r["verdict"] == "no_difference" and why and r["min_p_value"] == 2 ** -3, r
    r = collapse_test(_cube(kind, seed), n_boot=N_BOOT, seed=seed)
    if kind == "epoch":
        return r["verdict"] == "epoch_better", r
    allowed = {"T_l2": ("T_l2", "T_fit"), "T_sgd": ("T_sgd", "T_fit")}[kind]
    return r["verdict"] == "clock_better" and r["best"] in allowed, r


@pytest.mark.parametrize("kind", ["epoch", "T_sgd", "T_l2", "degenerate", "four"])
def test_control_single_replicate(kind):
    ok, r = _control(kind, seed=1000)
    assert ok, (r["verdict"], r["best"], r["notes"])


def test_degenerate_design_is_flagged_not_identifiable():
    r = collapse_test(_cube("T_sgd", 7, preset="degenerate"), n_boot=0)
    assert r["verdict"] == "not_identifiable" and r["best"] is None
    assert not any(r["identifiable"][a] for a in ("T_eta", "T_sgd", "T_l2", "T_fit"))
    assert ["T_eta", "T_sgd"] in r["collinear"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["epoch", "T_sgd", "T_l2", "degenerate", "four"])
def test_control_pass_rate_nine_of_ten(kind):
    passed = [_control(kind, seed=s)[0] for s in range(10)]
    assert sum(passed) >= 9, f"{kind}: {sum(passed)}/10"


def test_output_is_strict_json_and_thin_data_never_crashes():
    import json

    from initmem import cube

    ds = _cube("T_sgd", seed=5)
    ds["status"][0] = cube.FAILED  # a whole pipeline failed
    ds = ds.drop_vars(["T_adapt", "T_l2"])  # an imported cube without some clocks
    r = collapse_test(ds, n_boot=12, seed=1)
    json.dumps(r, allow_nan=False)
    assert "sgd_low_lr" not in r["axes"]["epoch"]["scored_pipelines"]
    assert any("T_l2" in n and "not scored" in n for n in r["notes"])
    assert r["axes"]["T_l2"]["n_points"] == 0
    one_seed = _cube("T_sgd", seed=6).isel(seed=[0])
    r1 = collapse_test(one_seed, n_boot=3)
    json.dumps(r1, allow_nan=False)
    assert r1["verdict"] in ("no_difference", "not_identifiable")
    assert any("fewer than 2 seeds" in n for n in r1["notes"])
