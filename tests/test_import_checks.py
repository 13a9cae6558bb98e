"""``initmem import`` refuses tables whose units or values would give a confident wrong answer.

Each refusal is exit 2 and one line naming the column and row; nothing is written. The table is
a real-shaped one: accuracies of 2,500 test examples, as the issue's published table had.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _cli import assert_user_error, invoke

from initmem import atomic, cube

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
