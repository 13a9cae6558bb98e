"""The scale verdict's seed tests on crossed seed designs (models/paired.py, ``crossed``; simulate/draw.py).

Exact identities of the crossed-block pair moments on hand tables; the level of the ordered test ("remembers")
and of the intersection-union test ("forgets") at a true spread of exactly delta with a strong init x sigma_w
(and data x sigma_w) interaction, checked so that a true rate credibly above the level fails, with the same
check failing for the run-as-block treatment (the control that shows the crossed moments matter); the power to
find a clear memory; the simulator's crossed cubes, read back by the analysis's data preparation; the one
complete-block rule (cube/crossed.py) that the tests and the variance components share; the verdict's guard that
on a crossed design "forgets" needs the intersection-union test (models/summaries.py); and the planner's refusal
of crossed designs (models/plan.py).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from initmem import cube
from initmem import names as N
from initmem.cube.crossed import complete_crossed_block
from initmem.cube.describe import crossed_design
from initmem.cube.validate import validate
from initmem.errors import UserError
from initmem.models.data import prepare_data
from initmem.models.paired import (
    CrossedSeeds,
    crossed_moments,
    equivalence_check,
    forgets_bounds,
    forgets_levels,
    multiplicative_ok,
    paired_check,
    remembers_at,
)
from initmem.models.plan import plan
from initmem.models.summaries import (
    RULE_FORGETS_IUT,
    _tests,
    crossed_note,
    decide_pipeline,
    verdict,
    verdict_flagged,
)
from initmem.results import SUMMARY_JSON, SUMMARY_SCHEMA, Summary
from initmem.simulate import SimPipeline, preset_pipelines, read_truth, simulate_cube
from initmem.simulate.draw import crossed_tables, sigma_levels
from initmem.stats.crossed import complete_block

DELTA = 0.01
ALPHA = 0.05
IUT_ALPHA = forgets_levels(ALPHA)[0]          # the level "forgets" runs its intersection-union test at
N_TABLES = 4000
# A strong interaction: each init (data) seed's effect differs by sigma_w level by as much as delta.
INIT_X_SIGMA = {"init_sd": 0.01, "init_sigma_sd": 0.01, "data_sd": 0.005, "residual_sd": 0.003}
DATA_X_SIGMA = {"init_sd": 0.01, "data_sd": 0.005, "data_sigma_sd": 0.01, "residual_sd": 0.003}
# Measured power of "remembers" at a spread of 3 delta over 5 levels (a ramp), 8 x 4, INIT_X_SIGMA:
# 0.921 of 4,000 tables (the run-as-block test: 0.999, at a false rate of 21%); guarded at a bar under it.
POWER_3DELTA = 0.88


def _hand() -> np.ndarray:
    return np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 9.0]])   # D[i, j]: 2 init x 3 data seeds


def test_crossed_moments_are_the_contract_formula_on_a_hand_table():
    mean, se, df = crossed_moments(_hand())
    # row means (2, 6): var 8, / I = 4; column means (2.5, 3.5, 6): var 3.25, / J = 13/12
    assert float(mean) == 4.0
    assert float(se) ** 2 == pytest.approx(4.0 + 13.0 / 12.0, rel=1e-14)
    assert float(df) == pytest.approx((61.0 / 12.0) ** 2 / (4.0**2 / 1 + (13.0 / 12.0) ** 2 / 2), rel=1e-14)


def test_an_additive_table_gives_the_shared_effects_exactly():
    a, b = np.array([0.3, -0.1, 0.5, 0.1]), np.array([1.0, -2.0, 0.5])
    mean, se, _ = crossed_moments(0.7 + a[:, None] + b[None, :])
    assert float(mean) == pytest.approx(0.7 + a.mean() + b.mean(), abs=1e-14)
    assert float(se) ** 2 == pytest.approx(np.var(a, ddof=1) / 4 + np.var(b, ddof=1) / 3, rel=1e-12)


def test_the_pair_tests_read_the_crossed_moments_whatever_the_column_order():
    d = _hand()
    base = np.array([[0.1, 0.4, 0.2], [0.3, 0.0, 0.5]])
    table = np.stack([(base + d).ravel(), base.ravel()])      # level 0 - level 1 = D, init outer
    order = np.array([4, 0, 5, 2, 1, 3])                        # the runs in another column order
    for cols, crossed in ((np.arange(6), CrossedSeeds.full(2, 3)),
                          (order, CrossedSeeds.of(np.array([3, 7])[order // 3], np.array([0, 5, 9])[order % 3]))):
        chk = paired_check(table[:, cols], np.array([1.0, 2.0]), 1.0, crossed=crossed)
        eq = equivalence_check(table[:, cols], np.array([1.0, 2.0]), 1.0, crossed=crossed)
        for pair in (chk["pair"], eq["pair"]):
            assert pair["difference"] == pytest.approx(4.0, rel=1e-12)
            assert pair["se"] == pytest.approx(np.sqrt(61.0 / 12.0), rel=1e-12)
            assert pair["df"] == 1.0                            # two init seeds: the guarded df
        assert "crossed-seed t" in chk["test"] and "crossed-seed t" in eq["test"]
    plain = paired_check(table, np.array([1.0, 2.0]), 1.0)      # the run-as-block t on the same runs
    assert plain["pair"]["se"] == pytest.approx(np.std(d, ddof=1) / np.sqrt(6), rel=1e-12)


def test_a_hole_drops_the_line_that_loses_fewest_runs_and_too_few_seeds_fail_closed():
    present = np.ones((4, 3), dtype=bool)
    present[2, 1] = False
    rows, cols = complete_crossed_block(present)
    assert rows.tolist() == [0, 1, 3] and cols.tolist() == [0, 1, 2]
    rng = np.random.default_rng(0)
    table = rng.normal(size=(2, 12))
    table[0, 2 * 3 + 1] = np.nan
    got = paired_check(table, np.array([1.0, 2.0]), 0.1, crossed=CrossedSeeds.full(4, 3))["pair"]
    keep = np.delete(np.arange(12), [6, 7, 8])
    d = (table[0] - table[1])[keep].reshape(3, 3)
    assert got["difference"] == pytest.approx(abs(d.mean()), rel=1e-12)
    assert got["se"] == pytest.approx(float(crossed_moments(d)[1]), rel=1e-12)
    # one data seed: no data-seed variance to read, so no pair is testable and neither claim is made
    one = rng.normal(size=(2, 4))
    assert not paired_check(one, np.array([1.0, 2.0]), 0.0, crossed=CrossedSeeds.full(4, 1))["supports_remembers"]
    assert not equivalence_check(one, np.array([1.0, 2.0]), 10.0, crossed=CrossedSeeds.full(4, 1))["supports_forgets"]


def test_the_skew_gate_on_crossed_seeds_reads_the_runs_spread_and_never_the_missing_log_ratio_test():
    rng = np.random.default_rng(1)
    err = 0.005 * np.exp(rng.normal(0, 0.8, (4, 1)) + rng.normal(0, 0.8, (1, 4)))   # strongly multiplicative
    table = 1.0 - np.stack([err.ravel(), err.ravel() * 1.01])
    cr = CrossedSeeds.full(4, 4)
    eq = equivalence_check(table, np.array([1.0, 2.0]), 0.01, crossed=cr, accuracy=True, n_test=10_000)
    assert eq["seed_log_sd"] >= 0.4 and eq["log_ratio_bound"] == np.inf and eq["multiplicative_ok"] is False
    assert not multiplicative_ok(table, 0.01, 0.04, 10_000, crossed=cr)
    calm = 1.0 - 0.2 * np.ones((2, 16)) + rng.normal(0, 1e-3, (2, 16))
    assert multiplicative_ok(calm, 0.01, 0.04, 10_000, crossed=cr)
    holes = calm.copy()
    holes[:, 4:] = np.nan                       # one init seed left: no init-seed spread to read
    assert not multiplicative_ok(holes, 0.01, 0.04, 10_000, crossed=cr)


def _allowed(n: int, level: float) -> int:
    """The most false verdicts of n a test at ``level`` may give: the binomial 0.99 quantile."""
    return int(stats.binom.ppf(0.99, n, level))


def test_the_level_check_can_see_a_rate_thirty_percent_above_its_level():
    for level in (ALPHA, IUT_ALPHA):
        assert stats.binom.sf(_allowed(N_TABLES, level), N_TABLES, 1.3 * level) >= 0.9


@pytest.mark.parametrize("design", ["init x sigma_w", "data x sigma_w"])
@pytest.mark.parametrize("shape", [(8, 4), (4, 4)])
def test_at_a_spread_of_delta_the_crossed_tests_keep_their_levels_and_the_run_as_block_tests_do_not(design, shape):
    n_i, n_j = shape
    sds = INIT_X_SIGMA if design == "init x sigma_w" else DATA_X_SIGMA
    rng = np.random.default_rng(20 + 3 * n_i + (design == "data x sigma_w"))
    tables = crossed_tables(N_TABLES, [0.0, DELTA], n_i, n_j, rng, **sds)   # one pair, exactly delta apart
    crossed = CrossedSeeds.full(n_i, n_j)
    rem = int(remembers_at(tables, DELTA, ALPHA, crossed=crossed).sum())
    forg = int((forgets_bounds(tables, IUT_ALPHA, crossed=crossed) < DELTA).sum())
    assert rem <= _allowed(N_TABLES, ALPHA), rem
    assert forg <= _allowed(N_TABLES, IUT_ALPHA), forg
    block_rem = int(remembers_at(tables, DELTA, ALPHA).sum())                       # each run one block
    block_forg = int((forgets_bounds(tables, IUT_ALPHA) < DELTA).sum())
    assert block_rem > _allowed(N_TABLES, ALPHA) and block_forg > _allowed(N_TABLES, IUT_ALPHA), (block_rem,
                                                                                                  block_forg)
    # the verdict's own route (paired_check / equivalence_check) decides as the vectorised form
    sw = np.array([1.0, 2.0])
    for t in tables[:40]:
        assert paired_check(t, sw, DELTA, crossed=crossed)["supports_remembers"] == bool(
            remembers_at(t[None], DELTA, ALPHA, crossed=crossed)[0])
        assert equivalence_check(t, sw, DELTA, alpha=IUT_ALPHA, crossed=crossed)["supports_forgets"] == bool(
            forgets_bounds(t[None], IUT_ALPHA, crossed=crossed)[0] < DELTA)


def test_a_clear_memory_is_found_at_8_by_4():
    rng = np.random.default_rng(5)
    mu = np.linspace(0.0, 3 * DELTA, 5)
    tables = crossed_tables(2000, mu, 8, 4, rng, **INIT_X_SIGMA)
    power = remembers_at(tables, DELTA, ALPHA, sigma_w=sigma_levels(5), crossed=CrossedSeeds.full(8, 4)).mean()
    assert power >= POWER_3DELTA, power


def test_plain_simulated_cubes_are_unchanged():
    ds = simulate_cube(preset_pipelines("contrast"), seed=3)
    digest = hashlib.sha256(ds[cube.SELECTED_TEST_ACC].values.tobytes() + ds[cube.TEST_PRED].values.tobytes())
    assert digest.hexdigest() == "03467ed1dd1d30f841db4d6e831eae9b5f15497830003ec3abe9c9c5dfe95e81"
    assert cube.INIT_SEED not in ds.coords and "crossed" not in read_truth(ds)["pipelines"]["sgd_l2"]
    assert "n_init" not in read_truth(ds)["pipelines"]["sgd_l2"]


def test_a_crossed_simulated_cube_is_valid_and_its_tests_read_the_crossed_blocks():
    pipes = [SimPipeline("mem", family="gaussian", sigma_sd=0.0, seed_sd=0.0, residual_sd=0.002, baseline=0.8,
                         n_sigma=3, n_init=4, n_data=3, init_sd=0.01, init_sigma_sd=0.01),
             SimPipeline("small", family="gaussian", sigma_sd=0.01, baseline=0.7, n_sigma=3, n_init=2, n_data=3,
                         data_sigma_sd=0.005, residual_sd=0.002, seed_sd=0.0)]
    ds = simulate_cube(pipes, seed=2)
    assert not [p for p in validate(ds) if p.severity == "error"]
    assert crossed_design(ds) == {"init": [0, 1, 2, 3], "data": [0, 1, 2]}
    assert ds[cube.INIT_SEED].values.tolist() == np.repeat(np.arange(4), 3).tolist()
    assert ds[cube.DATA_SEED].values.tolist() == np.tile(np.arange(3), 4).tolist()
    truth = read_truth(ds)["pipelines"]["mem"]["crossed"]
    assert truth["n_init"] == 4 and truth["sd_init"] == pytest.approx(np.hypot(0.01, 0.01))
    assert np.array(truth["init_sigma"]).shape == (3, 4)
    status = ds[cube.STATUS].sel({cube.PIPELINE: "small"}).values
    assert (status[:, :6] == cube.OK).all() and (status[:, 6:] == cube.MISSING).all()   # 2 x 3 of the 4 x 3 runs
    d = prepare_data(ds, gate="all")
    assert d.crossed_seeds is not None and d.crossed_seeds.n_init == 4
    check, equiv = _tests(SimpleNamespace(data=d), 0, DELTA)
    assert "crossed-seed t" in check["test"] and "crossed-seed t" in equiv["test"]
    lev = d.level_mask[0]
    assert check == paired_check(d.y[0][lev], d.sigma_w[lev], DELTA, crossed=CrossedSeeds.full(4, 3))
    d_ext = d.y[0][lev][0] - d.y[0][lev][-1]
    extreme = equivalence_check(d.y[0][lev][[0, -1]], d.sigma_w[lev][[0, -1]], DELTA,
                                crossed=CrossedSeeds.full(4, 3))["pair"]
    assert extreme["se"] == pytest.approx(float(crossed_moments(d_ext.reshape(4, 3))[1]), rel=1e-12)
    # the small pipeline's 2 x 3 block is found inside the 4 x 3 design
    check2, _ = _tests(SimpleNamespace(data=d), 1, DELTA)
    assert check2["n_pairs"] == 3


def test_crossed_pipelines_are_checked():
    with pytest.raises(UserError, match="n_init"):
        SimPipeline("x", n_init=3)
    with pytest.raises(UserError, match="crossed"):
        SimPipeline("x", init_sigma_sd=0.1)
    with pytest.raises(UserError, match="every pipeline"):
        simulate_cube([SimPipeline("a", n_init=2, n_data=2), SimPipeline("b")])
    assert SimPipeline("x", n_init=3, n_data=5).n_seed == 15


# One complete-block rule ---------------------------------------------------------------------------------------

def test_one_complete_block_rule_serves_the_components_and_the_pair_tests():
    present = np.ones((8, 4), dtype=bool)
    present[[1, 5], [2, 3]] = False                  # two rows out: 6 x 4 = 24 runs (a row and a column: 21)
    assert [x.tolist() for x in complete_crossed_block(present)] == [[0, 2, 3, 4, 6, 7], [0, 1, 2, 3]]
    present = np.ones((8, 4), dtype=bool)
    present[[0, 1, 2], 3] = False
    present[5, 0] = False                            # data seed 3 and init seed 5 out: 7 x 3 = 21 runs, where
    rows, cols = complete_crossed_block(present)     # dropping the lines that lose fewest runs one by one keeps 16
    assert rows.tolist() == [0, 1, 2, 3, 4, 6, 7] and cols.tolist() == [0, 1, 2]
    assert [x.tolist() for x in complete_crossed_block(present.T)] == [[0, 1, 2], [0, 1, 2, 3, 4, 6, 7]]
    sparse = np.zeros((8, 3), dtype=bool)
    sparse[:, 0] = True
    sparse[:2] = True                                # 8 runs on one data seed, or 2 x 3 = 6 runs the tests can read
    assert [x.tolist() for x in complete_crossed_block(sparse)] == [[0, 1], [0, 1, 2]]
    big = np.ones((14, 13), dtype=bool)              # beyond EXACT_MAX a side: one line at a time
    big[3, 4] = False
    assert [x.size for x in complete_crossed_block(big)] == [13, 13] and 3 not in complete_crossed_block(big)[0]
    # a cell absent at any leading entry (sigma_w level) is absent; of two blocks of 6 runs, the one with more
    # init seeds; no run present: both empty
    stack = np.ones((2, 3, 3), dtype=bool)
    stack[1, 0, 0] = False
    assert [x.tolist() for x in complete_crossed_block(stack)] == [[0, 1, 2], [1, 2]]
    assert [x.tolist() for x in complete_crossed_block(stack.transpose(0, 2, 1))] == [[0, 1, 2], [1, 2]]
    assert all(x.size == 0 for x in complete_crossed_block(np.zeros((3, 3), dtype=bool)))
    with pytest.raises(UserError):
        complete_crossed_block(np.ones(3, dtype=bool))
    # the variance components (stats/crossed.py) keep the same runs as the pair tests (models/paired.py)
    rng = np.random.default_rng(3)
    for _ in range(50):
        y = rng.normal(size=(3, 5, 4))
        y[rng.random(y.shape) < 0.08] = np.nan
        _, r_stats, c_stats = complete_block(y)
        r_cube, c_cube = complete_crossed_block(np.isfinite(y))
        assert r_stats.tolist() == r_cube.tolist() and c_stats.tolist() == c_cube.tolist()
        table = y[:2].reshape(2, 20)
        got = equivalence_check(table, np.array([1.0, 2.0]), 1.0, crossed=CrossedSeeds.full(5, 4))
        rows, cols = complete_crossed_block(np.isfinite(y[:2]))
        if rows.size >= 2 and cols.size >= 2:
            d = (y[0] - y[1])[np.ix_(rows, cols)]
            assert got["pair"]["difference"] == pytest.approx(abs(d.mean()), rel=1e-12)
        else:
            assert not got["supports_forgets"] and got["pair"] is None


def test_the_crossed_moments_by_hand_on_four_by_three():
    d = np.array([[1.0, 2.0, 4.0], [0.5, 1.5, 2.0], [3.0, 2.5, 5.0], [1.0, 0.0, 2.0]])
    rows = [sum(r) / 3 for r in d.tolist()]
    cols = [sum(d[i][j] for i in range(4)) / 4 for j in range(3)]

    def var(xs):
        m = sum(xs) / len(xs)
        return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)

    vr, vc = var(rows) / 4, var(cols) / 3
    mean, se, df = (float(x) for x in crossed_moments(d))
    assert mean == pytest.approx(d.sum() / 12, rel=1e-14)
    assert se == pytest.approx(math.sqrt(vr + vc), rel=1e-14)
    assert df == pytest.approx((vr + vc) ** 2 / (vr**2 / 3 + vc**2 / 2), rel=1e-14)


@pytest.mark.parametrize("shape", [(8, 4), (4, 4)])
def test_the_crossed_t_holds_its_level_with_init_and_data_effects_together(shape):
    """N_TABLES difference tables with strong row (init x sigma_w) AND column (data x sigma_w) effects, mean 0:
    the two-sided 5% t with the crossed SE and df rejects <= the binomial 0.99 quantile; the t that treats the
    runs as independent rejects > 20% (the control)."""
    n_i, n_j = shape
    rng = np.random.default_rng(31 + n_i)
    d = (rng.standard_normal((N_TABLES, n_i, 1)) + rng.standard_normal((N_TABLES, 1, n_j))
         + 0.3 * rng.standard_normal((N_TABLES, n_i, n_j)))
    mean, se, df = crossed_moments(d)
    crossed = int((np.abs(mean / se) > stats.t.ppf(0.975, df)).sum())
    flat = d.reshape(N_TABLES, -1)
    naive = int((np.abs(flat.mean(-1) / (flat.std(-1, ddof=1) / math.sqrt(flat.shape[1])))
                 > stats.t.ppf(0.975, flat.shape[1] - 1)).sum())
    assert crossed <= _allowed(N_TABLES, ALPHA), (shape, crossed)
    assert naive > 0.2 * N_TABLES, (shape, naive)


# The verdict: on a crossed design "forgets" needs the intersection-union test ------------------------------

def test_on_a_crossed_design_the_models_route_alone_does_not_decide_forgets():
    # P(spread < delta) = 1: the model alone says "forgets" at any threshold
    assert verdict(0.0, 1.0) == N.FORGETS
    assert verdict(0.0, 1.0, crossed=True) == N.UNDECIDED
    assert verdict(0.0, 1.0, crossed=True, iut_ok=True) == N.FORGETS
    assert verdict(0.0, 1.0, crossed=True, iut_ok=True, near_ceiling=True) == N.FORGETS
    assert verdict(0.0, 0.5, crossed=True, iut_ok=True, near_ceiling=True) == N.UNDECIDED  # both routes there
    # a closed route has no borderline band: P near its threshold says nothing on a crossed design
    assert verdict_flagged(0.0, 0.975, mcse=(0.0, 0.01)) == (N.UNDECIDED, True)
    assert verdict_flagged(0.0, 0.975, mcse=(0.0, 0.01), crossed=True) == (N.UNDECIDED, False)
    # "remembers" is untouched: it needs the ordered test on the crossed blocks already
    assert verdict(0.99, 0.0, crossed=True) == N.REMEMBERS


def _crossed_data():
    pipes = [SimPipeline("mem", family="gaussian", sigma_sd=0.0, seed_sd=0.0, residual_sd=0.002, baseline=0.8,
                         n_sigma=3, n_init=4, n_data=3, init_sd=0.01, init_sigma_sd=0.01)]
    return prepare_data(simulate_cube(pipes, seed=2), gate="all")


def test_the_summary_path_reads_the_design_and_keeps_forgets_for_the_intersection_union_test():
    d = _crossed_data()
    med = np.full(int(d.level_mask[0].sum()), 0.8)          # far from the ceiling
    crossed, check, equiv = decide_pipeline(SimpleNamespace(data=d), 0, DELTA, ALPHA, (0.0, 1.0), (0.0, 0.0),
                                            4000, med)
    assert "crossed-seed t" in equiv["test"] and not equiv["supports_forgets"]
    assert crossed.crossed and crossed.model_label == N.FORGETS and crossed.label == N.UNDECIDED
    assert crossed.rule == "none" and crossed.again(0.0, 1.0) == N.UNDECIDED
    # the same runs read as one seed per run: the model's route decides alone (the plain rule, unchanged)
    plain = replace(d, init_seed=None, data_seed=None)
    alone, _, eq_plain = decide_pipeline(SimpleNamespace(data=plain), 0, DELTA, ALPHA, (0.0, 1.0), (0.0, 0.0),
                                         4000, med)
    assert not alone.crossed and not eq_plain["supports_forgets"]
    assert alone.label == N.FORGETS and alone.rule == "model"
    # where the intersection-union test does show it, "forgets" stands on a crossed design, by that route
    flat = replace(d, y=np.where(d.used, 0.8 + 1e-4 * np.arange(d.y.shape[-1]), np.nan))
    by_iut, _, eq_flat = decide_pipeline(SimpleNamespace(data=flat), 0, DELTA, ALPHA, (0.0, 0.0), (0.0, 0.0),
                                         4000, med)
    assert eq_flat["supports_forgets"] and by_iut.label == N.FORGETS and by_iut.rule == RULE_FORGETS_IUT
    note = crossed_note(equiv)
    assert "crossed" in note and "intersection-union test" in note and f"{equiv['p_value']:.3g}" in note


# The planner ------------------------------------------------------------------------------------------------

def _summary(crossed: dict | None) -> dict:
    q = {"median": 0.0, "q05": 0.0, "q95": 0.0}
    entry = {"n_sigma": 3, "n_seed": 12, "sigma_sd": q, "seed_sd": q, "residual_sd": q, "memory_share": q,
             "spread": q, "p_spread_gt_delta": 0.1, "verdict": "undecided", "noise_scale": 0.01}
    raw = {"schema": SUMMARY_SCHEMA, "metric": "m", "family": "gaussian", "delta": 0.01, "pipelines": {"p": entry}}
    if crossed is not None:
        raw["crossed"] = crossed
    return Summary.model_validate(raw).to_json()


def test_the_planner_refuses_a_crossed_design_and_plans_a_list_of_seeds_as_before(tmp_path):
    (tmp_path / SUMMARY_JSON).write_text(json.dumps(_summary({"n_init": 4, "n_data": 3})))
    with pytest.raises(UserError, match="one seed per run"):
        plan(tmp_path)
    (tmp_path / SUMMARY_JSON).write_text(json.dumps(_summary(None)))
    with pytest.raises(UserError, match="posterior"):     # past the design check: the posterior file is next
        plan(tmp_path)
