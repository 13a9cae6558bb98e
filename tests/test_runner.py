"""The collector: shards, resume after kills, grid changes, failures, corrupt shards, CLI.

These tests drive ``initmem.collect.execution.runner.collect`` with a small deterministic stand-in for
the training engine (tests/_collect_fake.py, same contract) so every crash point can be hit
in seconds; tests/test_runner_engine.py repeats the essentials with the real engine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from initmem import cube
from initmem.atomic import leftover_temporaries
from initmem.collect.execution.events import read_events
from initmem.collect.execution.runner import collect
from initmem.collect.execution.shards import shard_files, shard_name
from initmem.errors import UserError
from initmem.tests._cli import assert_user_error, invoke
from initmem.tests._collect_fake import fake_train_pack
from initmem.tests._collect_util import (
    FAKE_GRID,
    assert_clean,
    assert_same_cube,
    comparable,
    run_collect_subprocess,
    write_grid,
)

CELLS = [(p, s, k) for p in ("sgd", "adam") for s in (0.5, 1.0, 2.0) for k in (0, 1)]


def run(grid: Path, out: Path, **kw) -> Path:
    kw.setdefault("pack_size", 3)
    kw.setdefault("train_fn", fake_train_pack)
    return collect(grid, out, device="cpu", progress=False, quiet=True, **kw)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("baseline")
    return run(write_grid(d / "grid.yaml", FAKE_GRID), d / "run")


@pytest.mark.slow
def test_uninterrupted_run_writes_one_shard_per_cell(baseline: Path) -> None:
    run_dir = baseline.parent
    assert sorted(p.name for p in shard_files(run_dir / "shards")) == sorted(shard_name(c) for c in CELLS)
    ds = cube.open_cube(baseline)
    assert (ds["status"].values == cube.OK).all()
    assert list(ds["pipeline"].values) == ["sgd", "adam"]
    # adam's horizon is 3 epochs: its epoch-4 curve entries are NaN, sgd's are not
    assert np.isnan(ds["train_loss"].sel(pipeline="adam", epoch=4)).all()
    assert np.isfinite(ds["train_loss"].sel(pipeline="sgd", epoch=4)).all()
    events = read_events(run_dir / "events.jsonl")
    kinds = Counter(e["event"] for e in events)
    assert kinds["pack_start"] == kinds["pack_end"] == 4
    assert kinds["cell"] == len(CELLS)
    assert kinds["checkpoint"] > 0
    assert_clean(run_dir)


# Kill and resume ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("point", ["epoch:3", "checkpoint_write:2", "shard_write:2", "shard_written:4", "merge:1"])
def test_kill_then_resume_gives_the_uninterrupted_cube(tmp_path: Path, baseline: Path, point: str) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, env={"INITMEM_TEST_HOOK": f"{point}:kill"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    if point.startswith(("checkpoint_write", "shard_write", "merge")):
        assert leftover_temporaries(out), "the kill should land while a temporary exists"
    assert not (out / "cube.nc").exists()
    run(grid, out, resume=True)
    assert_same_cube(out / "cube.nc", baseline)
    assert_clean(out)
    events = read_events(out / "events.jsonl")
    written = Counter((e["cell"]["pipeline"], e["cell"]["sigma_w"], e["cell"]["seed"])
                      for e in events if e["event"] == "cell")
    # every cell has exactly one shard and is in the cube; none was written twice (a kill between a
    # shard's rename and its log line can drop that one line, never the shard)
    assert sorted(p.name for p in shard_files(out / "shards")) == sorted(shard_name(c) for c in CELLS)
    assert (cube.open_cube(out / "cube.nc")["status"].values == cube.OK).all()
    assert max(written.values()) == 1 and len(written) >= len(CELLS) - 1, "a cell missing or duplicated"
    if point == "epoch:3":  # killed in epoch 3 of the first pack: it resumed from its epoch-2 checkpoint
        assert [e["epochs_done"] for e in events if e["event"] == "resume"] == [2]


# Failures ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_failing_cell_is_isolated_and_kept_with_its_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          baseline: Path, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("INITMEM_FAIL_CELL", "sgd:1:0")
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = run(grid, tmp_path / "run")
    ds = cube.open_cube(out)
    st = ds["status"].sel(pipeline="sgd")
    assert int(st.sel(sigma_w=1.0, seed=0)) == cube.FAILED
    assert int((ds["status"] == cube.OK).sum()) == len(CELLS) - 1
    failed = json.loads(ds.attrs["failed_cells"])
    assert failed == [{"pipeline": "sgd", "sigma_w": 1.0, "seed": 0, "error": "RuntimeError: injected failure "
                                                                              "in cell sgd:1:0"}]
    shard = cube.open_cube(tmp_path / "run" / "shards" / shard_name(("sgd", 1.0, 0)))
    assert shard.attrs["shard_error"] == "RuntimeError: injected failure in cell sgd:1:0"
    assert "Traceback" in shard.attrs["shard_traceback"]
    # the culprit's pack mates were rerun alone and equal the uninterrupted run exactly
    base = cube.open_cube(baseline)
    ok = ds["status"] == cube.OK
    np.testing.assert_array_equal(ds["train_loss"].where(ok).values, base["train_loss"].where(ok).values)
    events = read_events(tmp_path / "run" / "events.jsonl")
    assert sum(e["event"] == "retry" for e in events) == 3  # the failing pack of 3 rerun cell by cell
    # --resume keeps the failed cell; --retry-failed trains it again (now without the fault)
    run(grid, tmp_path / "run", resume=True)
    assert int(cube.open_cube(out)["status"].sel(pipeline="sgd", sigma_w=1.0, seed=0)) == cube.FAILED
    monkeypatch.delenv("INITMEM_FAIL_CELL")
    run(grid, tmp_path / "run", resume=True, retry_failed=True)
    assert (cube.open_cube(out)["status"].values == cube.OK).all()


@pytest.mark.slow
def test_failure_table_is_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("INITMEM_FAIL_CELL", "adam:2:1")
    text = FAKE_GRID.replace("sigma_w: [0.5, 1, 2]", "sigma_w: [0.5, 2, 100]")
    grid = write_grid(tmp_path / "grid.yaml", text)
    collect(grid, tmp_path / "run", device="cpu", progress=False, quiet=False, train_fn=fake_train_pack,
            pack_size=3)
    out = capsys.readouterr().out
    assert "failed and diverged cells" in out
    assert "RuntimeError: injected failure in cell adam:2:1" in out
    # sigma_w = 100 diverges at epoch 2 in the stand-in: a result with curves up to epoch 1
    assert out.count("diverged") >= 4 and "curves kept up to epoch 1" in out
    ds = cube.open_cube(tmp_path / "run" / "cube.nc")
    div = ds["status"].sel(sigma_w=100.0) == cube.DIVERGED
    assert bool(div.all())
    assert np.isfinite(ds["train_loss"].sel(sigma_w=100.0, epoch=1)).all()
    assert np.isnan(ds["train_loss"].sel(sigma_w=100.0, epoch=2)).all()


# Grid changes -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_resume_refuses_a_changed_grid_and_names_the_fields(tmp_path: Path, baseline: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    run(grid, tmp_path / "run")
    changed = write_grid(tmp_path / "changed.yaml",
                         FAKE_GRID.replace("lr: 0.1,", "lr: 0.2,").replace("seeds: [0, 1]", "seeds: [0]"))
    with pytest.raises(UserError) as exc:
        run(changed, tmp_path / "run", resume=True)
    msg = str(exc.value)
    assert "pipelines.sgd.lr (0.1 -> 0.2)" in msg and "seeds (removed 1)" in msg
    with pytest.raises(UserError, match="resume=True"):  # without resume an existing run is refused (the
        # message names the option as a Python caller passes it; the command line says --resume)
        run(grid, tmp_path / "run")
    # --force-new starts a new folder next to it
    new = run(changed, tmp_path / "run", force_new=True)
    assert new == tmp_path / "run-2" / "cube.nc" and new.exists()


@pytest.mark.slow
def test_resume_of_an_extended_grid_runs_only_the_new_cells(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    run(grid, tmp_path / "run")
    ext_text = (FAKE_GRID.replace("sigma_w: [0.5, 1, 2]", "sigma_w: [0.5, 1, 2, 4]")
                + "  adamw: {optimizer: adamw, lr: 0.01, batch_size: 32, epochs: 2}\n")
    ext = write_grid(tmp_path / "ext.yaml", ext_text)
    before = {p.name: p.stat().st_mtime_ns for p in shard_files(tmp_path / "run" / "shards")}
    run(ext, tmp_path / "run", resume=True)
    after = {p.name: p.stat().st_mtime_ns for p in shard_files(tmp_path / "run" / "shards")}
    assert {k: after[k] for k in before} == before, "finished shards must not be rewritten"
    assert len(after) == 2 * 4 * 2 + 4 * 2
    ds = cube.open_cube(tmp_path / "run" / "cube.nc")
    assert list(ds["pipeline"].values) == ["sgd", "adam", "adamw"]
    assert (ds["status"].values == cube.OK).all()
    # an extended run equals a fresh run of the extended grid
    fresh = run(ext, tmp_path / "fresh")
    a, b = cube.open_cube(fresh), ds
    for v in a.data_vars:
        if v != "wall_seconds":
            np.testing.assert_array_equal(a[v].values, b[v].values)


# Corrupt shards ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_corrupt_shard_is_reported_at_merge_and_rerun_on_resume(tmp_path: Path, baseline: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = run(grid, tmp_path / "run")
    victim = tmp_path / "run" / "shards" / shard_name(("adam", 2.0, 1))
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])  # truncated, e.g. by a failed copy
    proc = invoke("collect", "--merge", tmp_path / "run")
    assert_user_error(proc, victim.name)
    assert victim.name in proc.stderr and "--resume" in proc.stderr
    ds = cube.open_cube(out)
    assert int(ds["status"].sel(pipeline="adam", sigma_w=2.0, seed=1)) == cube.MISSING
    assert json.loads(ds.attrs["corrupt_shards"]) == [victim.name]
    run(grid, tmp_path / "run", resume=True)
    assert_same_cube(out, baseline)
    assert len(list((tmp_path / "run" / "shards" / "corrupt").iterdir())) == 1  # kept for inspection
    assert any(e["event"] == "corrupt_shard" for e in read_events(tmp_path / "run" / "events.jsonl"))


@pytest.mark.slow
def test_merge_is_deterministic_and_rerunnable(tmp_path: Path, baseline: Path) -> None:
    from initmem.collect.execution.assemble import merge_folder

    run_dir = baseline.parent
    first = cube.open_cube(baseline)
    merge_folder(run_dir)
    again = cube.open_cube(baseline)
    for v in first.data_vars:
        assert first[v].values.tobytes() == again[v].values.tobytes(), v
    assert leftover_temporaries(run_dir) == []


@pytest.mark.slow
def test_shards_read_by_several_processes_give_the_same_scan_and_cube(
        tmp_path: Path, baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge and the resume scan read shards with a process pool: the same good shards, the same corrupt
    ones with the same reasons, the same cube, as one process."""
    from initmem.collect.execution import shards as sh
    from initmem.collect.execution.assemble import merge_folder

    run_dir = tmp_path / "run"
    shutil.copytree(baseline.parent, run_dir)
    victim = sorted(shard_files(run_dir / "shards"))[3]
    victim.write_bytes(victim.read_bytes()[:200])
    monkeypatch.setattr(sh, "PARALLEL_MIN_SHARDS", 2)          # the baseline has 12 shards
    one, two = sh.scan_shards(run_dir / "shards", jobs=1), sh.scan_shards(run_dir / "shards", jobs=2)
    assert sorted(one[0]) == sorted(two[0]) and len(one[0]) == len(CELLS) - 1
    assert one[1] == two[1] and [p.name for p, _ in two[1]] == [victim.name]
    a = merge_folder(run_dir, jobs=1).ds
    b = merge_folder(run_dir, jobs=2).ds
    assert a.drop_attrs().identical(b.drop_attrs())


@pytest.mark.slow
def test_merge_does_not_depend_on_the_order_of_shards(baseline: Path) -> None:
    from initmem.collect.execution.shards import merge, scan_shards
    from initmem.grid import load_grid

    run_dir = baseline.parent
    grid = load_grid(run_dir / "grid.yaml")
    good, corrupt = scan_shards(run_dir / "shards", keep_data=True)
    assert not corrupt
    infos = list(good.values())
    kw = dict(pipelines=list(grid.pipelines), sigma_w=grid.sigma_w, seeds=grid.seeds, attrs={},
              pipeline_defaults={})
    a = merge(infos, **kw)
    b = merge(infos[::-1], **kw)
    on_disk = cube.open_cube(baseline)
    for v in on_disk.data_vars:
        assert a[v].values.tobytes() == b[v].values.tobytes(), v
        np.testing.assert_array_equal(cube.canonicalize(a)[v].values, on_disk[v].values)


# Command line -----------------------------------------------------------------------------------

def test_cli_bad_grid_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = write_grid(tmp_path / "bad.yaml", FAKE_GRID.replace("lr: 0.1,", "lr: -1,"))
    proc = invoke("collect", bad, "--out", tmp_path / "run")
    assert_user_error(proc)
    assert "lr" in proc.stderr
    assert_user_error(invoke("collect", "--out", tmp_path / "run"))
    assert_user_error(invoke("collect", "--status", tmp_path / "nothing"))


@pytest.mark.slow
def test_cli_status_and_merge(tmp_path: Path, baseline: Path) -> None:
    proc = invoke("collect", "--status", baseline.parent)
    assert proc.returncode == 0, proc.stderr
    assert "12/12 cells finished (12 ok, 0 diverged, 0 failed, 0 to go)" in proc.stdout
    proc = invoke("collect", "--merge", baseline.parent)
    assert proc.returncode == 0, proc.stderr
    assert "12 ok" in proc.stdout


@pytest.mark.slow
def test_local_executor_with_worker_processes_gives_the_same_cube(tmp_path: Path, baseline: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = run(grid, tmp_path / "run", jobs=2)
    assert_same_cube(out, baseline)
    pids = {e["pid"] for e in read_events(tmp_path / "run" / "events.jsonl") if e["event"] == "pack_start"}
    # Worker processes trained the packs, not this one. (Whether both workers got a pack is a
    # race: the stand-in trains in microseconds, so the first worker can drain the queue.)
    assert pids and os.getpid() not in pids and len(pids) <= 2
    assert_clean(tmp_path / "run")


def test_local_workers_one_per_visible_gpu_or_jobs_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from initmem.collect.execution.local_executor import worker_plan

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,3")
    assert worker_plan("cuda", 1) == [{"CUDA_VISIBLE_DEVICES": g} for g in ("0", "1", "3")]
    assert worker_plan("cuda:1", 4) == [{}]  # an explicit device index: one worker on that GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    assert worker_plan("cuda", 4) == [{}]  # one GPU: run in the calling process
    assert worker_plan("cpu", 3) == [{}, {}, {}]


def test_jobs_auto_fills_the_cores_without_oversubscribing(monkeypatch: pytest.MonkeyPatch) -> None:
    from initmem.collect.execution import local_executor as local_exec
    from initmem.grid import load_grid, parse_grid

    quick = load_grid("quick")                       # pins engine.cpu_threads: 1
    assert quick.engine.cpu_threads == 1
    monkeypatch.setattr(local_exec, "usable_cores", lambda: 2)
    assert local_exec.auto_jobs(quick, "cpu", n_packs=7) == 2
    assert local_exec.auto_jobs(quick, "cpu", n_packs=1) == 1        # never more workers than packs
    assert local_exec.auto_jobs(quick, "cuda", n_packs=7) == 1       # GPUs: one worker per GPU anyway
    monkeypatch.setattr(local_exec, "usable_cores", lambda: 16)
    four = parse_grid({**quick.to_dict(), "engine": {**quick.to_dict()["engine"], "cpu_threads": 4}})
    assert local_exec.auto_jobs(four, "cpu", n_packs=7) == 4
    unpinned = parse_grid({**quick.to_dict(), "engine": {**quick.to_dict()["engine"], "cpu_threads": None}})
    assert local_exec.auto_jobs(unpinned, "cpu", n_packs=7) == 1    # torch's own threading uses every core


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5"])
def test_bad_jobs_is_a_one_line_error(tmp_path: Path, bad: str) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    proc = invoke("collect", grid, "--out", tmp_path / "run", "--jobs", bad)
    assert_user_error(proc, "--jobs")
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_checkpoint_of_an_older_engine_state_is_discarded_not_fatal(tmp_path: Path, baseline: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, env={"INITMEM_TEST_HOOK": "epoch:3:kill"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr

    def newer_engine(*args, **kwargs):
        return fake_train_pack(*args, **kwargs)

    newer_engine.state_version = 99  # the stand-in's checkpoints carry no such version
    run(grid, out, resume=True, train_fn=newer_engine)
    assert_same_cube(out / "cube.nc", baseline)
    events = read_events(out / "events.jsonl")
    assert any(e["event"] == "checkpoint_unusable" and "state version" in e["reason"] for e in events)
    assert not [e for e in events if e["event"] == "resume"]


# What a resume may change --------------------------------------------------------------------------

ENGINE_CHANGES = [("autocast", "true", "null -> true"), ("measure_clocks", "false", "true -> false"),
                  ("compile", "true", "false -> true"), ("channels_last", "true", "null -> true"),
                  ("cpu_threads", "3", "null -> 3"), ("eval_batch_size", "64", "4096 -> 64")]


def _grid(text: str):
    import yaml

    from initmem.grid import parse_grid

    return parse_grid(yaml.safe_load(text))


@pytest.mark.parametrize(("field", "value", "change"), ENGINE_CHANGES)
def test_resume_refuses_each_engine_setting_that_changes_the_numbers(field: str, value: str, change: str) -> None:
    from initmem.collect.execution.grid_folder import grid_changes

    changed, _ = grid_changes(_grid(FAKE_GRID), _grid(FAKE_GRID + f"engine: {{{field}: {value}}}\n"))
    assert changed == [f"engine.{field} ({change})"]


def test_pack_size_data_root_and_slurm_may_change_on_resume() -> None:
    from initmem.collect.execution.grid_folder import grid_changes

    moved = FAKE_GRID + ("engine: {pack_size: 1}\ndataset: {name: digits, root: /tmp/elsewhere}\n"
                         "slurm: {partition: gpu, mem_gb: 64}\n")
    assert grid_changes(_grid(FAKE_GRID), _grid(moved)) == ([], {"pipelines": [], "sigma_w": [], "seeds": []})


@pytest.mark.slow
def test_resume_with_changed_engine_settings_is_refused_and_leaves_the_run_as_it_was(tmp_path: Path,
                                                                                      baseline: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, env={"INITMEM_TEST_HOOK": "shard_written:2:kill"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    changed = write_grid(tmp_path / "changed.yaml", FAKE_GRID + "engine: {measure_clocks: false, autocast: true}\n")
    with pytest.raises(UserError) as exc:
        run(changed, out, resume=True)
    assert "engine.autocast (null -> true); engine.measure_clocks (true -> false)" in str(exc.value)
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before, "a refused resume wrote"
    # the data folder and the pack size may change: the cube equals the uninterrupted one, the grid
    # attribute records the new settings
    moved = write_grid(tmp_path / "moved.yaml", FAKE_GRID + "engine: {pack_size: 1}\n"
                       f"dataset: {{name: digits, root: {tmp_path / 'elsewhere'}}}\n")
    run(moved, out, resume=True, pack_size=None)
    got, want = comparable(out / "cube.nc"), comparable(baseline)
    assert str(tmp_path / "elsewhere") in got.attrs["grid"]
    for ds in (got, want):
        ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("grid", "grid_hash")}
    xr.testing.assert_identical(got, want)
    assert_clean(out)


def test_resume_refuses_other_data_under_a_moved_root(tmp_path: Path) -> None:
    from initmem.collect.execution.budgets import training_grid
    from initmem.collect.execution.grid_folder import GridFolder
    from initmem.collect.execution.runner import prepare_folder

    run_dir = GridFolder(tmp_path / "run")
    grid = training_grid(write_grid(tmp_path / "grid.yaml", FAKE_GRID))
    prepare_folder(run_dir, grid, resume=False, executor="local", quiet=True, fingerprint="a" * 64)
    with pytest.raises(UserError, match=r"data set under dataset.root \(default\) differs from the run's "
                                        r"\(dataset fingerprint bbbbbbbbbbbb, the run's aaaaaaaaaaaa\)"):
        prepare_folder(run_dir, grid, resume=True, executor="local", quiet=True, fingerprint="b" * 64)
    prepare_folder(run_dir, grid, resume=True, executor="local", quiet=True, fingerprint="a" * 64)
    assert json.loads(run_dir.record_file.read_text())["dataset_fingerprint"] == "a" * 64


# Refused starts leave nothing behind ----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("case", "needle"), [
    ("cuda", "--device cuda was asked for"),
    ("batch", "pipelines.sgd.batch_size: 100000 is larger than the training split (1078 examples)"),
    ("data", "dataset.root /nonexistent does not exist"),
])
def test_a_refused_start_writes_no_grid_folder(tmp_path: Path, case: str, needle: str) -> None:
    import torch

    if case == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    text = {"cuda": FAKE_GRID, "batch": FAKE_GRID.replace("lr: 0.1, batch_size: 32", "lr: 0.1, batch_size: 100000"),
            "data": FAKE_GRID + "dataset: {name: cifar10, root: /nonexistent}\n"}[case]
    grid = write_grid(tmp_path / "grid.yaml", text)
    out = tmp_path / "run"
    proc = invoke("collect", grid, "--out", out, "--device", "cuda" if case == "cuda" else "cpu")
    assert_user_error(proc, needle)
    assert not out.exists()
    # the corrected command starts afresh, no --resume needed
    run(write_grid(tmp_path / "ok.yaml", FAKE_GRID), out)
    assert (cube.open_cube(out / "cube.nc")["status"].values == cube.OK).all()


def test_sbatch_refusing_the_array_is_a_one_line_error_and_leaves_the_folder_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sbatch = bin_dir / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: nosuch' >&2\nexit 1\n")
    sbatch.chmod(0o755)
    srun = bin_dir / "srun"   # submitit looks for srun before it calls sbatch; machines without Slurm lack it
    srun.write_text("#!/bin/sh\nexit 0\n")
    srun.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("INITMEM_SUBMITIT_CLUSTER", raising=False)
    out = tmp_path / "run"
    out.mkdir()   # made by the user beforehand: it stays, empty
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    proc = invoke("collect", grid, "--out", out, "--executor", "slurm", "--device", "cpu", "--pack-size", "6")
    assert_user_error(proc, "Slurm refused the job array, nothing was submitted: "
                            "sbatch: error: invalid partition specified: nosuch")
    assert out.is_dir() and not any(out.iterdir())


def test_a_folder_holding_other_files_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    assert_user_error(invoke("collect", grid, "--out", out, "--device", "cpu"),
                      f"{out} holds other files (notes.txt) and is no grid folder")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_out_must_be_a_folder_and_force_new_resolves_dot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "cube.nc").write_text("not mine to overwrite")
    proc = invoke("collect", grid, "--out", tmp_path / "A" / "cube.nc")
    assert_user_error(proc, f"--out {tmp_path / 'A' / 'cube.nc'} is a file; give the grid folder DIR")
    assert_user_error(invoke("collect", grid, "--out", tmp_path / "A" / "cube.nc" / "x"), "a file")
    assert sorted(p.name for p in (tmp_path / "A").iterdir()) == ["cube.nc"]
    run(grid, tmp_path / "run")
    monkeypatch.chdir(tmp_path / "run")
    new = run(grid, Path("."), force_new=True)
    assert new.resolve() == (tmp_path / "run-2" / "cube.nc").resolve() and new.exists()


@pytest.mark.parametrize("flag", ["--resume", "--retry-failed"])
def test_force_new_with_resume_or_retry_failed_is_refused(tmp_path: Path, flag: str) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    proc = invoke("collect", grid, "--out", tmp_path / "run", flag, "--force-new")
    assert_user_error(proc, "--force-new", flag)
    assert not (tmp_path / "run").exists()


def test_status_and_merge_of_a_file_say_it_is_not_a_grid_folder(tmp_path: Path) -> None:
    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    for what in ("--status", "--merge"):
        assert_user_error(invoke("collect", what, grid), f"{grid} is a file, not a collect grid folder")
        assert_user_error(invoke("collect", what, tmp_path, "--resume"), "--resume applies to training")


# --status tells the truth -------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("action", ["kill", "interrupt"])
def test_status_tells_an_interrupted_pack_from_one_in_training(tmp_path: Path, baseline: Path, action: str) -> None:
    from initmem.collect.execution import checkpoints
    from initmem.collect.execution.status import folder_status, render_status

    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, env={"INITMEM_TEST_HOOK": f"checkpoint_saved:3:{action}"})
    assert proc.returncode == (-signal.SIGKILL if action == "kill" else -signal.SIGINT), proc.stderr
    st = folder_status(out)
    [(pid, pack)] = st["packs_in_progress"].items()
    text = render_status(st)
    # the kill lands after the third checkpoint's rename, before its log line: the log knows epoch 2
    assert f"pack {pid}: interrupted at epoch 2/4 (resume with resume=True)" in text
    assert "in training" not in text
    with checkpoints.pack_lock(out / "checkpoints", pid):  # a live process trains it
        assert f"in training: pack {pid}: epoch 2/4" in render_status(folder_status(out))
    run(grid, out, resume=True)
    assert_same_cube(out / "cube.nc", baseline)
    assert not folder_status(out)["packs_in_progress"]


@pytest.mark.slow
def test_a_pack_killed_after_its_last_shard_is_not_reported_as_started_after_resume(tmp_path: Path) -> None:
    from initmem.collect.execution.status import folder_status, render_status

    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    proc = run_collect_subprocess(grid, out, env={"INITMEM_TEST_HOOK": "shard_written:3:kill"})  # before pack_end
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    run(grid, out, resume=True)
    assert folder_status(out)["packs_in_progress"] == {}
    assert "interrupted" not in render_status(folder_status(out))
    assert any(e["event"] == "pack_dropped" for e in read_events(out / "events.jsonl"))


@pytest.mark.slow
def test_status_agrees_with_merge_about_a_corrupt_shard(tmp_path: Path) -> None:
    from initmem.collect.execution.assemble import merge_folder
    from initmem.collect.execution.status import folder_status, render_status

    grid = write_grid(tmp_path / "grid.yaml", FAKE_GRID)
    out = tmp_path / "run"
    run(grid, out)
    victim = out / "shards" / shard_name(("adam", 2.0, 1))
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])  # truncated: its size is not the one logged
    text = render_status(folder_status(out))
    assert "11/12 cells finished (11 ok, 0 diverged, 0 failed, 1 to go)" in text and victim.name in text
    victim.write_bytes(b"\0" * len(data))  # garbage of the logged size: the merge finds it, status follows
    report = merge_folder(out)
    assert [p.name for p, _ in report.corrupt] == [victim.name]
    st = folder_status(out)
    assert st["corrupt_shards"] == [victim.name] and st["counts"]["ok"] == 11
    victim.write_bytes(data)  # copied back intact
    assert "12/12 cells finished (12 ok" in render_status(folder_status(out))


def test_a_lock_without_a_manifest_is_dropped_unless_a_live_process_holds_it(tmp_path: Path) -> None:
    """A worker killed between taking its pack's lock and writing the manifest leaves a lock file that nothing
    else removes; the resume's plan drops it, but never the lock of a pack a live process is starting."""
    from initmem.collect.execution import checkpoints

    ckpt = tmp_path / "checkpoints"
    ckpt.mkdir()
    checkpoints.lock_path(ckpt, "orphan").touch()
    checkpoints.lock_path(ckpt, "started").touch()
    checkpoints.write_manifest(ckpt, "started", "p", [(1.0, 0)])
    with checkpoints.pack_lock(ckpt, "starting"):      # a live process, its manifest not yet written
        assert checkpoints.drop_orphan_locks(ckpt) == ["orphan"]
        assert checkpoints.lock_path(ckpt, "starting").exists()
    assert sorted(p.name for p in ckpt.iterdir()) == ["started.json", "started.lock", "starting.lock"]
    assert checkpoints.drop_orphan_locks(ckpt) == ["starting"]
