"""Command-line conventions: --help everywhere, one-line errors with exit 2, faults exit 1.

Most checks run in this process through the real entry point (``invoke``: ``cli.main`` under
click's CliRunner isolation). A few run the real interpreter (``run_cli``) because that is what
they are about: the exit status a shell sees, and no traceback on stderr.
"""

from __future__ import annotations

import numpy as np
import pytest

from initmem import cube
from initmem.cli import app
from initmem.tests._cli import assert_user_error, invoke, run_cli
from initmem.tests._compile_shape import SMALL_FLAG

COMMANDS = sorted(app.commands)


def test_top_level_help_lists_commands():
    proc = invoke("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        assert name in proc.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name):
    proc = invoke(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout


def test_real_interpreter_exit_status_and_one_line_errors(tmp_path):
    """A fresh interpreter, as a shell runs it: exit 2, one 'initmem: error:' line, no traceback."""
    assert_user_error(run_cli("frobnicate"), "No such command")
    assert_user_error(run_cli("inspect", tmp_path / "nope.nc"), "no such cube file")
    proc = run_cli("--help")
    assert proc.returncode == 0 and "Usage:" in proc.stdout


def test_unknown_command_and_bad_option_are_user_errors():
    assert_user_error(invoke("frobnicate"), "No such command")
    assert_user_error(invoke("simulate", "--out", "x.nc", "--family", "poisson"), "--family")


def test_missing_cube_is_a_user_error(tmp_path):
    assert_user_error(invoke("inspect", tmp_path / "nope.nc"), "no such cube file")


def test_not_a_netcdf_file_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_text("hello")
    assert_user_error(invoke("inspect", bad), "not a readable NetCDF cube")


def test_inspect_exits_2_on_an_invalid_cube(tmp_path):
    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1])
    ds[cube.STATUS] = (cube.CELL_DIMS, np.zeros((1, 2, 2), dtype="int8"))
    ds.attrs[cube.A_SCHEMA] = "something/else"
    ds.to_netcdf(tmp_path / "c.nc")
    proc = invoke("inspect", tmp_path / "c.nc")
    assert proc.returncode == 2
    assert "schema" in proc.stdout and proc.stderr.startswith("initmem: error:")
    proc = invoke("inspect", tmp_path / "c.nc", "--json")
    assert proc.returncode == 2 and '"schema_attr"' in proc.stdout


def test_quiet_prints_nothing_on_success(tmp_path):
    proc = invoke("--quiet", "simulate", "--out", tmp_path / "s.nc")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    assert (tmp_path / "s.nc").is_file()


def test_internal_fault_exits_1(tmp_path, monkeypatch):
    def boom(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("initmem.simulate.simulate_cube", boom)
    proc = invoke("simulate", "--out", str(tmp_path / "s.nc"))
    assert proc.returncode == 1
    assert proc.stderr.startswith("initmem: internal error: ZeroDivisionError: boom")
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "s.nc").exists()


def test_simulate_lists_presets_without_out_and_needs_out_otherwise():
    proc = invoke("simulate", "--list-presets")
    assert proc.returncode == 0 and "quick_like" in proc.stdout and "contrast" in proc.stdout
    assert_user_error(invoke("simulate"), "--out")


def test_analyze_gate_and_delta_are_checked_before_any_fit(tmp_path):
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--gate", "some"), "--gate")
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--delta", "0"), "--delta")
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--delta", "-1"), "--delta")
    for bad in ("4,6", "4,6,x", "4,-1,6", "128,128,128"):
        assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--compile-shape", bad),
                          "--compile-shape")


def test_analyze_needs_delta_for_a_metric_that_is_not_an_accuracy(tmp_path):
    from initmem.simulate import SimPipeline, simulate_cube

    ds = simulate_cube([SimPipeline("a", n_sigma=3, n_seed=2), SimPipeline("b", n_sigma=3, n_seed=2)], seed=0)
    ds[cube.WALL_SECONDS] = 60.0 + 100 * ds[cube.SELECTED_TEST_ACC]  # seconds: not an accuracy
    cube.write_cube(ds, tmp_path / "c.nc")
    args = ("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--metric", cube.WALL_SECONDS, "--gate", "all")
    assert_user_error(invoke(*args), f"metric {cube.WALL_SECONDS!r} is not an accuracy: give --delta")
    assert not (tmp_path / "a").exists()  # refused before anything was fitted or written


def test_margins_take_points_and_refuse_an_ambiguous_unit_before_any_work(tmp_path, monkeypatch):
    from initmem.cli.params import MARGIN

    assert MARGIN.convert("2pt", None, None) == pytest.approx(0.02) and MARGIN.convert("2pt", None, None).points
    assert MARGIN.convert("0.5 points", None, None) == pytest.approx(0.005)
    assert MARGIN.convert("0.02", None, None) == 0.02 and not MARGIN.convert("0.02", None, None).points
    # run: refused before any training (no grid folder appears), with the fix in the message
    monkeypatch.chdir(tmp_path)
    assert_user_error(invoke("run", "--preset", "quick", "--delta", "2", "--out", tmp_path / "r"),
                      "--delta 2pt", "--delta 0.02")
    assert_user_error(invoke("run", "--preset", "quick", "--draw-margin", "1", "--out", tmp_path / "r"),
                      "--draw-margin 1pt")
    assert not (tmp_path / "r").exists()
    assert_user_error(invoke("run", "--preset", "quick", "--delta", "two", "--out", tmp_path / "r"), "not a margin")
    # analyze: points for a metric that is not an accuracy, and a bare 2 for an accuracy
    from initmem.simulate import SimPipeline, simulate_cube

    ds = simulate_cube([SimPipeline("a", n_sigma=3, n_seed=2)], seed=0)
    ds[cube.WALL_SECONDS] = 60.0 + 100 * ds[cube.SELECTED_TEST_ACC]
    cube.write_cube(ds, tmp_path / "c.nc")
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--delta", "2"), "--delta 2pt")
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--metric", cube.WALL_SECONDS,
                             "--delta", "2pt"), "not an accuracy")
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_analyze_then_plan_from_the_command_line(tmp_path):
    """The user's path: simulate, analyze, plan. The plan reads the folder through results.py and
    names, per pipeline, the seeds or the delta that would decide."""
    import json

    from initmem.simulate import SimPipeline, simulate_cube

    # three pipelines x 4 levels x 3 seeds, compiled as the suite's other small cubes (designs.SMALL)
    ds = simulate_cube([SimPipeline("mem", sigma_sd=0.4, n_sigma=4, n_seed=3),
                        SimPipeline("null", sigma_sd=0.0, n_sigma=4, n_seed=3),
                        SimPipeline("small", sigma_sd=0.05, n_sigma=4, n_seed=3)], seed=1)
    cube.write_cube(ds, tmp_path / "c.nc")
    proc = invoke("--quiet", "analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--draws", "150",
                  "--tune", "150", "--chains", "2", *SMALL_FLAG)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["alpha"] == 0.05    # the level the verdicts were decided at
    assert summary["units"]["delta"] == "fraction" and summary["delta"] == 0.01   # the file says its unit
    assert {e["near_ceiling"] for e in summary["pipelines"].values()} == {False}   # simulated accuracies near 0.9
    # the fewest simulations the option takes: what is checked is the plan's fields and their consistency, not its
    # Monte Carlo accuracy (tests/test_plan.py compares the planner with real refits)
    proc = invoke("plan", tmp_path / "a", "--n-sim", "10", "--json", "--looks", "3,4,5,6")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert set(plan["pipelines"]) == {"mem", "null", "small"}
    for entry in plan["pipelines"].values():
        assert entry["n_seed_now"] == 3
        seq = entry["sequential"]        # one seed at a time from 3 (docs/sequential.md)
        assert seq["looks"] == [3, 4, 5, 6] and 3 <= seq["seeds_mean"] <= seq["seeds_max"] <= 6
        post = entry["posterior"]
        p_dec = {int(k): v for k, v in post["p_decisive"].items()}
        assert 3 in p_dec and all(0.0 <= v <= 1.0 for v in p_dec.values())
        needed = post["seeds_needed"]
        assert needed is None or (needed in p_dec and p_dec[needed] >= plan["target"])
    assert_user_error(invoke("plan", tmp_path / "nowhere"), "nowhere")
    assert_user_error(invoke("plan", tmp_path / "a", "--delta", "2"), "--delta 2pt")   # before any simulation
    assert_user_error(invoke("plan", tmp_path / "a", "--looks", "4,3"), "--looks")
    assert_user_error(invoke("plan", tmp_path / "a", "--looks", "four"), "--looks")
    proc = invoke("plan", tmp_path / "a", "--n-sim", "10", "--looks", "3,4")
    assert proc.returncode == 0 and "--until-decided --looks 3,4" in proc.stdout, proc.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (("simulate", "--preset", "contrast", "--n-sigma", "2"), "--preset contrast fixes its own pipelines; --n-sigma"),
    (("simulate", "--seed", "-1"), "Invalid value for '--seed'"),
    (("simulate", "--sigma-sd", "nan"), "'nan' is not a finite number"),
    (("simulate", "--residual-sd", "inf"), "'inf' is not a finite number"),
])
def test_simulate_refuses_options_it_would_ignore_or_cannot_use(tmp_path, args, needle):
    assert_user_error(invoke(*args, "--out", tmp_path / "s.nc"), needle)
    assert not (tmp_path / "s.nc").exists()


def test_report_and_analyze_refuse_outputs_and_metrics_they_cannot_use(tmp_path):
    from initmem.tests._report_fixture import small_cube, write_analysis

    analysis = write_analysis(small_cube(), tmp_path)
    summary = (analysis / "summary.json").read_bytes()
    assert_user_error(invoke("report", analysis, "--out", analysis / "summary.json"), "is not an HTML file")
    assert (analysis / "summary.json").read_bytes() == summary
    assert_user_error(invoke("report", analysis, "--out", tmp_path), "is a folder")
    cube.write_cube(small_cube(), tmp_path / "c.nc")
    assert_user_error(invoke("analyze", tmp_path / "c.nc", "--out", tmp_path / "a", "--metric", cube.STATUS),
                      "'status' holds codes of how a run ended")
    assert not (tmp_path / "a").exists()


def test_collect_quiet_under_global_verbose_is_refused(tmp_path):
    assert_user_error(invoke("--verbose", "collect", "digits", "--out", tmp_path / "run", "--quiet"),
                      "--quiet and --verbose exclude each other")
    assert not (tmp_path / "run").exists()


def test_import_and_analyze_refuse_to_replace_another_output_without_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.csv").write_text("pipeline,sigma_w,seed,selected_test_acc\nsgd,0.5,0,0.91\nsgd,2,0,0.84\n"
                                    "sgd,0.5,1,0.90\nsgd,2,1,0.83\n")
    (tmp_path / "b.csv").write_text((tmp_path / "a.csv").read_text())
    args = ("--n-test", "10000", "--seeds", "paired")
    assert invoke("import", "a.csv", "--out", "a.nc", *args).returncode == 0
    assert invoke("import", "a.csv", "--out", "a.nc", *args).returncode == 0          # the same input: idempotent
    before = (tmp_path / "a.nc").read_bytes()
    assert_user_error(invoke("import", "b.csv", "--out", "a.nc", *args), "another source", "--force")
    assert (tmp_path / "a.nc").read_bytes() == before
    assert invoke("import", "b.csv", "--out", "a.nc", *args, "--force").returncode == 0
    # an analysis folder holding another cube's analysis (or other files) is refused before anything is fitted
    folder = tmp_path / "an"
    folder.mkdir()
    (folder / "summary.json").write_text('{"cube": "elsewhere.nc"}')
    (folder / "report.html").write_text("an old report")
    assert_user_error(invoke("analyze", "a.nc", "--out", folder), "another cube (elsewhere.nc)", "--force")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.txt").write_text("mine")
    assert_user_error(invoke("analyze", "a.nc", "--out", tmp_path / "notes"), "not an analysis")
    assert (folder / "report.html").read_text() == "an old report"


def test_analyze_force_replaces_the_whole_folder(tmp_path):
    from initmem.analysis.staging import staged_folder

    out = tmp_path / "an"
    out.mkdir()
    (out / "report.html").write_text("an old report")
    with staged_folder(out, replace=True) as tmp:
        (tmp / "summary.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["an"]             # nothing left beside it
