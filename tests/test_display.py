"""The crossed block and the seed plan read at a glance in a notebook, as ``Summary`` does: a short repr (one
line per pipeline, accuracies in points), the same table as HTML, and a tidy frame in the analysis's units."""

from __future__ import annotations

import json

import pandas as pd

from initmem.results.display import PlanResult
from initmem.results.records import Bounds, Crossed, CrossedBayes, CrossedPipeline, PosteriorBounds


def _crossed(units: str = "fraction") -> Crossed:
    return Crossed(margin=0.005, alpha=0.05, units=units, n_init=4, n_data=3, pipelines={
        "sgd": CrossedPipeline(draw_verdict="keeps its draw",
                               sd_init=Bounds(estimate=0.0123, lower=0.008, upper=0.019),
                               sd_data=Bounds(estimate=0.004, lower=0.001, upper=0.007),
                               sd_resid=Bounds(estimate=0.002, lower=0.0015, upper=0.003),
                               init_share=Bounds(estimate=0.81, lower=0.6, upper=0.93),
                               bayes=CrossedBayes(sd_init=PosteriorBounds(median=0.012, lower=0.007, upper=0.02))),
        "adam_long_name": CrossedPipeline(draw_verdict="undecided",
                                          sd_init=Bounds(estimate=0.003, lower=0.0, upper=0.0071))})


def test_the_crossed_block_reads_one_line_per_pipeline_in_points():
    crossed = _crossed()
    assert repr(crossed) == str(crossed) == (
        "Crossed: 4 init x 3 data seeds, margin 0.50 points, alpha 0.05; SD_init median [90%] points\n"
        "  sgd             keeps its draw  1.23 [0.80, 1.90]  0.81 [0.6, 0.93]\n"
        "  adam_long_name  undecided       0.30 [0.00, 0.71]  -")
    # an older file's "points" means the same fractions; a metric other than an accuracy keeps its own units
    assert repr(_crossed("points")) == repr(crossed)
    assert "1.23" not in repr(_crossed("metric units")) and "0.0123 [0.008, 0.019]" in repr(_crossed("metric units"))
    html = crossed._repr_html_()
    assert html.count("<tr>") == 3 and "<td>keeps its draw</td>" in html and "<td>1.23 [0.80, 1.90]</td>" in html


def test_the_crossed_frame_is_tidy_in_the_analysis_units():
    frame = _crossed().to_frame()
    assert list(frame.columns) == ["pipeline", "draw_verdict", "method", "quantity", "estimate", "lower", "upper"]
    assert not frame.duplicated(["pipeline", "method", "quantity"]).any()
    assert len(frame) == 4 + 4 + 4        # sgd: bounds and posterior; adam: bounds only
    row = frame.set_index(["pipeline", "method", "quantity"]).loc[("sgd", "bounds", "sd_init")]
    assert (row.estimate, row.lower, row.upper) == (0.0123, 0.008, 0.019)
    assert frame.set_index(["pipeline", "method", "quantity"]).loc[("sgd", "posterior", "sd_init")].estimate == 0.012


def _plan() -> dict:
    power = {"seeds_needed": 8, "p_decisive": {4: 0.4, 8: 0.82}, "p_remembers": {4: 0.4, 8: 0.8},
             "p_forgets": {4: 0.0, 8: 0.02}}
    return {"delta": 0.02, "target": 0.8, "n_sim": 200, "ladder": [4, 8], "metric": "selected_test_acc",
            "pipelines": {"sgd": {"n_seed_now": 4, "verdict_now": "undecided", "posterior": power,
                                  "sequential": {"looks": [4, 8], "p_decided": 0.85, "seeds_mean": 6.4},
                                  "reml": {**power, "seeds_needed": None}},
                          "adam": {"n_seed_now": 4, "verdict_now": "remembers",
                                   "posterior": {**power, "seeds_needed": None}, "sequential": {}, "reml": None}}}


def test_the_plan_is_the_same_dict_and_reads_one_line_per_pipeline():
    plan = PlanResult(_plan(), is_accuracy=True)
    assert plan == _plan() and json.loads(json.dumps(plan)) == json.loads(json.dumps(_plan()))
    assert repr(plan).splitlines() == [
        "Plan: selected_test_acc, delta = 2 points, a decisive verdict with probability 0.8 (200 simulated "
        "experiments)",
        "  sgd   undecided  4 seeds now  " + "8 seeds needed".ljust(28) + "  looks 4,8: decided 0.85, 6.4 seeds on "
        "average",
        "  adam  remembers  4 seeds now  more seeds than the ladder's  -"]
    assert "delta = 0.02," in repr(PlanResult(_plan(), is_accuracy=False))
    html = plan._repr_html_()
    assert html.count("<tr>") == 3 and "<td>8</td>" in html and "<th>seeds needed</th>" in html


def test_the_plan_frame_is_tidy():
    frame = PlanResult(_plan()).to_frame()
    assert list(frame.columns) == ["pipeline", "verdict_now", "rule", "n_seed", "p_decisive", "p_remembers",
                                   "p_forgets"]
    assert not frame.duplicated(["pipeline", "rule", "n_seed"]).any() and len(frame) == 2 + 2 + 2
    row = frame.set_index(["pipeline", "rule", "n_seed"]).loc[("sgd", "posterior", 8)]
    assert (row.p_decisive, row.p_remembers, row.p_forgets) == (0.82, 0.8, 0.02)
    assert isinstance(frame, pd.DataFrame) and frame["n_seed"].dtype.kind == "i"
