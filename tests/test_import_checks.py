"""``initmem import`` refuses tables whose units or values would give a confident wrong answer.

Each refusal is exit 2 and one line naming the column and row; nothing is written. The table is
a real-shaped one: accuracies of 2,500 test examples, as the issue's published table had.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from initmem import atomic, cube
from initmem.tests._cli import assert_user_error, invoke

N_TEST = 2500


def runs_table() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [{"pipeline": pipe, "sigma_w": s, "seed": seed, "test_acc": int(rng.integers(1500, 1700)) / N_TEST}
            for pipe in ("sgd", "adam") for s in (0.5, 1.0, 2.0) for seed in range(3)]
    return pd.DataFrame(rows)


def _import(tmp_path, table: pd.DataFrame | str, *args: str):
    src = tmp_path / "t.csv"
    if isinstance(table, str):
        src.write_text(table)
    else:
        table.to_csv(src, index=False)
    out = tmp_path / "out" / "c.nc"
    return invoke("import", src, "--out", out, *args), out


def _refused(tmp_path, proc, out, *needles: str) -> None:
    assert_user_error(proc, *needles)
    assert not out.exists()
    assert not (tmp_path / "out").exists() or atomic.leftover_temporaries(tmp_path / "out") == []


def test_alias_imports_as_selected_test_acc_with_counts(tmp_path):
    table = runs_table()
    proc, out = _import(tmp_path, table, "--seeds", "independent", "--n-test", str(N_TEST))
    assert proc.returncode == 0, proc.stderr
    assert "column 'test_acc' read as selected_test_acc" in proc.stdout
    assert "interpolation was not recorded" in proc.stdout
    ds = cube.open_cube(out)
    assert cube.seed_design(ds) == cube.SEED_INDEPENDENT
    want = (table.set_index(["pipeline", "sigma_w", "seed"])["test_acc"] * N_TEST).round()
    got = ds[cube.SELECTED_TEST_CORRECT].to_series().reindex(want.index)
    assert (got.to_numpy() == want.to_numpy()).all()
    assert ds.attrs[cube.A_N_TEST] == N_TEST and cube.TAU_INTERP not in ds


def test_counts_alone_give_the_accuracy_the_analysis_models(tmp_path):
    # a table of correct answers only (no accuracy column): the cube holds the accuracy they make, which
    # `initmem analyze` picks as its metric (binomial), instead of refusing a count as "not an accuracy"
    from initmem.models.data import prepare_data

    table = runs_table()
    table["selected_test_correct"] = (table.pop("test_acc") * N_TEST).round().astype(int)
    proc, out = _import(tmp_path, table, "--seeds", "paired", "--n-test", str(N_TEST))
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(out)
    want = table.set_index(["pipeline", "sigma_w", "seed"])["selected_test_correct"] / N_TEST
    got = ds[cube.SELECTED_TEST_ACC].to_series().reindex(want.index)
    assert np.array_equal(got.to_numpy(), want.to_numpy(dtype=np.float32))   # the cube stores float32
    d = prepare_data(ds)
    assert (d.metric, d.family) == (cube.SELECTED_TEST_ACC, "binomial")


def test_percent_scale_is_refused_then_accepted_with_the_flag(tmp_path):
    table = runs_table()
    table["test_acc"] = (table["test_acc"] * 100).round(2)  # 63.52, as the published table wrote them
    proc, out = _import(tmp_path, table, "--seeds", "paired", "--n-test", str(N_TEST))
    _refused(tmp_path, proc, out, "column 'test_acc'", "[0, 1]", "--scale percent")
    proc, out = _import(tmp_path, table, "--seeds", "paired", "--n-test", str(N_TEST), "--scale", "percent")
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(out)
    assert float(ds[cube.SELECTED_TEST_ACC].max()) <= 1.0
    assert int(ds[cube.SELECTED_TEST_CORRECT].max()) <= N_TEST


REFUSED = {
    # --n-test that no whole count fits (2,499 for 2,500 questions)
    "wrong_n_test": (lambda t: t, ("--seeds", "paired", "--n-test", "2499"),
                     ["--n-test 2499", "column 'test_acc'", "not a whole number"]),
    "count_above_n_test": (lambda t: t.assign(selected_test_correct=(t.pop("test_acc") * N_TEST).round()
                                              .astype(int).where(t.index != 4, N_TEST + 100)),
                           ("--seeds", "paired", "--n-test", str(N_TEST)),
                           ["selected_test_correct", "row 6", "outside 0 .. n_test"]),
    "count_not_whole": (lambda t: t.assign(selected_test_correct=(t.pop("test_acc") * N_TEST) + 0.5),
                        ("--seeds", "paired", "--n-test", str(N_TEST)), ["not a whole number"]),
    "counts_without_n_test": (lambda t: t.assign(selected_test_correct=(t.pop("test_acc") * N_TEST).round()),
                              ("--seeds", "paired"), ["--n-test"]),
    "unknown_column": (lambda t: t.assign(notes_col=1.0), ("--seeds", "paired"),
                       ["column 'notes_col'", "accepted:", "selected_test_acc", "--metric-col notes_col"]),
    "no_seeds": (lambda t: t, (), ["--seeds paired", "--seeds independent"]),
    "two_names_one_variable": (lambda t: t.assign(accuracy=t["test_acc"]), ("--seeds", "paired"),
                               ["both mean 'selected_test_acc'"]),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_tables(tmp_path, case):
    edit, args, needles = REFUSED[case]
    proc, out = _import(tmp_path, edit(runs_table()), *args)
    _refused(tmp_path, proc, out, *needles)


def test_nan_and_inf_are_refused_or_recorded_as_missing_runs(tmp_path):
    text = "pipeline,sigma_w,seed,acc\na,1,0,0.5\na,2,0,nan\nb,1,0,inf\nb,2,0,0.4\n"
    proc, out = _import(tmp_path, text, "--seeds", "paired")
    _refused(tmp_path, proc, out, "column 'acc'", "'nan'", "row 3", "--nan-as-missing")
    proc, out = _import(tmp_path, text, "--seeds", "paired", "--nan-as-missing")
    assert proc.returncode == 0, proc.stderr
    counts = cube.status_counts(cube.open_cube(out))
    assert counts == {"a": {"ok": 1, "diverged": 0, "failed": 0, "missing": 1},
                      "b": {"ok": 1, "diverged": 0, "failed": 0, "missing": 1}}


def test_declared_metric_and_ignored_column(tmp_path):
    table = runs_table().assign(loss_final=0.3, host="node1")
    proc, out = _import(tmp_path, table, "--seeds", "paired", "--metric-col", "loss_final", "--ignore-col", "host")
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(out)
    assert "loss_final" in ds and "host" not in ds.variables


def test_pipeline_names_that_look_like_numbers_keep_how_they_were_written(tmp_path):
    # learning rates as pipeline names: '0.10' and '0.1' are two pipelines, '1e-3' is not renamed 0.001
    text = ("pipeline,sigma_w,seed,test_acc\n1e-3,1,0,0.9\n1e-3,2,0,0.8\n007,1,0,0.7\n007,2,0,0.6\n"
            "0.10,1,0,0.9\n0.10,2,0,0.8\n0.1,1,0,0.5\n0.1,2,0,0.4\n")
    proc, out = _import(tmp_path, text, "--seeds", "paired")
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(out)
    assert ds[cube.PIPELINE].values.tolist() == ["1e-3", "007", "0.10", "0.1"]
    assert float(ds[cube.SELECTED_TEST_ACC].sel({cube.PIPELINE: "0.1", cube.SIGMA: 1.0}).item()) == 0.5


TEXT_REFUSED = {
    # a written nan in a curve of a run marked ok is a result, not an epoch left out
    "nan_in_an_ok_curve": ("pipeline,sigma_w,seed,epoch,train_loss,test_acc\nsgd,1,0,0,2.3,0.1\nsgd,1,0,1,nan,0.8\n"
                           "sgd,2,0,0,2.3,0.1\nsgd,2,0,1,1.0,0.6\n", ("--n-test", "10"),
                           ["column 'train_loss'", "'nan'", "row 3", "--nan-as-missing"]),
    # fractions and percent in one column: no hint towards --scale percent, and --scale percent refused too
    "mixed_units": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,0.9\nsgd,2,0,80\nsgd,1,1,0.91\nsgd,2,1,81\n", (),
                    ["holds 80 in row 3", "mixes fractions (row 2: 0.9) and percent"]),
    "mixed_units_as_percent": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,0.9\nsgd,2,0,80\nsgd,1,1,0.91\nsgd,2,1,81\n",
                               ("--scale", "percent"), ["holds 0.9 in row 2", "fractions mixed into percent"]),
    "fractions_as_percent": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,0.5\nsgd,2,0,1.0\n", ("--scale", "percent"),
                             ["no accuracy above 1", "looks like fractions"]),
    "round_off_above_one": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,1.0000000149011612\nsgd,2,0,0.8\n", (),
                            ["holds 1.000000015 in row 2"]),
    "infinite_sigma_w": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,0.9\nsgd,inf,0,0.7\n", (),
                         ["row 3: sigma_w = 'inf' is not finite"]),
    "seed_beyond_int64": ("pipeline,sigma_w,seed,test_acc\nsgd,1,18446744073709551615,0.9\nsgd,2,0,0.7\n", (),
                          ["row 2: seed = '18446744073709551615' is too large to keep exactly"]),
    "seed_beyond_float_precision": ("pipeline,sigma_w,seed,test_acc\nsgd,1,9007199254740993,0.9\n"
                                    "sgd,1,9007199254740992.0,0.9\n", (), ["row 2: seed", "too large to keep exactly"]),
    "count_contradicts_accuracy": ("pipeline,sigma_w,seed,selected_test_correct,test_acc\nsgd,1,0,2400,0.5\n"
                                   "sgd,2,0,1250,0.5\n", ("--n-test", "2500"),
                                   ["row 2: 'test_acc' is 1250 correct answers but 'selected_test_correct' says 2400"]),
    "n_test_column_not_a_number": ("pipeline,sigma_w,seed,test_acc,n_test\nsgd,1,0,0.5,2500\nsgd,2,0,0.5,abc\n", (),
                                   ["column 'n_test' must hold one whole number"]),
    "trailing_comma": ("pipeline,sigma_w,seed,test_acc\nsgd,1,0,0.9,\nsgd,2,0,0.9\n", (),
                       ["row 2 has 5 fields but the header has 4 (a trailing comma?)"]),
    "metric_named_like_a_curve": ("pipeline,sigma_w,seed,test_acc,test/loss\nsgd,1,0,0.5,1\nsgd,2,0,0.5,2\n",
                                  ("--metric-col", "test/loss"), ["would be the cube's per-epoch curve 'test_loss'"]),
}


@pytest.mark.parametrize("case", sorted(TEXT_REFUSED))
def test_refused_texts(tmp_path, case):
    text, args, needles = TEXT_REFUSED[case]
    proc, out = _import(tmp_path, text, "--seeds", "paired", *args)
    _refused(tmp_path, proc, out, *needles)


def test_a_diverged_run_may_log_nan_and_slashes_become_underscores(tmp_path):
    text = ("pipeline,sigma_w,seed,epoch,status,train_loss,test_acc,val/acc\n"
            "sgd,1,0,0,ok,2.3,0.1,0.1\nsgd,1,0,1,ok,1.0,0.8,0.7\nsgd,2,0,0,diverged,2.3,0.1,0.1\n"
            "sgd,2,0,1,diverged,nan,0.1,0.1\n")
    proc, out = _import(tmp_path, text, "--seeds", "paired", "--n-test", "10", "--metric-col", "val/acc")
    assert proc.returncode == 0, proc.stderr
    ds = cube.open_cube(out)
    assert "column 'val/acc' read as val_acc" in proc.stdout and cube.VAL_ACC in ds
    assert np.isnan(ds[cube.TRAIN_LOSS].sel({cube.SIGMA: 2.0}).values[0, 0, 1])
    assert cube.status_counts(ds)["sgd"] == {"ok": 1, "diverged": 1, "failed": 0, "missing": 0}


def test_output_that_is_the_source_or_a_folder_is_refused(tmp_path):
    src = tmp_path / "t.csv"
    runs_table().to_csv(src, index=False)
    before = src.read_bytes()
    assert_user_error(invoke("import", src, "--out", src, "--seeds", "paired"), "is not a NetCDF file")
    assert src.read_bytes() == before
    assert_user_error(invoke("import", src, "--out", tmp_path, "--seeds", "paired"), "is a folder")


def _horizon_table(momentum: object = 0.9) -> pd.DataFrame:
    """Two pipelines of different horizons: SGD for 5 epochs, Adam on a cosine over 3."""
    rows = [{"pipeline": pipe, "sigma_w": sw, "seed": 0, "epoch": e, "test_acc": (20 + e) / 40, "lr": 1e-3,
             "batch_size": 32, "optimizer": pipe, "schedule": sched, "epochs": horizon,
             "momentum": momentum if pipe == "sgd" else 0.0}
            for pipe, horizon, sched in (("sgd", 5, "constant"), ("adam", 3, "cosine")) for sw in (1.0, 2.0)
            for e in range(horizon + 1)]
    return pd.DataFrame(rows)


def test_each_pipeline_keeps_its_own_horizon_in_the_clocks(tmp_path):
    from initmem import schedule

    table = _horizon_table()
    proc, out = _import(tmp_path, table, "--seeds", "paired", "--n-train", "1024", "--n-test", "40")
    assert proc.returncode == 0, proc.stderr
    lr = cube.open_cube(out)[cube.LR_NOW].sel({cube.PIPELINE: "adam", cube.SIGMA: 1.0, cube.SEED: 0}).values
    spe = 1024 // 32
    eta = schedule.LrSchedule(lr=1e-3, schedule="cosine", epochs=3, steps_per_epoch=spe).per_step()
    want = np.concatenate([eta[:1], eta[np.arange(1, 4) * spe - 1]])  # the rate of the last step of each epoch
    np.testing.assert_allclose(lr[:4], want, rtol=1e-6)
    assert np.isnan(lr[4:]).all()   # past Adam's horizon: no clock
    alone = table[table.pipeline == "adam"]
    (tmp_path / "alone").mkdir()
    proc, out2 = _import(tmp_path / "alone", alone, "--seeds", "paired", "--n-train", "1024", "--n-test", "40")
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(cube.open_cube(out2)[cube.T_ETA].values[0, 0, 0],
                                  cube.open_cube(out)[cube.T_ETA].sel({cube.PIPELINE: "adam"}).values[0, 0, :4])


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda t: t.assign(momentum=t.momentum.astype(object).where(t.pipeline != "sgd", "-")),
     "run (pipeline sgd, sigma_w 1, seed 0): 'momentum' is '-'; the clocks need a finite number >= 0"),
    (lambda t: t.assign(batch_size=t.batch_size.where(t.sigma_w != 2.0)),
     "'batch_size' is empty; the clocks need a whole number >= 1"),
    (lambda t: t.assign(epochs=t.epochs.where(t.pipeline != "adam", 2)), "logs epoch 3, past its 'epochs' = 2"),
])
def test_clock_settings_that_are_not_numbers_are_refused(tmp_path, edit, needle):
    proc, out = _import(tmp_path, edit(_horizon_table()), "--seeds", "paired", "--n-train", "1024", "--n-test", "40")
    _refused(tmp_path, proc, out, needle)
