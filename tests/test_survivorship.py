"""Survivorship: runs the interpolation gate leaves out are tested for dependence on
sigma_w, and the verdict is refitted with them put back at their final accuracy; a warning when either
should change the reading (models/summaries.py, docs/memory-model.md). The rule-level false-verdict rates
of designs whose slow seeds are dropped at the top sigma_w ("mnar") are in docs/memory-model.md."""

from __future__ import annotations

import numpy as np
import pytest

from initmem import cube
from initmem.analysis.analyze import analyze_cube
from initmem.models.data import _dependence_test
from initmem.models.designs import SMALL
from initmem.models.summaries import put_back_direction
from initmem.simulate import SimPipeline, simulate_cube


def test_the_dependence_test_sees_runs_lost_at_one_end_of_the_grid():
    rng = np.random.default_rng(0)
    observed = np.ones((5, 6), dtype=bool)
    lost = np.zeros((5, 6), dtype=bool)
    lost[-1, :4] = True                       # 4 of 6 seeds lost at the largest sigma_w
    assert _dependence_test(lost, observed, rng) < 0.01
    spread_out = np.zeros((5, 6), dtype=bool)
    spread_out[np.arange(5), np.arange(5)] = True  # one lost run per level
    assert _dependence_test(spread_out, observed, rng) > 0.5
    assert _dependence_test(np.zeros((5, 6), dtype=bool), observed, rng) is None


def test_the_put_back_direction_is_where_the_refit_moves_the_spread_against_delta():
    assert put_back_direction(0.073, 0.112, 0.02) == "further"      # a memory the lost runs make larger
    assert put_back_direction(0.073, 0.030, 0.02) == "towards"
    assert put_back_direction(0.073, 0.010, 0.02) == "across"
    assert put_back_direction(0.005, 0.002, 0.02) == "further"      # below delta, further below
    assert put_back_direction(0.005, 0.015, 0.02) == "towards"
    assert put_back_direction(0.005, 0.030, 0.02) == "across"
    assert put_back_direction(0.020, 0.050, 0.02) == "across"       # from delta itself: no side to keep


@pytest.mark.slow
def test_runs_left_out_by_the_gate_are_tested_put_back_and_warned_about(tmp_path):
    """A pipeline without memory whose 3 slowest seeds at the largest sigma_w never interpolated and ended far
    below the rest: the gated analysis sees no memory; the lost runs depend on sigma_w (warned), and put back
    they make a spread of about 14 points (shown, with its verdict)."""
    # 2 pipelines x 6 levels x 6 seeds, compiled as the suite's other small cubes (designs.SMALL)
    ds = simulate_cube([SimPipeline("flat", sigma_sd=0.0, n_seed=6, baseline=2.0),
                        SimPipeline("other", sigma_sd=0.0, n_seed=6, baseline=2.0)], n_test=2000, seed=3)
    tau, final = ds[cube.TAU_INTERP].values.copy(), ds[cube.SELECTED_TEST_ACC].values.copy()
    tau[0, -1, :3] = np.nan
    final[0, -1, :3] = 0.55
    ds[cube.TAU_INTERP] = (cube.CELL_DIMS, tau)
    ds[cube.FINAL_TEST_ACC] = (cube.CELL_DIMS, final)
    cube.write_cube(ds, tmp_path / "c.nc")
    s = analyze_cube(tmp_path / "c.nc", tmp_path / "an", draws=300, tune=300, chains=2, progress=False,
                     compile_shape=SMALL)
    flat, other = s.pipelines["flat"].missingness, s.pipelines["other"].missingness
    assert flat.n_gated == 3 and flat.by_sigma_w == {"8.0": 3}
    assert flat.p_value < 0.05 and flat.depends_on_sigma_w and flat.warning
    assert flat.sensitivity is not None and flat.sensitivity.spread.median > 0.08
    assert s.pipelines["flat"].spread.median < 0.03
    assert flat.verdict_changes == (flat.sensitivity.verdict != s.pipelines["flat"].verdict)
    assert flat.put_back_direction == put_back_direction(s.pipelines["flat"].spread.median,
                                                         flat.sensitivity.spread.median, s.delta)
    assert any("put back at their final accuracy" in n for n in s.pipelines["flat"].notes)
    assert other.n_gated == 0 and other.sensitivity is None and other.warning is None
