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

from initmem import cube
from initmem.tests._cli import assert_user_error, invoke

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# Small grids for the defect tests below: one seed, three epochs, each run's values distinct.
SMALL = [(pipe, s, 0) for pipe in PIPES for s in (0.5, 2.0)]
EPOCHS3 = range(3)


def _mlflow_store(root, runs: list[tuple[dict, str | None, dict[str, list[tuple[int, float]]]]]) -> None:
    """A file store written by MlflowClient itself: runs = (params, status or None for one left RUNNING,
    metric -> (step, value) points in logging order), one log_batch per run (fast)."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(root / "mlruns").as_uri())
    exp = client.create_experiment("sweep")
    for params, status, metrics in runs:
        run = client.create_run(exp).info.run_id
        points = [(key, step, value) for key, pts in metrics.items() for step, value in pts]
        client.log_batch(run, params=[Param(k, str(v)) for k, v in params.items()],
                         metrics=[Metric(key, float(v), 1_700_000_000_000 + i, step)
                                  for i, (key, step, v) in enumerate(points)])
        if status is not None:
            client.set_terminated(run, status)


def _csv_cube(tmp_path, rows: list[dict], *args) -> xr.Dataset:
    pd.DataFrame(rows).to_csv(tmp_path / "want.csv", index=False)
    return _import(tmp_path / "want.csv", tmp_path / "want.nc", *args)


def test_mlflow_metric_logged_once_is_a_per_run_value(tmp_path, monkeypatch):
    """test_acc logged once at the end, next to per-epoch curves: the run's selected_test_acc (dims pipeline,
    sigma_w, seed) with exactly the logged value, as in a per-run table; never a flat test_acc curve."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    runs, rows, logged = [], [], {}
    for i, (pipe, s, seed) in enumerate(SMALL):
        curves = {"val_acc": [(ep, _acc(4 * i + ep)) for ep in EPOCHS3],
                  "kernel_norm": [(ep, 1.0 + 0.25 * ep) for ep in EPOCHS3]}
        logged[pipe, s, seed] = _acc(100 + i)
        runs.append(({"pipeline": pipe, "sigma_w": s, "seed": seed, **PIPES[pipe]}, "FINISHED",
                     {**curves, "test_acc": [(0, logged[pipe, s, seed])]}))  # log_metric's default step
        rows += [{"pipeline": pipe, "sigma_w": s, "seed": seed, "epoch": ep, **PIPES[pipe], "val_acc": _acc(4 * i + ep),
                  "kernel_norm": 1.0 + 0.25 * ep, "selected_test_acc": logged[pipe, s, seed]} for ep in EPOCHS3]
    _mlflow_store(tmp_path, runs)
    got = _import(tmp_path, tmp_path / "m.nc")
    assert cube.TEST_ACC not in got
    assert got[cube.SELECTED_TEST_ACC].dims == cube.CELL_DIMS
    for (pipe, s, seed), value in logged.items():
        assert float(got[cube.SELECTED_TEST_ACC].sel(pipeline=pipe, sigma_w=s, seed=seed)) == np.float32(value)
    _same_cube(_csv_cube(tmp_path, rows), got)


def test_mlflow_run_that_logged_one_step(tmp_path, monkeypatch):
    """A run that crashed after epoch 0 (others logged three epochs) keeps its one point at epoch 0, and a
    run that logged nothing before it died is a cell with its status: the CSV's cube, not an epoch error."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    runs, rows = [], []
    for i, (pipe, s, seed) in enumerate(SMALL):
        params = {"pipeline": pipe, "sigma_w": s, "seed": seed, **PIPES[pipe]}
        epochs, status, name = {0: (EPOCHS3, "FINISHED", "ok"), 1: (range(1), "FAILED", "failed"),
                                2: (range(0), None, "missing")}.get(i, (EPOCHS3, "FINISHED", "ok"))
        runs.append((params, status, {"val_acc": [(ep, _acc(4 * i + ep)) for ep in epochs],
                                      "test_acc": [(ep, _acc(4 * i + ep + 1)) for ep in epochs]}))
        rows += [{**params, "epoch": ep, "val_acc": _acc(4 * i + ep), "test_acc": _acc(4 * i + ep + 1),
                  "status": name} for ep in epochs] or [{**params, "epoch": 0, "status": name}]
    _mlflow_store(tmp_path, runs)
    got = _import(tmp_path, tmp_path / "m.nc")
    crashed = got[cube.VAL_ACC].sel(pipeline="sgd", sigma_w=2.0, seed=0).values
    assert crashed[0] == np.float32(_acc(4)) and np.isnan(crashed[1:]).all()
    assert cube.status_counts(got)["sgd"]["failed"] == 1 and cube.status_counts(got)["adam"]["missing"] == 1
    _same_cube(_csv_cube(tmp_path, rows), got)


@pytest.mark.parametrize(("metrics", "args", "needles"), [
    ({"kernel_norm": [(0, 1.0)]}, (), ("metric 'kernel_norm' is logged once per run", "--ignore-col kernel_norm")),
    ({"test_acc": [(0, 0.5)], "accuracy": [(0, 0.5)]}, (), ("'accuracy' and 'test_acc' both mean 'selected_test_acc'",
                                                             "--ignore-col test_acc")),
    ({"kernel_norm": [(0, 1.0)]}, ("--ignore-col", "kernel_norm"), ()),
    ({"test_acc": [(0, 0.5)], "accuracy": [(0, 0.5)]}, ("--ignore-col", "accuracy"), ()),
])
def test_mlflow_metric_logged_once_without_a_per_run_meaning(tmp_path, monkeypatch, metrics, args, needles):
    """A cube curve logged once has no per-run meaning, and two names of one per-run value are ambiguous:
    refused in one line that says what to drop (and dropping it imports)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    _mlflow_store(tmp_path, [({"pipeline": "sgd", "sigma_w": s, "seed": 0}, "FINISHED",
                               {"val_acc": [(ep, _acc(ep)) for ep in EPOCHS3], **metrics}) for s in (0.5, 2.0)])
    proc = invoke("import", tmp_path, "--out", tmp_path / "m.nc", "--seeds", "paired", *args)
    if needles:
        assert_user_error(proc, *needles)
    else:
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("text", "key"), [
    ("metrics: 5\n", "metrics"), ("ignore: {a: 1}\n", "ignore"), ("metrics: [[a, b]]\n", "metrics"),
    ("ignore: [git_commit, 7]\n", "ignore"), ("pipeline: [a, b]\n", "pipeline"), ("sigma_w: 0.5\n", "sigma_w"),
    ("seed: {column: s}\n", "seed"), ("epoch: ''\n", "epoch"),
])
def test_mapping_file_with_a_wrong_type(tmp_path, text, key):
    """A mapping value of the wrong YAML type is one line naming the key and the file, not a TypeError."""
    (tmp_path / "map.yaml").write_text(text)
    pd.DataFrame(per_epoch_rows()).to_csv(tmp_path / "t.csv", index=False)
    assert_user_error(invoke("import", tmp_path / "t.csv", "--out", tmp_path / "c.nc", "--seeds", "paired",
                             "--mapping", tmp_path / "map.yaml"), f"{tmp_path / 'map.yaml'}: mapping key '{key}' must")


def test_mapping_file_unknown_key_and_lists(tmp_path):
    """Unknown keys are named; a single name and a list of names both work."""
    from initmem.errors import UserError
    from initmem.importers.trackers import Mapping

    path = tmp_path / "map.yaml"
    path.write_text("pipeline: opt\ncolour: red\n")
    with pytest.raises(UserError, match="unknown mapping key"):
        Mapping.load(path)
    path.write_text("pipeline: opt\nmetrics: f1\nignore: [git_commit, host]\n")
    assert Mapping.load(path) == Mapping(pipeline="opt", metrics=("f1",), ignore=("git_commit", "host"))


def test_tensorboard_add_hparams_folder(tmp_path):
    """torch's add_hparams writes a timestamp-named sub-folder into each run folder: it belongs to its run,
    and its metric (test_acc, logged once) is the run's per-run value, as in the CSV; the import notes it."""
    from torch.utils.tensorboard import SummaryWriter

    from initmem.importers.trackers import Mapping, read_source

    rows = []
    for i, (pipe, s, seed) in enumerate(SMALL):
        cfg = PIPES[pipe]
        run_dir = tmp_path / "logs" / f"pipeline={pipe}" / f"sigma_w={s},seed={seed},lr={cfg['lr']}"
        with SummaryWriter(str(run_dir)) as w:
            for ep in EPOCHS3:
                w.add_scalar("val/acc", _acc(4 * i + ep), ep)
            w.add_hparams({"lr": cfg["lr"], "sigma_w": s}, {"test_acc": _acc(100 + i)})
        rows += [{"pipeline": pipe, "sigma_w": s, "seed": seed, "lr": cfg["lr"], "epoch": ep,
                  "val_acc": _acc(4 * i + ep), "selected_test_acc": _acc(100 + i)} for ep in EPOCHS3]
    assert len([d for d in run_dir.iterdir() if d.is_dir()]) == 1  # the layout this test is about
    got = _import(tmp_path / "logs", tmp_path / "tb.nc")
    assert got[cube.SELECTED_TEST_ACC].dims == cube.CELL_DIMS
    _same_cube(_csv_cube(tmp_path, rows), got)
    notes: list[str] = []
    read_source(tmp_path / "logs", "auto", Mapping(), notes)
    assert any(n.startswith("4 add_hparams folder(s) such as 'pipeline=") for n in notes), notes


def test_tensorboard_sub_folder_not_key_value(tmp_path):
    """A sub-folder of scalars that is neither key=value nor an add_hparams summary still has unknown keys."""
    from torch.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path / "logs" / "pipeline=sgd,sigma_w=0.5,seed=0" / "extra")) as w:
        w.add_scalar("val/acc", 0.5, 0)
    assert_user_error(invoke("import", tmp_path / "logs", "--out", tmp_path / "c.nc", "--seeds", "paired"),
                      "run folder 'pipeline=sgd,sigma_w=0.5,seed=0/extra' is not named key=value")
