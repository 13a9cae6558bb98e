"""The collapse test: building blocks against known answers, and its controls on simulated curves.

Controls (docs/clocks-and-collapse.md, "Controls"): flat curves (no forgetting) give clock_better
in at most 5% of 100 cubes (printed with a 95% Clopper-Pearson interval); lr proportional to b
with one lambda and one cosine schedule gives not_identifiable; truth = epochs, T_sgd and T_l2
give the right verdict in >= 9 of 10 cubes on the 8-pipeline collapse_controls design (T_l2 is
defined on 7 of them, so it can reach significance); 4 pipelines give no significant verdict and
say why.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from initmem import cube
from initmem.errors import UserError
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.stats import inference
from initmem.stats.collapse import collapse_test
from initmem.stats.loo import CLIP, held_out_errors, log_ratio
from initmem.stats.smoother import ecdf_coordinates, isotonic_bins


def _cube(truth: str, seed: int, preset: str = "quick_like", pipelines=None):
    return simulate_cube(pipelines or preset_pipelines(preset), curves=True, truth_axis=truth, seed=seed)


# Building blocks --------------------------------------------------------------------------------

def test_isotonic_bins_match_pava():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(1)
    for _ in range(20):
        g = 12
        n = rng.integers(0, 4, g).astype(float)
        ybar = np.cumsum(rng.normal(0, 1, g)) * 0.3 + rng.normal(0, 1, g)
        f = isotonic_bins(n[None], (n * ybar)[None])[0]
        has = n > 0
        ref = IsotonicRegression().fit(np.arange(g)[has], ybar[has], sample_weight=n[has]).predict(np.arange(g)[has])
        np.testing.assert_allclose(f[has], ref, atol=1e-10)


def test_smoother_is_invariant_to_a_common_monotone_transform():
    # The same curves on log T and on a cosine-like squashing of it must give identical errors:
    # the resolution of the smoother does not depend on how the axis spaces the points.
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 3, (5, 40)), axis=1) + rng.normal(0, 0.2, (5, 1))
    y = np.exp(-x) + rng.normal(0, 0.01, x.shape)
    v = np.full(x.shape, 1e-4)
    squash = np.tanh(3 * (x - 2.5)) * 7 + x**3  # strictly increasing
    e1 = held_out_errors(ecdf_coordinates(x[None]), y, v).err
    e2 = held_out_errors(ecdf_coordinates(squash[None]), y, v).err
    np.testing.assert_allclose(e1, e2, rtol=1e-12)


def test_log_ratio_is_bounded():
    r = log_ratio(np.array([1e12, 1.0, 0.0]), np.array([0.0, 1.0, 1e12]))
    assert r[0] == pytest.approx(CLIP) and r[1] == 0 and r[2] == pytest.approx(-CLIP)


def test_permutation_p_and_min_p_known_answers():
    rng = np.random.default_rng(0)
    pats, exact = inference.half_patterns(5, rng)
    assert exact and pats.shape == (16, 5) and (pats[0] == 1).all()
    full = np.concatenate([pats, -pats])
    assert {tuple(r) for r in full} == set(itertools.product([-1.0, 1.0], repeat=5))
    # For independent contributions, the swap test reduces to the classic sign-flip of a mean.
    d = rng.normal(0.3, 1, 5)
    null = inference.full_null((pats @ d)[:, None] / 5)
    brute = np.mean([abs(np.dot(s, d)) >= abs(d.sum()) - 1e-12 for s in itertools.product([-1, 1], repeat=5)])
    assert inference.permutation_p(np.array([d.mean()]), null)[0] == pytest.approx(brute)
    # min-p with one clock equals its raw p; a second, independent clock can only raise it.
    two = inference.full_null(np.stack([pats @ d, pats @ rng.normal(size=5)], 1) / 5)
    obs = np.array([d.mean(), 0.0])
    p1 = inference.min_p_adjust(obs, two, np.array([True, False]))
    p2 = inference.min_p_adjust(obs, two, np.array([True, True]))
    assert p1[0] == pytest.approx(brute) and np.isnan(p1[1]) and p2[0] >= p1[0]


def test_monte_carlo_patterns_beyond_exact_max_have_add_one_p_values():
    rng = np.random.default_rng(4)
    c = inference.EXACT_MAX + 2
    pats, exact = inference.half_patterns(c, rng)
    assert not exact and (pats[0] == 1).all() and pats.shape == (inference.N_MONTE_CARLO + 1, c)
    d = np.abs(rng.normal(1, 0.1, c))  # every contribution positive: the observed is the most extreme
    null = inference.full_null((pats @ d)[:, None] / c)
    p = inference.permutation_p(np.array([d.mean()]), null)[0]
    repeats = int((pats[1:] == 1).all(1).sum())  # random draws that hit the observed pattern
    assert p == pytest.approx((2 + 2 * repeats) / null.shape[0])  # add-one (with its mirror): never 0


def test_output_schema_and_partial_axes():
    ds = _cube("T_sgd", seed=3)
    r = collapse_test(ds, n_boot=12)
    json.dumps(r, allow_nan=False)
    assert r["schema"] == "initmem.collapse/3" and r["memory"] == "radial" and r["adjustment"] == "max_statistic"
    assert {"epoch", "step", "T_eta", "T_sgd", "T_l2", "T_adapt"} <= set(r["axes"])
    assert r["n_pipelines"] == 6 and r["min_p_possible"] == pytest.approx(2 ** -5)
    assert r["axes"]["epoch"]["n_points"] == 6 * 30  # epoch 0 is never scored
    # T_adapt exists only on the two Adam-family pipelines: not compared, and said so.
    assert "T_adapt" not in r["vs_epoch"] and "not compared" in r["axes"]["T_adapt"]["note"]
    l2 = r["vs_epoch"]["T_l2"]
    assert l2["n_pipelines"] == 4 and l2["min_p_possible"] == pytest.approx(2 ** -3)
    for a in ("T_eta", "T_sgd", "T_l2"):
        e = r["vs_epoch"][a]
        assert set(e) >= {"D", "q05", "q95", "p_value", "p_adjusted"}
        assert e["p_adjusted"] >= e["p_value"] - 1e-12
        assert r["identifiability"][a]["sd_log_ratio"] > r["identifiability"][a]["threshold"]
    assert r["vs_epoch"]["step"]["p_adjusted"] is None  # steps are a count, not a clock under test
    ft = r["forgetting_times"]["T_sgd"]
    assert ft["fraction"] == 0.5 and ft["n_pipelines"] == 6
    assert set(ft["per_pipeline"]) == set(ds.pipeline.values.tolist())
    assert set(ft["per_pipeline"]["sgd_l2"]) >= {"median", "q05", "q95", "censored"}


def test_no_curves_and_bad_memory():
    assert collapse_test(simulate_cube(preset_pipelines("contrast"), seed=0)) is None
    with pytest.raises(UserError, match="memory"):
        collapse_test(_cube("T_sgd", 0), memory="spooky")


def test_functional_memory_runs_and_has_rope_forgetting_times():
    r = collapse_test(_cube("T_sgd", seed=4), memory="functional", n_boot=5, rope=0.02)
    assert r["memory"] == "functional" and r["forgetting_times"]["epoch"]["rope"] == 0.02
    assert r["verdict"] in ("clock_better", "epoch_better", "no_difference", "not_identifiable")


def test_thin_data_never_crashes():
    ds = _cube("T_sgd", seed=5)
    ds[cube.STATUS][0] = cube.FAILED  # a whole pipeline failed
    ds = ds.drop_vars([cube.T_ADAPT, cube.T_L2])  # an imported cube without some clocks
    r = collapse_test(ds, n_boot=12, seed=1)
    json.dumps(r, allow_nan=False)
    assert "sgd_low_lr" not in r["axes"]["epoch"]["scored_pipelines"]
    assert any("T_l2" in n and "not scored" in n for n in r["notes"])
    one_seed = _cube("T_sgd", seed=6).isel(seed=[0])
    r1 = collapse_test(one_seed, n_boot=3)
    json.dumps(r1, allow_nan=False)
    assert r1["verdict"] in ("no_difference", "not_identifiable")
    assert any("fewer than 2 seeds" in n for n in r1["notes"])


# Controls -------------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["common_schedule", "degenerate"])
def test_common_schedule_is_not_identifiable(preset):
    for s in range(3):
        r = collapse_test(_cube("T_sgd", s, preset=preset), n_boot=0, seed=s)
        assert r["verdict"] == "not_identifiable" and r["best"] is None, (r["verdict"], r["identifiability"])
        assert not any(r["identifiable"][a] for a in ("T_eta", "T_sgd", "T_l2"))


def test_four_pipelines_cannot_be_significant_and_say_so():
    r = collapse_test(_cube("T_sgd", 0, pipelines=preset_pipelines("quick_like")[:4]), n_boot=0)
    assert r["verdict"] == "no_difference" and r["min_p_possible"] == 2 ** -3
    assert any("no verdict can be significant" in n for n in r["notes"])


def _clopper_pearson(k: int, n: int) -> tuple[float, float]:
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


@pytest.mark.slow
def test_flat_curves_rarely_pass_as_a_clock():
    n, hits, epoch_hits, raw = 100, 0, 0, []
    for s in range(n):
        r = collapse_test(_cube("flat", 100 + s), n_boot=0, seed=s)
        hits += r["verdict"] == "clock_better"
        epoch_hits += r["verdict"] == "epoch_better"
        raw.append(r["vs_epoch"]["T_sgd"]["p_value"])
    lo, hi = _clopper_pearson(hits, n)
    print(f"\nflat curves: clock_better in {hits}/{n} cubes ({hits / n:.1%}, 95% CI {lo:.1%} to {hi:.1%}); "
          f"epoch_better in {epoch_hits}/{n}; T_sgd raw p < 0.05 in {sum(p < 0.05 for p in raw)}/{n}")
    assert hits / n <= 0.05 and (hits + epoch_hits) / n <= 0.05
    assert sum(p < 0.05 for p in raw) / n <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / n)


@pytest.mark.slow
@pytest.mark.parametrize("truth", ["epoch", "T_sgd", "T_l2"])
def test_truth_gives_the_right_verdict_nine_of_ten(truth):
    want = ("epoch_better", "epoch") if truth == "epoch" else ("clock_better", truth)
    got = [collapse_test(_cube(truth, s, preset="collapse_controls"), n_boot=0, seed=s) for s in range(10)]
    right = sum((r["verdict"], r["best"]) == want for r in got)
    print(f"\ntruth = {truth}: right verdict in {right}/10")
    assert right >= 9, [(r["verdict"], r["best"]) for r in got]


def test_truth_single_replicate_with_interval():
    r = collapse_test(_cube("T_sgd", 1000), n_boot=30, seed=1)
    assert r["verdict"] == "clock_better" and r["best"] == "T_sgd"
    e = r["vs_epoch"]["T_sgd"]
    assert e["q05"] > 0 and e["p_adjusted"] < 0.05 and e["n_boot"] == 30


# Forgetting times -------------------------------------------------------------------------------

def test_forgetting_times_recover_the_simulated_half_life():
    from initmem.simulate import read_truth
    from initmem.stats.curves import seed_mean_clocks
    from initmem.stats.forgetting import forgetting_times

    ds = _cube("T_sgd", seed=3)
    half_life = read_truth(ds)["curves"]["decay_scale"] * np.log(2)  # rho = exp(-T_sgd / scale)
    clocks = seed_mean_clocks(ds)
    ft = forgetting_times(ds, n_boot=100, axes={"T_sgd": clocks["T_sgd"], "epoch": clocks["epoch_axis"]})
    per = ft["T_sgd"]["per_pipeline"]
    for name, budget in ((n, e["budget"]) for n, e in per.items()):
        if budget > 1.5 * half_life:
            assert not per[name]["censored"]
            assert per[name]["estimate"] == pytest.approx(half_life, rel=0.05), name
            assert per[name]["q05"] <= per[name]["estimate"] <= per[name]["q95"]
        elif budget < 0.5 * half_life:  # the Adam pipelines barely move on T_sgd: censored
            assert per[name]["censored"] and np.isnan(per[name]["median"])
    assert ft["T_sgd"]["n_censored"] == sum(e["censored"] for e in per.values())
    # On the true clock the pipelines forget together; on epochs they do not.
    assert ft["T_sgd"]["spread"] < 0.2 < ft["epoch"]["spread"]


def test_flat_curves_are_censored_everywhere():
    r = collapse_test(_cube("flat", seed=8), n_boot=10)
    for entry in r["forgetting_times"].values():
        assert entry["n_censored"] == entry["n_pipelines"] > 0 and entry["spread"] is None


def test_measured_clocks_are_axes_and_a_common_transform_changes_nothing():
    ds = _cube("T_sgd", seed=9)
    # A measured clock that is a monotone transform of T_sgd common to all pipelines must score
    # exactly like T_sgd (the smoother works on pooled-ECDF coordinates).
    ds[cube.T_ANGLE] = np.sqrt(ds[cube.T_SGD]) * 3.0
    r = collapse_test(ds, n_boot=0)
    assert cube.T_ANGLE in r["axes"] and cube.T_ANGLE in r["vs_epoch"] and cube.T_ANGLE in r["forgetting_times"]
    assert r["vs_epoch"][cube.T_ANGLE]["D"] == pytest.approx(r["vs_epoch"]["T_sgd"]["D"], abs=1e-12)
    assert r["verdict"] == "clock_better" and r["best"] in ("T_sgd", cube.T_ANGLE)
