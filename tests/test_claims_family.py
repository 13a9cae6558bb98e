"""The family of rows under the sequential design (studies/family_calibration.py ``--looks``): each row decided at the
looks of ``initmem run --until-decided`` by the planner's own loop (models/plan.py ``sequential_decisions``), keeping
its deciding look's evidence as the run's final summary does (tests/_family_rows.py ``sequential_pool``)."""

from __future__ import annotations

import numpy as np

from initmem import names as N
from initmem.models.designs import SCALES, noise_sd, rule_tables
from initmem.models.family import passes
from initmem.models.plan import rule_decisions, sequential_decisions
from initmem.tests._family_rows import DELTA, TRUE_SIZE, sequential_pool

LOOKS = (4, 8)


def test_a_caller_deciding_the_open_tables_runs_the_same_looks():
    # the same decision rule through decide_open and through the default path: the same verdicts and seeds
    rng = np.random.default_rng(1)
    sig = noise_sd(int(SCALES["paper"]["n_test"]))
    tables = rule_tables("ramp", "paper", 12, rng, n_seed=LOOKS[-1]) / sig
    sigma_w = np.geomspace(0.25, 8.0, tables.shape[1])
    plain = sequential_decisions(tables, DELTA / sig, LOOKS, np.random.default_rng(7), sigma_w)
    other = np.random.default_rng(7)
    seen: list[tuple[int, int]] = []

    def decide_open(idx, n_k, spend):
        seen.append((n_k, spend.look))
        return rule_decisions(tables[idx, :, :n_k], DELTA / sig, spend, other, sigma_w)

    hooked = sequential_decisions(tables, DELTA / sig, LOOKS, np.random.default_rng(99), sigma_w,
                                  decide_open=decide_open)
    assert np.array_equal(plain[0], hooked[0]) and np.array_equal(plain[1], hooked[1])
    assert seen[0] == (4, 0)


def test_each_row_keeps_the_evidence_of_the_look_that_decided_it():
    rng = np.random.default_rng(3)
    true, seeds = sequential_pool(TRUE_SIZE, "paper", LOOKS, 6, rng)
    # memories of 3 x delta at the paper's scale are decided "remembers" with the first look's seeds
    assert [r.verdict for r in true] == [N.REMEMBERS] * 6 and seeds.tolist() == [4] * 6
    assert all(r.spending.looks == LOOKS and r.spending.look == 0 for r in true)
    at_delta, seeds = sequential_pool(1.0, "paper", LOOKS, 9, rng)
    assert len(at_delta) == 9
    for r, n in zip(at_delta, seeds, strict=True):
        decided = r.verdict in (N.REMEMBERS, N.FORGETS)
        # a decided row carries its deciding look's spending; an undecided one the last look's
        assert r.spending.look == (LOOKS.index(int(n)) if decided else len(LOOKS) - 1)
        # a decided row's own rule holds at the full share of its look (Holm's first step at r = 1)
        assert passes(r, 1.0) or not decided
