"""Each analysis stage gets its inputs from one call: the collapse statistics (the test, its radial sides and the
exponent model's per-seed times), the verdict rule (its numbers and its sentence) and the fit's posterior (padding
cut and derived quantities added together). Each is held against the separate calls it replaces."""

from __future__ import annotations

import numpy as np

from initmem import cube
from initmem.analysis.collapse import exponents_entry, pipeline_design
from initmem.jsonio import json_safe
from initmem.models.exponents import exponents_entry_of
from initmem.models.rules import rule_text, stated_rule, thresholds
from initmem.models.sequential import Spending
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.stats.collapse import collapse_statistics, collapse_test
from initmem.stats.curves import seed_mean_clocks
from initmem.stats.forgetting import per_seed_times
from initmem.stats.memsource import RADIAL_SIDES, memory_view


def test_the_stated_rule_is_the_thresholds_and_the_rule_text_of_one_computation():
    for spend, draws in ((Spending(0.05), 4000), (Spending(0.05, (4, 8, 12), 1), 800), (Spending(0.01), None)):
        limits, sentence = stated_rule(spend, draws)
        assert limits == thresholds(spend, draws) and sentence == rule_text(spend, draws)


def test_collapse_statistics_are_the_separate_tests_and_the_seed_times_of_the_same_view():
    ds = simulate_cube(preset_pipelines("quick_like")[:4], curves=True, truth_axis=cube.T_SGD, seed=2)
    options = {"n_boot": 3, "seed": 5, "fraction": 0.5, "rope": 0.01, "axes": None}
    got = collapse_statistics(ds, memory="radial", sides=RADIAL_SIDES, side_boot=2, steps=True, **options)
    assert json_safe(got.main) == collapse_test(ds, memory="radial", **options)
    assert set(got.sides) == set(RADIAL_SIDES)
    for side, r in got.sides.items():
        assert json_safe(r) == collapse_test(ds, memory=side, **(options | {"n_boot": 2}))
    view, base = memory_view(ds, "radial")
    times, budget = per_seed_times(view, base, seed_mean_clocks(view)[cube.STEP], fraction=0.5, rope=0.01)
    steps = got.seed_steps
    assert steps is not None and steps.pipelines == [str(p) for p in ds[cube.PIPELINE].values]
    np.testing.assert_array_equal(steps.times, times)
    np.testing.assert_array_equal(steps.budget, budget)
    # the exponents entry from these numbers is the standalone entry's (4 pipelines: skipped before any fit)
    entry = exponents_entry_of("radial", steps.pipelines, pipeline_design(ds), steps.times, steps.budget,
                               tolerance=0.25)
    assert entry == exponents_entry(ds, "radial", fraction=0.5, rope=0.01, tolerance=0.25) and "skipped" in entry


def test_a_side_with_too_few_levels_is_skipped_with_its_reason_and_no_steps_unless_asked():
    ds = simulate_cube(preset_pipelines("quick_like")[:3], curves=True, truth_axis=cube.T_SGD, seed=0)
    ds = ds.isel({cube.SIGMA: [0, 1, 2]})    # sigma_w <= 1 only: the upper side has a single level
    got = collapse_statistics(ds, memory="radial", sides=RADIAL_SIDES, n_boot=0)
    assert isinstance(got.sides["radial_above"], str) and "sigma_w levels on that side" in got.sides["radial_above"]
    assert isinstance(got.sides["radial_below"], dict) and got.seed_steps is None
