"""The collector end to end with the real training engine (digits, resnet_tiny, 2 epochs).

A run killed mid-training or mid-shard-write and then resumed gives, on CPU, exactly the cube
of an uninterrupted run (wall_seconds and created aside); so does a Slurm run on submitit's
local executor whose task is preempted after its first checkpoint; an injected failure in one
cell of a pack leaves only that cell failed.
"""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

from initmem import cube
from initmem.collect.execution.events import read_events
from initmem.collect.execution.runner import collect
from initmem.tests._collect_util import (
    REAL_GRID,
    assert_clean,
    assert_same_cube,
    check_preempted_once,
    preempt_once,
    run_collect_subprocess,
    write_grid,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("real")
    return collect(write_grid(d / "grid.yaml", REAL_GRID), d / "run", device="cpu", progress=False, quiet=True,
                   pack_size=2)


@pytest.mark.parametrize("point", ["epoch:2", "shard_write:1"])
def test_real_engine_kill_and_resume_is_bit_identical(tmp_path: Path, real_baseline: Path, point: str) -> None:
    grid = write_grid(tmp_path / "grid.yaml", REAL_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, fake=False, pack_size=2, env={"INITMEM_TEST_HOOK": f"{point}:kill"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    collect(grid, out, resume=True, device="cpu", progress=False, quiet=True, pack_size=2)
    assert_same_cube(out / "cube.nc", real_baseline)
    assert_clean(out)
    resumed = [e["epochs_done"] for e in read_events(out / "events.jsonl") if e["event"] == "resume"]
    # killed at the end of epoch 2 or writing the first shard: resumes from the epoch-1 checkpoint
    # (the engine does not checkpoint the final epoch)
    assert resumed == [1]


def test_real_engine_failure_in_one_cell(tmp_path: Path, real_baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INITMEM_FAIL_CELL", "sgd:2:0")
    out = collect(write_grid(tmp_path / "grid.yaml", REAL_GRID), tmp_path / "run", device="cpu", progress=False,
                  quiet=True, pack_size=2)
    ds = cube.open_cube(out)
    assert int(ds["status"].sel(pipeline="sgd", sigma_w=2.0, seed=0)) == cube.FAILED
    assert int(ds["status"].sel(pipeline="sgd", sigma_w=0.5, seed=0)) == cube.OK
    assert np.isfinite(ds["train_loss"].sel(sigma_w=0.5, seed=0)).all()
    assert np.isnan(ds["train_loss"].sel(sigma_w=2.0, seed=0)).all()
    assert "sgd:2:0" in ds.attrs["failed_cells"]


def test_real_engine_on_slurm_local_executor_with_preemption(tmp_path: Path, real_baseline: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    preempt_once(monkeypatch, tmp_path)
    out = collect(write_grid(tmp_path / "grid.yaml", REAL_GRID), tmp_path / "run", executor="slurm",
                  slurm_cluster="local", device="cpu", pack_size=2, progress=False, quiet=True)
    assert (tmp_path / "preempted").exists()
    assert_same_cube(out, real_baseline)
    check_preempted_once(tmp_path / "run")
    assert_clean(tmp_path / "run")


def test_merged_cube_carries_every_clock_and_measured_variable(real_baseline: Path) -> None:
    """The shards' merge keeps the momentum-corrected and measured clocks (no name list to update)."""
    ds = cube.open_cube(real_baseline)
    assert not cube.errors(ds)
    ok = ds[cube.STATUS] == cube.OK
    for v in (*cube.MOMENTUM_CLOCKS, *cube.MEASURED_CLOCKS, cube.COS_TO_INIT, cube.ANGULAR_PATH):
        assert v in ds.data_vars, v
        assert bool(ds[v].where(ok).notnull().any()), v
    assert (ds[cube.ANGULAR_PATH].sel(epoch=0) == 0).all()
    assert ds[cube.EFF_LR].sel(layer=[n for n in ds[cube.LAYER].values if "head" in str(n)]).isnull().all()
