"""Edge inputs a user test found (short series, one sigma_w level, --out a file, --axes, negative plan deltas):
each gives the right answer or one line on stderr with exit status 2, and an output folder is complete or absent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from initmem import cube
from initmem.analysis.collapse import collapse_view
from initmem.analysis.staging import staged_folder
from initmem.atomic import leftover_temporaries
from initmem.errors import UserError
from initmem.models.designs import SMALL
from initmem.models.plan import deciding_deltas, render_table
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.stats.loo import floor_var, smooth_var
from initmem.tests._cli import assert_user_error, invoke


@pytest.fixture(scope="module")
def cubes(tmp_path_factory):
    """Small simulated --curves cubes, made once through the command line."""
    root = tmp_path_factory.mktemp("edge")
    made = {}
    for name, args in {"ep2": ("--epochs", "2"), "ep3": ("--epochs", "3"), "one_level": ("--n-sigma", "1")}.items():
        made[name] = root / f"{name}.nc"
        proc = invoke("simulate", "--curves", *args, "--out", made[name])
        assert proc.returncode == 0, proc.stderr
    return made


# 1. Short series: the smoothing window shrinks to the series ------------------------------------------------

def test_smooth_var_cuts_its_window_at_the_ends_of_short_series():
    # 3 epochs: every epoch is within 2 of the others, so each is the mean of all three
    np.testing.assert_allclose(smooth_var(np.array([[1.0, 2.0, 6.0]])), [[3.0, 3.0, 3.0]])
    # 4 epochs: (1+2+3)/3, (1+2+3+10)/4, the same, (2+3+10)/3
    np.testing.assert_allclose(smooth_var(np.array([1.0, 2.0, 3.0, 10.0])), [2.0, 4.0, 4.0, 5.0])
    np.testing.assert_allclose(smooth_var(np.array([[4.0, np.nan, 8.0]])), [[6.0, np.nan, 6.0]])
    np.testing.assert_allclose(smooth_var(np.array([7.0])), [7.0])
    # 6 epochs: the full window of 5 inside, cut at both ends (unchanged from before)
    np.testing.assert_allclose(smooth_var(np.arange(1.0, 7.0)), [2.0, 2.5, 3.0, 4.0, 4.5, 5.0])
    assert floor_var(np.ones((3, 2))).shape == (3, 2)


@pytest.mark.parametrize("name", ["ep2", "ep3"])
def test_collapse_on_a_cube_of_three_or_fewer_epochs(cubes, tmp_path, name):
    proc = invoke("collapse", cubes[name], "--out", tmp_path / "c", "--no-exponents", "--n-boot", "20")
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "c" / "collapse.json").read_text())
    assert r["n_pipelines"] == 3 and (tmp_path / "c" / "curves.nc").is_file()
    assert r["axes"]["epoch"]["scored_pipelines"] == ["p0", "p1", "p2"]


@pytest.mark.slow
def test_analyze_a_short_series_writes_the_whole_folder_and_a_failure_changes_nothing(cubes, tmp_path,
                                                                                      monkeypatch):
    from initmem.analysis import analyze_cube
    from initmem.models import arviz_io

    fit = {"draws": 200, "tune": 200, "chains": 2, "progress": False, "compile_shape": SMALL}
    out = tmp_path / "an"
    summary = analyze_cube(cubes["ep3"], out, **fit)
    assert sorted(p.name for p in out.iterdir()) == ["collapse.json", "curves.nc", "posterior.nc", "summary.json"]
    assert summary.outputs.collapse == "collapse.json"
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*args, **kwargs):   # fails after curves.nc and collapse.json were written
        raise RuntimeError("disk full")

    monkeypatch.setattr(arviz_io, "to_netcdf", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        analyze_cube(cubes["ep3"], out, **fit | {"draws": 50, "tune": 50})
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before    # the earlier analysis, whole
    assert leftover_temporaries(tmp_path) == []                          # (a new folder: the test below)


def test_a_staged_folder_is_published_whole_or_not_at_all(tmp_path):
    with staged_folder(tmp_path / "a" / "b") as tmp:
        (tmp / "x.json").write_text("1")
    assert (tmp_path / "a" / "b" / "x.json").read_text() == "1"
    with pytest.raises(ValueError), staged_folder(tmp_path / "a" / "b", stale=("y.nc",)) as tmp:
        (tmp / "x.json").write_text("2")
        raise ValueError
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["x.json"]
    assert (tmp_path / "a" / "b" / "x.json").read_text() == "1"
    (tmp_path / "a" / "b" / "y.nc").write_text("old")
    with staged_folder(tmp_path / "a" / "b", last="x.json", stale=("y.nc",)) as tmp:
        (tmp / "x.json").write_text("3")
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["x.json"]   # the stale output went
    with pytest.raises(KeyError), staged_folder(tmp_path / "c" / "d") as tmp:
        raise KeyError
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]            # no folder, parents included
    (tmp_path / "f").write_text("keep")
    with pytest.raises(UserError, match="is a file, not a folder"), staged_folder(tmp_path / "f"):
        pass
    assert leftover_temporaries(tmp_path) == []


# 2. One sigma_w level ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("memory", ["radial", "functional"])
def test_collapse_on_one_sigma_level_is_one_line(cubes, tmp_path, memory):
    proc = invoke("collapse", cubes["one_level"], "--out", tmp_path / "x", "--memory", memory)
    assert_user_error(proc, "the collapse test needs >= 2 sigma_w levels", "the cube has 1")
    assert not (tmp_path / "x").exists()


# 3. --out names a file -------------------------------------------------------------------------------------------

def test_out_that_is_a_file_is_one_line(cubes, tmp_path):
    target = tmp_path / "taken"
    target.write_text("mine")
    assert_user_error(invoke("collapse", cubes["ep3"], "--out", target), f"{target} is a file, not a folder")
    assert_user_error(invoke("analyze", cubes["ep3"], "--out", target), f"{target} is a file, not a folder")
    assert_user_error(invoke("collapse", cubes["ep3"], "--out", target / "sub"), f"{target} is a file")
    assert target.read_text() == "mine"


# 4. --axes: truthful notes; best when nothing was compared ------------------------------------------------------

@pytest.fixture(scope="module")
def l2_truth():
    """collapse_controls with truth T_l2: clock_better, best T_l2 with every clock (tests/test_collapse_cli.py)."""
    return simulate_cube(preset_pipelines("collapse_controls"), curves=True, truth_axis=cube.T_L2, seed=3)


def _view(ds, axes):
    return collapse_view(ds, n_boot=0, exponents=False, sides=False, axes=axes)


def test_axes_leave_clocks_out_without_calling_them_missing(l2_truth):
    full = _view(l2_truth, None)
    assert (full["verdict"], full["best"]) == ("clock_better", cube.T_L2)
    r = _view(l2_truth, (cube.T_SGD,))
    assert (r["verdict"], r["best"]) == ("clock_better", cube.T_SGD)
    assert set(r["vs_epoch"]) == {cube.STEP, cube.T_SGD}
    assert not any("no usable" in n for n in r["notes"]), r["notes"]
    assert "left out by axes (in the cube, not scored): T_eta, T_l2, T_adapt" in r["notes"]


@pytest.mark.parametrize("axes", [(cube.STEP,), (cube.T_WD,)])
def test_axes_without_a_comparable_clock_do_not_call_the_design_unidentifiable(l2_truth, axes):
    r = _view(l2_truth, axes)
    assert (r["verdict"], r["best"]) == ("no_difference", None)
    assert not any("not identifiable" in n or "no usable" in n for n in r["notes"]), r["notes"]
    assert any(n.startswith("left out by axes") for n in r["notes"])
    if axes == (cube.T_WD,):   # named, T_wd is scored; it is decayed on 1 of 8 pipelines only
        assert cube.T_WD in r["axes"] and "1 of 8" in r["axes"][cube.T_WD]["note"]
        assert any("defined on >= 3 pipelines: nothing could be tested" in n for n in r["notes"])
    else:
        assert any("no forgetting clock was scored" in n for n in r["notes"])


def test_axes_note_names_the_flag_on_the_command_line(tmp_path, l2_truth):
    cube.write_cube(l2_truth, tmp_path / "c.nc")
    proc = invoke("collapse", tmp_path / "c.nc", "--out", tmp_path / "o", "--no-exponents", "--n-boot", "0",
                  "--axes", cube.T_SGD)
    assert proc.returncode == 0, proc.stderr
    notes = json.loads((tmp_path / "o" / "collapse.json").read_text())["notes"]
    assert "left out by --axes (in the cube, not scored): T_eta, T_l2, T_adapt" in notes


def test_two_pipelines_compare_nothing_and_best_is_null():
    ds = simulate_cube(preset_pipelines("quick_like")[:2], curves=True, truth_axis=cube.T_SGD, seed=0)
    r = _view(ds, None)
    assert (r["verdict"], r["best"], r["vs_epoch"]) == ("no_difference", None, {})
    assert any("nothing could be tested" in n for n in r["notes"]), r["notes"]


# 5. The plan's deltas: none rather than negative ---------------------------------------------------------------

def test_plan_deltas_are_null_when_no_positive_delta_decides():
    upper = np.array([0.1, 0.2, 0.3, 0.4, 0.5])      # 80% quantile 0.42
    bound = np.array([-0.1, 0.0, 0.1, 0.2, 0.3])     # 20% quantile -0.02: no positive delta gives 80% remembers
    assert deciding_deltas(upper, bound, 2.0) == {"delta_forgets": pytest.approx(0.84), "delta_remembers": None}
    assert deciding_deltas(upper, bound + 0.1, 2.0)["delta_remembers"] == pytest.approx(0.16)
    assert deciding_deltas(upper, np.full(5, -np.inf), 1.0)["delta_remembers"] is None
    assert deciding_deltas(np.full(5, np.inf), bound, 1.0)["delta_forgets"] is None
    assert deciding_deltas(upper, np.zeros(5), 1.0)["delta_remembers"] is None

    post = {"seeds_needed": None, "p_decisive": {4: 0.1}, "delta_forgets": 0.08922, "delta_remembers": None}
    table = render_table({"ladder": [4], "target": 0.8, "delta": 0.01, "n_sim": 50, "rule": "r",
                          "pipelines": {"p": {"n_seed_now": 4, "verdict_now": "remembers", "posterior": post,
                                              "reml": None, "sequential": None}}})
    row = table.splitlines()[3]
    assert "0.08922 / -" in row and "-0.0" not in row
