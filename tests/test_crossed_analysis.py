"""A crossed cube through ``initmem analyze`` and the report: the draw verdicts on a simulated truth, the
summary's ``crossed`` block, the draw's forgetting curve and the ``--draw-margin`` flag (a plain summary without
the block: tests/test_crossed_report.py)."""

from __future__ import annotations

import json

import pytest

from initmem.analysis import analyze_cube
from initmem.cli.main import main
from initmem.cube.io import write_cube
from initmem.reports.html import build_report
from initmem.simulate.draw import SimPipeline, simulate_cube

pytestmark = pytest.mark.slow
FIT = {"draws": 300, "tune": 300, "chains": 2, "progress": False}


@pytest.fixture(scope="module")
def crossed(tmp_path_factory):
    """One pipeline whose initial draw moves its accuracy by about 1.5 points (logit SD 0.15 near 90%
    accuracy), one whose draw does nothing and whose runs are quiet: known answers at the 0.5-point margin."""
    root = tmp_path_factory.mktemp("crossed")
    pipes = [SimPipeline("keeps", sigma_sd=0.3, seed_sd=0.05, residual_sd=0.05, n_sigma=3, n_init=8, n_data=4,
                         init_sd=0.15, data_sd=0.05),
             SimPipeline("forgets", sigma_sd=0.0, seed_sd=0.005, residual_sd=0.005, n_sigma=3, n_init=8, n_data=4,
                         init_sd=0.0, data_sd=0.1)]
    write_cube(simulate_cube(pipes, n_test=10_000, curves=True, seed=1), root / "cube.nc")
    summary = analyze_cube(root / "cube.nc", root / "analysis", **FIT)
    return root, summary


def test_the_draw_verdicts_follow_the_simulated_truth(crossed):
    _, summary = crossed
    block = summary.crossed
    assert block is not None and (block.n_init, block.n_data) == (8, 4)
    assert block.margin == pytest.approx(0.005)    # half a point: the default for accuracies
    keeps, forgets = block.pipelines["keeps"], block.pipelines["forgets"]
    assert keeps.draw_verdict == "keeps its draw" and keeps.sd_init.lower > 0.005
    assert forgets.draw_verdict == "forgets its draw" and forgets.sd_init.upper < 0.005
    # the data seed's effect is the quiet pipeline's whole seed variance: its init share is near 0
    assert forgets.init_share.upper < 0.2 < keeps.init_share.lower
    for p in (keeps, forgets):
        assert p.bayes is not None and p.bayes.sd_init.lower <= p.bayes.sd_init.median <= p.bayes.sd_init.upper
        assert [lv.sigma_w for lv in p.by_sigma_w] == pytest.approx(list(summary_levels(crossed)))
    # the scale verdict is still there, beside the draw's
    assert {p.verdict for p in summary.pipelines.values()} <= {"remembers", "forgets", "undecided"}


def summary_levels(crossed):
    root, _ = crossed
    from initmem.cube.io import open_cube

    return [float(s) for s in open_cube(root / "cube.nc")["sigma_w"].values]


def test_the_draws_forgetting_curve_has_one_point_per_evaluated_epoch(crossed):
    root, summary = crossed
    raw = json.loads((root / "analysis" / "summary.json").read_text())["crossed"]["pipelines"]["keeps"]
    curve = raw["init_share_curve"]
    assert len(curve["epoch"]) == len(curve["init_share"]) == len(curve["sd_init"]) > 2
    assert all(0.0 <= v <= 1.0 for v in curve["init_share"] if v is not None)
    html = build_report(root / "analysis", root / "report.html").read_text()
    assert "memory of the draw" in html and "keeps its draw" in html


def test_a_bad_draw_margin_is_one_line_and_exit_2(crossed, tmp_path, capsys):
    root, _ = crossed
    rc = main(["analyze", str(root / "cube.nc"), "--out", str(tmp_path / "a"), "--draw-margin", "-1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--draw-margin" in err
    assert not (tmp_path / "a").exists()
