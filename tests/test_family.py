"""Holm across a table's rows (models/family.py): exact identities with pingouin's Holm (statsmodels' adjusted
p-values, without its garbage collection on every call) on a fixed design, the
row's own rule at each share, and the family's expected number of false verdicts."""

from __future__ import annotations

import numpy as np
import pytest
from pingouin import multicomp

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
    rows["undecided"] = RowEvidence(N.INCONCLUSIVE, FIXED, 0.5, 0.5, 0.3, 0.3)   # counts in m, never kept
    reject, _ = multicomp(np.append(p, 1.0), alpha=0.05, method="holm")
    kept = holm_verdicts(rows)
    assert [kept[n] == N.REMEMBERS for n in rows] == list(reject)
    assert kept["undecided"] == N.INCONCLUSIVE


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


def test_remembers_needs_the_model_and_the_paired_test():
    assert not passes(RowEvidence(N.REMEMBERS, FIXED, 0.9, 0.0, 1e-4, 1.0), 1.0)       # P = 0.9 < 0.95
    assert not passes(RowEvidence(N.REMEMBERS, FIXED, 1.0, 0.0, None, 1.0), 1.0)       # no paired test
    assert not passes(RowEvidence(N.BORDERLINE, FIXED, 1.0, 0.0, 1e-6, 1.0), 1.0)
    # P = 1 from 4,000 draws stands for 1 - 1/4001: it passes at alpha/12 (0.0042), not at alpha/250 (0.0002)
    row = RowEvidence(N.REMEMBERS, FIXED, 1.0, 0.0, 1e-6, 1.0, draws=4000)
    assert passes(row, 1 / 12) and not passes(row, 1 / 250)


def test_a_sequential_row_is_tested_at_its_shares_own_level():
    spend = Spending(0.05, (4, 8, 12, 16), look=1)
    half = spend.level(0.5)
    assert half < spend.level(1.0) / 2 * 1.1   # computed from the share's allotment, not the full level halved
    assert passes(_remembers(half * 0.999, spend), 0.5)
    assert not passes(_remembers(half * 1.001, spend), 0.5)


def test_the_expected_false_verdicts_count_decided_rows_only():
    rows = {"a": _remembers(0.001), "b": RowEvidence(N.FORGETS, FIXED, 0.0, 1.0, 1.0, 0.001),
            "c": RowEvidence(N.INCONCLUSIVE, FIXED, 0.5, 0.5, 0.3, 0.3),
            "d": RowEvidence(N.BORDERLINE, FIXED, 0.95, 0.0, 0.01, 1.0)}
    assert expected_false_verdicts(rows) == pytest.approx(0.10)
