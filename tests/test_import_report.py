"""The cross-check against a borderline verdict and the optional tracker readers, without sampling."""

from __future__ import annotations

import sys

from initmem.simulate import SimPipeline, simulate_cube
from initmem.stats.frequentist import crosscheck
from initmem.tests._cli import assert_user_error, invoke


def test_a_borderline_undecided_verdict_never_agrees_in_the_crosscheck():
    ds = simulate_cube([SimPipeline("p", sigma_sd=0.5, n_seed=4, n_sigma=4)], n_test=400, seed=2)
    out = crosscheck(ds, "selected_test_acc", 0.01, {"p": {"verdict": "undecided", "borderline": True}})["p"]
    assert out["agreement"] is False  # never shown as agreement
    assert any("undecided (borderline)" in d and out["frequentist"]["verdict"] in d for d in out["disagreements"])
    assert not any("nothing to compare with" in n for n in out["notes"])


def test_missing_reader_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    store = tmp_path / "mlruns" / "0"
    store.mkdir(parents=True)
    (store / "meta.yaml").write_text("name: Default\n")  # only what detection looks at: mlflow is never reached
    monkeypatch.setitem(sys.modules, "mlflow", None)  # as if the trackers extra were not installed
    assert_user_error(invoke("import", tmp_path, "--out", tmp_path / "c.nc", "--seeds", "paired"),
                      "MLflow", "initmem[trackers]")
