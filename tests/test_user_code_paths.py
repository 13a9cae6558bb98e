"""Where a grid of user code finds its code (docs/own-model.md, "The grid"): a relative ``workdir``, and an absent
one, are the grid file's folder's, wherever initmem starts from; a resume from the grid folder's own copy of the
grid finds the same code; the grid keeps its hash wherever its file lies; a grid read from no file keeps the
current folder."""

from __future__ import annotations

import json
import pickle
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from initmem import cube
from initmem.collect.custom.identity import CODE_BASE, CODE_FILE, code_base
from initmem.collect.execution.grid_folder import GridFolder
from initmem.collect.execution.runner import collect, user_train_fn
from initmem.grid import grid_hash, load_grid, parse_grid
from initmem.tests._cli import invoke
from initmem.tests._collect_util import assert_clean, assert_same_cube

# The user's project: the grid file, an entry point's module beside it (which checks that it runs in its folder),
# a script in a subfolder (which writes down where it runs).
GRID = """\
name: paths
sigma_w: [0.5, 2]
seeds: [0]
pipelines:
  here: {entry: "mine_here:train", settings: {epochs: 2, lr: 0.2}}
  script: {command: "python train_cmd.py", workdir: code, settings: {epochs: 2, lr: 0.2}}
"""
ENTRY = """\
from pathlib import Path

from initmem.tests import _user_pipelines


def train(cell):
    assert Path.cwd() == Path(__file__).resolve().parent, Path.cwd()
    _user_pipelines.train(cell)
"""
SCRIPT = """\
import json
import os
from pathlib import Path

# a script that only says where it runs (it records nothing: its cells fail, "wrote no record")
cell = json.loads(Path(os.environ["INITMEM_CELL"]).read_text(encoding="utf-8"))
Path(cell["scratch"], "cwd.txt").write_text(os.getcwd(), encoding="utf-8")
"""


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "code").mkdir(parents=True)
    (project / "grid.yaml").write_text(GRID, encoding="utf-8")
    (project / "mine_here.py").write_text(ENTRY, encoding="utf-8")
    (project / "code" / "train_cmd.py").write_text(SCRIPT, encoding="utf-8")
    return project


def _collect(grid: Path | str, out: Path | str, **kw) -> Path:
    return Path(collect(grid, out, device="cpu", jobs=1, progress=False, quiet=True, **kw))


@pytest.mark.slow
def test_relative_paths_are_the_grid_files_and_a_resume_from_the_folders_copy_finds_the_code(tmp_path,
                                                                                              monkeypatch):
    project = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    grid = load_grid(Path("..") / "project" / "grid.yaml")
    assert grid.base_dir == str(project)
    # the grid's identity is its content: the same hash read from anywhere, as a mapping or as a file
    assert grid_hash(grid) == grid_hash(parse_grid(yaml.safe_load(GRID)))
    # the collector's train function, which worker processes and Slurm tasks get pickled, holds the folders
    fn = pickle.loads(pickle.dumps(user_train_fn(grid, GridFolder(tmp_path / "x"), None)))
    assert fn.workdirs == {"here": str(project), "script": str(project / "code")} and fn.base == str(project)

    path = _collect(Path("..") / "project" / "grid.yaml", "run")
    ds = cube.open_cube(path)
    assert (ds[cube.STATUS].sel(pipeline="here").values == cube.OK).all(), ds.attrs.get(cube.A_FAILED_CELLS)
    assert ds[CODE_FILE].values.tolist() == ["mine_here.py", "train_cmd.py"]
    run = elsewhere / "run"
    ran_in = {p.read_text(encoding="utf-8") for p in (run / "cells").glob("script__*/scratch/cwd.txt")}
    assert ran_in == {str(project / "code")}
    assert (ds[cube.STATUS].sel(pipeline="script").values == cube.FAILED).all()
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))[CODE_BASE] == str(project)
    first = cube.open_cube(path).load()

    # a resume from a third folder, with the grid read from the grid folder's own copy: cells trained again
    for shard in sorted((run / "shards").glob("*sw2.0*.nc")):
        shard.unlink()
    for said in (run / "cells").glob("script__*/scratch/cwd.txt"):
        said.unlink()
    shutil.copy(path, tmp_path / "first.nc")
    third = tmp_path / "third"
    third.mkdir()
    monkeypatch.chdir(third)
    assert code_base(load_grid(run / "grid.yaml")) == project
    rc = invoke("collect", run / "grid.yaml", "--out", run, "--resume", "--jobs", "1", "--device", "cpu", "-q")
    assert rc.returncode == 0, rc.stderr
    again = cube.open_cube(run / "cube.nc").load()
    assert (again[cube.STATUS].sel(pipeline="here").values == cube.OK).all(), again.attrs.get(cube.A_FAILED_CELLS)
    assert [p.read_text(encoding="utf-8") for p in (run / "cells").glob("script__*/scratch/cwd.txt")] == \
        [str(project / "code")]
    np.testing.assert_array_equal(again[cube.VAL_ACC].values, first[cube.VAL_ACC].values)
    assert_same_cube(run / "cube.nc", tmp_path / "first.nc")
    assert_clean(run)


def test_a_grid_read_from_no_file_takes_the_current_folder(tmp_path, monkeypatch):
    project = _project(tmp_path)
    monkeypatch.chdir(project)
    grid = parse_grid(yaml.safe_load(GRID))
    assert grid.base_dir is None and code_base(grid) == project
    assert load_grid("quick").base_dir is None          # a preset: no file of the user's
    # a grid folder of a run that recorded no folder (made before it was recorded): the current folder, as then
    old = tmp_path / "old"
    old.mkdir()
    (old / "grid.yaml").write_text(GRID, encoding="utf-8")
    (old / "run.json").write_text(json.dumps({"schema": "initmem.run/1"}), encoding="utf-8")
    assert code_base(load_grid(old / "grid.yaml")) == project
    # and a relative workdir of a grid file that is no grid folder's is the file's folder's, not the current one
    away = tmp_path / "away"
    away.mkdir()
    (away / "grid.yaml").write_text(textwrap.dedent(GRID), encoding="utf-8")
    assert code_base(load_grid(away / "grid.yaml")) == away
