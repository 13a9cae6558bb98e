"""A grid of the user's code as a Slurm job array: on submitit's local executor (real subprocesses, pickling and
job folders) and, where one runs, on a real single-node Slurm cluster with an account and a setup line passed
through to the job script (docs/collect-runs.md, *Executors*)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from initmem.collect.execution.runner import collect
from initmem.tests._collect_util import assert_same_cube, write_grid

pytestmark = pytest.mark.slow
MODULE = "initmem.tests._user_pipelines"


def _grid(tmp_path: Path) -> Path:
    return write_grid(tmp_path / "grid.yaml", f"""\
name: mine
sigma_w: [0.5, 2]
seeds: [0]
pipelines:
  sgd: {{entry: "{MODULE}:train", settings: {{epochs: 2, lr: 0.2}}}}
slurm:
  account: initmem-ci
  setup: ["touch {tmp_path / 'setup-ran'}"]
  max_num_timeout: 1
""")


def test_a_user_code_grid_as_a_job_array_gives_the_local_runs_cube(tmp_path):
    grid = _grid(tmp_path)
    base = collect(grid, tmp_path / "base", device="cpu", progress=False, quiet=True)
    out = collect(grid, tmp_path / "run", executor="slurm", slurm_cluster="local", device="cpu", progress=False,
                  quiet=True, slurm={"gpus_per_job": 0, "mem_gb": 1, "cpus_per_task": 1, "time_min": 10})
    assert_same_cube(out, base)
    assert '"account": "initmem-ci"' in (tmp_path / "run" / "run.json").read_text()


@pytest.mark.skipif(os.environ.get("INITMEM_REAL_SLURM") != "1",
                    reason="needs a running Slurm cluster (bash .ci/slurm-up, then INITMEM_REAL_SLURM=1; CI does both)")
def test_a_user_code_grid_on_a_real_slurm_cluster_with_an_account_and_a_setup_line(tmp_path):
    assert shutil.which("sbatch"), "INITMEM_REAL_SLURM=1 but there is no sbatch: run bash .ci/slurm-up first"
    grid = _grid(tmp_path)
    base = collect(grid, tmp_path / "base", device="cpu", progress=False, quiet=True)
    out = collect(grid, tmp_path / "run", executor="slurm", device="cpu", progress=False, quiet=True,
                  slurm={"gpus_per_job": 0, "mem_gb": 1, "cpus_per_task": 1, "time_min": 10})
    assert_same_cube(out, base)
    scripts = list((tmp_path / "run" / "slurm").rglob("*_submission.sh"))
    assert scripts and all("#SBATCH --account=initmem-ci" in s.read_text() for s in scripts)
    assert (tmp_path / "setup-ran").is_file(), "the setup line did not run in the job"
