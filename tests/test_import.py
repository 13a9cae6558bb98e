"""``initmem import``: round trip, missing cells, and every refused table through the CLI entry point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from initmem import atomic, cube
from initmem.importers.table import cube_to_frame, frame_to_cube
from initmem.tests._cli import assert_user_error, invoke


def long_table(with_epoch: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for pipe, opt, lr in (("sgd", "sgd", 0.01), ("adam", "adam", 0.001)):
        for sigma in (0.5, 1.0, 2.0):
            for seed in (0, 1, 2):
                acc = float(rng.integers(150, 200)) / 200
                epochs = range(3) if with_epoch else [None]
                for ep in epochs:
                    row = {"pipeline": pipe, "sigma_w": sigma, "seed": seed, "selected_test_acc": acc,
                           "optimizer": opt, "lr": lr}
                    if with_epoch:
                        row |= {"epoch": ep, "val_acc": round(float(rng.random()), 4),
                                "kernel_norm": round(float(rng.random() + 1), 4)}
                    rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("with_epoch", [False, True])
def test_table_to_cube_and_back(tmp_path, with_epoch):
    table = long_table(with_epoch)
    ds = frame_to_cube(table, n_test=200, seeds="paired")
    assert cube.errors(ds) == []
    assert list(ds["optimizer"].values) == ["sgd", "adam"]
    assert ds[cube.SELECTED_TEST_CORRECT].dtype == np.int32
    cube.write_cube(ds, tmp_path / "c.nc")
    back = cube_to_frame(cube.open_cube(tmp_path / "c.nc"))
    keys = ["pipeline", "sigma_w", "seed"] + (["epoch"] if with_epoch else [])
    cols = [c for c in table.columns]
    got = back[cols].sort_values(keys).reset_index(drop=True)
    want = table[cols].sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False, atol=1e-6)


def test_missing_cells_become_status_3():
    table = long_table().iloc[1:]  # drop (sgd, 0.5, seed 0)
    ds = frame_to_cube(table, seeds="paired")
    assert int(ds[cube.STATUS].sel(pipeline="sgd", sigma_w=0.5, seed=0)) == cube.MISSING
    assert np.isnan(float(ds[cube.SELECTED_TEST_ACC].sel(pipeline="sgd", sigma_w=0.5, seed=0)))
    assert int((ds[cube.STATUS] == cube.OK).sum()) == len(table)
    assert cube.unpaired_seeds(ds) == {"sgd": [0]}


def test_cli_import_writes_a_valid_cube(tmp_path):
    long_table().to_csv(tmp_path / "t.csv", index=False)
    proc = invoke("import", tmp_path / "t.csv", "--out", tmp_path / "c.nc", "--n-test", "200", "--seeds", "paired")
    assert proc.returncode == 0, proc.stderr
    proc = invoke("inspect", tmp_path / "c.nc", "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    info = json.loads(proc.stdout)
    assert info["valid"] and info["seeds_paired"]
    assert info["dims"] == {"pipeline": 2, "sigma_w": 3, "seed": 3}
    assert info["pipelines"]["adam"] == {"lr": 0.001, "optimizer": "adam"}


def _write(tmp_path, text: str):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    return p


BAD_TABLES = {
    "duplicate": ("pipeline,sigma_w,seed,acc\na,1,0,0.5\na,1,0,0.6\n", ["duplicate", "rows 2, 3"]),
    "non_numeric_sigma": ("pipeline,sigma_w,seed,acc\na,one,0,0.5\n", ["row 2", "sigma_w", "not a number"]),
    "non_positive_sigma": ("pipeline,sigma_w,seed,acc\na,1,0,0.5\na,-2,0,0.5\n", ["row 3", "sigma_w", "not positive"]),
    "missing_key": ("pipeline,sigma,seed,acc\na,1,0,0.5\n", ["missing key column 'sigma_w'"]),
    "empty": ("pipeline,sigma_w,seed,acc\n", ["empty"]),
    "empty_file": ("", ["empty"]),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_bad_tables_exit_2_with_one_line(tmp_path, case):
    text, needles = BAD_TABLES[case]
    out = tmp_path / "out" / "c.nc"
    proc = invoke("import", _write(tmp_path, text), "--out", out, "--seeds", "paired")
    assert_user_error(proc, *needles)
    assert not out.exists()
    assert not (tmp_path / "out").exists() or atomic.leftover_temporaries(tmp_path / "out") == []
