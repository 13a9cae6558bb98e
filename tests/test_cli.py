"""Command-line conventions: --help everywhere, one-line errors with exit 2, faults exit 1."""

from __future__ import annotations

import pytest

from initmem.cli import app

from .conftest import assert_user_error, run_cli

COMMANDS = sorted(app.commands)


def test_top_level_help_lists_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        assert name in proc.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name):
    proc = run_cli(name, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout


def test_unknown_command_and_bad_option_are_user_errors():
    assert_user_error(run_cli("frobnicate"), "No such command")
    assert_user_error(run_cli("simulate", "--out", "x.nc", "--family", "poisson"), "--family")


def test_missing_cube_is_a_user_error(tmp_path):
    assert_user_error(run_cli("inspect", tmp_path / "nope.nc"), "no such cube file")


def test_not_a_netcdf_file_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_text("hello")
    assert_user_error(run_cli("inspect", bad), "not a readable NetCDF cube")


def test_inspect_exits_2_on_an_invalid_cube(tmp_path):
    import numpy as np

    from initmem import cube

    ds = cube.empty_cube(["a"], [1.0, 2.0], [0, 1])
    ds["status"] = (cube.CELL_DIMS, np.zeros((1, 2, 2), dtype="int8"))
    ds.attrs["schema"] = "something/else"
    ds.to_netcdf(tmp_path / "c.nc")
    proc = run_cli("inspect", tmp_path / "c.nc")
    assert proc.returncode == 2
    assert "schema" in proc.stdout and proc.stderr.startswith("initmem: error:")
    proc = run_cli("inspect", tmp_path / "c.nc", "--json")
    assert proc.returncode == 2 and '"schema_attr"' in proc.stdout


def test_quiet_prints_nothing_on_success(tmp_path):
    proc = run_cli("--quiet", "simulate", "--out", tmp_path / "s.nc")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_internal_fault_exits_1(tmp_path, monkeypatch):
    from initmem import cli

    def boom(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("initmem.simulate.simulate_cube", boom)
    assert cli.main(["simulate", "--out", str(tmp_path / "s.nc")]) == 1
    assert not (tmp_path / "s.nc").exists()


def test_simulate_lists_presets_without_out_and_needs_out_otherwise():
    proc = run_cli("simulate", "--list-presets")
    assert proc.returncode == 0 and "quick_like" in proc.stdout and "contrast" in proc.stdout
    assert_user_error(run_cli("simulate"), "--out")
