"""Survivorship with a direction (models/data.py): the exact trend test of lost runs in log sigma_w beside the
omnibus chi-square permutation test, their Bonferroni combination that the warning reads, and the runs that have
no value to put back."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from initmem import cube
from initmem.models import data as D
from initmem.models.data import _dependence_test, _missingness_tests, _trend_test, prepare_data
from initmem.names import ALPHA
from initmem.simulate import SimPipeline, simulate_cube

LEVELS, SEEDS = 7, 5


def _top_losses() -> np.ndarray:
    """The held-out pattern: 2 runs lost at the largest of 7 sigma_w levels, 1 at the next, none elsewhere."""
    lost = np.zeros((LEVELS, SEEDS), dtype=bool)
    lost[-1, :2] = True
    lost[-2, 0] = True
    return lost


def test_three_runs_lost_at_the_top_two_levels_trend_exactly():
    """Ranks 6, 6, 5 of 0..6 among 35 runs: 60 of the C(35, 3) = 6545 equally likely choices have a rank sum
    >= 17, 60 <= 1 (the mirror), so the two-sided p is 120 / 6545; the omnibus test, blind to the order, does
    not see it."""
    obs = np.ones((LEVELS, SEEDS), dtype=bool)
    lost = _top_losses()
    assert _trend_test(lost, obs) == pytest.approx(120 / 6545, rel=1e-12)
    assert _trend_test(lost, obs) < 0.05
    assert _dependence_test(lost, obs, np.random.default_rng(0)) > 0.2
    got = _missingness_tests(lost, obs, np.random.default_rng(0))
    assert got["combined"] == pytest.approx(2 * 120 / 6545) and got["combined"] < ALPHA


def test_the_trend_test_is_the_exact_enumeration():
    """Against brute force over every choice of which runs are lost, on tables with holes."""
    rng = np.random.default_rng(1)
    checked = 0
    while checked < 15:
        n_l, n_s = int(rng.integers(2, 6)), int(rng.integers(2, 5))
        obs = rng.random((n_l, n_s)) < 0.8
        lost = (rng.random((n_l, n_s)) < 0.3) & obs
        cells = np.argwhere(obs)
        k, n = int(lost[obs].sum()), len(cells)
        if k in (0, n):
            assert _trend_test(lost, obs) is None
            continue
        rank = {lev: r for r, lev in enumerate(np.nonzero(obs.any(axis=1))[0])}
        score = np.array([rank[i] for i, _ in cells])
        t = sum(rank[i] for i, _ in np.argwhere(lost))
        dev = abs(n * t - k * score.sum())
        hits = sum(abs(n * score[list(c)].sum() - k * score.sum()) >= dev for c in itertools.combinations(range(n), k))
        assert _trend_test(lost, obs) == pytest.approx(hits / math.comb(n, k), rel=1e-12)
        checked += 1


@pytest.mark.slow
def test_the_warning_keeps_its_level_when_losses_are_spread_at_random(monkeypatch):
    """2000 null tables of 7 levels x 5 seeds, each run lost with probability 0.1 whatever its sigma_w: the
    combined p (what the warning reads) rejects at alpha no more often than alpha, and so does each test. Fails
    when a count is above the binomial 0.99 quantile at alpha. The permutation count is cut to 199, which keeps
    the omnibus test exactly valid ((1 + hits) / (N + 1)) and the table cheap."""
    monkeypatch.setattr(D, "N_PERMUTATIONS", 199)
    rng = np.random.default_rng(7)
    obs = np.ones((LEVELS, SEEDS), dtype=bool)
    n, rej = 2000, {"omnibus": 0, "trend": 0, "combined": 0}
    for _ in range(n):
        lost = rng.random((LEVELS, SEEDS)) < 0.1
        got = _missingness_tests(lost, obs, rng)
        for key in rej:
            rej[key] += got[key] is not None and got[key] < ALPHA
    bound = stats.binom.ppf(0.99, n, ALPHA)
    assert all(k <= bound for k in rej.values()), (rej, bound)


def _held_out_cube(seed: int, lost: np.ndarray):
    """A gaussian pipeline without memory, 7 levels x 5 seeds, with the ``lost`` runs recorded as missing."""
    ds = simulate_cube([SimPipeline("flat", sigma_sd=0.0, family="gaussian", n_sigma=LEVELS, n_seed=SEEDS)],
                       seed=seed)
    status = ds[cube.STATUS].values.copy()
    status[0][lost] = cube.MISSING
    return ds.assign({cube.STATUS: (cube.CELL_DIMS, status)})


def test_prepare_data_stores_both_tests_and_the_runs_without_a_value():
    d = prepare_data(_held_out_cube(0, _top_losses()), gate="all", seed=0)
    assert d.missingness_trend_p["flat"] == pytest.approx(120 / 6545)
    assert d.missingness_p["flat"] == pytest.approx(min(1.0, 2 * min(d.missingness_trend_p["flat"],
                                                                      d.missingness_omnibus_p["flat"])))
    assert d.missingness_p["flat"] < ALPHA
    # missing runs have no final value: all three are lost without one, so no refit can put them back
    assert d.lost is not None and d.lost[0].sum() == 3
    assert np.array_equal(d.lost_without_value(0), _top_losses())


def test_a_table_too_large_for_the_exact_distribution_gets_the_same_statistic_permuted(monkeypatch):
    """With the exact route closed the permutation p of the same statistic agrees with the exact p (120 / 6545)
    within 4 binomial standard errors of N_PERMUTATIONS draws."""
    monkeypatch.setattr(D, "EXACT_TREND_CELLS", 0)
    obs, exact = np.ones((LEVELS, SEEDS), dtype=bool), 120 / 6545
    p = _trend_test(_top_losses(), obs, np.random.default_rng(3))
    assert abs(p - exact) <= 4 * np.sqrt(exact * (1 - exact) / D.N_PERMUTATIONS)
