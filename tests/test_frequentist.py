"""Frequentist cross-checks: known answers (closed forms, a published REML fit) and robustness."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from initmem import cube
from initmem.errors import UserError
from initmem.simulate import SimPipeline, simulate_cube
from initmem.stats import effects
from initmem.stats.frequentist import (
    crosscheck,
    friedman,
    holm,
    rcbd_anova,
    reml_components,
    rm_anova,
    spread_tests,
)


def _long(table: np.ndarray) -> pd.DataFrame:
    n_lev, n_seed = table.shape
    return pd.DataFrame({"sigma_w": np.repeat(np.arange(1.0, n_lev + 1), n_seed),
                         "seed": np.tile(np.arange(n_seed), n_lev), "y": table.ravel()})


def _gaussian_cube(tables: dict[str, np.ndarray]) -> xr.Dataset:
    """A cube whose metric is exactly the given levels x seeds tables."""
    names = list(tables)
    n_lev, n_seed = next(iter(tables.values())).shape
    ds = cube.empty_cube(names, list(np.geomspace(0.25, 8, n_lev)), list(range(n_seed)))
    vals = np.stack([tables[n] for n in names])
    ds["metric"] = (cube.CELL_DIMS, vals)
    ds["status"] = (cube.CELL_DIMS, np.where(np.isfinite(vals), cube.OK, cube.MISSING).astype("int8"))
    return ds


def test_reml_equals_expected_mean_squares_on_balanced_data():
    rng = np.random.default_rng(3)
    for _ in range(4):
        table = 1 + rng.normal(0, 1, (6, 1)) + rng.normal(0, 0.7, (1, 5)) + rng.normal(0, 0.3, (6, 5))
        a = rcbd_anova(table)
        if min(a["s2_level"], a["s2_seed"]) <= 0:
            continue
        r = reml_components(_long(table))
        np.testing.assert_allclose(
            [r["sigma_sd"], r["seed_sd"], r["residual_sd"]],
            np.sqrt([a["s2_level"], a["s2_seed"], a["s2_e"]]), rtol=1e-3)


def test_rm_anova_and_friedman_match_closed_forms():
    rng = np.random.default_rng(5)
    table = rng.normal(0, 1, (5, 6)) + np.arange(5)[:, None] * 0.4 + rng.normal(0, 1, (1, 6))
    a = rcbd_anova(table)
    rm = rm_anova(table)
    f = a["ms_level"] / a["ms_e"]
    assert 1 / (5 - 1) <= rm["eps_gg"] <= 1 and rm["p_gg"] >= rm["p"]
    assert rm["F"] == pytest.approx(f, rel=1e-9)
    assert rm["p_uncorrected"] == pytest.approx(stats.f.sf(f, a["df_level"], a["df_e"]), rel=1e-9)
    assert rm["p"] == rm["p_gg"] == pytest.approx(stats.f.sf(f, rm["eps_gg"] * 4, rm["eps_gg"] * 20), rel=1e-9)
    # Generalized eta^2 for one within factor: SS_A / (SS_A + SS_subject + SS_error).
    assert rm["ng2"] == pytest.approx(a["ss_level"] / (a["ss_level"] + a["ss_seed"] + a["ss_e"]), rel=1e-9)
    fr = friedman(table)
    ref = stats.friedmanchisquare(*table)
    assert fr["Q"] == pytest.approx(ref.statistic, rel=1e-9)
    assert fr["p"] == pytest.approx(ref.pvalue, rel=1e-9)


def test_holm_matches_hand_computation():
    adj = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": math.nan})
    assert adj["a"] == pytest.approx(0.03)
    assert adj["c"] == pytest.approx(0.06)
    assert adj["b"] == pytest.approx(0.06)
    assert math.isnan(adj["d"])


def test_spread_tests_decide_both_ways():
    rng = np.random.default_rng(0)
    seed_fx = rng.normal(0, 0.05, (1, 20))
    flat = 0.8 + seed_fx + rng.normal(0, 0.002, (6, 20))
    steep = 0.8 + np.linspace(0, 0.1, 6)[:, None] + seed_fx + rng.normal(0, 0.002, (6, 20))
    assert spread_tests(flat, 0.01)["tost_p"] < 0.01
    assert spread_tests(flat, 0.01)["min_effect_p"] > 0.5
    assert spread_tests(steep, 0.01)["min_effect_p"] < 0.01
    assert spread_tests(steep, 0.01)["tost_p"] > 0.5


def test_omega_squared_known_values():
    # Pure level effect (no seed, no residual) -> 1; pure seed effect -> 0.
    lev = np.arange(4.0)[:, None] + np.zeros((1, 5))
    assert effects.omega_squared(lev + 1e-9 * np.random.default_rng(0).normal(size=(4, 5))) == pytest.approx(1,
                                                                                                             abs=1e-6)
    seed = np.zeros((4, 1)) + np.arange(5.0)[None, :]
    assert effects.omega_squared(seed + 1e-9 * np.random.default_rng(1).normal(size=(4, 5))) == pytest.approx(0,
                                                                                                              abs=1e-6)


def test_crosscheck_verdicts_effects_and_agreement():
    rng = np.random.default_rng(11)
    seed_fx = rng.normal(0, 0.02, (1, 12))
    tables = {
        "remembers": 0.7 + np.linspace(0, 0.2, 6)[:, None] + seed_fx + rng.normal(0, 0.004, (6, 12)),
        "forgets": 0.7 + seed_fx + rng.normal(0, 0.002, (6, 12)),
    }
    ds = _gaussian_cube(tables)
    bayes = {"remembers": {"verdict": "remembers"}, "forgets": {"verdict": "remembers",
                                                              "spread": {"median": 0.05, "q05": 0.03, "q95": 0.08}}}
    out = crosscheck(ds, "metric", 0.01, bayes)
    r, f = out["remembers"], out["forgets"]
    assert r["frequentist"]["verdict"] == "remembers" and r["agreement"] and r["disagreements"] == []
    assert f["frequentist"]["verdict"] == "forgets" and f["frequentist"]["tost"]["equivalent"]
    assert not f["agreement"] and f["disagreements"]
    assert any("outside the Bayesian 90% interval" in d for d in f["disagreements"])
    # Effect sizes in metric units (not an accuracy) and in the right place.
    sp = r["effect_sizes"]["spread_points"]
    assert sp["q05"] <= sp["estimate"] <= sp["q95"] + 1e-9
    assert sp["estimate"] == pytest.approx(np.ptp(tables["remembers"].mean(axis=1)))
    assert r["effect_sizes"]["omega_sq"] > 0.9 and f["effect_sizes"]["omega_sq"] < 0.2
    for key in ("friedman", "tost"):
        assert r["frequentist"][key]["p_holm"] >= r["frequentist"][key]["p"]
    assert r["frequentist"]["rm_anova"]["p_holm"] >= r["frequentist"]["rm_anova"]["p_gg"]  # Holm on the GG p
    assert r["frequentist"]["reml"]["method"].startswith("closed form")
    assert f["frequentist"]["reml"]["singular"] in (True, False)


def test_crosscheck_accuracy_in_points_and_binomial_floor_reason():
    pipes = [SimPipeline("floor", sigma_sd=0.0, seed_sd=0.0, residual_sd=0.0, n_seed=3, n_sigma=6)]
    ds = simulate_cube(pipes, n_test=200, seed=4)
    out = crosscheck(ds, "selected_test_acc", 0.01, {"floor": {"verdict": "forgets"}})["floor"]
    assert out["effect_sizes"]["units"] == "accuracy points"
    est = out["effect_sizes"]["spread_points"]["estimate"]
    acc = ds["selected_test_acc"].sel(pipeline="floor").values.astype(float)
    assert est == pytest.approx(100 * np.ptp(np.nanmean(acc, axis=1)), rel=1e-6)
    # Pure binomial noise with 3 seeds: the frequentist test cannot show equivalence at 1 point.
    assert out["frequentist"]["verdict"] != "forgets"
    assert not out["agreement"]
    text = " ".join(out["disagreements"])
    assert "few seeds" in text and "binomial floor" in text


def test_missing_unbalanced_and_thin_cells_never_crash():
    rng = np.random.default_rng(2)
    base = 0.8 + rng.normal(0, 0.01, (5, 4))
    holes = base.copy()
    holes[1, 2] = np.nan  # seed 2 unpaired at one level
    one_seed = base.copy()
    one_seed[:, 1:] = np.nan
    constant = np.full((5, 4), 0.5)
    empty = np.full((5, 4), np.nan)
    ds = _gaussian_cube({"holes": holes, "one_seed": one_seed, "constant": constant, "empty": empty,
                         "ok": base})
    ds["status"] = ds["status"].where(~((ds.pipeline == "ok") & (ds.seed == 0)), cube.DIVERGED)
    out = crosscheck(ds, "metric", 0.01, {})
    h = out["holes"]
    assert h["frequentist"]["n_complete_seed"] == 3 and h["frequentist"]["n_seed"] == 4
    assert math.isfinite(h["frequentist"]["reml"]["residual_sd"])
    assert any("complete seed blocks" in n for n in h["notes"])
    assert out["one_seed"]["frequentist"]["verdict"] == "undecided"
    assert any("refused" in n for n in out["one_seed"]["notes"])
    assert math.isnan(out["one_seed"]["frequentist"]["rm_anova"]["F"])
    assert out["constant"]["frequentist"]["friedman"]["p"] == 1.0
    assert out["empty"]["frequentist"]["n_seed"] == 0
    assert out["ok"]["frequentist"]["n_seed"] == 3  # the diverged seed is left out


def test_crosscheck_refuses_bad_input_clearly():
    ds = _gaussian_cube({"a": np.ones((3, 3))})
    with pytest.raises(UserError, match="no variable"):
        crosscheck(ds, "nope", 0.01, {})
    with pytest.raises(UserError, match="delta"):
        crosscheck(ds, "metric", -1.0, {})
    curves = ds.expand_dims(epoch=[0, 1]).transpose(*cube.CURVE_DIMS)
    with pytest.raises(UserError, match="one value per"):
        crosscheck(curves, "metric", 0.01, {})


def test_json_safe_output():
    import json

    from initmem.jsonio import json_safe

    ds = _gaussian_cube({"a": np.full((4, 3), np.nan), "b": np.random.default_rng(0).normal(size=(4, 3))})
    out = crosscheck(ds, "metric", 0.5, {})
    json.dumps(json_safe(out), allow_nan=False)
    assert json_safe(out)["a"]["frequentist"]["rm_anova"]["F"] is None
