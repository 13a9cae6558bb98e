"""Calibration of the memory verdict on simulated cubes with a known truth (real NUTS fits).

Designs (docs/memory-model.md, "Calibration"): all pipelines null; null pipelines with 3 seeds
and large seed noise beside pipelines that remember; the paper's scale without memory (10,000
test examples, 7 sigma_w, 5 seeds); real memory of about 5 points; and simulation-based
calibration from the model's own prior. Every fit refits one compiled sampler
(models/designs.py).

The level checks here rest on a few dozen real NUTS fits; each prints the true false-verdict rate it
catches with probability 0.9 (``detectable_rate``); the rule's level itself is checked at 3,200 tables per
design by quadrature in tests/test_plan.py. The power checks guard a measured power: the fits run at fixed
seeds, the figure they gave under the current rule is recorded as (found, pipelines), and the check fails
when the power falls below that figure's 95% Wilson lower bound (``guarded_bar``).
"""

from __future__ import annotations

import math

import pytest
from scipy import optimize, stats

from initmem.models.data import prepare_data
from initmem.models.designs import L, P, S, compiled_model, fit_cube, pad_seeds, wilson
from initmem.models.paired import paired_check
from initmem.models.summaries import N_DRAWS
from initmem.simulate import SimPipeline, read_truth, simulate_cube

pytestmark = pytest.mark.slow
DELTA = 0.01
# Measured powers the checks below guard, (verdicts found, pipelines) at the checks' own seeds under the
# current rule: the paper-scale null's "forgets" over 6 cubes at the analysis's 4,000 draws, and the 5-point
# memory's "remembers" among pipelines whose true spread is at least 4 points over 8 cubes.
PAPER_NULL_FORGETS = (77, 144)
MEMORY_FOUND = (55, 124)


def detectable_rate(n: int, k_max: int, power: float = 0.9) -> float:
    """The true false-verdict rate at which a check that allows at most ``k_max`` of ``n`` fails with
    probability ``power``: what a level check over few real fits can see."""
    return float(optimize.brentq(lambda r: stats.binom.sf(k_max, n, r) - power, 1e-9, 1 - 1e-9))


def guarded_bar(measured: tuple[int, int]) -> float:
    """The bar of a power check: just below (rounded down to a percent) the 95% Wilson lower bound of the
    measured power, so that the check fails where the power credibly dropped below what was measured."""
    return math.floor(100 * wilson(*measured)[0]) / 100


def _null_cube(seed: int):
    return simulate_cube([SimPipeline(f"n{k}", sigma_sd=0.0, seed_sd=0.1, residual_sd=0.1, n_sigma=L, n_seed=S)
                          for k in range(P)], n_test=600, seed=seed)


def _neighbour_cube(seed: int):
    nulls = [SimPipeline(f"n{k}", sigma_sd=0.0, seed_sd=0.4, residual_sd=0.1, n_sigma=L, n_seed=3) for k in range(16)]
    rem = [SimPipeline(f"r{k}", sigma_sd=0.3 + 0.05 * k, seed_sd=0.1, residual_sd=0.1, n_sigma=L, n_seed=S)
           for k in range(8)]
    return simulate_cube(nulls + rem, n_test=600, seed=seed)


def _verdicts(model, delta=DELTA):
    return {p: e for p, e in model.summarize(delta).items()}


@pytest.fixture(scope="module")
def null_fits():
    """(pipeline summary, truth spread) of every null pipeline in all-null and neighbour cubes."""
    out = []
    for seed, make in ((11, _null_cube), (12, _null_cube), (21, _neighbour_cube), (22, _neighbour_cube)):
        ds = make(seed)
        truth = read_truth(ds)["pipelines"]
        m = fit_cube(ds, seed=seed)
        diag = m.diagnostics()
        assert diag["divergences"] == 0, diag["flags"]  # R-hat at default settings: test_memory_model
        for pipe, e in _verdicts(m).items():
            out.append((make.__name__, pipe, e, truth[pipe]["spread"]))
    return out


def test_false_remembers_at_most_5_percent_over_null_pipeline_fits(null_fits):
    nulls = [(kind, e) for kind, pipe, e, _ in null_fits if pipe.startswith("n")]
    k = sum(e["verdict"] == "remembers" for _, e in nulls)
    n = len(nulls)
    lo, hi = wilson(k, n)
    k_max = math.floor(0.05 * n)
    print(f"false 'remembers': {k}/{n} = {k / n:.3f} (95% Wilson {lo:.3f}-{hi:.3f}); at most {k_max} allowed, "
          f"which catches a true rate of {detectable_rate(n, k_max):.3f} with probability 0.9")
    assert n >= 40
    assert k <= k_max
    # Beside remembering pipelines the nulls are noisier (3 seeds, 75% accuracy on 600 examples: a pair's difference
    # has an SD of 2.5 points against delta = 1), so a spread of 0 is nearly as hard as one of delta, and the rule's
    # rate there is the ordered test's own, up to alpha: checked over 1,200 tables below; over these 32 fits the
    # check is the binomial 0.99 quantile at alpha (fails where the rate is credibly above it).
    beside = [e for kind, e in nulls if kind == "_neighbour_cube"]
    k_beside = sum(e["verdict"] == "remembers" for e in beside)
    k_max_beside = int(stats.binom.ppf(0.99, len(beside), 0.05))
    print(f"beside remembering pipelines: {k_beside}/{len(beside)}; at most {k_max_beside} allowed, which catches "
          f"a true rate of {detectable_rate(len(beside), k_max_beside):.3f} with probability 0.9")
    assert k_beside <= k_max_beside
    # the prior-sensitivity verdict is reported and (wider prior) not more decisive for forgetting
    assert all(e["prior_sensitivity"]["verdict"] in ("remembers", "forgets", "undecided") for _, e in nulls)


def test_the_ordered_test_holds_alpha_on_the_noisy_nulls_beside_remembering_pipelines():
    """The rule's false "remembers" is at most the ordered test's (the model's agreement only removes claims):
    1,200 null tables of the neighbour cubes' design, the count failing above the binomial 0.99 quantile at alpha."""
    k = n = 0
    for seed in range(1000, 1030):
        d = prepare_data(simulate_cube([SimPipeline(f"n{j}", sigma_sd=0.0, seed_sd=0.4, residual_sd=0.1, n_sigma=L,
                                                    n_seed=3) for j in range(40)], n_test=600, seed=seed))
        for a in range(len(d.pipelines)):
            lev = d.level_mask[a]
            table = d.y[a][lev][:, d.seed_mask[a]]
            k += paired_check(table, d.sigma_w[lev], DELTA, n_test=d.n_test)["supports_remembers"]
            n += 1
    lo, hi = wilson(k, n)
    print(f"ordered test alone on the noisy nulls: {k}/{n} = {k / n:.3f} (95% Wilson {lo:.3f}-{hi:.3f})")
    assert k <= stats.binom.ppf(0.99, n, 0.05)


def test_remembering_neighbours_are_found(null_fits):
    rem = [(e, t) for _, pipe, e, t in null_fits if pipe.startswith("r")]
    found = sum(e["verdict"] == "remembers" for e, t in rem if t > 0.05)
    assert found >= 0.8 * sum(t > 0.05 for _, t in rem)


def test_paper_scale_null_forgets_at_its_measured_power():
    # 10,000 test examples, 7 sigma_w, 5 seeds, no memory; realistic seed noise (0.02 logit, about 0.3 points),
    # 6 cubes of 24 pipelines fitted at the analysis's own 4,000 draws (its borderline band). "forgets" needs
    # P(spread < delta) >= 1 - alpha/2 or the intersection-union test at 0.8 alpha; with 4 seed df per pair the
    # IUT rarely shows all 21 pairs inside +-1 point, so the model's route decides most of them.
    found, n, borderline = 0, 0, 0
    for seed in range(31, 37):
        ds = simulate_cube([SimPipeline(f"n{k}", sigma_sd=0.0, seed_sd=0.02, residual_sd=0.02, n_sigma=L, n_seed=5)
                            for k in range(P)], n_test=10_000, seed=seed)
        m = compiled_model().refit(pad_seeds(prepare_data(ds)), seed=seed, chains=4, draws=N_DRAWS // 4)
        entries = list(_verdicts(m).values())
        verdicts = [e["verdict"] for e in entries]
        assert "remembers" not in verdicts
        found, n = found + verdicts.count("forgets"), n + len(verdicts)
        borderline += sum(bool(e["borderline"]) for e in entries)
    lo, hi = wilson(found, n)
    bar = guarded_bar(PAPER_NULL_FORGETS)
    print(f"paper-scale null: 'forgets' {found}/{n} (95% Wilson {lo:.3f}-{hi:.3f}), borderline {borderline}; "
          f"measured {PAPER_NULL_FORGETS[0]}/{PAPER_NULL_FORGETS[1]}, guarded at {bar:.2f}")
    assert found / n >= bar


def test_real_memory_of_5_points_is_found_at_its_measured_power_and_covered():
    # 8 cubes of 24 pipelines with a 5-point exchangeable memory (600 test examples, 6 seeds): "remembers" needs
    # the ordered paired test, whose extreme pair and peak contrast carry a memory that is not monotone in
    # sigma_w only part of the time, so the power is what the ordered test gives (the model alone says P(spread
    # > delta) >= 0.95 on nearly all of them).
    found, big, covered, n = 0, 0, 0, 0
    for seed in range(41, 49):
        specs = [SimPipeline(f"m{k}", sigma_sd=0.17, seed_sd=0.1, residual_sd=0.1, n_sigma=L, n_seed=S)
                 for k in range(P)]
        ds = simulate_cube(specs, n_test=600, seed=seed)
        truth = read_truth(ds)["pipelines"]
        summ = _verdicts(fit_cube(ds, seed=seed))
        large = [p for p in summ if truth[p]["spread"] >= 0.04]
        big += len(large)
        found += sum(summ[p]["verdict"] == "remembers" for p in large)
        covered += sum(summ[p]["spread"]["q05"] <= truth[p]["spread"] <= summ[p]["spread"]["q95"] for p in summ)
        n += len(summ)
    lo, hi = wilson(found, big)
    bar = guarded_bar(MEMORY_FOUND)
    print(f"5-point memory: 'remembers' {found}/{big} with true spread >= 4 points (95% Wilson {lo:.3f}-{hi:.3f}); "
          f"measured {MEMORY_FOUND[0]}/{MEMORY_FOUND[1]}, guarded at {bar:.2f}; 90% intervals cover the true "
          f"spread {covered}/{n}")
    assert big >= 8 * 8 and found / big >= bar
    assert 0.75 <= covered / n <= 1.0


def test_forgets_near_the_ceiling_carries_the_measured_caveat():
    # accuracy at 99.5% with tiny seed noise: "forgets" is right here, but near the ceiling the rule's error
    # rate at delta was measured above alpha (studies/ceiling_check.py), so the verdict says so
    import numpy as np

    from initmem import cube
    from initmem.models.designs import fit_tables, table_data

    rng = np.random.default_rng(3)
    y = 0.995 + rng.normal(0, 0.0005, (P, L, S))
    y[P // 2:] -= 0.1   # half the pipelines at 89.5%: the same verdict, no caveat
    out = fit_tables(table_data(y, np.ones(y.shape, dtype=bool), 0.0005, metric=cube.SELECTED_TEST_ACC)).summarize(0.01)
    high, low = out["t0"], out[f"t{P - 1}"]
    assert high["verdict"] == low["verdict"] == "forgets"
    assert any("Near the ceiling" in n for n in high["notes"])
    assert not any("Near the ceiling" in n for n in low["notes"])
