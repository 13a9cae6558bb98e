"""Units that cannot be mixed up, one name for the likelihood, and messages that lead to the fix.

- Every command that takes ``--delta`` or ``--draw-margin`` takes it as one option type (points ``2pt`` or the
  metric's units) and refuses an ambiguous value, with the fix, before any training or sampling; so does a grid's
  ``decide.delta`` and the library's ``initmem.run``.
- summary.json says the unit of its numbers; the crossed block says "fraction" over fractions (an older file's
  "points" reads so).
- The likelihood has one name: the command line, the Summary and the report header read one table.
- ``report`` / ``plan`` / ``export`` given a cube say it is a cube and give the commands to run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from initmem import cube
from initmem import results as R
from initmem.grid import resolve_preset
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._report_fixture import small_cube, write_analysis


def test_every_command_that_takes_a_margin_takes_one_option_type():
    from initmem.cli import app
    from initmem.cli.params import MARGIN

    taking = {name: [p.name for p in command.params if p.name in ("delta", "draw_margin")]
              for name, command in app.commands.items()}
    taking = {name: params for name, params in taking.items() if params}
    # collect and export take no margin (collect trains, export presents an analysis made at its own delta)
    assert taking == {"run": ["delta", "draw_margin"], "analyze": ["delta", "draw_margin"], "plan": ["delta"]}
    for name in taking:
        assert all(p.type is MARGIN for p in app.commands[name].params if p.name in ("delta", "draw_margin")), name


def test_plan_refuses_an_ambiguous_delta_before_any_simulation(tmp_path):
    folder = write_analysis(small_cube(), tmp_path)
    assert_user_error(invoke("plan", folder, "--delta", "2"), "is ambiguous", "--delta 2pt", "--delta 0.02")
    assert_user_error(invoke("plan", folder, "--delta", "two"), "not a margin", "2pt")


def test_a_grid_delta_in_points_is_refused_before_any_training(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = resolve_preset("quick").read_text()
    assert "decide:" not in text
    grid = tmp_path / "points.yaml"
    grid.write_text(text + "\ndecide:\n  looks: [2, 3]\n  delta: 2\n")
    assert_user_error(invoke("run", grid, "--out", tmp_path / "r"), "decide.delta 2 is not a fraction",
                      "delta: 0.02")
    assert not (tmp_path / "r").exists()


def test_the_library_run_refuses_a_delta_in_points_before_any_training(tmp_path, monkeypatch):
    import initmem
    from initmem.errors import OptionError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(OptionError, match="is not a fraction"):
        initmem.run(preset="quick", out_dir=tmp_path / "r", spec=initmem.AnalysisSpec(delta=2.0), quiet=True)
    assert not (tmp_path / "r").exists()


def test_summary_json_states_its_units():
    assert R.records.summary_units(True)["delta"] == "fraction"
    assert R.records.summary_units(False)["delta"] == "metric units"
    spread = next(k for k in R.records.summary_units(True) if "spread" in k.split(",")[0])
    assert R.records.summary_units(True)[spread] == "fraction"
    # an older crossed block said "points" over fractions, and "outcome units": read as what they are
    old = {"margin": 0.005, "n_init": 4, "n_data": 2, "units": "points"}
    assert R.records.Crossed.model_validate(old).units == "fraction"
    assert R.records.Crossed.model_validate({**old, "units": "outcome units"}).units == "metric units"
    assert R.records.Crossed.model_validate({k: v for k, v in old.items() if k != "units"}).units == "fraction"


def test_the_likelihood_has_one_name(tmp_path):
    from initmem.reports.methods import LIKELIHOOD_LABEL

    summary = R.load_summary(write_analysis(small_cube(), tmp_path))
    assert summary.likelihood == "counts" and summary.family == "binomial"
    assert summary.likelihood_label == R.records.LIKELIHOOD_LABELS["counts"] == LIKELIHOOD_LABEL["counts"]
    assert summary.likelihood_label.startswith("Gaussian likelihood, noise scale from the binomial bound")
    html = invoke("report", tmp_path / "analysis")
    assert html.returncode == 0, html.stderr
    assert summary.likelihood_label in (tmp_path / "analysis" / R.REPORT_HTML).read_text(encoding="utf-8").replace(
        "&#39;", "'")


@pytest.mark.parametrize("command", ["report", "plan", "export"])
def test_a_cube_given_for_an_analysis_folder_gets_the_commands_to_run(tmp_path, command):
    from initmem.simulate import SimPipeline, simulate_cube

    cube.write_cube(simulate_cube([SimPipeline("a", n_sigma=3, n_seed=2)], seed=0), tmp_path / "sim.nc")
    extra = ["--out", tmp_path / "figs"] if command == "export" else []
    proc = invoke(command, tmp_path / "sim.nc", *extra)
    target = tmp_path / "sim-analysis"
    assert_user_error(proc, f"{tmp_path / 'sim.nc'} is a cube, not an analysis folder",
                      f"initmem analyze {tmp_path / 'sim.nc'} --out {target}", f"then initmem {command} {target}")
    assert "--out " + str(tmp_path / "sim.nc") not in proc.stderr      # never the cube's own path as the output
    assert not target.exists() and not (tmp_path / "figs").exists()
    other = tmp_path / "notes.txt"
    other.write_text("x")
    assert_user_error(invoke(command, other, *extra), "is a file, not an analysis folder")


def test_the_missing_folder_message_is_unchanged(tmp_path):
    assert_user_error(invoke("report", Path(tmp_path / "nowhere")), "no such analysis folder")


def test_analyze_prints_the_likelihood_by_its_one_name_and_the_flag_beside_the_verdict(tmp_path, monkeypatch):
    import initmem.analysis

    summary = R.load_summary(write_analysis(small_cube(), tmp_path))
    first = next(iter(summary.pipelines))
    summary.pipelines[first].verdict, summary.pipelines[first].borderline = "undecided", True
    def analyzed(cube_path: Path, out_dir: Path, **options: object) -> R.Summary:   # the printing alone
        assert cube_path == tmp_path / "cube.nc" and out_dir == tmp_path / "new" and options["delta"] is None
        return summary

    monkeypatch.setattr(initmem.analysis, "analyze_cube", analyzed)
    proc = invoke("analyze", tmp_path / "cube.nc", "--out", tmp_path / "new")
    assert proc.returncode == 0, proc.stderr
    assert "model: Gaussian likelihood, noise scale from the binomial bound of the test counts" in proc.stdout
    assert "(binomial)" not in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if line.split()[:1] == [first])
    assert "undecided (borderline)" in row and "points" in row
