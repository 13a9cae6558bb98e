"""The design-based tests on accuracies on the 1 / n_test lattice (models/paired.py, ``_run_var_floor``).

Binomial runs out of n_test examples, 2-4 seeds: the designs of studies/lattice_calibration.py where the unfloored
tests fail or the floored ones come nearest their allotment. Each false rate is checked against its allotment by the
rule of tests/test_paired.py (k above the binomial 0.99 quantile fails) at a number of tables for which a true rate
of 1.3 x the allotment fails with probability >= 0.9; the same rule flags the unfloored tests, so it can fail.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy import stats

from initmem.models.designs import lattice_tables
from initmem.models.paired import (
    LATTICE_STEPS,
    equivalence_check,
    forgets_bounds,
    forgets_levels,
    paired_check,
    remembers_at,
    remembers_bounds,
)
from initmem.models.sequential import Spending
from initmem.names import ALPHA

IUT = forgets_levels(ALPHA)[0]


def tables_for(allotment: float, ratio: float = 1.3, power: float = 0.9) -> int:
    """The fewest tables (in steps of 500) at which a true rate of ``ratio`` x ``allotment`` exceeds the binomial
    0.99 quantile at the allotment with probability >= ``power``."""
    n = 500
    while stats.binom.sf(stats.binom.ppf(0.99, n, allotment), n, ratio * allotment) < power:
        n += 500
    return n


def credibly_above(k: int, n: int, allotment: float) -> bool:
    return k > stats.binom.ppf(0.99, n, allotment)


# (n_test, top accuracy, delta, levels, seeds): where the unfloored tests fail or the floored ones are nearest
# their allotment in the study
FORGETS_DESIGNS = [(50, 0.97, 0.06, 2, 3), (50, 0.99, 0.06, 2, 4), (100, 0.99, 0.03, 2, 3), (100, 0.99, 0.03, 2, 4),
                   (50, 0.99, 0.01, 2, 2), (50, 0.97, 0.01, 2, 2), (600, 0.9, 0.02, 2, 4), (100, 0.97, 0.03, 2, 4)]
REMEMBERS_DESIGNS = [(50, 0.97, 0.01, 5, 2, 0.0), (50, 0.99, 0.02, 5, 3, 1.0), (100, 0.9, 0.01, 3, 2, 1.0),
                     (50, 0.9, 0.01, 2, 2, 1.0), (50, 0.97, 0.01, 5, 4, 1.0), (600, 0.9, 0.02, 2, 4, 1.0),
                     (100, 0.99, 0.01, 3, 3, 1.0), (50, 0.9, 0.02, 2, 4, 1.0)]


def test_the_rule_has_the_power_it_claims():
    for a in (ALPHA, IUT):
        n = tables_for(a)
        assert stats.binom.sf(stats.binom.ppf(0.99, n, a), n, 1.3 * a) >= 0.9
        assert stats.binom.sf(stats.binom.ppf(0.99, n, a), n, a) <= 0.01


@pytest.mark.parametrize("design", FORGETS_DESIGNS)
def test_false_forgets_within_its_allotment_on_the_lattice(design):
    n_test, top, delta, n_lev, n_seed = design
    n = tables_for(IUT)
    t = lattice_tables(n_test, top, delta, n_lev, n_seed, 1.0, n,
                       np.random.default_rng(zlib.crc32(repr(design).encode())))
    k = int((forgets_bounds(t, IUT, n_test=n_test) < delta).sum())
    print(f"{design}: false forgets {k}/{n} (rule), {(forgets_bounds(t, IUT) < delta).sum()}/{n} (unfloored)")
    assert not credibly_above(k, n, IUT)


@pytest.mark.parametrize("design", REMEMBERS_DESIGNS)
def test_false_remembers_within_its_allotment_on_the_lattice(design):
    n_test, top, delta, n_lev, n_seed, spread = design
    n = tables_for(ALPHA)
    t = lattice_tables(n_test, top, delta, n_lev, n_seed, spread, n,
                       np.random.default_rng(zlib.crc32(repr(design).encode())))
    k = int(remembers_at(t, delta, n_test=n_test).sum())
    print(f"{design}: false remembers {k}/{n} (rule), {remembers_at(t, delta).sum()}/{n} (unfloored)")
    assert not credibly_above(k, n, ALPHA)


def test_the_unfloored_tests_fail_the_same_check():
    # the control: without n_test (the tests before the floor) the same rule flags both verdicts
    n = tables_for(ALPHA)
    rng = np.random.default_rng(5)
    t = lattice_tables(50, 0.99, 0.01, 2, 2, 1.0, n, rng)
    assert credibly_above(int((forgets_bounds(t, IUT) < 0.01).sum()), n, IUT)
    t = lattice_tables(50, 0.97, 0.01, 5, 3, 0.0, n, rng)
    assert credibly_above(int(remembers_at(t, 0.01).sum()), n, ALPHA)


def test_the_first_sequential_look_keeps_its_allotment():
    # two levels exactly delta apart, 4 seeds: the intersection-union test alone at the first look's level
    level = forgets_levels(Spending(ALPHA, looks=(4, 8, 12, 16), look=0))[0]
    n = tables_for(level)
    rng = np.random.default_rng(9)
    for n_test, top, delta in ((50, 0.97, 0.06), (100, 0.99, 0.03), (50, 0.9, 0.06)):
        t = lattice_tables(n_test, top, delta, 2, 4, 1.0, n, rng)
        k = int((forgets_bounds(t, level, n_test=n_test) < delta).sum())
        k0 = int((forgets_bounds(t, level) < delta).sum())
        print(f"look 1 (level {level:.4f}), n_test {n_test}, {top}: false forgets {k}/{n}, unfloored {k0}/{n}")
        assert not credibly_above(k, n, level)


def test_tied_seeds_are_not_certainty():
    # 3 seeds at 50 examples, each seed scoring the same at both levels: SE 0 without the floor, which said
    # "forgets" (and the Berger-Boos p 0) though one run's binomial noise is 4 points
    tied = np.array([[0.90, 0.86, 0.94], [0.90, 0.86, 0.94]])
    sig = np.array([0.5, 2.0])
    for paired, table in ((True, tied), (False, np.full((2, 3), 0.9))):   # Welch: every run of a level alike
        bare = equivalence_check(table, sig, 0.01, paired=paired, alpha=IUT)
        floored = equivalence_check(table, sig, 0.01, paired=paired, alpha=IUT, n_test=50)
        assert floored["se_floor"] == LATTICE_STEPS / 50 and floored["se_floored"] and bare["se_floor"] is None
        assert not floored["supports_forgets"] and floored["pair"]["se"] > 0
        assert bare["supports_forgets"]
    # all equal but for one example (0, 0, 1 / n_test): a small SE, floored too (here at delta 4 points)
    near = np.array([[0.90, 0.86, 0.94], [0.90, 0.86, 0.96]])
    assert equivalence_check(near, sig, 0.04, alpha=IUT)["supports_forgets"]
    assert not equivalence_check(near, sig, 0.04, alpha=IUT, n_test=50)["supports_forgets"]
    far = np.array([[0.90, 0.86, 0.94], [0.96, 0.92, 1.00]])   # every seed 6 points up
    out = paired_check(far, sig, 0.01, n_test=50)
    assert out["se_floored"] and out["p_value"] >= ALPHA * 0.02
    assert out["pair"]["se"] == pytest.approx(0.02 / np.sqrt(3))
    bare = paired_check(far, sig, 0.01)["p_value"]      # unfloored: nothing but the SD bound's share
    assert bare <= ALPHA * 0.02 + 1e-12 and out["p_value"] > 10 * bare


def test_the_vectorised_forms_agree_with_the_checks_on_the_lattice():
    rng = np.random.default_rng(2)
    sig = np.geomspace(0.25, 4.0, 5)
    for n_test, n_seed in ((50, 3), (100, 4), (600, 2)):
        tabs = lattice_tables(n_test, 0.97, 0.02, 5, n_seed, 1.0, 120, rng)
        rb = remembers_bounds(tabs, n_test=n_test, sigma_w=sig)
        ra = remembers_at(tabs, 0.02, n_test=n_test, sigma_w=sig)
        fb = forgets_bounds(tabs, IUT, n_test=n_test)
        for tab, r, a, f in zip(tabs, rb, ra, fb, strict=True):
            assert paired_check(tab, sig, 0.02, n_test=n_test)["supports_remembers"] == bool(a) == bool(r > 0.02)
            assert equivalence_check(tab, sig, 0.02, alpha=IUT, n_test=n_test)["supports_forgets"] == bool(f < 0.02)
