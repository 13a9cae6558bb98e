"""``initmem import`` refuses a table without any result column with the names a result column may have.

A table whose columns are only keys, settings or a status has nothing to analyze; the refusal says what each
column was read as and lists the accepted metric names (accuracies first), so renaming one column is the fix.
"""

from __future__ import annotations

import pytest

from initmem import atomic, cube
from initmem.errors import UserError
from initmem.importers import columns
from initmem.tests._cli import assert_user_error, invoke

RUNS = "pipeline,sigma_w,seed,{cols}\nsgd,0.5,0,{vals}\nsgd,2,0,{vals}\nsgd,0.5,1,{vals}\nsgd,2,1,{vals}\n"


def _import(tmp_path, text: str, *args: str):
    src = tmp_path / "t.csv"
    src.write_text(text)
    out = tmp_path / "out" / "c.nc"
    return invoke("import", src, "--out", out, "--seeds", "paired", *args), out


def _listed(message: str) -> list[str]:
    """The names the refusal lists."""
    return message.split("name the results column as one of: ", 1)[1].split("; ", 1)[0].split(", ")


@pytest.mark.parametrize(("text", "read_as"), [
    (RUNS.format(cols="lr,batch_size", vals="0.1,32"), "'lr' (a setting), 'batch_size' (a setting)"),
    ("pipeline,sigma_w,seed\nsgd,0.5,0\nsgd,2,0\n", "it holds only the key columns"),
    (RUNS.format(cols="status,wd", vals="ok,0.0005"), "'status' (the runs' status), 'wd' (a setting)"),
])
def test_a_table_without_a_metric_is_refused_with_the_accepted_names(tmp_path, text, read_as):
    proc, out = _import(tmp_path, text)
    assert_user_error(proc, "no accuracy or other metric column", read_as, "--metric-col NAME")
    assert _listed(proc.stderr.strip()) == columns.metric_names(per_epoch=False)
    assert _listed(proc.stderr.strip())[0] == cube.SELECTED_TEST_ACC
    assert not out.exists() and atomic.leftover_temporaries(tmp_path) == []


def test_a_per_epoch_table_lists_the_curves_names(tmp_path):
    text = "pipeline,sigma_w,seed,epoch,status\nsgd,0.5,0,1,ok\nsgd,2,0,1,ok\n"
    proc, out = _import(tmp_path, text)
    assert_user_error(proc, "no accuracy or other metric column", "'status' (the runs' status)")
    listed = _listed(proc.stderr.strip())
    assert listed == columns.metric_names(per_epoch=True)
    assert listed[0] == cube.TEST_ACC and cube.TRAIN_ACC in listed and "lr" not in listed and "status" not in listed
    assert not out.exists()


@pytest.mark.parametrize("per_epoch", [False, True])
def test_every_listed_name_is_read_as_a_result_and_nothing_else_is(per_epoch):
    listed = columns.metric_names(per_epoch)
    assert len(listed) == len(set(listed))
    for name in listed:
        _, kind, _ = columns.resolve([name], per_epoch=per_epoch)
        assert set(kind.values()) <= set(columns.RESULT_KINDS), (name, kind)
    for name in set(columns.accepted(per_epoch)) - set(listed):    # settings, status, n_test: no result
        with pytest.raises(UserError, match="no accuracy or other metric column"):
            columns.resolve([name], per_epoch=per_epoch)


def test_renaming_the_column_to_the_first_listed_name_imports_the_table(tmp_path):
    refused, _ = _import(tmp_path, RUNS.format(cols="lr,score", vals="0.1,0.9"), "--ignore-col", "score")
    first = _listed(refused.stderr.strip())[0]
    proc, out = _import(tmp_path, RUNS.format(cols=f"lr,{first}", vals="0.1,0.9"))
    assert proc.returncode == 0, proc.stderr
    assert float(cube.open_cube(out)[cube.SELECTED_TEST_ACC].mean()) == pytest.approx(0.9)
