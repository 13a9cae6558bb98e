"""The memory model: data preparation, the marginal likelihood, verdict rule, healthy sampling,
a published variance-components answer (penicillin), divergence and prior sensitivity.

Calibration over many simulated fits is in tests/test_calibration.py; the planner in
tests/test_plan.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from initmem import cube
from initmem.errors import UserError
from initmem.models import compiled, core
from initmem.models.data import near_ceiling_data, noise_scale, prepare_data, resolve_delta
from initmem.models.designs import SMALL, log_density, pad_seeds, table_data
from initmem.models.memory import MemoryModel
from initmem.models.paired import CEILING, pair_interval
from initmem.models.priors import Priors
from initmem.models.summaries import (
    model_verdict,
    model_verdict_flagged,
    probability_with_mcse,
    verdict,
    verdict_flagged,
)
from initmem.simulate import SimPipeline, simulate_cube
from initmem.tests._compile_shape import SMALL_FLAG

# Fast checks (no sampling) ------------------------------------------------------------------

DATA = Path(__file__).resolve().parent / "data"


def test_verdict_rule_and_borderline():
    # "remembers": the ordered test (paired_ok, True by default here) with the model agreeing, P >= 1/2
    assert verdict(0.95, 0.05) == verdict(0.6, 0.4) == "remembers"
    assert verdict(0.4, 0.6) == "undecided"
    assert verdict(0.99, 0.01, paired_ok=False) == "undecided"
    # "forgets" by the model needs P(spread < delta) >= 1 - alpha/2 = 0.975 (models/paired.py, forgets_levels)
    assert verdict(0.03, 0.97) == "undecided"
    assert verdict(0.02, 0.98) == "forgets"
    # near the ceiling "forgets" needs the model AND the intersection-union test
    assert verdict(0.02, 0.98, iut_ok=True) == verdict(0.5, 0.5, iut_ok=True) == "forgets"
    assert verdict(0.02, 0.98, iut_ok=True, near_ceiling=True) == "forgets"
    assert verdict(0.5, 0.5, paired_ok=False, iut_ok=True, near_ceiling=True) == "undecided"
    assert verdict(0.02, 0.98, near_ceiling=True) == "undecided"
    # within 2 MCSE of the agreement bar, 1/2, on either side: not decided, flagged borderline
    assert verdict_flagged(0.51, 0.49, mcse=(0.006, 0.006)) == ("undecided", True)
    assert verdict_flagged(0.49, 0.51, mcse=(0.006, 0.006)) == ("undecided", True)
    assert verdict(0.49, 0.51, mcse=(0.006, 0.006)) == "undecided"
    assert verdict_flagged(0.53, 0.47, mcse=(0.006, 0.006)) == ("remembers", False)
    assert verdict_flagged(0.005, 0.995, mcse=(0.005, 0.005)) == ("forgets", False)
    # the borderline band of "forgets" sits at its own threshold, 0.975
    assert verdict_flagged(0.02, 0.98, mcse=(0.005, 0.005)) == ("undecided", True)
    assert verdict_flagged(0.04, 0.96, mcse=(0.005, 0.005)) == ("undecided", False)
    assert verdict(0.01, 0.99, level=0.99) == "undecided"   # alpha 0.01: "forgets" needs 0.995


def test_a_failed_fit_leaves_the_verdict_to_the_design_based_tests():
    # the model's probabilities count for nothing: the ordered test alone, the intersection-union test alone
    assert verdict(0.1, 0.9, model_ok=False) == "remembers"
    assert verdict(0.99, 0.01, paired_ok=False, model_ok=False) == "undecided"
    assert verdict(0.0, 1.0, paired_ok=False, model_ok=False) == "undecided"
    assert verdict(0.0, 1.0, paired_ok=False, iut_ok=True, model_ok=False) == "forgets"
    assert verdict(0.0, 1.0, paired_ok=False, iut_ok=True, near_ceiling=True, model_ok=False) == "undecided"


def test_the_model_alone_decides_at_its_own_thresholds():
    assert model_verdict(0.96, 0.04) == "remembers" and model_verdict(0.94, 0.06) == "undecided"
    assert model_verdict_flagged(0.96, 0.04, mcse=(0.006, 0.006)) == ("undecided", True)
    assert model_verdict_flagged(0.94, 0.06) == ("undecided", False)
    assert model_verdict(0.02, 0.98) == "forgets"


def test_mcse_of_a_probability_matches_the_binomial_for_independent_draws():
    rng = np.random.default_rng(0)
    x = rng.random((4, 2500)) < 0.3
    p, m = probability_with_mcse(x)
    assert m == pytest.approx(np.sqrt(p * (1 - p) / x.size), rel=0.15)
    assert probability_with_mcse(np.ones((2, 100), dtype=bool))[1] > 0   # never a zero MCSE


def test_restricted_likelihood_equals_the_multivariate_normal_with_alpha_integrated_out():
    # Known answer: the closed form in models/core.py against the dense covariance, with a
    # diffuse intercept (variance c) whose constant cancels in differences.
    rng = np.random.default_rng(1)
    n_l, n_s = 4, 3
    y = rng.normal(size=(n_l, n_s))
    i, s = np.repeat(np.arange(n_l), n_s), np.tile(np.arange(n_s), n_l)
    a, b = (i[:, None] == i[None]).astype(float), (s[:, None] == s[None]).astype(float)
    sums = core.table_sums(y, np.ones(n_l), np.ones(n_s))
    c = 1e6

    def dense(su, sv, se):
        cov = su**2 * a + sv**2 * b + se**2 * np.eye(n_l * n_s) + c
        return stats.multivariate_normal(np.zeros(n_l * n_s), cov).logpdf(y.ravel())

    t1, t2 = (0.7, 0.3, 0.5), (0.1, 1.2, 0.9)
    closed = core.reml_loglik(sums, *(x**2 for x in t1)) - core.reml_loglik(sums, *(x**2 for x in t2))
    assert closed == pytest.approx(dense(*t1) - dense(*t2), abs=1e-4)


def test_seed_slope_likelihood_equals_the_multivariate_normal():
    # Known answer with seed-specific slopes on log sigma_w and the memory's flat linear trend:
    # the closed form against the dense covariance su^2 A + sa^2 (x x' kron J) + sv^2 B +
    # sb^2 (x x' kron I) + se^2 I + c with a diffuse trend (sa^2 = c), and its reduction to the
    # compound-symmetric likelihood when there is no slope axis.
    rng = np.random.default_rng(2)
    n_l, n_s = 5, 4
    sig = np.geomspace(0.25, 4.0, n_l)
    y = rng.normal(size=(n_l, n_s))
    x = core.slope_axis(sig, np.ones(n_l, dtype=bool))
    assert x.sum() == pytest.approx(0.0, abs=1e-12) and (x**2).mean() == pytest.approx(1.0)
    i, s = np.repeat(np.arange(n_l), n_s), np.tile(np.arange(n_s), n_l)
    a, b = (i[:, None] == i[None]).astype(float), (s[:, None] == s[None]).astype(float)
    slope = np.outer(x[i], x[i]) * b
    trend = np.outer(x[i], x[i])
    sums = core.table_sums(y, np.ones(n_l), np.ones(n_s), x)

    def dense(su, sv, sb, se):
        cov = su**2 * a + 1e6 * trend + sv**2 * b + sb**2 * slope + se**2 * np.eye(n_l * n_s) + 1e6
        return stats.multivariate_normal(np.zeros(n_l * n_s), cov).logpdf(y.ravel())

    def closed(su, sv, sb, se):
        return core.reml_loglik(sums, su**2, sv**2, se**2, s2b=sb**2)

    t1, t2 = (0.7, 0.3, 0.4, 0.5), (0.1, 1.2, 1.5, 0.9)
    assert closed(*t1) - closed(*t2) == pytest.approx(dense(*t1) - dense(*t2), abs=1e-4)
    cs = core.table_sums(y, np.ones(n_l), np.ones(n_s))
    cs_dense = stats.multivariate_normal(np.zeros(n_l * n_s), 0.49 * a + 0.09 * b + 0.25 * np.eye(n_l * n_s) + 1e6)
    cs_dense2 = stats.multivariate_normal(np.zeros(n_l * n_s), 0.01 * a + 1.44 * b + 0.81 * np.eye(n_l * n_s) + 1e6)
    assert (core.reml_loglik(cs, 0.49, 0.09, 0.25) - core.reml_loglik(cs, 0.01, 1.44, 0.81)
            == pytest.approx(cs_dense.logpdf(y.ravel()) - cs_dense2.logpdf(y.ravel()), abs=1e-4))
    # two levels, or independent seeds: no slope axis
    assert not core.slope_axis(sig[:2], np.ones(2, dtype=bool)).any()
    assert not core.slope_axis(sig, np.ones(n_l, dtype=bool), paired=False).any()


def test_level_draws_match_the_dense_conditional_with_slopes():
    # the population level contrasts given the variances: mean and covariance of draw_levels
    # against the Gaussian conditional of u given the table (dense algebra)
    rng = np.random.default_rng(4)
    n_l, n_s = 4, 3
    x = core.slope_axis(np.geomspace(0.25, 2.0, n_l), np.ones(n_l, dtype=bool))
    y = rng.normal(size=(n_l, n_s))
    su2, sv2, sb2, se2, sa2 = 0.8, 0.5, 0.6, 0.3, 1e6   # a diffuse trend: the flat one
    i, s = np.repeat(np.arange(n_l), n_s), np.tile(np.arange(n_s), n_l)
    cov = (su2 * (i[:, None] == i[None]) + sa2 * np.outer(x[i], x[i]) + sv2 * (s[:, None] == s[None])
           + sb2 * np.outer(x[i], x[i]) * (s[:, None] == s[None]) + se2 * np.eye(n_l * n_s) + 1e6)
    prior_u = su2 * np.eye(n_l) + sa2 * np.outer(x, x)
    cross = prior_u[:, i]                                         # Cov(u, y)
    centre = np.eye(n_l) - 1.0 / n_l
    mean = centre @ cross @ np.linalg.solve(cov, y.ravel())
    var = centre @ (prior_u - cross @ np.linalg.solve(cov, cross.T)) @ centre
    sums = core.table_sums(y, np.ones(n_l), np.ones(n_s), x)
    n = 200_000
    _, u = core.draw_levels(np.broadcast_to(sums["level_means"], (n, n_l)), np.full(n, sums["grand"]),
                            np.ones((1, n_l), dtype=bool), np.full(n, float(n_s)), np.full(n, su2), np.full(n, sv2),
                            np.full(n, se2), rng, x=np.broadcast_to(x, (n, n_l)), s2b=np.full(n, sb2))
    assert u.mean(axis=0) == pytest.approx(mean, abs=0.01)
    assert np.cov(u.T) == pytest.approx(var, abs=0.01)


def test_prepare_data_gate_exclusions_and_skips():
    ds = simulate_cube([SimPipeline("a", n_seed=4, p_not_interpolating=0.0),
                        SimPipeline("one_seed", n_seed=1), SimPipeline("b", n_seed=4)], seed=2)
    status = ds[cube.STATUS].values.copy()
    status[0, 0, 0] = cube.DIVERGED
    status[0, 1, 1] = cube.FAILED
    ds[cube.STATUS] = (cube.CELL_DIMS, status)
    tau = ds[cube.TAU_INTERP].values.copy()
    tau[2, 3, :] = np.nan          # pipeline b: no run at level 3 interpolated
    tau[0, 2, 2] = np.nan
    ds[cube.TAU_INTERP] = (cube.CELL_DIMS, tau)
    data = prepare_data(ds)
    assert (data.family, data.likelihood, data.gate) == ("binomial", "per_example", "interpolated")
    assert data.pipelines == ["a", "b"] and "seed" in data.skipped["one_seed"]
    assert data.n_excluded["a"] == {"diverged": 1, "failed": 1, "missing": 0, "not_interpolated": 1}
    assert not data.used[0, 0, 0] and not data.used[0, 2, 2]
    level3 = float(ds[cube.SIGMA].values[3])
    assert data.interpolation["b"]["levels_without_interpolation"] == [level3]
    assert data.interpolation["b"]["by_sigma_w"][repr(level3)] == 0
    assert not data.level_mask[1, 3]          # left out, never averaged in
    every = prepare_data(ds, gate="all")
    assert every.level_mask[1, 3] and every.gate == "all"
    # A table without tau_interp is analysed with every ok run, and says so.
    no_tau = prepare_data(ds.drop_vars(cube.TAU_INTERP))
    assert no_tau.gate == "all" and any("gate 'all'" in n for n in no_tau.notes)


def test_likelihood_choice_counts_without_predictions_and_noise_scales():
    ds = simulate_cube([SimPipeline("a", n_seed=4)], n_test=500, seed=3)
    per = prepare_data(ds)
    counts = prepare_data(ds.drop_vars([cube.TEST_PRED, cube.TEST_LABEL]))
    assert counts.likelihood == "counts"
    np.testing.assert_allclose(per.y, counts.y)
    # independent-errors noise is below the binomial bound
    p = np.nanmean(counts.y)
    binomial = np.sqrt(p * (1 - p) / 500)
    assert per.scale[0] < 0.9 * binomial
    # counts away from the ceiling: the binomial bound, even where the seeds vary more than that
    pooled = np.sqrt(np.mean(np.nanvar(counts.y[0], axis=1, ddof=1)))
    assert np.nanmax(np.nanmean(counts.y[0], axis=1)) < CEILING and pooled > binomial
    assert counts.scale[0] == pytest.approx(binomial)


@pytest.mark.parametrize("top", [0.95, 0.995])
def test_noise_scale_is_the_test_set_noise_or_near_the_ceiling_at_least_the_seeds_sd(top):
    """Exact identities of ``noise_scale`` on tables whose runs vary more than the test set explains:
    away from the ceiling the test-set scale, near it (some level's mean >= CEILING) the pooled SD."""
    rng = np.random.default_rng(4)
    n_test, levels, seeds = 2_000, 4, 6
    run_sd = 0.2 * (1 - top) + 0.002                       # more than the test set explains, at either accuracy
    acc = np.clip(np.linspace(top, top - 0.01, levels)[:, None] + rng.normal(0, run_sd, (levels, seeds)), 0, 1)
    y = np.round(acc * n_test) / n_test
    used = np.ones_like(y, dtype=bool)
    used[2, 5] = False                                     # a run the gate dropped stays out of every sum
    pooled = np.sqrt(np.mean([np.var(r[u], ddof=1) for r, u in zip(y, used, strict=True)]))
    p = float(np.mean(y[used]))
    binomial = np.sqrt(p * (1 - p) / n_test)
    near = max(float(np.mean(r[u])) for r, u in zip(y, used, strict=True)) >= CEILING
    assert near == (top > CEILING) == near_ceiling_data(y, used) and pooled > binomial
    assert noise_scale("counts", y, used, None, n_test) == pytest.approx(pooled if near else binomial, rel=1e-12)
    # per-example predictions: the independent-errors SD, the same rule near the ceiling
    correct = rng.random((levels, seeds, n_test)) < y[..., None]
    q = correct[used].mean(axis=0)
    independent = np.sqrt((q * (1 - q)).sum() * used.sum() / (used.sum() - 1)) / n_test
    got = noise_scale("per_example", y, used, correct, n_test)
    assert got == pytest.approx(max(independent, pooled) if near else independent, rel=1e-12)
    assert noise_scale("gaussian", y, used, None, None) == pytest.approx(pooled, rel=1e-12)


def test_family_delta_and_refusals():
    ds = simulate_cube([SimPipeline("g", family="gaussian", n_seed=3)], seed=0)
    assert prepare_data(ds).family == "gaussian"
    with pytest.raises(UserError, match="needs counts"):
        prepare_data(ds, family="binomial")
    with pytest.raises(UserError, match="not in the cube"):
        prepare_data(ds, metric="nope")
    with pytest.raises(UserError, match="student_t"):
        prepare_data(ds, family="student_t")
    with pytest.raises(UserError, match="gate"):
        prepare_data(ds, gate="some")
    assert resolve_delta(cube.SELECTED_TEST_ACC, None) == 0.01
    assert resolve_delta("val_loss", 0.05) == 0.05
    with pytest.raises(UserError, match="not an accuracy"):
        resolve_delta("val_loss", None)
    with pytest.raises(UserError, match="positive"):
        resolve_delta(cube.SELECTED_TEST_ACC, -1.0)


def test_no_analyzable_pipeline_is_a_user_error():
    ds = simulate_cube([SimPipeline("x", n_seed=1), SimPipeline("y", n_sigma=1, n_seed=3)], seed=0)
    with pytest.raises(UserError, match="no pipeline can be analyzed"):
        prepare_data(ds)


def test_divergence_that_depends_on_sigma_w_is_detected():
    ds = simulate_cube([SimPipeline("a", n_seed=6), SimPipeline("b", n_seed=6)], seed=4)
    status = ds[cube.STATUS].values.copy()
    status[0, -2:, :] = cube.DIVERGED          # a: the two largest sigma_w always diverge
    status[1, [0, 2, 4], [1, 3, 5]] = cube.DIVERGED  # b: scattered
    ds[cube.STATUS] = (cube.CELL_DIMS, status)
    data = prepare_data(ds)
    assert data.divergence_p["a"] < 0.01
    assert data.divergence_p["b"] > 0.2


# Sampling ---------------------------------------------------------------------------------

# First in the file: it compiles the suite's small shape (designs.SMALL) before the demo-contrast
# test on the other worker needs it, which then loads it from the shared cache instead of compiling it too.
@pytest.mark.slow
def test_default_sampling_is_healthy_on_two_pipeline_cubes():
    # one null and one large-memory pipeline, 6 seeds: the design where a shared hyper-prior
    # made the sampler diverge; three datasets on one compiled sampler, default settings
    model = None
    for seed in range(3):
        ds = simulate_cube([SimPipeline("null", sigma_sd=0.0, n_seed=6), SimPipeline("large", sigma_sd=1.0, n_seed=6)],
                           n_test=600, seed=seed)
        data = prepare_data(ds)
        if model is None:
            model = MemoryModel(data, slots=SMALL)
            model.fit(seed=seed, progress=False)
            fit = model
        else:
            fit = model.refit(data, seed=seed)
        diag = fit.diagnostics()
        assert diag["divergences"] == 0 and diag["max_rhat"] <= 1.01 and diag["min_ess_bulk"] >= 400
        out = fit.summarize(0.01)
        assert out["large"]["verdict"] == "remembers" and out["null"]["verdict"] != "remembers"


@pytest.fixture(scope="module")
def quick_fit():
    """A quick-preset-like cube (7 pipelines x 6 sigma_w x 3-6 seeds, 600 examples) with one
    null and one large-memory pipeline with 6 seeds, diverged runs in one pipeline, fitted at
    the default sampler settings."""
    specs = [SimPipeline("null6", sigma_sd=0.0, n_seed=6), SimPipeline("large6", sigma_sd=0.8, n_seed=6),
             SimPipeline("null3", sigma_sd=0.0, seed_sd=0.4, n_seed=3), SimPipeline("mid4", sigma_sd=0.2, n_seed=4),
             SimPipeline("small5", sigma_sd=0.05, n_seed=5), SimPipeline("tiny6", sigma_sd=0.0, seed_sd=0.02,
                                                                          residual_sd=0.02, n_seed=6),
             SimPipeline("diverging", sigma_sd=0.0, n_seed=6)]
    ds = simulate_cube(specs, n_test=600, seed=8)
    status = ds[cube.STATUS].values.copy()
    status[6, -2:, :] = cube.DIVERGED
    ds[cube.STATUS] = (cube.CELL_DIMS, status)
    # padded to 24 seeds (unused seeds are exactly absent) so that the penicillin test below
    # refits the same compiled sampler
    model = MemoryModel(pad_seeds(prepare_data(ds), 24))
    model.fit(seed=1, progress=False)
    return model


@pytest.mark.slow
def test_default_sampling_is_healthy_on_null_and_large_memory(quick_fit):
    diag = quick_fit.diagnostics()
    print(f"quick-like cube: divergences {diag['divergences']}, max R-hat {diag['max_rhat']:.4f}, "
          f"min bulk ESS {diag['min_ess_bulk']:.0f}, compile {quick_fit.compile_seconds:.1f} s, "
          f"sampling {quick_fit.sampling_seconds:.1f} s")
    assert diag["divergences"] == 0
    assert diag["max_rhat"] <= 1.01
    assert diag["min_ess_bulk"] >= 400
    assert not diag["flags"]


@pytest.mark.slow
def test_summary_shape_verdicts_and_divergence_sensitivity(quick_fit):
    out = quick_fit.summarize(0.01)
    assert out["large6"]["verdict"] == "remembers"
    assert out["null6"]["verdict"] != "remembers" and out["null3"]["verdict"] != "remembers"
    for e in out.values():
        assert e["likelihood"] == "per_example" and "THIS test set" in e["estimand"]
        assert set(e["mcse"]) == {"p_spread_gt_delta", "p_spread_lt_delta"} and e["mcse"]["p_spread_gt_delta"] > 0
        assert e["verdict"] in ("remembers", "forgets", "undecided")
        assert not e["borderline"] or e["verdict"] == "undecided"        # a flag on an undecided verdict only
        assert 0 <= e["memory_share"]["median"] <= 1
        assert set(e["prior_sensitivity"]) >= {"prior", "p_spread_gt_delta", "p_spread_lt_delta", "verdict"}
        assert e["interpolation"]["gate"] == "interpolated"
    div = out["diverging"]["divergence"]
    assert div["n_diverged"] == 12 and div["depends_on_sigma_w"] and div["warning"]
    sens = div["sensitivity"]
    # two levels at chance accuracy: the sensitivity refit sees a huge spread
    assert sens["verdict"] == "remembers" and sens["spread"]["median"] > 0.3
    assert out["null6"]["divergence"]["sensitivity"] is None
    ppc = quick_fit.ppc(seed=0)
    assert all(0.0 < ppc[p]["spread"]["p_value"] < 1.0 for p in ppc)
    # the reported interval holds both the model's and the seeds' own t interval of the attaining pair, median kept
    d = quick_fit.data
    for a, e in enumerate(out.values()):
        rep, mod = e["spread"], e["spread_model"]
        assert rep["median"] == mod["median"] and rep["q05"] <= mod["q05"] and rep["q95"] >= mod["q95"]
        med = np.asarray(e["expected"]["median"])
        lev = d.level_mask[a]
        _, lower, upper = pair_interval(d.y[a][lev], int(np.argmax(med)), int(np.argmin(med)), n_test=d.n_test,
                                        run_sd=float(d.scale[a]))
        assert rep["q05"] <= max(lower, 0.0) + 1e-12 and rep["q95"] >= upper - 1e-12
        assert (e["spread_interval"] == "model") == (rep["q05"] == mod["q05"] and rep["q95"] == mod["q95"])


@pytest.mark.slow
def test_penicillin_posterior_medians_stay_near_reml(quick_fit):
    # lme4: diameter ~ (1|plate) + (1|sample); REML SDs plate 0.8467, sample 1.9316, residual
    # 0.5499. sample plays sigma_w (6 levels), plate the seed (24).
    df = pd.read_csv(DATA / "penicillin.csv")
    tab = df.pivot(index="sample", columns="plate", values="diameter").values.astype(float)
    within = np.sqrt(np.mean(np.var(tab, axis=1, ddof=1)))   # the pooled SD across seeds in levels
    # six more independent pipelines of noise fill the compiled shape (pipelines share nothing)
    y = np.concatenate([tab[None], np.random.default_rng(0).standard_normal((6, *tab.shape))])
    scale = np.r_[within, np.ones(6)]
    model = quick_fit.refit(table_data(y, np.ones(y.shape, dtype=bool), scale, metric="diameter"), seed=3)
    post = model.idata.posterior
    med = {n: float(np.median(post[n].values[..., 0])) for n in ("sigma_sd", "seed_sd", "residual_sd")}
    print("penicillin posterior medians", med)
    assert med["sigma_sd"] == pytest.approx(1.9316, rel=0.25)
    assert med["seed_sd"] == pytest.approx(0.8467, rel=0.15)
    assert med["residual_sd"] == pytest.approx(0.5499, rel=0.1)
    assert model.diagnostics()["divergences"] == 0


def test_minimal_imported_cube_without_status_is_analyzable_data():
    """A minimal cube (three dims, one run variable, no status, no tau_interp) gives gaussian
    data with gate 'all'; NaN cells count as missing."""
    ds = cube.empty_cube(["a", "b"], [0.5, 1.0, 2.0], [0, 1, 2])
    y = np.arange(18, dtype=float).reshape(2, 3, 3) + np.random.default_rng(0).normal(0, 0.1, (2, 3, 3))
    y[1, 2, 2] = np.nan
    ds["final_loss"] = (cube.CELL_DIMS, y)
    assert not cube.errors(ds)
    data = prepare_data(ds)
    assert (data.metric, data.family, data.likelihood, data.gate, data.n_obs) == \
        ("final_loss", "gaussian", "gaussian", "all", 17)
    assert data.n_excluded["b"] == {"diverged": 0, "failed": 0, "missing": 1, "not_interpolated": 0}
    # the noise scale is the pooled SD across seeds within levels, not the total SD
    within = np.sqrt(np.mean(np.var(y[0], axis=1, ddof=1)))
    assert data.scale[0] == pytest.approx(within) and data.scale[0] < np.std(y[0])


def test_analyze_refuses_a_cube_without_analyzable_pipelines(tmp_path):
    from initmem.tests._cli import assert_user_error, invoke

    ds = simulate_cube([SimPipeline("x", n_seed=1)], seed=0)
    cube.write_cube(ds, tmp_path / "c.nc")
    proc = invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "an")
    assert_user_error(proc, "no pipeline can be analyzed")
    assert not (tmp_path / "an" / "summary.json").exists()


def test_test_set_se_is_the_paired_example_level_error():
    # Known answer: with the best and worst level's seed-averaged correctness per example, the
    # standard error is that of a mean of paired differences.
    ds = simulate_cube([SimPipeline("a", sigma_sd=0.5, n_seed=4)], n_test=300, seed=6)
    data = prepare_data(ds)
    pred = ds[cube.TEST_PRED].transpose(*cube.CELL_DIMS, cube.EXAMPLE).values[0]
    right = (pred == ds[cube.TEST_LABEL].values).mean(axis=1)       # (sigma_w, example)
    acc = right.mean(axis=1)
    d = right[np.argmax(acc)] - right[np.argmin(acc)]
    assert data.test_set_se["a"] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    assert prepare_data(ds.drop_vars([cube.TEST_PRED, cube.TEST_LABEL])).test_set_se["a"] is None


def test_thin_tables_with_holes_are_skipped_not_imputed():
    # A 3 x 2 table with one failed run has 5 observed cells for 3 levels and 2 seeds: 1 residual
    # df, and the imputed cell would fit anything (the clocks preset's tables diverged there).
    ds = simulate_cube([SimPipeline("thin", n_sigma=3, n_seed=2, p_not_interpolating=0.0),
                        SimPipeline("full", n_sigma=3, n_seed=2, p_not_interpolating=0.0)], seed=5)
    status = ds[cube.STATUS].values.copy()
    status[0, 2, 1] = cube.FAILED
    ds[cube.STATUS] = (cube.CELL_DIMS, status)
    data = prepare_data(ds)
    assert data.pipelines == ["full"] and "residual degrees of freedom" in data.skipped["thin"]


# The compiled sampler: once per structure, in this process and on disk (models/compiled.py) ------

def _two_pipeline_data(seed: int = 0):
    ds = simulate_cube([SimPipeline("null", sigma_sd=0.0, n_seed=6), SimPipeline("large", sigma_sd=1.0, n_seed=6)],
                       n_test=600, seed=seed)
    return ds, prepare_data(ds)


@pytest.mark.slow
def test_structure_key_follows_the_structure_not_the_data():
    _, data = _two_pipeline_data(0)
    _, other = _two_pipeline_data(1)
    key = compiled.structure_key(MemoryModel(data).structure())
    assert compiled.structure_key(MemoryModel(other).structure()) == key        # new data, same sampler
    assert compiled.structure_key(MemoryModel(pad_seeds(data, 8)).structure()) != key
    assert compiled.structure_key(MemoryModel(data, priors=Priors(slope_scale=3.0)).structure()) != key
    # padded to one compiled shape, tables of other shapes share a key
    small = simulate_cube([SimPipeline("a", n_sigma=3, n_seed=4)], n_test=600, seed=0)
    padded = {compiled.structure_key(MemoryModel(d, slots=SMALL).structure()) for d in (data, prepare_data(small))}
    assert len(padded) == 1 and key not in padded
    assert MemoryModel(data, slots=(1, 0, 3)).shape == data.used.shape == (2, 6, 6)   # never below the table
    # the seed design is data: independent seeds (no seed effect) run on the paired design's sampler
    independent = replace(data, seed_design=cube.SEED_INDEPENDENT)
    assert compiled.structure_key(MemoryModel(independent).structure()) == key


@pytest.mark.slow
def test_padding_multiplies_the_density_by_a_factor_free_of_the_real_parameters():
    # Exact identity behind the slots: the padded model's log density minus the table's own is the same
    # number at every value of the real parameters (padding slots held fixed), so the posterior of the
    # real parameters is the table's own.
    rng = np.random.default_rng(1)
    used = np.ones((2, 4, 3), dtype=bool)
    used[1, 2, 0] = False                                     # one imputed cell
    d = table_data(rng.standard_normal((2, 4, 3)), used, 1.0)
    own, big = MemoryModel(d, delta=0.01), MemoryModel(d, delta=0.01, slots=(3, 6, 5))
    f_own, f_big = log_density(own.model), log_density(big.model)
    start = big.model.initial_point()
    pad = {n: np.random.default_rng(5).standard_normal(v.shape) for n, v in start.items()}
    diffs = []
    for k in range(3):
        real = {n: np.random.default_rng(10 + k).standard_normal(v.shape) for n, v in own.model.initial_point().items()}
        point = {n: v.copy() for n, v in pad.items()}
        for n, v in real.items():
            point[n][tuple(slice(0, m) for m in v.shape)] = v
        diffs.append(f_big(point) - f_own(real))
    assert np.ptp(diffs) < 1e-9 and np.isfinite(diffs).all(), diffs


def test_the_disk_cache_is_used_only_in_a_private_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(compiled.CACHE_ENV, "off")
    assert compiled.cache_dir() is None and "off" in compiled._entry_folder("k" * 64)[1]
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(compiled.CACHE_ENV, str(shared))
    folder, note = compiled._entry_folder("k" * 64)
    assert folder is None and "writable by other users" in note
    assert not (shared / "compiled").exists()          # nothing written there either
    monkeypatch.delenv(compiled.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compiled.cache_dir() == tmp_path / "xdg" / "initmem"
    folder, note = compiled._entry_folder("k" * 64)
    assert note is None and folder.parent.parent == tmp_path / "xdg" / "initmem"
    assert compiled.untrusted(folder) is None and (folder.stat().st_mode & 0o077) == 0


def test_a_corrupt_cache_entry_is_recompiled_not_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(compiled.CACHE_ENV, str(tmp_path / "cache"))
    key = "c" * 64
    folder, _ = compiled._entry_folder(key)
    (folder / "meta.json").write_text('{"format": 1, "key": "' + key + '", "names": [')   # truncated
    (folder / "logp.nbi").write_bytes(b"\x80\x04garbage")
    calls = []

    def compile_stub(model, where, k):
        calls.append(where)
        return "sampler", None

    monkeypatch.setattr(compiled, "_compile", compile_stub)
    monkeypatch.setattr(compiled, "_MEMORY", type(compiled._MEMORY)())
    got = compiled.compile_model(object(), key, {})
    assert got.source == "compiled" and not got.cache_hit and got.sampler == "sampler"
    assert "could not be loaded" in got.note and calls == [folder]
    assert [f.name for f in folder.iterdir()] == [compiled.COMPILING_LOCK]   # the corrupt entry is gone


def test_two_processes_needing_one_structure_compile_it_once(tmp_path, monkeypatch):
    """The second waits on the entry's lock while the first compiles and stores, then loads what it stored."""
    import fcntl
    import os
    import time

    monkeypatch.setenv(compiled.CACHE_ENV, str(tmp_path / "cache"))
    key = "d" * 64
    folder, _ = compiled._entry_folder(key)
    events = []

    def compile_stub(model, where, k):   # reached only by a process that found no entry under the lock
        events.append("compiled")
        return "sampler", None

    def load_stub(where, k, model, data):
        events.append("loaded")
        return "stored sampler"

    monkeypatch.setattr(compiled, "_compile", compile_stub)
    monkeypatch.setattr(compiled, "_load", load_stub)
    monkeypatch.setattr(compiled, "_MEMORY", type(compiled._MEMORY)())
    fd = os.open(folder / compiled.COMPILING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)            # another process is compiling this structure
    pid = os.fork()
    if pid == 0:                              # that process: it stores its entry, then lets go of the lock
        time.sleep(0.3)                       # (without the lock, the parent would find no entry and compile)
        (folder / "meta.json").write_text("{}")
        os.close(fd)
        os._exit(0)
    os.close(fd)                              # the child holds the lock on the shared open file until it exits
    got = compiled.compile_model(object(), key, {})
    os.waitpid(pid, 0)
    assert events == ["loaded"] and got.source == "disk" and got.sampler == "stored sampler"


@pytest.mark.slow
def test_one_compile_serves_every_model_of_the_structure_with_identical_draws():
    _, data = _two_pipeline_data(0)
    kw = {"draws": 200, "tune": 200, "chains": 2, "seed": 4, "progress": False}
    first = MemoryModel(data, slots=SMALL)
    first.fit(**kw)            # compiled, or from an earlier test of this structure
    again = MemoryModel(data, slots=SMALL)
    again.fit(**kw)
    assert again.compile_cache["source"] == "memory" and again.compile_cache["cache_hit"]
    compiled.clear_memory()
    loaded = MemoryModel(data, slots=SMALL)
    loaded.fit(**kw)
    assert loaded.compile_cache["source"] == "disk" and loaded.diagnostics()["compile_cache"]["cache_hit"]
    for fit in (again, loaded):
        for name in ("sigma_sd", "seed_sd", "residual_sd", "spread"):
            np.testing.assert_array_equal(fit.idata.posterior[name].values, first.idata.posterior[name].values)
    # A cube of another shape on the same compiled sampler: its posterior carries its own shape only.
    other = prepare_data(simulate_cube([SimPipeline(n, n_sigma=3, n_seed=4) for n in "abc"], n_test=600, seed=1))
    fit = MemoryModel(other, slots=SMALL)
    fit.fit(**kw)
    post = fit.idata.posterior
    assert fit.compile_cache["source"] == "memory" and fit.diagnostics()["divergences"] == 0
    assert (post.sizes[cube.PIPELINE], post.sizes[cube.SIGMA], post.sizes[cube.SEED]) == (3, 3, 4)
    assert post[cube.PIPELINE].values.tolist() == ["a", "b", "c"] and set(fit.summarize(0.01)) == {"a", "b", "c"}
    assert all(post[f"{n}_log__"].shape[-1] == 3 for n in ("sigma_sd_z", "residual_sd_z"))


@pytest.mark.slow
def test_a_second_process_loads_the_compiled_sampler_and_gets_the_same_posterior(tmp_path, cli):
    from initmem.models import arviz_io
    from initmem.results import load_summary
    from initmem.tests._cli import invoke

    ds, _ = _two_pipeline_data(2)
    cube.write_cube(ds, tmp_path / "c.nc")
    compiled.clear_memory()    # this process, too, loads the sampler from disk or compiles and stores it
    opts = ("--draws", "200", "--tune", "200", "--chains", "2", "--seed", "3", *SMALL_FLAG)
    here = invoke("--quiet", "analyze", tmp_path / "c.nc", "--out", tmp_path / "here", *opts)
    assert here.returncode == 0, here.stderr
    proc = cli("--quiet", "analyze", tmp_path / "c.nc", "--out", tmp_path / "there", *opts)
    assert proc.returncode == 0, proc.stderr
    diag = load_summary(tmp_path / "there").diagnostics.to_json()
    assert diag["compile_cache"]["source"] == "disk" and diag["compile_cache"]["cache_hit"] is True
    a = arviz_io.from_netcdf(tmp_path / "here" / "posterior.nc").posterior
    b = arviz_io.from_netcdf(tmp_path / "there" / "posterior.nc").posterior
    for name in ("sigma_sd", "seed_sd", "slope_sd", "residual_sd"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
