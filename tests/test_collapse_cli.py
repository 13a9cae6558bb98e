"""``initmem collapse`` and what feeds it: eval.every, clock budgets, the two radial sides and the
reporting rules of the collapse test (docs/clocks-and-collapse.md, docs/reading-the-clocks.md)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from initmem import cube
from initmem.analysis.collapse import collapse_view
from initmem.collect.execution.budgets import resolve_budgets, training_grid
from initmem.errors import UserError
from initmem.grid import parse_grid
from initmem.schedule import pipeline_clocks
from initmem.simulate import preset_pipelines, simulate_cube
from initmem.stats.collapse_scope import min_p_floor, same_axis
from initmem.stats.memsource import memory_view
from initmem.tests._cli import assert_user_error, invoke

BASE = {"name": "b", "dataset": {"name": "digits"}, "model": {"arch": "resnet_tiny", "width": 4},
        "sigma_w": [0.5, 1.0, 2.0], "seeds": [0], "engine": {"cpu_threads": 1}}


def test_budget_resolves_to_the_first_epoch_that_reaches_it():
    g = resolve_budgets(parse_grid(BASE | {"budget": {cube.T_L2: 0.3}, "pipelines": {
        "l2": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "weight_decay": 0.01},
        "cos": {"optimizer": "sgd", "lr": 0.1, "batch_size": 64, "weight_decay": 0.02, "schedule": "cosine"},
        "plain": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 3}}}))
    assert g.pipelines["plain"].epochs == 3
    from initmem.collect.train.data import load_split

    n = int(load_split(g.dataset).y_train.numel())
    for name in ("l2", "cos"):
        e = g.pipelines[name].epochs
        assert pipeline_clocks(g.pipelines[name], n, epochs=e)[cube.T_L2][-1] >= 0.3
        assert pipeline_clocks(g.pipelines[name], n, epochs=e - 1)[cube.T_L2][-1] < 0.3
    # Round trip: the canonical YAML (epochs filled in) parses to the same grid.
    assert parse_grid(g.to_dict()) == g


def test_budget_errors_are_one_line():
    with pytest.raises(UserError, match="not reached"):
        resolve_budgets(parse_grid(BASE | {"budget": {cube.T_L2: 1.0}, "pipelines": {
            "p": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32}}}))
    with pytest.raises(UserError, match="give epochs or a clock budget"):
        parse_grid(BASE | {"pipelines": {"p": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32}}})
    with pytest.raises(UserError, match="budget: clock must be one of"):
        parse_grid(BASE | {"budget": {"T_nope": 1.0}, "pipelines": {"p": {"optimizer": "sgd", "lr": 0.1,
                                                                           "batch_size": 32, "epochs": 2}}})
    g = parse_grid(BASE | {"pipelines": {"p": {"optimizer": "sgd", "lr": 0.1, "batch_size": 32, "epochs": 2}}})
    assert resolve_budgets(g) is g


def test_eval_every_records_norms_every_epoch_and_metrics_every_nth():
    from initmem.collect.train.engine import train_pack

    g = parse_grid(BASE | {"eval": {"every": 2, "select": "best_val_acc"},
                           "pipelines": {"p": {"optimizer": "sgd", "lr": 0.05, "batch_size": 256, "epochs": 3}}})
    ds = train_pack(g, "p", [(0.5, 0), (2.0, 0)])
    val = ds[cube.VAL_ACC].values[0, :, 0]  # (sigma, epoch)
    assert np.isfinite(val[:, [0, 2, 3]]).all() and np.isnan(val[:, 1]).all()  # 0, every 2nd, the last
    assert np.isfinite(ds[cube.KERNEL_NORM].values).all()
    assert np.isfinite(ds[cube.T_ETA].values).all()
    assert set(ds[cube.TAU_BEST].values.ravel().tolist()) <= {0.0, 2.0, 3.0}  # only evaluated epochs selected


def test_a_pipelines_own_eval_every_overrides_the_grids_and_keeps_old_grid_hashes():
    from initmem.collect.train.engine import train_pack
    from initmem.grid import grid_hash

    pipe = {"optimizer": "sgd", "lr": 0.05, "batch_size": 256, "epochs": 4}
    plain = parse_grid(BASE | {"eval": {"every": 4}, "pipelines": {"p": pipe}})
    own = parse_grid(BASE | {"eval": {"every": 4}, "pipelines": {"p": pipe | {"eval_every": 2}}})
    assert "eval_every" not in plain.to_dict()["pipelines"]["p"]     # absent: the hash of older grids
    assert grid_hash(parse_grid(plain.to_dict())) == grid_hash(plain) != grid_hash(own)
    val = train_pack(own, "p", [(1.0, 0)])[cube.VAL_ACC].values[0, 0, 0]   # (epoch,): every 2nd, not every 4th
    assert np.isfinite(val[[0, 2, 4]]).all() and np.isnan(val[[1, 3]]).all()


def test_min_p_floor_and_twin_axes():
    assert min_p_floor(6, 64, True) == 2.0 ** -5
    assert min_p_floor(19, 1000, False) == 0.002  # the Monte Carlo floor, not 2^-18
    assert min_p_floor(4, 1000, False) == 0.125
    a = np.log(np.arange(1.0, 7.0))[None].repeat(3, 0)
    assert same_axis(a.copy(), {"x": a}) == "x"
    assert same_axis(a + 1e-3, {"x": a}) is None
    b = a.copy()
    b[0, 0] = np.nan
    assert same_axis(b, {"x": a}) is None


def test_radial_sides_keep_their_levels():
    ds = simulate_cube(preset_pipelines("quick_like")[:3], curves=True, truth_axis=cube.T_SGD, seed=0)
    up, base = memory_view(ds, "radial_above")
    lo, _ = memory_view(ds, "radial_below")
    assert base == "radial" and bool((up[cube.SIGMA].values >= 1 - 1e-9).all())
    assert bool((lo[cube.SIGMA].values <= 1 + 1e-9).all())
    assert np.isclose(up[cube.SIGMA].values, 1).any() and np.isclose(lo[cube.SIGMA].values, 1).any()
    with pytest.raises(UserError, match="sigma_w levels on that side"):
        memory_view(ds.isel({cube.SIGMA: [0, 1]}), "radial_above")


def test_collapse_view_on_a_simulated_cube_names_the_sides_and_merges_twins():
    ds = simulate_cube(preset_pipelines("collapse_controls"), curves=True, truth_axis=cube.T_L2, seed=3)
    r = collapse_view(ds, n_boot=0, exponents=False)
    assert r["schema"] == "initmem.collapse/3" and r["verdict"] == "clock_better" and r["best"] == cube.T_L2
    assert r["best_pipelines"] and len(r["best_pipelines"]) == r["vs_epoch"][cube.T_L2]["n_pipelines"]
    assert set(r["sides"]) == {"radial_above", "radial_below"}
    for side in r["sides"].values():
        assert side["verdict"] in ("clock_better", "epoch_better", "no_difference", "not_identifiable")
    assert r["min_p_possible"] == 2.0 ** (1 - r["n_pipelines"])  # exact enumeration here
    for e in r["forgetting_times"].values():
        assert "spread_uncensored" in e and "n_censored" in e


def test_cli_collapse_on_a_simulated_cube(tmp_path):
    path = tmp_path / "c.nc"
    cube.write_cube(simulate_cube(preset_pipelines("quick_like"), curves=True, truth_axis=cube.T_SGD, seed=1),
                    path)
    proc = invoke("collapse", path, "--out", tmp_path / "out", "--no-exponents", "--n-boot", "0",
                  "--fraction", "0.6", "--axes", f"{cube.T_SGD},{cube.T_L2}")
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "out" / "collapse.json").read_text())
    assert r["schema"] == "initmem.collapse/3" and (tmp_path / "out" / "curves.nc").is_file()
    assert set(r["vs_epoch"]) <= {cube.STEP, cube.T_SGD, cube.T_L2}
    assert r["forgetting_times"][cube.T_SGD]["fraction"] == 0.6
    assert_user_error(invoke("collapse", path, "--out", tmp_path / "o2", "--axes", "T_bogus"), "unknown axis")
    assert_user_error(invoke("collapse", path, "--out", tmp_path / "o3", "--fraction", "1.5"), "--fraction")


def test_cli_collapse_on_an_imported_per_epoch_table(tmp_path):
    rows = []
    for p, (lr, rate) in {"a": (0.1, 0.1), "b": (0.2, 0.2), "c": (0.4, 0.4), "d": (0.05, 0.05)}.items():
        for s in (0.5, 1.0, 2.0):
            for seed in (0, 1):
                for ep in range(8):
                    kn = s ** np.exp(-rate * ep) * (1 + 0.01 * seed)
                    rows.append({"pipeline": p, "sigma_w": s, "seed": seed, "epoch": ep, "lr": lr,
                                 "selected_test_acc": 0.9, "kernel_norm": kn, "val_acc": 0.5 + 0.01 * ep})
    table = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    assert invoke("import", table, "--out", tmp_path / "t.nc", "--seeds", "paired").returncode == 0
    proc = invoke("collapse", tmp_path / "t.nc", "--out", tmp_path / "out", "--no-exponents", "--n-boot", "0")
    assert proc.returncode == 0, proc.stderr
    r = json.loads((tmp_path / "out" / "collapse.json").read_text())
    assert r["n_pipelines"] == 4 and "epoch" in r["forgetting_times"]


def test_the_clocks_preset_resolves_its_budgets():
    g = training_grid("clocks")
    assert len(g.pipelines) == 15 and g.sigma_w == [0.25, 1.0, 4.0] and g.eval.every == 4
    l2 = {n: p for n, p in g.pipelines.items() if p.weight_decay > 0}
    assert len(l2) == 13 and all(p.epochs is not None and p.epochs >= 1 for p in l2.values())
    # On one iso-(eta lambda) diagonal the same T_l2 budget takes the same number of steps.
    for diag in (2e-3, 4e-3, 8e-3):
        steps = {n: p.epochs * (755 // p.batch_size) for n, p in l2.items() if np.isclose(p.lr * p.weight_decay, diag)}
        assert len(steps) >= 3 and max(steps.values()) / min(steps.values()) < 1.05


def test_exponents_entry_reads_the_design_and_says_why_it_cannot_fit():
    from initmem.analysis.collapse import exponents_entry, pipeline_design

    ds = simulate_cube(preset_pipelines("quick_like")[:4], curves=True, truth_axis=cube.T_SGD, seed=0)
    d = pipeline_design(ds)
    assert np.isfinite(d["lr"]).all() and (d["l2"][d["family"] == "adam"] >= 0).all()
    e = exponents_entry(ds, "radial", fraction=0.5, rope=0.01, tolerance=0.25)
    assert "skipped" in e and "needs" in e["skipped"]  # 4 pipelines, no compile
    assert set(e["per_seed_steps"]) == {str(p) for p in ds[cube.PIPELINE].values}
