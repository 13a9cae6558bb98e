"""The paired check of "remembers" (models/paired.py): null controls on designs the memory model
does not describe, a power control, and exact identities.

The check is pure numpy, so each design is run at 480 pipeline tables (20 batches of 24): the
Wilson interval of its false-"remembers" rate is then about +-2 points (960 per design in
docs/statistics.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from initmem.models.paired import paired_bounds, paired_check

from ._memory_designs import DESIGNS, FALSE, SCALES, design_tables, wilson

DELTA = 0.01
BOUNDARY = ("null", "slopes", "noisy_level", "step", "ramp", "single", "three_levels")


def _rate(kind: str, scale: str, n_batch: int = 20, seed: int = 0) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    k = n = 0
    for _ in range(n_batch):
        d, _truth = design_tables(kind, scale, rng)
        for a in range(len(d.pipelines)):
            k += paired_check(d.y[a], d.sigma_w, DELTA)["supports_remembers"]
            n += 1
    return k, n


@pytest.mark.parametrize("scale", list(SCALES))
@pytest.mark.parametrize("kind", BOUNDARY)
def test_false_remembers_at_most_nominal_on_designs_outside_the_model(kind, scale):
    # every design's true spread is 0 or exactly delta: "remembers" is false in all of them
    # (seed-specific slopes, one level 10-20x noisier, plateaus tied at both extremes, 3 levels)
    assert kind in DESIGNS and (FALSE[kind] == "remembers" or kind == "three_levels")
    k, n = _rate(kind, scale)
    lo, hi = wilson(k, n)
    print(f"{kind} ({scale}): paired check supports 'remembers' {k}/{n} (95% Wilson {lo:.3f}-{hi:.3f})")
    assert k / n <= 0.05


def test_power_two_point_memory_at_ten_seeds():
    # 2 points of memory (twice delta) on 10 seeds: found nearly always at the paper's noise
    # (10,000 test examples) and most of the time at the demo's (720 examples)
    paper = _rate("power2", "paper", n_batch=4)
    demo = _rate("power2", "demo", n_batch=4)
    print(f"power, 2-point memory, 10 seeds: paper {paper[0]}/{paper[1]}, demo {demo[0]}/{demo[1]}")
    assert paper[0] / paper[1] >= 0.95
    assert demo[0] / demo[1] >= 0.45


def test_two_levels_is_the_paired_t_test_against_delta():
    # with two levels the check is exactly the one-sided paired t test of |mean d| > delta
    rng = np.random.default_rng(3)
    table = np.array([[0.90, 0.91, 0.92, 0.905], [0.93, 0.935, 0.95, 0.94]]) + rng.normal(0, 1e-3, (2, 4))
    d = table[1] - table[0]
    t = (d.mean() - DELTA) / (d.std(ddof=1) / 2.0)
    out = paired_check(table, np.array([0.5, 2.0]), DELTA)
    assert out["n_pairs"] == 1
    assert out["p_value"] == pytest.approx(stats.t.sf(t, 3))
    assert out["pair"]["higher"] == 2.0 and out["pair"]["lower"] == 0.5
    assert out["pair"]["difference"] == pytest.approx(d.mean())
    # the same via scipy's paired test, shifted by delta
    ref = stats.ttest_1samp(d - DELTA, 0.0, alternative="greater")
    assert out["p_value"] == pytest.approx(ref.pvalue)


def test_bonferroni_and_the_bound_agree_with_the_check():
    rng = np.random.default_rng(7)
    tables = rng.normal(0, 0.004, (200, 5, 4)) + np.linspace(0, 0.02, 5)[None, :, None]
    bounds = paired_bounds(tables)
    for tab, b in zip(tables, bounds, strict=True):
        out = paired_check(tab, np.geomspace(0.25, 4, 5), DELTA)
        assert out["n_pairs"] == 10
        assert out["supports_remembers"] == bool(b > DELTA)


def test_missing_runs_and_independent_seeds():
    table = np.array([[0.90, 0.91, np.nan, 0.90], [0.95, np.nan, 0.96, 0.955], [0.90, 0.90, 0.91, np.nan]])
    sig = np.array([0.5, 1.0, 2.0])
    out = paired_check(table, sig, DELTA)
    assert out["n_pairs"] == 3 and out["pair"]["higher"] == 1.0
    assert out["pair"]["df"] == 1.0  # levels 0.5 and 1 share two complete seeds
    welch = paired_check(table, sig, DELTA, paired=False)
    assert welch["test"].startswith("Welch")
    lower = {0.5: 0, 2.0: 2}[welch["pair"]["lower"]]
    a, b = table[1][np.isfinite(table[1])], table[lower][np.isfinite(table[lower])]
    ref = stats.ttest_ind(a - DELTA, b, equal_var=False, alternative="greater")
    assert welch["p_value"] == pytest.approx(min(1.0, 3 * ref.pvalue))
    lone = paired_check(np.array([[0.9, np.nan], [np.nan, 0.95]]), np.array([1.0, 2.0]), DELTA)
    assert lone["p_value"] is None and not lone["supports_remembers"]
