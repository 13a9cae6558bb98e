"""Grids whose pipelines are the user's code (docs/own-model.md, "The grid" and "Faults"): the schema and its
hashes, an entry-point grid collected into a cube with the code's identity, each fault as a status with its
reason while the other cells finish, the refusals before any cell runs, and the Slurm block's new options
reaching submitit's job script."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from initmem import cube
from initmem.collect.custom.cell import CELL_ENV, Cell, load_cell
from initmem.collect.custom.identity import CODE, CODE_FILE, CODE_PACKAGES, CODE_SHA256
from initmem.collect.execution.runner import collect
from initmem.errors import UserError
from initmem.grid import grid_hash, load_grid, parse_grid
from initmem.tests import _user_pipelines
from initmem.tests._cli import assert_user_error, invoke

MODULE = "initmem.tests._user_pipelines"


def _grid_text(pipelines: str, *, sigma_w: str = "[0.5, 2]", seeds: str = "[0, 1]", extra: str = "") -> str:
    return f"name: mine\nsigma_w: {sigma_w}\nseeds: {seeds}\npipelines:\n{pipelines}{extra}"


def _write(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _collect(grid: Path, out: Path, **kw) -> Path:
    return Path(collect(grid, out, device="cpu", progress=False, quiet=True, **kw))


PLAIN = f'  sgd: {{entry: "{MODULE}:train", settings: {{epochs: 3, lr: 0.2}}}}\n'


# The schema ---------------------------------------------------------------------------------------------

def test_optional_fields_leave_the_canonical_form_of_a_grid_with_a_slurm_block_as_it_was():
    """A grid written before the new Slurm options and engine.cells_per_gpu keeps its canonical YAML (its hash):
    the new keys are absent at their defaults."""
    g = load_grid("quick").model_copy(update={"slurm": parse_grid(
        {"name": "x", "sigma_w": [1], "seeds": [0], "pipelines": {"s": {"optimizer": "sgd", "lr": 0.1,
         "batch_size": 8, "epochs": 1}}, "slurm": {"partition": "gpu", "mem_gb": 8}}).slurm})
    d = g.to_dict()
    assert list(d["slurm"]) == ["partition", "gpus_per_job", "time_min", "mem_gb", "array_parallelism",
                                "cpus_per_task"]
    assert list(d["engine"]) == ["pack_size", "compile", "eval_batch_size", "cpu_threads", "channels_last",
                                 "autocast", "measure_clocks"]
    assert grid_hash(load_grid("quick")) == "587444b9b7d83e6060e293064e8507d6335389ba3efeb8fece1ec678835c175a"
    with_account = g.model_copy(update={"slurm": g.slurm.model_copy(update={"account": "lab"})})
    assert with_account.to_dict()["slurm"]["account"] == "lab" and grid_hash(with_account) != grid_hash(g)


@pytest.mark.parametrize(("pipeline", "needle"), [
    ('{entry: "no colon"}', "pipelines.p.entry: must be 'package.module:function'"),
    ('{entry: "a:b", command: "python x.py"}', "pipelines.p.entry: give an entry point or a command, not both"),
    ('{entry: "a:b", lr: 0.1}', "pipelines.p.lr: unknown key"),
    ('{command: "  "}', "pipelines.p.command: must name a program"),
    ('{entry: "a:b", timeout_min: 0}', "pipelines.p.timeout_min: "),
])
def test_a_bad_user_pipeline_is_one_line_naming_the_field(tmp_path, pipeline, needle):
    with pytest.raises(UserError) as exc:
        load_grid(_write(tmp_path, _grid_text(f"  p: {pipeline}\n")))
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_width_scaling_is_refused_for_user_code(tmp_path):
    text = _grid_text(PLAIN, extra="init: {probe: width_scaling}\nmodel: {arch: mlp, norm: none}\n")
    with pytest.raises(UserError, match="init.probe: width_scaling builds the engine's own net"):
        load_grid(_write(tmp_path, text))


def test_a_bad_slurm_option_is_one_line_naming_the_field(tmp_path):
    text = _grid_text(PLAIN, extra="slurm: {additional_parameters: {account: lab}}\n")
    with pytest.raises(UserError) as exc:
        load_grid(_write(tmp_path, text))
    assert "slurm.additional_parameters.account: set by the slurm block's own field" in str(exc.value)


# A cube of user runs ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_an_entry_point_grid_collects_a_cube_with_the_codes_identity(tmp_path):
    grid = _write(tmp_path, _grid_text(PLAIN, seeds="[0, 1, 2]"))
    path = _collect(grid, tmp_path / "run")
    ds = cube.open_cube(path)
    assert (ds[cube.STATUS].values == cube.OK).all()
    assert ds.sizes[cube.EPOCH] == 4 and list(ds[cube.SEED].values) == [0, 1, 2]
    source = Path(_user_pipelines.__file__)
    assert ds[CODE].values.tolist() == [f"{MODULE}:train"]
    assert ds[CODE_SHA256].values.tolist() == [hashlib.sha256(source.read_bytes()).hexdigest()]
    assert Path(str(ds[CODE_FILE].values[0])).name == "_user_pipelines.py"
    assert json.loads(str(ds[CODE_PACKAGES].values[0]))["torch"] == torch.__version__.split("+")[0] or \
        json.loads(str(ds[CODE_PACKAGES].values[0]))["torch"] == torch.__version__
    assert ds.attrs[cube.A_ARCH] == "user code" and ds.attrs[cube.A_DATASET] == "user code"
    # The cell of (sigma_w 2, seed 1) is what the user's function records when called with that cell alone.
    folder = tmp_path / "alone"
    cell = Cell(pipeline="sgd", settings={"epochs": 3, "lr": 0.2}, sigma_w=2.0, seed=1,
                init_seed=1, data_seed=1, device="cpu", scratch=folder, record=folder / "r.nc",
                eval={"interp_threshold": 0.995, "select": "best_val_acc_interp"})
    _user_pipelines.train(cell)
    alone = cube.open_cube(folder / "r.nc")
    np.testing.assert_array_equal(ds[cube.VAL_ACC].sel(sigma_w=2.0, seed=1).values.ravel(),
                                  alone[cube.VAL_ACC].values.ravel())
    # the seed reaches the code: two seeds give two different curves
    a, b = (ds[cube.TRAIN_LOSS].sel(sigma_w=0.5, seed=k).values for k in (0, 1))
    assert not np.array_equal(a, b)
    rc = invoke("inspect", path)
    assert rc.returncode == 0 and f"code={MODULE}:train" in rc.stdout


@pytest.mark.slow
def test_a_command_reads_its_cell_from_the_environment_and_records(tmp_path):
    pipe = (f'  script: {{command: "python -m {MODULE}", settings: {{epochs: 2, lr: 0.2}}}}\n')
    path = _collect(_write(tmp_path, _grid_text(pipe, seeds="[0]")), tmp_path / "run")
    ds = cube.open_cube(path)
    assert (ds[cube.STATUS].values == cube.OK).all() and ds.sizes[cube.EPOCH] == 3
    assert ds[CODE].values.tolist() == [f"python -m {MODULE}"]
    assert ds[CODE_SHA256].values.tolist() == [hashlib.sha256(Path(_user_pipelines.__file__).read_bytes()).hexdigest()]
    cell = load_cell(next((tmp_path / "run" / "cells").glob("script__sw2.0__seed0")) / "cell.json")
    assert (cell.sigma_w, cell.init_seed, cell.data_seed, cell.settings["epochs"]) == (2.0, 0, 0, 2)


def test_load_cell_without_a_cell_is_a_user_error(monkeypatch):
    monkeypatch.delenv(CELL_ENV, raising=False)
    with pytest.raises(UserError, match="INITMEM_CELL is not set"):
        load_cell()


# Faults -------------------------------------------------------------------------------------------------

def _failures(ds) -> dict[tuple[str, float], str]:
    return {(f["pipeline"], float(f["sigma_w"])): f["error"] for f in json.loads(ds.attrs[cube.A_FAILED_CELLS])}


@pytest.mark.slow
def test_each_fault_is_a_status_with_its_reason_while_the_other_cells_finish(tmp_path):
    pipes = (PLAIN
             + f'  raises: {{entry: "{MODULE}:raises", settings: {{epochs: 2}}}}\n'
             # with a time limit an entry point runs in a child process: its traceback comes back from there
             + f'  raises_apart: {{entry: "{MODULE}:raises", timeout_min: 10, '
               'settings: {epochs: 2}}\n'
             + f'  exits: {{entry: "{MODULE}:exits", settings: {{epochs: 2}}}}\n'
             + f'  forgets: {{entry: "{MODULE}:no_record"}}\n'
             + f'  blows: {{entry: "{MODULE}:train", settings: {{epochs: 2, blow_up: true}}}}\n'
             + '  hangs: {command: "python -c \\"import time; print(\'waiting for a data loader that never answers\', '
               'flush=True); time.sleep(600)\\"", timeout_min: 0.05}\n'
             + '  silent: {command: "python -c \\"print(\'loading\'); print(\'done, no record\')\\""}\n')
    path = _collect(_write(tmp_path, _grid_text(pipes, seeds="[0]")), tmp_path / "run")
    ds = cube.open_cube(path)
    status = {(p, s): int(ds[cube.STATUS].sel(pipeline=p, sigma_w=s, seed=0)) for p in ds[cube.PIPELINE].values
              for s in (0.5, 2.0)}
    assert status == {("sgd", 0.5): cube.OK, ("sgd", 2.0): cube.OK,
                      ("raises", 0.5): cube.OK, ("raises", 2.0): cube.FAILED,
                      ("raises_apart", 0.5): cube.OK, ("raises_apart", 2.0): cube.FAILED,
                      ("exits", 0.5): cube.OK, ("exits", 2.0): cube.FAILED,
                      ("forgets", 0.5): cube.FAILED, ("forgets", 2.0): cube.FAILED,
                      ("blows", 0.5): cube.OK, ("blows", 2.0): cube.DIVERGED,
                      ("hangs", 0.5): cube.FAILED, ("hangs", 2.0): cube.FAILED,
                      ("silent", 0.5): cube.FAILED, ("silent", 2.0): cube.FAILED}
    why = _failures(ds)
    assert why[("raises", 2.0)] == "ValueError: a bug in the user's code at sigma_w 2"
    assert why[("exits", 2.0)] == "called sys.exit(3)"
    assert why[("forgets", 0.5)].startswith("wrote no record")
    assert why[("raises_apart", 2.0)] == "ValueError: a bug in the user's code at sigma_w 2"
    assert why[("hangs", 2.0)].startswith("timed out after 0.05 min")
    assert why[("silent", 2.0)].startswith("wrote no record") and "done, no record" in why[("silent", 2.0)]
    shards = tmp_path / "run" / "shards"
    tb = cube.open_cube(shards / "raises__sw2.0__seed0.nc").attrs["shard_traceback"]
    assert "Traceback" in tb and "in raises" in tb and tb.rstrip().endswith("at sigma_w 2")
    apart = cube.open_cube(shards / "raises_apart__sw2.0__seed0.nc").attrs["shard_traceback"]
    assert "Traceback" in apart and "in raises" in apart and apart.rstrip().endswith("at sigma_w 2")
    silent = cube.open_cube(shards / "silent__sw0.5__seed0.nc").attrs["shard_traceback"]
    assert silent.splitlines() == ["loading", "done, no record"]
    hung = cube.open_cube(shards / "hangs__sw2.0__seed0.nc").attrs["shard_traceback"]
    assert "waiting for a data loader that never answers" in hung
    # the diverged cell kept its curves up to the epoch the loss stopped being finite
    assert np.isfinite(ds[cube.TRAIN_LOSS].sel(pipeline="blows", sigma_w=2.0, seed=0).values[0])


# Refusals -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("pipeline", "needles"), [
    ('{entry: "initmem.tests.no_such_module:train"}', ("pipelines.p.entry: cannot import",
                                                        "initmem.tests.no_such_module")),
    (f'{{entry: "{MODULE}:no_such_function"}}', ("pipelines.p.entry: module", "has no 'no_such_function'")),
    (f'{{entry: "{MODULE}:NOT_CALLABLE"}}', ("pipelines.p.entry:", "is not callable")),
    ('{command: "no-such-program-initmem --fast"}', ("pipelines.p.command: no program 'no-such-program-initmem'",)),
    ('{command: "python no_such_script.py"}', ("pipelines.p.command: no script", "no_such_script.py")),
    ('{command: "python -m initmem.tests.no_such_module"}', ("pipelines.p.command: no module",)),
    ('{entry: "a:b", workdir: /no/such/folder}', ("pipelines.p.workdir: no such folder",)),
])
def test_code_that_cannot_run_is_refused_before_any_cell_runs(tmp_path, pipeline, needles):
    grid = _write(tmp_path, _grid_text(PLAIN + f"  p: {pipeline}\n"))
    proc = invoke("collect", grid, "--out", tmp_path / "run", "--device", "cpu")
    assert_user_error(proc, *needles)
    assert not (tmp_path / "run").exists(), "a refused grid wrote its grid folder"


# Slurm --------------------------------------------------------------------------------------------------

def test_the_slurm_blocks_options_reach_the_job_script(tmp_path, monkeypatch):
    """The grid's account, qos, constraint, gres, setup lines and further #SBATCH options are in the sbatch script
    submitit writes, and max_num_timeout is submitit's (a stand-in srun lets submitit's Slurm executor start)."""
    from initmem.collect.execution.grid_folder import GridFolder
    from initmem.collect.execution.slurm_executor import make_executor, slurm_options

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("srun", "sbatch"):
        fake = bin_dir / name
        fake.write_text("#!/bin/sh\necho 'slurm 23.02.0'\n", encoding="utf-8")
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    extra = ("slurm: {partition: gpu, account: lab42, qos: high, constraint: a100, gres: 'gpu:a100:1', "
             "setup: ['module load cuda/12.4', 'source ~/venv/bin/activate'], "
             "additional_parameters: {mail-type: END, exclusive: user}, max_num_timeout: 7}\n")
    grid = load_grid(_write(tmp_path, _grid_text(PLAIN, extra=extra)))
    run = GridFolder(tmp_path / "run")
    ex = make_executor(run, grid, slurm_options(grid, {"qos": "low"}), "slurm")
    script = ex._executor._make_submission_file_text("python -u -m submitit.core._submit", "uid")
    for line in ("#SBATCH --account=lab42", "#SBATCH --qos=low", "#SBATCH --constraint=a100",
                 "#SBATCH --gres=gpu:a100:1", "#SBATCH --mail-type=END", "#SBATCH --exclusive=user",
                 "#SBATCH --partition=gpu", "module load cuda/12.4", "source ~/venv/bin/activate"):
        assert line in script, line
    assert ex._executor.max_num_timeout == 7
    assert script.index("module load cuda/12.4") < script.index("python -u -m submitit.core._submit")


def test_cells_per_gpu_starts_that_many_workers_on_each_gpu(monkeypatch):
    from initmem.collect.execution.local_executor import worker_plan

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert worker_plan("cuda", 1, 3) == [{"CUDA_VISIBLE_DEVICES": g} for g in ("0", "0", "0", "1", "1", "1")]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert worker_plan("cuda", 1, 2) == [{"CUDA_VISIBLE_DEVICES": "0"}] * 2
    assert worker_plan("cuda", 1) == [{}]   # one GPU, one cell at a time: in the calling process


def test_the_python_of_a_command_is_initmems_interpreter():
    from initmem.collect.custom.identity import command_argv

    assert command_argv("python train.py --lr 0.1") == [sys.executable, "train.py", "--lr", "0.1"]
    assert command_argv("./train.sh") == ["./train.sh"]


@pytest.mark.slow
def test_a_resume_after_the_code_changed_warns_and_logs_it(tmp_path, capsys):
    from initmem.collect.execution.events import read_events

    code = tmp_path / "code"
    code.mkdir()
    module = code / "mine_changed_code.py"
    module.write_text(f"from {MODULE} import train\n", encoding="utf-8")
    pipe = f'  sgd: {{entry: "mine_changed_code:train", workdir: {code}, settings: {{epochs: 1}}}}\n'
    _collect(_write(tmp_path, _grid_text(pipe, sigma_w="[1]", seeds="[0]")), tmp_path / "run")
    first = hashlib.sha256(module.read_bytes()).hexdigest()
    module.write_text(f"from {MODULE} import train  # edited\n", encoding="utf-8")
    collect(_write(tmp_path, _grid_text(pipe, sigma_w="[1]", seeds="[0, 1]")), tmp_path / "run", device="cpu",
            progress=False, resume=True)
    assert "warning: pipelines.sgd: its code changed since the run began" in capsys.readouterr().out
    changed = [e for e in read_events(tmp_path / "run" / "events.jsonl") if e["event"] == "code_changed"]
    assert [(e["before"], e["now"]) for e in changed] == [(first, hashlib.sha256(module.read_bytes()).hexdigest())]
    ds = cube.open_cube(tmp_path / "run" / "cube.nc")
    assert (ds[cube.STATUS].values == cube.OK).all() and ds[CODE_FILE].values.tolist() == ["mine_changed_code.py"]


def test_two_workdirs_with_a_module_of_the_same_name_each_run_and_record_their_own(tmp_path):
    """Two pipelines whose entry is ``train:main`` in two folders: each runs its own folder's code and records
    its own file's hash, however the first import left ``sys.modules``."""
    from initmem.collect.custom.identity import code_file, import_entry
    from initmem.grid.schema import UserPipelineSpec

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(f"def main(cell=None):\n    return {name!r}\n")
    try:
        for name in ("a", "b", "a"):
            workdir = tmp_path / name
            assert import_entry("train:main", workdir)() == name
            spec = UserPipelineSpec(entry="train:main", workdir=str(workdir))
            assert code_file(spec, workdir) == workdir / "train.py"
    finally:
        sys.modules.pop("train", None)
