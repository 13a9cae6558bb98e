"""Tracker exports import to the same cube as the equivalent CSV, offline.

The MLflow store and the TensorBoard logs are written by the trackers' own writers (MlflowClient
on a file store, torch's SummaryWriter); the W&B runs export is a CSV that no library writes, so
it is built here as the W&B UI writes it (run metadata columns, then config, then summary keys,
with the underscore-prefixed system keys).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _cli import assert_user_error, invoke

from initmem import cube

SIGMAS, SEEDS, EPOCHS = (0.5, 1.0, 2.0), (0, 1), range(4)
PIPES = {"sgd": {"lr": 0.1, "batch_size": 64}, "adam": {"lr": 0.001, "batch_size": 32}}


def _acc(i: int) -> float:
    return (300 + 7 * i % 190) / 500  # whole counts out of 500 test examples


def per_epoch_rows() -> list[dict]:
    rows, i = [], 0
    for pipe, cfg in PIPES.items():
        for s in SIGMAS:
            for seed in SEEDS:
                for ep in EPOCHS:
                    i += 1
                    rows.append({"pipeline": pipe, "sigma_w": s, "seed": seed, "epoch": ep, **cfg,
                                 "val_acc": _acc(i), "test_acc": _acc(i + 3), "kernel_norm": 1.0 + 0.25 * ep})
    return rows


def _same_cube(a: xr.Dataset, b: xr.Dataset) -> None:
    a, b = a.sortby(cube.PIPELINE), b.sortby(cube.PIPELINE)
    assert sorted(a.data_vars) == sorted(b.data_vars)
    for v in a.data_vars:
        np.testing.assert_allclose(a[v].values.astype(float), b[v].transpose(*a[v].dims).values.astype(float),
                                   rtol=1e-6, err_msg=v)
    for c in a.coords:
        assert list(a[c].values) == list(b[c].values), c
    assert cube.seed_design(a) == cube.seed_design(b)


def _import(src, out, *args) -> xr.Dataset:
    proc = invoke("import", src, "--out", out, "--seeds", "paired", "--n-test", "500", *args)
    assert proc.returncode == 0, proc.stderr
    return cube.open_cube(out)


@pytest.fixture(scope="module")
def csv_cube(tmp_path_factory):
    d = tmp_path_factory.mktemp("csv")
    pd.DataFrame(per_epoch_rows()).to_csv(d / "t.csv", index=False)
    return _import(d / "t.csv", d / "c.nc")


def test_wandb_runs_export(tmp_path):
    rows, status_rows = [], []
    i = 0
    for pipe, cfg in PIPES.items():
        for s in SIGMAS:
            for seed in SEEDS:
                i += 1
                crashed = pipe == "adam" and s == 2.0 and seed == 1
                rows.append({"Name": f"run-{i}", "State": "crashed" if crashed else "finished", "Notes": "-",
                             "User": "me", "Tags": "sweep", "Created": "2026-11-30T10:00:00.000Z", "Runtime": 812,
                             "Sweep": "abc123", "opt": pipe, "init_scale": s, "seed": seed, **cfg,
                             "test_acc": np.nan if crashed else _acc(i), "_step": 30, "_runtime": 812.4,
                             "_timestamp": 1.7e9, "_wandb": "{'runtime': 812}"})
                status_rows.append({"pipeline": pipe, "sigma_w": s, "seed": seed, **cfg,
                                    "selected_test_acc": np.nan if crashed else _acc(i),
                                    "status": "failed" if crashed else "ok"})
    pd.DataFrame(rows).to_csv(tmp_path / "wandb_export.csv", index=False)
    pd.DataFrame(status_rows).to_csv(tmp_path / "t.csv", index=False)
    want = _import(tmp_path / "t.csv", tmp_path / "c.nc")
    got = _import(tmp_path / "wandb_export.csv", tmp_path / "w.nc", "--pipeline-col", "opt",
                  "--sigma-col", "init_scale")
    _same_cube(want, got)
    assert cube.status_counts(got)["adam"]["failed"] == 1


def test_mlflow_file_store(tmp_path, csv_cube, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks writers of file stores to opt in
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    exp = client.create_experiment("sigma sweep")
    df = pd.DataFrame(per_epoch_rows())
    for (pipe, s, seed), rows in df.groupby(["pipeline", "sigma_w", "seed"], sort=False):
        run = client.create_run(exp).info.run_id
        for key, value in {"optimizer_name": pipe, "sigma": s, "seed": seed, **PIPES[pipe]}.items():
            client.log_param(run, key, value)
        for r in rows.itertuples():
            for key in ("val_acc", "test_acc", "kernel_norm"):
                client.log_metric(run, key, getattr(r, key), step=r.epoch)
        client.set_terminated(run)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("pipeline: optimizer_name\nsigma_w: sigma\n")
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")  # the reader opts in by itself
    got = _import(tmp_path, tmp_path / "m.nc", "--mapping", mapping)
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    _same_cube(csv_cube, got)


def test_tensorboard_logs(tmp_path, csv_cube):
    from torch.utils.tensorboard import SummaryWriter

    df = pd.DataFrame(per_epoch_rows())
    for (pipe, s, seed), rows in df.groupby(["pipeline", "sigma_w", "seed"], sort=False):
        cfg = PIPES[pipe]
        run_dir = tmp_path / "logs" / f"pipeline={pipe}" / f"sigma_w={s},seed={seed},lr={cfg['lr']}" \
            f",batch_size={cfg['batch_size']}"
        with SummaryWriter(str(run_dir)) as w:
            for r in rows.itertuples():
                w.add_scalar("val/acc", r.val_acc, r.epoch)
                w.add_scalar("test/acc", r.test_acc, r.epoch)
                w.add_scalar("kernel_norm", r.kernel_norm, r.epoch)
    got = _import(tmp_path / "logs", tmp_path / "tb.nc")
    _same_cube(csv_cube, got)


def test_tracker_folder_that_is_neither(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_user_error(invoke("import", tmp_path / "empty", "--out", tmp_path / "c.nc", "--seeds", "paired"),
                      "neither TensorBoard event files nor an MLflow store")


def _log_runs(client, df: pd.DataFrame) -> None:
    """One batch per run (MLflow's own log_batch: a database transaction per run, not per value)."""
    from mlflow.entities import Metric, Param

    exp = client.create_experiment("sigma sweep")
    for (pipe, s, seed), rows in df.groupby(["pipeline", "sigma_w", "seed"], sort=False):
        run = client.create_run(exp).info.run_id
        params = [Param(k, str(v)) for k, v in {"optimizer_name": pipe, "sigma": s, "seed": seed,
                                                **PIPES[pipe]}.items()]
        metrics = [Metric(key, float(getattr(r, key)), 1_700_000_000_000 + r.epoch, int(r.epoch))
                   for r in rows.itertuples() for key in ("val_acc", "test_acc", "kernel_norm")]
        client.log_batch(run, metrics=metrics, params=params)
        client.set_terminated(run)


def test_mlflow_sqlite_store(tmp_path, csv_cube, monkeypatch):
    """MLflow 3's default store, mlflow.db, written by MlflowClient itself: the file and its URI import
    to the CSV's cube, and the file is opened read-only (never migrated)."""
    pytest.importorskip("sqlalchemy")
    from mlflow.tracking import MlflowClient

    db = tmp_path / "mlflow.db"
    _log_runs(MlflowClient(tracking_uri=f"sqlite:///{db}"), pd.DataFrame(per_epoch_rows()))
    mapping = tmp_path / "map.yaml"
    mapping.write_text("pipeline: optimizer_name\nsigma_w: sigma\n")
    before = db.read_bytes()
    _same_cube(csv_cube, _import(db, tmp_path / "m.nc", "--mapping", mapping))
    assert db.read_bytes() == before
    _same_cube(csv_cube, _import(f"sqlite:///{db}", tmp_path / "u.nc", "--mapping", mapping))
    monkeypatch.chdir(tmp_path)  # sqlite:///mlflow.db is relative to the working folder
    _same_cube(csv_cube, _import("sqlite:///mlflow.db", tmp_path / "r.nc", "--mapping", mapping))


def test_sqlite_file_that_is_not_mlflow(tmp_path):
    import sqlite3

    with sqlite3.connect(tmp_path / "other.db") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    assert_user_error(invoke("import", tmp_path / "other.db", "--out", tmp_path / "c.nc", "--seeds", "paired"),
                      "not an MLflow store", "runs")


@pytest.mark.parametrize("damage", ["run_id", "status", "metric"])
def test_mlflow_store_mlflow_cannot_read(tmp_path, monkeypatch, damage):
    """A damaged file store is one line and exit 2, not MLflow's exception."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").as_uri())
    run = client.create_run(client.create_experiment("x")).info.run_id
    client.log_param(run, "pipeline", "sgd")
    client.log_metric(run, "val_acc", 0.5, step=0)
    client.set_terminated(run)
    meta = next((tmp_path / "mlruns").glob(f"*/{run}/meta.yaml"))
    text = meta.read_text()
    if damage == "metric":  # MLflow's own MlflowException: "Metric 'val_acc' is malformed"
        (meta.parent / "metrics" / "val_acc").write_text("garbage\n")
    else:
        meta.write_text(text.replace(f"run_id: {run}", "run_id: 0123abcd") if damage == "run_id" else
                        "\n".join("status: 99" if ln.startswith("status:") else ln for ln in text.splitlines()))
    assert_user_error(invoke("import", tmp_path, "--out", tmp_path / "c.nc", "--seeds", "paired"),
                      "MLflow cannot read this store")


def test_collapse_without_steps_names_the_missing_option(tmp_path):
    """A per-epoch import without --n-train or a step column has no optimizer steps, which the clock
    exponents need: collapse says what to give (exit 2); analyze's collapse view records the reason."""
    from initmem.analysis.collapse import exponents_entry

    pd.DataFrame(per_epoch_rows()).to_csv(tmp_path / "t.csv", index=False)
    ds = _import(tmp_path / "t.csv", tmp_path / "c.nc")
    assert_user_error(invoke("collapse", tmp_path / "c.nc", "--out", tmp_path / "col"), "--n-train N", "'step' column")
    assert not (tmp_path / "col").exists()
    entry = exponents_entry(ds, "radial", fraction=0.5, rope=0.01, tolerance=0.1)
    assert "n_train='N'" in entry["skipped"]
