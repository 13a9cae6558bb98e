"""The hierarchical memory model: recovery, calibration (SBC-style), verdicts, diagnostics, CLI.

Every statistical test fits simulated cubes with a known truth (initmem.simulate). One nutpie
model is compiled per design and refitted on new data of the same design with
``MemoryModel.update_observations`` (nutpie's ``with_data``), so the calibration runs do not
recompile.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from initmem import cube
from initmem.errors import UserError
from initmem.models.memory import MemoryModel, prepare_data, verdict
from initmem.models.plan import decide
from initmem.simulate import SimPipeline, read_truth, simulate_cube

from .conftest import assert_user_error

COMPONENTS = ("sigma_sd", "seed_sd", "residual_sd")

# One design for every fit in this file: 4 pipelines x 6 sigma_w levels, 6/6/5/4 seeds.
BASE = [
    SimPipeline("null6", sigma_sd=0.0, seed_sd=0.15, residual_sd=0.1, n_seed=6),   # the funnel case
    SimPipeline("floor", sigma_sd=0.3, seed_sd=0.0, residual_sd=0.0, n_seed=6),    # binomial noise only
    SimPipeline("rem5", sigma_sd=0.13, seed_sd=0.1, residual_sd=0.05, n_seed=5),   # ~5 points of spread
    SimPipeline("mid", sigma_sd=0.4, seed_sd=0.1, residual_sd=0.1, n_seed=4),
]


def _cube_with_real_memory() -> tuple:
    """The first simulation seed whose 'rem5' pipeline has a true spread of 5 (+-0.5) points."""
    for s in range(200):
        ds = simulate_cube(BASE, seed=s)
        if abs(read_truth(ds)["pipelines"]["rem5"]["spread"] - 0.05) < 0.005:
            return ds, s
    raise AssertionError("no simulation seed gives a 5-point spread")


@pytest.fixture(scope="module")
def fitted():
    ds, s = _cube_with_real_memory()
    model = MemoryModel(prepare_data(ds))
    model.fit(draws=1000, tune=1000, chains=4, seed=1, progress=False)
    return ds, model


def _covered(q: dict, truth: float) -> bool:
    return q["q05"] <= truth <= q["q95"]


# Fast checks (no sampling) ------------------------------------------------------------------

def test_verdict_rule_follows_spec():
    assert verdict(0.95, 0.05) == "remembers"
    assert verdict(0.03, 0.97) == "forgets"
    assert verdict(0.6, 0.4) == "inconclusive"
    assert verdict(0.94, 0.06) == "inconclusive"


def test_prepare_data_excludes_and_counts_bad_cells_and_skips_thin_pipelines():
    ds = simulate_cube([SimPipeline("a", n_seed=4), SimPipeline("one_seed", n_seed=1),
                        SimPipeline("b", n_seed=4)], seed=2)
    status = ds["status"].values.copy()
    status[0, 0, 0] = cube.DIVERGED
    status[0, 1, 1] = cube.FAILED
    status[0, 2, 2] = cube.FAILED
    ds["status"] = (cube.CELL_DIMS, status)
    data = prepare_data(ds)
    assert data.family == "binomial" and data.metric == "selected_test_acc"
    assert data.pipelines == ["a", "b"]
    assert "one_seed" in data.skipped and "seed" in data.skipped["one_seed"]
    assert data.n_excluded["a"] == {"diverged": 1, "failed": 2, "missing": 0}
    assert data.n_excluded["one_seed"]["missing"] == 6 * 3  # seeds 1..3 never ran at any level
    assert data.n_obs == 24 - 3 + 24
    # Only cells with status ok enter the likelihood: the diverged one is gone.
    a = data.pipelines.index("a")
    assert not np.any((data.p_idx == a) & (data.i_idx == 0) & (data.s_idx == 0))


def test_no_analyzable_pipeline_is_a_user_error():
    ds = simulate_cube([SimPipeline("x", n_seed=1), SimPipeline("y", n_sigma=1, n_seed=3)], seed=0)
    with pytest.raises(UserError, match="no pipeline can be analyzed"):
        prepare_data(ds)


def test_family_choice_and_refusals():
    ds = simulate_cube([SimPipeline("g", family="gaussian", n_seed=3)], seed=0)
    assert prepare_data(ds).family == "gaussian"  # no counts -> gaussian
    with pytest.raises(UserError, match="needs counts"):
        prepare_data(ds, family="binomial")
    with pytest.raises(UserError, match="not in the cube"):
        prepare_data(ds, metric="nope")
    assert prepare_data(ds, family="student_t").family == "student_t"


def test_plan_decision_rule_known_answers():
    rng = np.random.default_rng(0)
    lev = np.array([0.0, 0.0, 0.1, 0.2])[None, :, None]
    noisy = lev + rng.normal(0, 0.005, (200, 4, 8))
    assert np.all(decide(noisy, 0.01) == 1)              # 20-point spread, tiny noise
    flat = rng.normal(0, 0.0005, (200, 4, 8))
    assert np.all(decide(flat, 0.01) == -1)              # no spread, tiny noise
    vague = rng.normal(0, 0.05, (200, 4, 3))
    assert np.mean(decide(vague, 0.01) != 0) < 0.1       # pure noise, few seeds: undecided


# Recovery and verdicts on one fit -------------------------------------------------------------

@pytest.mark.slow
def test_recovery_covers_truth_including_zero_sd(fitted):
    ds, model = fitted
    truth = read_truth(ds)["pipelines"]
    summ = model.summarize(0.01)
    diag = model.diagnostics()
    assert diag["divergences"] == 0, diag["flags"]
    misses = []
    band_hits = band_total = 0
    for pipe, t in truth.items():
        for comp in COMPONENTS:
            q = summ[pipe][comp]
            if t[comp] == 0.0:
                # A zero SD cannot lie inside an interval of a positive quantity: the interval
                # must reach down to the noise floor instead.
                assert q["q05"] < 0.05, (pipe, comp, q)
            elif not _covered(q, t[comp]):
                misses.append((pipe, comp, t[comp], q))
        if t["spread"] > 1e-9 and not _covered(summ[pipe]["spread"], t["spread"]):
            misses.append((pipe, "spread", t["spread"], summ[pipe]["spread"]))
        # The expected metric per level (seed noise averaged out) tracks the truth.
        e = summ[pipe]["expected"]
        band_hits += sum(lo <= x <= hi for lo, x, hi in zip(e["q05"], t["expected"], e["q95"], strict=True))
        band_total += len(t["expected"])
        if t["sigma_sd"] >= 0.3:
            assert np.corrcoef(e["median"], t["expected"])[0, 1] > 0.8, pipe
    assert band_hits / band_total >= 0.7, (band_hits, band_total)
    # 13 nonzero truths at 90% each: allow two misses (P(> 2 misses) ~ 14% under calibration is
    # too high to be a fixed test, but these intervals are checked at scale in the SBC test).
    assert len(misses) <= 3, misses


@pytest.mark.slow
def test_real_memory_remembers_and_null_does_not(fitted):
    ds, model = fitted
    summ = model.summarize(0.01)
    assert summ["rem5"]["n_seed"] == 5
    assert summ["rem5"]["verdict"] == "remembers", summ["rem5"]["spread"]
    assert summ["null6"]["verdict"] != "remembers", summ["null6"]["spread"]
    assert summ["mid"]["verdict"] == "remembers"


@pytest.mark.slow
def test_binomial_floor_is_not_mistaken_for_seed_variance(fitted):
    ds, model = fitted
    summ = model.summarize(0.01)
    floor = summ["floor"]["seed_sd"]
    # Test-set noise alone gives each cell a logit SD of about 0.12 here; a model that ignored it
    # would report part of it as seed variance. The posterior must reach down to zero and stay
    # well below both that noise and the seed SD of a pipeline that has real seed variance.
    assert floor["q05"] < 0.02 and floor["median"] < 0.1, floor
    assert floor["median"] < 0.6 * summ["null6"]["seed_sd"]["median"], (floor, summ["null6"]["seed_sd"])
    assert summ["floor"]["residual_sd"]["median"] < 0.08, summ["floor"]["residual_sd"]


@pytest.mark.slow
def test_ppc_and_outcome_scale_summaries(fitted):
    ds, model = fitted
    ppc = model.ppc(seed=0)
    for pipe, checks in ppc.items():
        for stat in ("spread", "seed_sd"):
            assert 0.01 < checks[stat]["p_value"] < 0.99, (pipe, stat, checks[stat])
    summ = model.summarize(0.01)
    shares = summ["mid"]["shares"]
    assert shares["sigma"] == summ["mid"]["memory_share"]
    e = summ["mid"]["expected"]
    assert len(e["sigma_w"]) == 6 and all(lo <= m <= hi for lo, m, hi in zip(e["q05"], e["median"], e["q95"], strict=True))


@pytest.mark.slow
def test_failed_diagnostics_are_flagged_retried_and_reported(fitted, capsys):
    from initmem.analysis import fit_checked

    ds, model = fitted
    diag = fit_checked(model, sampler="nutpie", draws=40, tune=60, chains=4, seed=3, progress=False)
    err = capsys.readouterr().err
    assert diag["retried"] is True and len(diag["attempts"]) == 2
    assert diag["attempts"][1]["target_accept"] == 0.99 and diag["attempts"][1]["tune"] == 120
    assert any("ESS" in f for f in diag["flags"])  # 40 draws cannot give ESS 400: still flagged
    assert "initmem: warning:" in err and "ESS" in err


# Calibration over many datasets -----------------------------------------------------------------

@pytest.mark.slow
def test_sbc_coverage_and_no_false_memory(fitted):
    """20 datasets drawn with random components (some exactly zero) from the same design:
    90% intervals cover the nonzero truths 75-100% of the time, no divergences in the fits that
    would be reported (after analyze's automatic retry), and the sigma_sd = 0 pipeline with six
    seeds never comes out 'remembers'. Two chains of 500 draws per fit keep this affordable."""
    ds0, model = fitted
    rng = np.random.default_rng(2024)
    covered, total, null_verdicts, divergences, retries = 0, 0, [], 0, 0
    for k in range(20):
        specs = []
        for p in BASE:
            sig = 0.0 if p.name == "null6" or rng.random() < 0.2 else float(rng.uniform(0.05, 0.6))
            seed_sd = 0.0 if p.name == "floor" else float(rng.uniform(0.03, 0.3))
            res = float(rng.uniform(0.02, 0.2))
            specs.append(replace(p, sigma_sd=sig, seed_sd=seed_sd, residual_sd=res))
        ds = simulate_cube(specs, seed=1000 + k)
        data = prepare_data(ds)
        model.update_observations(data.y)
        model.fit(draws=500, tune=500, chains=2, seed=k, progress=False)
        if model.diagnostics()["divergences"]:
            # analyze's rule: one automatic retry with target_accept 0.99 and twice the tuning.
            retries += 1
            model.fit(draws=500, tune=1000, chains=2, seed=100 + k, target_accept=0.99, progress=False)
        divergences += model.diagnostics()["divergences"]
        summ = model.summarize(0.01)
        truth = read_truth(ds)["pipelines"]
        for pipe, t in truth.items():
            for comp in (*COMPONENTS, "spread"):
                if t[comp] > 1e-9:
                    total += 1
                    covered += _covered(summ[pipe][comp], t[comp])
        null_verdicts.append(summ["null6"]["verdict"])
    coverage = covered / total
    print(f"SBC: {covered}/{total} = {coverage:.3f} of 90% intervals cover the truth; "
          f"divergences after retry {divergences} ({retries} retried); null verdicts {null_verdicts}")
    assert 0.75 <= coverage <= 1.0, coverage
    assert divergences == 0
    assert "remembers" not in null_verdicts


# The command line ------------------------------------------------------------------------------

@pytest.mark.slow
def test_analyze_and_plan_cli_end_to_end(tmp_path, cli):
    specs = [SimPipeline("sgd", sigma_sd=0.5), SimPipeline("adam", sigma_sd=0.0, n_seed=4),
             SimPipeline("lonely", n_seed=1)]
    ds = simulate_cube(specs, seed=5)
    status = ds["status"].values.copy()
    status[0, 0, 0], status[0, 3, 1] = cube.DIVERGED, cube.FAILED
    ds["status"] = (cube.CELL_DIMS, status)
    cube.write_cube(ds, tmp_path / "c.nc")
    out = tmp_path / "an"
    proc = cli("analyze", tmp_path / "c.nc", "--out", out, "--draws", "400", "--tune", "500", "--seed", "2")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["pipelines"]) == {"sgd", "adam"}
    assert "lonely" in summary["skipped"] and "lonely" in proc.stderr
    sgd = summary["pipelines"]["sgd"]
    assert sgd["n_excluded"] == {"diverged": 1, "failed": 1, "missing": 0}
    assert sgd["verdict"] == "remembers"
    for key in ("sigma_sd", "seed_sd", "residual_sd", "memory_share", "spread", "p_spread_gt_delta", "verdict",
                "expected", "shares", "ppc", "diagnostics", "frequentist", "agreement"):
        assert key in sgd, key
    d = summary["diagnostics"]
    for key in ("sampler", "max_rhat", "min_ess_bulk", "divergences", "seconds", "compile_seconds",
                "sampling_seconds", "retried", "flags"):
        assert key in d, key
    assert d["sampler"] == "nutpie" and summary["versions"]["pymc"]
    if d["flags"]:  # never hidden: whatever is flagged in the file is on stderr too
        assert "initmem: warning:" in proc.stderr
    from initmem.models import arviz_io

    post = arviz_io.from_netcdf(out / "posterior.nc").posterior
    assert {"sigma_sd", "spread", "expected"} <= set(post.data_vars)
    assert list(post["pipeline"].values) == ["sgd", "adam"]

    proc = cli("plan", out, "--delta", "0.02", "--json", "--n-sim", "100")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["delta"] == 0.02 and set(plan["pipelines"]) == {"sgd", "adam"}
    assert plan["pipelines"]["sgd"]["posterior"]["seeds_needed"] is not None
    proc = cli("plan", out)
    assert proc.returncode == 0 and "sgd" in proc.stdout and "rule:" in proc.stdout


def test_analyze_refuses_a_cube_without_analyzable_pipelines(tmp_path, cli):
    ds = simulate_cube([SimPipeline("x", n_seed=1)], seed=0)
    cube.write_cube(ds, tmp_path / "c.nc")
    proc = cli("analyze", tmp_path / "c.nc", "--out", tmp_path / "an")
    assert_user_error(proc, "no pipeline can be analyzed")
    assert not (tmp_path / "an" / "summary.json").exists()


def test_plan_without_analysis_is_a_user_error(tmp_path, cli):
    assert_user_error(cli("plan", tmp_path), "run 'initmem analyze")


def test_minimal_imported_cube_without_status_is_analyzable_data():
    """A minimal cube (three dims, one run variable, no status) gives gaussian long-form data;
    NaN cells count as missing."""
    ds = cube.empty_cube(["a", "b"], [0.5, 1.0, 2.0], [0, 1, 2])
    y = np.arange(18, dtype=float).reshape(2, 3, 3)
    y[1, 2, 2] = np.nan
    ds["final_loss"] = (cube.CELL_DIMS, y)
    assert not cube.errors(ds)
    data = prepare_data(ds)
    assert (data.metric, data.family, data.n_obs) == ("final_loss", "gaussian", 17)
    assert data.n_excluded["b"] == {"diverged": 0, "failed": 0, "missing": 1}


@pytest.mark.slow
def test_gaussian_metric_with_trend_comparison(tmp_path):
    """The gaussian path end to end (in-process) with the smooth-trend variant compared by LOO."""
    from initmem.analysis import analyze_cube

    specs = [SimPipeline("g1", sigma_sd=0.5, family="gaussian"),
             SimPipeline("g0", sigma_sd=0.0, family="gaussian", n_seed=6)]
    ds = simulate_cube(specs, seed=3)
    cube.write_cube(ds, tmp_path / "g.nc")
    s = analyze_cube(tmp_path / "g.nc", tmp_path / "an", draws=1000, tune=1000, delta=0.1, progress=False,
                     trend=True)
    truth = read_truth(ds)["pipelines"]
    assert s["family"] == "gaussian" and s["pipelines"]["g1"]["verdict"] == "remembers"
    assert _covered(s["pipelines"]["g1"]["spread"], truth["g1"]["spread"])
    assert s["pipelines"]["g0"]["verdict"] != "remembers"
    rows = s["trend"]["comparison"]
    assert {r["model"] for r in rows} == {"exchangeable", "trend"}
    assert set(s["trend"]["verdict"]) == {"g1", "g0"}
    assert (tmp_path / "an" / "summary.json").exists() and (tmp_path / "an" / "posterior.nc").exists()
