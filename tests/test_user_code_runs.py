"""A grid of the user's code through what the built-in engine's grids go through: killed twice and resumed into
the uninterrupted cube, sequential seeds only where undecided, a crossed design analyzed into its draw verdict
(docs/own-model.md, "The grid")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import numpy as np
import pytest

from initmem import cube
from initmem import results as R
from initmem.analysis.run import run_all
from initmem.collect.execution.events import read_events
from initmem.collect.execution.runner import collect
from initmem.models.designs import SMALL
from initmem.results.records import DrawVerdict
from initmem.tests._collect_util import assert_clean, assert_same_cube
from initmem.tests.test_sequential import _fake_analysis

pytestmark = pytest.mark.slow
MODULE = "initmem.tests._user_pipelines"
GRID = f"""\
name: mine
sigma_w: [0.5, 1, 2]
seeds: [0, 1]
pipelines:
  plain: {{entry: "{MODULE}:train", settings: {{epochs: 5, lr: 0.2, noise: 0.4, eval_noise: 1.5}}}}
  heavy: {{entry: "{MODULE}:train", settings: {{epochs: 5, lr: 0.1, momentum: 0.9, noise: 0.4,
                                                 eval_noise: 1.5}}}}
"""


def _collect_killed(grid: Path, out: Path, hook: str, *, resume: bool) -> subprocess.CompletedProcess:
    """``collect`` in a fresh interpreter that a fault hook SIGKILLs at an exact point."""
    code = textwrap.dedent(f"""
        from initmem.collect.execution.runner import collect
        collect({str(grid)!r}, {str(out)!r}, resume={resume!r}, device="cpu", progress=False, quiet=True)
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "INITMEM_TEST_HOOK": hook}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)


def test_killed_twice_and_resumed_the_cube_is_the_uninterrupted_one(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID.split("  heavy:")[0], encoding="utf-8")   # one pipeline: six cells
    baseline = collect(grid, tmp_path / "baseline", device="cpu", progress=False, quiet=True)
    out = tmp_path / "run"
    # killed as the second cell's code returned (before its shard), then mid-write of a shard of the resume
    first = _collect_killed(grid, out, "epoch:4:kill", resume=False)
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert len(list((out / "shards").glob("*.nc"))) == 1
    second = _collect_killed(grid, out, "shard_write:2:kill", resume=True)
    assert second.returncode == -signal.SIGKILL, second.stderr
    assert len(list((out / "shards").glob("*.nc"))) == 2
    collect(grid, out, resume=True, device="cpu", progress=False, quiet=True)
    assert_same_cube(out / "cube.nc", baseline)
    assert_clean(out)
    assert sum(1 for e in read_events(out / "events.jsonl") if e["event"] == "resume_run") == 2


def test_until_decided_adds_seeds_only_to_the_undecided_user_pipeline(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID, encoding="utf-8")
    calls: list[tuple[int, float]] = []
    analyze = _fake_analysis({"plain": (2, "forgets"), "heavy": (4, "remembers")}, calls)
    res = run_all(grid, tmp_path / "run", quiet=True, analyze_fn=analyze, looks=[2, 4, 6])
    assert [n for n, _ in calls] == [2, 4]
    ds = cube.open_cube(res.cube)
    ok = ds[cube.STATUS] == cube.OK
    assert ds[cube.SEED].values.tolist() == [0, 1, 2, 3]
    assert bool(ok.sel({cube.PIPELINE: "heavy"}).all())
    assert not bool(ok.sel({cube.PIPELINE: "plain", cube.SEED: [2, 3]}).any())   # decided at 2 seeds
    trained = {p.name for p in (tmp_path / "run" / "cells").iterdir()}
    assert not any(name.startswith("plain__") and name.endswith(("seed2", "seed3")) for name in trained)
    summary = R.load_summary(res.analysis_dir)
    assert summary.pipelines["plain"].verdict == "forgets" and summary.pipelines["heavy"].verdict == "remembers"


def test_a_crossed_user_code_grid_is_analyzed_into_its_draw_verdict(tmp_path):
    from initmem.analysis.analyze import analyze_cube
    from initmem.reports.html import build_report as report

    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID.replace("seeds: [0, 1]", "seeds: {init: [0, 1, 2], data: [0, 1]}")
                    .replace("sigma_w: [0.5, 1, 2]", "sigma_w: [0.5, 2]")
                    .split("  heavy:")[0], encoding="utf-8")
    path = collect(grid, tmp_path / "run", device="cpu", progress=False, quiet=True)
    ds = cube.open_cube(path)
    assert ds[cube.INIT_SEED].values.tolist() == [0, 0, 1, 1, 2, 2]
    assert ds[cube.DATA_SEED].values.tolist() == [0, 1] * 3
    curve = ds[cube.TRAIN_LOSS].sel(pipeline="plain", sigma_w=0.5).values
    # runs that share an init seed start from the same weights: the same loss before the first step
    assert np.array_equal(curve[0, 0], curve[1, 0]) and not np.array_equal(curve[0, 0], curve[2, 0])
    summary = analyze_cube(path, tmp_path / "analysis", draws=150, tune=150, chains=2, progress=False,
                           n_boot=200, exponents=False, compile_shape=SMALL)   # the suite's shared compile
    block = summary.crossed
    assert block is not None and (block.n_init, block.n_data) == (3, 2)
    assert block.pipelines["plain"].draw_verdict in typing.get_args(DrawVerdict)
    assert summary.pipelines["plain"].verdict in ("remembers", "forgets", "undecided")
    html = report(tmp_path / "analysis").read_text(encoding="utf-8")
    assert "entry point initmem.tests._user_pipelines:train" in html and "We trained a resnet_tiny" not in html
