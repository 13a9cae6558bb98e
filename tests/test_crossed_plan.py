"""The draw plan of a crossed design (stats/crossed_plan.py, ``initmem plan`` on a crossed analysis).

Known answers: the simulated rates of the draw verdict reproduce the calibration table's (docs/crossed.md,
*Calibration*, 4,000 tables per cell), hold the verdict's level at the margin, and the plan of an analysis with
known components asks for few init seeds where SD_init is far from the margin and for more than the ladder holds
where it sits on it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from initmem import results as R
from initmem.errors import OptionError, UserError
from initmem.models.designs import wilson
from initmem.results import records as RR
from initmem.stats.crossed import draw_verdict_rates, simulate_tables
from initmem.stats.crossed_plan import plan_draw, render_draw_plan
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._report_fixture import small_cube, write_analysis

M = 0.5  # the calibration's margin, in points
DESIGN = {"n_levels": 3, "n_init": 8, "n_data": 4, "margin": M}


def test_simulated_tables_have_the_components_and_the_sharing_asked_for():
    # Two levels' cells differ by the interaction alone when every seed's effect is shared (variance 2 x 0.5^2),
    # and by all three terms when they are drawn anew (2 x (2^2 + 1^2 + 0.5^2)).
    y = simulate_tables(np.random.default_rng(0), 4000, 2, 6, 3, 2.0, 1.0, 0.5, shared=1.0)
    assert y.shape == (4000, 2, 6, 3)
    assert (y[:, 0] - y[:, 1]).var() == pytest.approx(2 * 0.5**2, rel=0.03)
    anew = simulate_tables(np.random.default_rng(1), 4000, 2, 6, 3, 2.0, 1.0, 0.5, shared=0.0)
    assert (anew[:, 0] - anew[:, 1]).var() == pytest.approx(2 * (2.0**2 + 1.0**2 + 0.5**2), rel=0.03)
    assert anew[:, 0].var() == pytest.approx(2.0**2 + 1.0**2 + 0.5**2, rel=0.03)
    with pytest.raises(ValueError, match="shared"):
        simulate_tables(np.random.default_rng(0), 1, 2, 2, 2, 1.0, 1.0, 1.0, shared=1.5)


@pytest.mark.parametrize("shared, measured, n", [(1.0, 72.7, 4000), (0.0, 91.8, 4000)])
def test_the_rates_are_the_calibration_tables(shared, measured, n):
    # docs/crossed.md, 8 x 4, SD_data 1, SD_resid 0.5: power at 2m 72.7% (identical) and 91.8% (independent),
    # each from 4,000 tables; two independent estimates of one rate differ by more than 4 of their joint SEs
    # (about 1 point here) once in 16,000 tables.
    got = draw_verdict_rates(2 * M, 1.0, 0.5, shared=shared, reps=n, seed=11, **DESIGN)
    p = measured / 100
    se = np.sqrt(2 * p * (1 - p) / n)
    assert abs(got["keeps"] - p) < 4 * se, got
    assert got["keeps"] + got["forgets"] + got["undecided"] == pytest.approx(1.0)


def test_false_keeps_stays_at_most_alpha_at_the_margin():
    # The null control: at SD_init = margin, "keeps its draw" is a false verdict; it fails when the rate's 95%
    # Wilson interval lies above 5% in either case (measured 2.5% and 0.5% in docs/crossed.md).
    for shared in (1.0, 0.0):
        got = draw_verdict_rates(M, 1.0, 0.5, shared=shared, reps=4000, seed=5, **DESIGN)
        lo, _ = wilson(round(got["keeps"] * 4000), 4000)
        assert lo <= 0.05, (shared, got)


def test_bad_designs_are_user_errors():
    with pytest.raises(UserError, match="2 init"):
        draw_verdict_rates(1.0, 1.0, 1.0, n_levels=3, n_init=1, n_data=4, margin=M)
    with pytest.raises(UserError, match="SDs >= 0"):
        draw_verdict_rates(-1.0, 1.0, 1.0, **DESIGN)
    with pytest.raises(UserError, match="positive"):
        draw_verdict_rates(1.0, 1.0, 1.0, n_levels=3, n_init=8, n_data=4, margin=0.0)


def _b(est: float, lo: float, hi: float) -> RR.Bounds:
    return RR.Bounds(estimate=est, lower=lo, upper=hi)


def _crossed(summary: R.Summary) -> None:
    """Known components (accuracy fractions, margin half a point): far above, far below and at the margin."""
    far = RR.CrossedPipeline(draw_verdict="keeps its draw", sd_init=_b(0.03, 0.02, 0.05),
                             sd_data=_b(0.004, 0.001, 0.008), sd_resid=_b(0.003, 0.002, 0.004))
    none = RR.CrossedPipeline(draw_verdict="forgets its draw", sd_init=_b(0.0, 0.0, 0.002),
                              sd_data=_b(0.004, 0.001, 0.008), sd_resid=_b(0.003, 0.002, 0.004))
    at = RR.CrossedPipeline(draw_verdict="undecided", sd_init=_b(0.005, 0.002, 0.01),
                            sd_data=_b(0.004, 0.001, 0.008), sd_resid=_b(0.003, 0.002, 0.004))
    summary.crossed = RR.Crossed(margin=0.005, n_init=4, n_data=4, pipelines={"far": far, "none": none, "at": at})


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan")
    return write_analysis(small_cube(("far", "none", "at")), root,
                          verdicts={"far": "remembers", "none": "forgets", "at": "undecided"}, edit=_crossed)


def test_the_plan_of_known_components(analysis):
    ladder = (4, 8, 16)
    out = plan_draw(analysis, n_sim=400, ladder=ladder)
    assert out["n_init_now"] == 4 and out["ladder"] == [4, 8, 16] and out["margin"] == 0.005
    far, none, at = (out["pipelines"][p] for p in ("far", "none", "at"))
    assert far["estimate"]["n_init_needed"] == 4 and far["estimate"]["shared"]["4"]["keeps"] > 0.8
    assert none["estimate"]["n_init_needed"] == 4 and none["estimate"]["anew"]["4"]["forgets"] > 0.8
    # exactly at the margin nothing decides, at any number of seeds
    assert at["estimate"]["n_init_needed"] is None
    assert max(r["keeps"] for r in at["estimate"]["shared"].values()) < 0.1
    # its interval's upper end, 1 point (twice the margin), is the calibration's power row: 8 x 4 decides it
    # 72.7% of the time when the draw is shared across levels (91.8% drawn anew), so 16 init seeds are needed
    assert at["upper"]["n_init_needed"] == 16
    assert at["upper"]["shared"]["8"]["keeps"] < 0.8 < at["upper"]["anew"]["8"]["keeps"]
    table = render_draw_plan(out)
    assert "far" in table and ">16" in table and "margin 0.5 points" in table


def test_the_command_line_prints_the_draw_plan_and_refuses_scale_options(analysis):
    proc = invoke("plan", analysis, "--n-sim", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)["pipelines"]) == {"far", "none", "at"}
    assert_user_error(invoke("plan", analysis, "--delta", "0.01"), "--delta plans the scale verdict")
    assert_user_error(invoke("plan", analysis, "--looks", "4,8"), "--looks plans the scale verdict")
    with pytest.raises(OptionError):
        plan_draw(analysis, n_sim=10)


def test_an_analysis_without_a_crossed_block_has_no_draw_plan(tmp_path):
    folder = write_analysis(small_cube(("a", "b")), tmp_path, verdicts={"a": "remembers", "b": "forgets"})
    with pytest.raises(UserError, match="not an analysis of a crossed seed design"):
        plan_draw(folder)


def test_a_crossed_analysis_without_a_margin_is_told_to_set_one(tmp_path):
    def no_margin(summary: R.Summary) -> None:
        _crossed(summary)
        summary.crossed.margin = None

    folder = write_analysis(small_cube(("far", "none", "at")), tmp_path, verdicts={"far": "remembers"},
                            edit=no_margin)
    with pytest.raises(UserError, match="no draw margin .* draw_margin"):
        plan_draw(folder)
    assert_user_error(invoke("plan", folder), "--draw-margin")
