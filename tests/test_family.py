"""Holm across a table's rows (models/family.py): exact identities with pingouin's Holm (statsmodels' adjusted
p-values, without its garbage collection on every call) on a fixed design, the
row's own rule at each share, the family's expected number of false verdicts, and the family-wise error on
simulated null families (a level test that can fail, with negative controls that must)."""

from __future__ import annotations

import numpy as np
import pytest
from pingouin import multicomp
from scipy import stats

from initmem import names as N
from initmem.models.family import RowEvidence, expected_false_verdicts, holm_verdicts, passes
from initmem.models.paired import FORGETS_IUT_SHARE, FORGETS_MODEL_SHARE
from initmem.models.sequential import Spending

FIXED = Spending(0.05)


def _remembers(p: float, spend: Spending = FIXED) -> RowEvidence:
    return RowEvidence(N.REMEMBERS, spend, p_gt=1.0, p_lt=0.0, paired_p=p, iut_p=1.0, draws=10**9)


@pytest.mark.parametrize("seed", range(20))
def test_remembers_rows_on_a_fixed_design_are_statsmodels_holm(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.02, 6), rng.uniform(0, 0.2, 6)])
    rows = {f"r{i}": _remembers(float(v)) for i, v in enumerate(p)}
    rows["undecided"] = RowEvidence(N.UNDECIDED, FIXED, 0.5, 0.5, 0.3, 0.3)   # counts in m, never kept
    reject, _ = multicomp(np.append(p, 1.0), alpha=0.05, method="holm")
    kept = holm_verdicts(rows)
    assert [kept[n] == N.REMEMBERS for n in rows] == list(reject)
    assert kept["undecided"] == N.UNDECIDED


@pytest.mark.parametrize("seed", range(10))
def test_forgets_rows_take_the_better_route_each_at_its_share(seed):
    rng = np.random.default_rng(100 + seed)
    iut, tail = rng.uniform(0, 0.03, 10), rng.uniform(0, 0.02, 10)
    rows = {f"f{i}": RowEvidence(N.FORGETS, FIXED, p_gt=0.0, p_lt=1.0 - float(t), paired_p=1.0, iut_p=float(u),
                                 draws=10**9) for i, (u, t) in enumerate(zip(iut, tail, strict=True))}
    route_p = np.minimum(iut / FORGETS_IUT_SHARE, tail / FORGETS_MODEL_SHARE)
    reject, _ = multicomp(route_p, alpha=0.05, method="holm")
    kept = holm_verdicts(rows)
    assert [kept[n] == N.FORGETS for n in rows] == list(reject)


def test_near_the_ceiling_forgets_needs_both_routes_and_the_gate():
    both = dict(p_gt=0.0, p_lt=1.0 - 1e-4, paired_p=1.0, iut_p=1e-4, near_ceiling=True)
    assert passes(RowEvidence(N.FORGETS, FIXED, **both), 1.0)
    assert not passes(RowEvidence(N.FORGETS, FIXED, **{**both, "iut_p": 0.2}), 1.0)      # the IUT fails
    assert not passes(RowEvidence(N.FORGETS, FIXED, **{**both, "p_lt": 0.5}), 1.0)       # the model fails
    assert not passes(RowEvidence(N.FORGETS, FIXED, **both, gate_ok=False), 1.0)
    # away from the ceiling one route suffices, and the model's route needs three levels
    one = dict(p_gt=0.0, p_lt=0.5, paired_p=1.0, iut_p=1e-4)
    assert passes(RowEvidence(N.FORGETS, FIXED, **one), 1.0)
    model_only = dict(p_gt=0.0, p_lt=1.0 - 1e-4, paired_p=1.0, iut_p=0.5)
    assert passes(RowEvidence(N.FORGETS, FIXED, **model_only), 1.0)
    assert not passes(RowEvidence(N.FORGETS, FIXED, **model_only, n_levels=2), 1.0)


def test_remembers_needs_the_paired_test_at_the_share_and_the_models_agreement():
    assert passes(RowEvidence(N.REMEMBERS, FIXED, 0.9, 0.0, 1e-4, 1.0), 1.0)
    assert not passes(RowEvidence(N.REMEMBERS, FIXED, 0.4, 0.0, 1e-4, 1.0), 1.0)       # P = 0.4 < 1/2
    assert not passes(RowEvidence(N.REMEMBERS, FIXED, 1.0, 0.0, None, 1.0), 1.0)       # no paired test
    assert not passes(RowEvidence(N.UNDECIDED, FIXED, 1.0, 0.0, 1e-6, 1.0), 1.0)   # borderline: undecided
    # the ordered test's adjusted p 0.004 passes at alpha/12 (0.0042), not at alpha/13 (0.0038)
    row = RowEvidence(N.REMEMBERS, FIXED, 1.0, 0.0, 0.004, 1.0, draws=4000)
    assert passes(row, 1 / 12) and not passes(row, 1 / 13)


def test_a_sequential_row_is_tested_at_its_shares_own_level():
    spend = Spending(0.05, (4, 8, 12, 16), look=1)
    half = spend.level(0.5)
    assert half < spend.level(1.0) / 2 * 1.1   # computed from the share's allotment, not the full level halved
    assert passes(_remembers(half * 0.999, spend), 0.5)
    assert not passes(_remembers(half * 1.001, spend), 0.5)


def test_the_expected_false_verdicts_count_decided_rows_only():
    rows = {"a": _remembers(0.001), "b": RowEvidence(N.FORGETS, FIXED, 0.0, 1.0, 1.0, 0.001),
            "c": RowEvidence(N.UNDECIDED, FIXED, 0.5, 0.5, 0.3, 0.3),
            "d": RowEvidence(N.UNDECIDED, FIXED, 0.95, 0.0, 0.01, 1.0)}
    assert expected_false_verdicts(rows) == pytest.approx(0.10)


# The family-wise error on simulated null families (studies/family_calibration.py, whose functions these are; the
# study's tables in its docstring): rows at a spread of exactly delta (a ramp, a step and one level at delta in
# turn), each decided as the analysis decides it (the paired tests' p-values, the model's probabilities by the
# planner's quadrature with 4,000 draws, models/summaries.py's ``decide``). Paper scale (7 levels, 10,000 test
# examples) at 8 seeds: of the study's cells the one with the most false verdicts, raw and under Holm.
N_NULL_ROWS = 3000      # 600 families of 5 rows and 214 of 14, cut from the same rows (about 10 s of CPU)


@pytest.fixture(scope="module")
def null_rows():
    from threadpoolctl import threadpool_limits  # scikit-learn's (pingouin's) dependency

    from initmem.tests._family_rows import pool

    with threadpool_limits(limits=1):     # the quadrature's small matrix products gain no time from more threads
        return pool(1.0, "paper", 8, N_NULL_ROWS, np.random.default_rng(20260101))


def _fwer(rows, r, rule):
    from initmem.tests._family_rows import families

    fams = families(rows, [], r, 0)
    return sum(any(v in (N.REMEMBERS, N.FORGETS) for v in rule(f.rows).values()) for f in fams), len(fams)


def test_the_studys_vectorised_p_values_are_the_analysis_tests():
    from initmem.models.designs import rule_tables
    from initmem.tests._family_rows import check_tests

    rng = np.random.default_rng(7)
    for scale, n_test, seeds in (("demo", 720, 4), ("paper", 10_000, 8)):
        for kind, size in (("ramp", 1.0), ("step", 3.0), ("single", 1.0)):
            t = rule_tables(kind, scale, 8, rng, n_seed=seeds, delta=size * 0.01)
            assert check_tests(t, np.geomspace(0.25, 8.0, t.shape[1]), 0.01, FIXED, n_test) < 1e-12


@pytest.mark.slow
def test_holm_keeps_the_family_wise_error_on_null_families(null_rows):
    """Fails when Holm's count of families with a false verdict exceeds the binomial 0.99 quantile at alpha = 0.05.

    What it can detect, with probability 0.9: a family-wise error of 8.7% with the 600 families of 5 rows (a true
    6.5% only with probability 0.23: that needs about 3,000 families, 15,000 rows, some 50 s of quadrature at
    3.5 ms a row) and of 11.9% with the 214 families of 14. The study measures the rate itself on these designs:
    2.11% [1.64, 2.71] at 5 rows and 1.80% [1.14, 2.83] at 14 (2,800 and 1,000 families). The negative controls --
    every row at the full share, and Holm with the shares counted over the decided rows only -- must exceed the
    same quantile (raw verdicts: 37% of the families of 14 at this design), so the criterion is shown to see an
    excess."""
    from initmem.tests._family_rows import decided_only_holm, full_share

    for r in (5, 14):
        k, n = _fwer(null_rows, r, holm_verdicts)
        assert k <= stats.binom.ppf(0.99, n, 0.05), (r, k, n)
    for rule in (full_share, decided_only_holm):
        k, n = _fwer(null_rows, 14, rule)
        assert k > stats.binom.ppf(0.99, n, 0.05), (rule.__name__, k, n)
