"""A grid's ``decide`` block: the design ``initmem run`` uses unless its command line says otherwise (sequential
looks, delta and the seed cap), part of the grid's hash, absent from grids that do not set it."""

from __future__ import annotations

from importlib import import_module

import pytest
import yaml

import initmem
from initmem.errors import OptionError, UserError
from initmem.grid import grid_hash, load_grid, parse_grid
from initmem.tests._cli import invoke


def _grid(tmp_path, decide: dict | None):
    d = load_grid("quick").to_dict()
    d["name"] = "g1"
    if decide is not None:
        d["decide"] = decide
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def _runs(monkeypatch, tmp_path):
    module = import_module("initmem.analysis.run")
    result = module.RunResult(out_dir=tmp_path, cube=tmp_path / "cube.nc", analysis_dir=tmp_path / "analysis",
                              report=tmp_path / "report.html", seconds={})
    calls: list = []
    monkeypatch.setattr(module, "run_all", lambda *_args, **kw: calls.append(kw) or result)
    return calls


def test_the_block_is_part_of_the_hash_and_absent_when_unset(tmp_path):
    plain = load_grid(_grid(tmp_path, None))
    decided = load_grid(_grid(tmp_path, {"looks": [4, 8], "delta": 0.02, "max_seeds": 8}))
    assert "decide" not in plain.to_yaml() and grid_hash(plain) != grid_hash(decided)
    assert parse_grid(yaml.safe_load(decided.to_yaml())) == decided       # round trip
    assert decided.decide.looks == [4, 8] and decided.decide.delta == 0.02 and decided.decide.max_seeds == 8


@pytest.mark.parametrize("bad", [{"looks": [8, 4]}, {"looks": [1, 2]}, {"looks": []}, {"looks": [4], "delta": 0},
                                 {"looks": [4], "max_seeds": 1}, {"looks": [4], "until": True}])
def test_a_bad_block_is_a_user_error(tmp_path, bad):
    with pytest.raises(UserError, match="decide"):
        load_grid(_grid(tmp_path, bad))


def test_run_takes_the_grids_design_unless_told_otherwise(monkeypatch, tmp_path):
    calls = _runs(monkeypatch, tmp_path)
    grid = _grid(tmp_path, {"looks": [4, 8, 12], "delta": 0.02, "max_seeds": 12})
    initmem.run(grid, tmp_path / "a", quiet=True)                                 # the grid's design
    initmem.run(grid, tmp_path / "b", quiet=True, looks=[3, 6], max_seeds=6)      # the caller's looks and cap
    initmem.run(grid, tmp_path / "c", quiet=True, until_decided=False)            # a fixed design
    initmem.run(grid, tmp_path / "d", quiet=True, spec=initmem.AnalysisSpec(delta=0.01))   # the caller's delta
    assert [(kw["looks"], kw["max_seeds"], kw["analyze_options"]) for kw in calls] == [
        ([4, 8, 12], 12, {"delta": 0.02}), ([3, 6], 6, {"delta": 0.02}), (None, None, {"delta": 0.02}),
        ([4, 8, 12], 12, {"delta": 0.01})]
    with pytest.raises(OptionError, match="looks"):
        initmem.run(grid, tmp_path / "e", quiet=True, until_decided=False, looks=[4, 8])


def test_the_command_line_follows_the_grid_and_fixed_overrides_it(monkeypatch, tmp_path):
    calls = _runs(monkeypatch, tmp_path)
    grid = _grid(tmp_path, {"looks": [4, 8], "delta": 0.02})
    for flags in ((), ("--fixed",), ("--until-decided", "--looks", "3,6")):
        proc = invoke("--quiet", "run", grid, "--out", tmp_path / "r", *flags)
        assert proc.returncode == 0, proc.stderr
    assert [kw["looks"] for kw in calls] == [[4, 8], None, [3, 6]]
    # without a decide block a plain run stays a fixed design, and --until-decided takes the default looks
    (tmp_path / "p").mkdir()
    plain = _grid(tmp_path / "p", None)
    for flags in ((), ("--until-decided",)):
        assert invoke("--quiet", "run", plain, "--out", tmp_path / "q", *flags).returncode == 0
    assert [kw["looks"] and list(kw["looks"]) for kw in calls[3:]] == [None, [4, 8, 12, 16]]
