"""The Slurm executor end to end on submitit's local executor: real subprocesses, real pickling,
real job folders, a job array, and one simulated preemption that requeues and resumes (with the
real engine: tests/test_runner_engine.py).

The preemption is the real mechanism: a test hook makes the task send itself submitit's
preemption signal (SIGUSR2) right after its first epoch checkpoint; submitit's handler calls
``PackJob.checkpoint`` and requeues the task, which resumes the pack from that checkpoint.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from initmem.collect.execution.runner import collect
from initmem.collect.execution.status import folder_status, render_status
from initmem.tests._collect_fake import fake_train_pack
from initmem.tests._collect_util import (
    FAKE_GRID,
    assert_clean,
    assert_same_cube,
    check_preempted_once,
    preempt_once,
    write_grid,
)

pytestmark = pytest.mark.slow


def test_slurm_array_on_local_executor_with_preemption(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    base = collect(grid, tmp_path / "base", device="cpu", progress=False, quiet=True, pack_size=6,
                   train_fn=fake_train_pack)
    preempt_once(monkeypatch, tmp_path)
    out = collect(grid, tmp_path / "run", executor="slurm", slurm_cluster="local", device="cpu", pack_size=6,
                  progress=False, quiet=True, train_fn=fake_train_pack)
    assert (tmp_path / "preempted").exists()
    assert_same_cube(out, base)
    check_preempted_once(tmp_path / "run")
    assert_clean(tmp_path / "run")
    rec = (tmp_path / "run" / "run.json").read_text()
    assert '"slurm_cluster": "local"' in rec and rec.count('"job_id"') == 2  # an array of 2 packs
    st = folder_status(tmp_path / "run")
    assert st["counts"]["ok"] == 12 and st["requeues"] == 1
    assert "12/12 cells finished" in render_status(st)


@pytest.mark.skipif(os.environ.get("INITMEM_REAL_SLURM") != "1",
                    reason="needs a running Slurm cluster (bash .ci/slurm-up, then INITMEM_REAL_SLURM=1; CI does both)")
def test_real_slurm_cluster_with_requeue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a real (single-node) Slurm: an array of 2 tasks, one preempted and requeued by
    ``scontrol requeue`` through submitit, equals an uninterrupted local run exactly."""
    from initmem.tests._collect_util import REAL_GRID

    assert shutil.which("sbatch"), "INITMEM_REAL_SLURM=1 but there is no sbatch: run bash .ci/slurm-up first"
    grid = write_grid(tmp_path / "grid.yaml", REAL_GRID)
    base = collect(grid, tmp_path / "base", device="cpu", progress=False, quiet=True, pack_size=1)
    preempt_once(monkeypatch, tmp_path)
    out = collect(grid, tmp_path / "run", executor="slurm", device="cpu", pack_size=1, progress=False, quiet=True,
                  slurm={"gpus_per_job": 0, "mem_gb": 1, "cpus_per_task": 1, "time_min": 10})
    assert_same_cube(out, base)
    check_preempted_once(tmp_path / "run")
    assert '"slurm_cluster": "slurm"' in (tmp_path / "run" / "run.json").read_text()
    st = folder_status(tmp_path / "run")
    assert st["counts"]["ok"] == 2 and len(st["job_states"]) == 2
    for _ in range(60):  # a task that wrote its result may still be in Slurm's epilog for a moment
        if set(folder_status(tmp_path / "run")["job_states"].values()) == {"ENDED"}:
            break
        time.sleep(1)
    assert set(folder_status(tmp_path / "run")["job_states"].values()) == {"ENDED"}
