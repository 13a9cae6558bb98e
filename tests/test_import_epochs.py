"""A per-epoch table, imported, analysed and reported through the CLI, end to end.

The table is a simulated grid's curves written out as a user's long CSV (no clocks, no selected
accuracy, no tau_interp, lr per run or per epoch). Known answers: the clocks the import computes
equal the simulator's (both come from initmem/schedule.py); the analysis then has memory curves,
the collapse test and forgetting times; and the report of this imported table claims nothing the
table did not give (no interpolation count, no seed pairing, no stale model sentences).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from initmem import cube
from initmem.importers.table import cube_to_frame
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.tests._cli import invoke
from initmem.tests._compile_shape import SMALL_FLAG

N_TRAIN = 1024  # the simulator's training-set size
PIPES = ("sgd_l2_low", "sgd_l2", "sgd_step", "adam")  # constant, cosine, step (per-epoch lr), Adam
DROPPED = (*cube.ALL_CLOCKS, cube.STEP, cube.LR_NOW, cube.TEST_PRED, cube.TEST_LABEL, cube.SELECTED_TEST_CORRECT,
           cube.TAU_INTERP, cube.TAU_BEST, cube.SELECTED_TEST_ACC, cube.SELECTED_VAL_ACC, cube.FINAL_TEST_ACC,
           cube.INIT_KERNEL_NORM)
# Sentences the issue found about the model that is no longer in force, and in reports of imported tables
# claims the table did not give (interpolation counts, seeds shared across sigma_w).
STALE_MODEL = ("binomial counts of correct", "Bayesian binomial model", "hyper-prior", "partial pooling shrinks",
               "pools pipelines", "borrows strength", "a fraction for accuracies", "partially pooled")
STALE = (*STALE_MODEL, "runs interpolated", "initial direction, data order and augmentation across",
         "nothing to compare with")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("epochs")
    pipes = [replace(p, n_sigma=3, n_seed=3) for p in preset_pipelines("collapse_controls") if p.name in PIPES]
    truth = simulate_cube(pipes, curves=True, epochs=10, n_test=400, seed=1)
    table = cube_to_frame(truth.drop_vars([v for v in DROPPED if v in truth]).drop_vars(cube.EXAMPLE))
    table = table.drop(columns=["family"])
    lr_now = truth[cube.LR_NOW].to_series()
    step = table["schedule"] == "step"  # a step decay is exact as one lr per epoch; a cosine is not
    table.loc[step, "lr"] = lr_now.reindex(table.loc[step, ["pipeline", "sigma_w", "seed", "epoch"]]).to_numpy()
    table.to_csv(root / "runs.csv", index=False)
    proc = invoke("import", root / "runs.csv", "--out", root / "cube.nc", "--seeds", "independent",
                  "--n-train", N_TRAIN)
    assert proc.returncode == 0, proc.stderr
    proc = invoke("--quiet", "analyze", root / "cube.nc", "--out", root / "an", "--draws", "200", "--tune", "200",
                  "--chains", "2", *SMALL_FLAG)
    assert proc.returncode == 0, proc.stderr
    proc = invoke("--quiet", "report", root / "an", "--out", root / "report.html")
    assert proc.returncode == 0, proc.stderr
    return truth, root


@pytest.mark.slow
def test_clocks_are_the_engines(imported):
    truth, root = imported
    ds = cube.open_cube(root / "cube.nc")
    ok = (truth[cube.STATUS] == cube.OK).values[..., None]
    for v in (cube.T_ETA, cube.T_SGD, cube.T_L2, cube.T_ADAPT, cube.STEP, cube.LR_NOW):
        want = truth[v].transpose(*cube.CURVE_DIMS).values
        np.testing.assert_allclose(np.where(ok, ds[v].values, 0), np.where(ok, want, 0), rtol=1e-6, err_msg=v)
    # the selected accuracy is test_acc at the best val_acc epoch (grid/select.py's rule best_val_acc)
    e = ds[cube.TAU_BEST].sel(pipeline="adam", sigma_w=ds.sigma_w[0], seed=0).item()
    curve = ds.sel(pipeline="adam", sigma_w=ds.sigma_w[0], seed=0)
    assert e == int(np.argmax(curve[cube.VAL_ACC].values))
    assert ds[cube.SELECTED_TEST_ACC].sel(pipeline="adam", sigma_w=ds.sigma_w[0], seed=0).item() == \
        pytest.approx(curve[cube.TEST_ACC].values[int(e)])
    assert cube.seed_design(ds) == cube.SEED_INDEPENDENT and cube.TAU_INTERP not in ds


@pytest.mark.slow
def test_memory_curves_collapse_test_and_forgetting_times(imported):
    _, root = imported
    summary = json.loads((root / "an" / "summary.json").read_text())
    collapse = json.loads((root / "an" / "collapse.json").read_text())
    assert (root / "an" / "curves.nc").exists()
    assert {cube.T_ETA, cube.T_SGD, cube.T_L2}.issubset(collapse["axes"])
    assert collapse["verdict"] in ("clock_better", "epoch_better", "no_difference", "not_identifiable")
    for p in PIPES:
        assert cube.T_SGD in summary["pipelines"][p]["forgetting_time"]
    assert set(collapse["forgetting_times"][cube.T_SGD]["per_pipeline"]) == set(PIPES)


def _text(html: str) -> str:
    import html as h

    html = re.sub(r"<(svg|style|script)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", h.unescape(re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.slow
def test_report_says_only_what_the_table_gave(imported):
    _, root = imported
    text = _text((root / "report.html").read_text())
    for stale in STALE:
        assert stale not in text, stale
    assert "interpolation was not recorded in this table" in text.lower()
    assert "not joined: seeds are independent across σ_w" in text
    assert "Seeds are independent across sigma_w" in text and "imported (seeds: independent)" in text
    assert "Seed SD (points)" in text and "REML seed SD (points)" in text
    headline = text[text.index("(spread of the expected") - 400:text.index("(spread of the expected")]
    assert not re.search(r"\w \(\d+(\.\d+)?\)", headline), headline  # every number has its unit


def test_stale_sentences_are_gone_from_the_code():
    root = Path(__file__).resolve().parents[1]
    for rel in ("stats/frequentist.py", "reports/methods.py", "reports/text.py", "reports/figures.py",
                "reports/tables.py", "reports/templates/report.html.j2"):
        src = (root / rel).read_text()
        for stale in STALE_MODEL:
            assert stale not in src, (rel, stale)


@pytest.mark.slow
def test_paired_and_independent_designs_are_described_from_one_place(imported):
    from initmem.plot.load import load_analysis
    from initmem.reports import methods
    from initmem.reports.figures import report_figure

    _, root = imported
    a = load_analysis(root / "an")
    for design in cube.SEED_DESIGNS:
        a.cube.attrs[cube.A_SEED_DESIGN] = design
        text = " ".join(methods.methods_paragraphs(a, {}))
        assert methods.SEED_DESIGN_TEXT[design] in text
        assert f"imported (seeds: {design})" in text
        assert methods.seed_caption(a) in report_figure("metric_vs_sigma", a).caption
        assert ("joined by seed (paired design" in methods.seed_caption(a)) == (design == cube.SEED_PAIRED)
