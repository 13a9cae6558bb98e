"""What a per-epoch table implies: the selected and final accuracy, and the forgetting clocks.

Both are computed by the code the engine uses (grid/select.py picks the checkpoint,
initmem/schedule.py sums the clocks; both are numpy only), so an imported grid and a collected
one are measured the same way. Nothing here invents what the table does not give: without a
``train_acc`` curve no interpolation epoch is derived, and without steps per epoch (a ``step``
column or ``--n-train``) no clock is computed; the returned notes say so (docs/import.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from initmem import cube, optimizers, schedule
from initmem.errors import UserError, option
from initmem.grid.select import select_epoch

SELECT_RULE = "best_val_acc"  # the engine's rule without the interpolation gate (no tau_interp is claimed)


def selected_from_curves(ds: xr.Dataset) -> tuple[xr.Dataset, list[str]]:
    """Add ``selected_*``, ``final_test_acc`` and ``tau_best`` from the curves when the table lacks them."""
    notes: list[str] = []
    if cube.TEST_ACC not in ds or cube.SELECTED_TEST_ACC in ds:
        return ds, notes
    test = ds[cube.TEST_ACC].transpose(*cube.CURVE_DIMS).values.astype(float)
    has_val = cube.VAL_ACC in ds
    val = ds[cube.VAL_ACC].transpose(*cube.CURVE_DIMS).values.astype(float) if has_val else None
    vloss = (ds[cube.VAL_LOSS].transpose(*cube.CURVE_DIMS).values.astype(float) if cube.VAL_LOSS in ds
             else np.full_like(test, np.nan))
    rule = SELECT_RULE if has_val else "last"
    epochs = ds[cube.EPOCH].values
    shape = test.shape[:3]
    sel, fin, tau, sval = (np.full(shape, np.nan) for _ in range(4))
    for idx in np.ndindex(*shape):
        keep = np.isfinite(test[idx]) & (np.isfinite(val[idx]) if has_val else True)
        if not keep.any():
            continue
        pos = np.flatnonzero(keep)
        v = val[idx][pos] if has_val else test[idx][pos]
        e = pos[select_epoch(rule, np.zeros(pos.size), v, vloss[idx][pos], 1.0)]
        sel[idx], tau[idx] = test[idx][e], epochs[e]
        if has_val:
            sval[idx] = val[idx][e]
        fin[idx] = test[idx][np.flatnonzero(np.isfinite(test[idx]))[-1]]
    ds[cube.SELECTED_TEST_ACC] = (cube.CELL_DIMS, sel)
    ds[cube.FINAL_TEST_ACC] = (cube.CELL_DIMS, fin)
    ds[cube.TAU_BEST] = (cube.CELL_DIMS, tau)
    if has_val and cube.SELECTED_VAL_ACC not in ds:
        ds[cube.SELECTED_VAL_ACC] = (cube.CELL_DIMS, sval)
    ds.attrs[cube.A_SELECT] = rule
    notes.append(f"{cube.SELECTED_TEST_ACC} is {cube.TEST_ACC} at the epoch "
                 + ("of the best val_acc (rule best_val_acc)" if has_val else "last logged (rule last)")
                 + f"; {cube.FINAL_TEST_ACC} at the last logged epoch")
    return ds, notes


def _run(key: tuple) -> str:
    """A run as a user names it: (pipeline sgd, sigma_w 1, seed 0)."""
    names = (v.item() if isinstance(v, np.generic) else v for v in key)
    return "(" + ", ".join(f"{d} {v:g}" if isinstance(v, float) else f"{d} {v}"
                           for d, v in zip(cube.CELL_DIMS, names, strict=True)) + ")"


def _per_run(df: pd.DataFrame, col: str, keys: list[str], source: str, *, number: str | None = None) -> pd.Series:
    """One value per run; refused when a run's rows disagree (a per-epoch batch size, say).

    ``number``: the value must be a number (``"real"``: finite, >= 0; ``"count"``: a whole number >= 1), or
    empty where ``"real"`` allows it (the run then counts as having none)."""
    vals = df.groupby(keys, sort=False)[col].nunique(dropna=True)
    if (vals > 1).any():
        raise UserError(f"{source}: column '{col}' changes within a run; the clocks need one {col} per run")
    first = df.groupby(keys, sort=False)[col].first()
    if number is None:
        return first
    values = pd.to_numeric(first, errors="coerce").astype(float)
    ok = (values >= 0) & np.isfinite(values)
    if number == "count":
        ok &= (values >= 1) & (values == values.round())
    else:
        ok |= first.isna()
    if not ok.all():
        key = first.index[int(np.flatnonzero(~ok.to_numpy())[0])]
        need = "a whole number >= 1" if number == "count" else "a finite number >= 0"
        shown = "empty" if pd.isna(first[key]) else repr(str(first[key]))
        raise UserError(f"{source}: run {_run(key)}: '{col}' is {shown}; the clocks need {need}")
    return values


def _per_step_lr(rows: pd.DataFrame, sched: pd.Series | None, key: tuple, E: int, spe: int,
                 warm: pd.Series | None, source: str) -> np.ndarray:
    """The rate of every optimizer step of one run.

    A per-epoch lr column is a step function over epochs (the row of epoch e gives the rate of
    epoch e's steps; epochs the table skips take the next logged rate). A constant lr with a
    ``schedule`` column of constant or cosine is expanded per step by the engine's
    ``LrSchedule`` (a cosine changes within an epoch, which one value per epoch cannot say).
    """
    lr = rows.set_index(cube.EPOCH)["lr"].astype(float)
    name = str(sched[key]) if sched is not None and pd.notna(sched[key]) else None
    if lr.nunique() == 1 and name not in (None, "constant"):
        if name != "cosine":
            raise UserError(f"{source}: run {_run(key)}: schedule {name!r} with one lr per run; give the lr of every "
                            "epoch instead")
        w = int(warm[key]) if warm is not None and pd.notna(warm[key]) else 0
        return schedule.LrSchedule(lr=float(lr.iloc[0]), schedule=name, epochs=E, steps_per_epoch=spe,
                                   warmup_epochs=w).per_step()
    return np.repeat(lr.reindex(range(1, E + 1)).bfill().ffill().to_numpy(), spe)


def _horizons(df: pd.DataFrame, run_keys: list[str], source: str) -> pd.Series:
    """Each run's last epoch: its ``epochs`` setting, else the last epoch its pipeline logged (a run that
    stopped early still follows the schedule planned for its pipeline; a cosine ends at the horizon)."""
    logged = df.groupby(cube.PIPELINE)[cube.EPOCH].transform("max")
    last = df.assign(_h=logged).groupby(run_keys, sort=False)["_h"].first().astype(int)
    if "epochs" not in df.columns:
        return last
    planned = _per_run(df, "epochs", run_keys, source, number="real")
    given = planned.notna()
    if ((planned[given] != planned[given].round()) | (planned[given] < 1)).any():
        raise UserError(f"{source}: column 'epochs' must hold whole numbers >= 1 (the pipeline's horizon)")
    ran = df.groupby(run_keys, sort=False)[cube.EPOCH].max()
    over = given & (ran > planned)
    if over.any():
        key = over.index[int(np.flatnonzero(over.to_numpy())[0])]
        raise UserError(f"{source}: run {_run(key)} logs epoch {int(ran[key])}, past its 'epochs' = "
                        f"{int(planned[key])}")
    return planned.where(given, last).astype(int)


def clocks(df: pd.DataFrame, ds: xr.Dataset, *, n_train: int | None,
           source: str = "table") -> tuple[xr.Dataset, list[str]]:
    """Add the schedule clocks (``cube.CLOCKS`` and their momentum forms, ``step``, ``lr_now``).

    ``df`` is the long per-epoch table (keys, ``epoch``, lr and batch_size per row, per run or per
    epoch; optimizer, momentum and weight_decay optional). The lr in the row of epoch e >= 1 is the
    rate of every step of epoch e (epochs the table skips take the next logged rate). Steps per
    epoch come from the ``step`` column (steps taken by the end of each epoch) or from
    ``n_train // batch_size`` (the engine drops the last incomplete batch).
    """
    notes: list[str] = []
    need = [c for c in ("lr", "batch_size") if c not in df.columns]
    if need:
        return ds, ([f"no clocks: the table has no {' or '.join(need)} column"] if "lr" in df.columns
                    or "batch_size" in df.columns else [])
    has_step = cube.STEP in df.columns
    if not has_step and n_train is None:
        return ds, [f"no clocks: give {option('n_train')} (training examples) or a step column, so steps per epoch "
                    "are known"]
    run_keys = list(cube.CELL_DIMS)
    epochs = ds[cube.EPOCH].values.astype(int)
    horizon = _horizons(df, run_keys, source)
    out = {name: np.full((*[ds.sizes[d] for d in cube.CELL_DIMS], epochs.size), np.nan)
           for name in (cube.STEP, cube.LR_NOW, *cube.SCHEDULE_CLOCKS)}  # the clocks table's schedule clocks
    batch = _per_run(df, "batch_size", run_keys, source, number="count")
    opt = _per_run(df, "optimizer", run_keys, source) if "optimizer" in df.columns else None
    mom = _per_run(df, "momentum", run_keys, source, number="real") if "momentum" in df.columns else None
    wd = _per_run(df, "weight_decay", run_keys, source, number="real") if "weight_decay" in df.columns else None
    sched = _per_run(df, "schedule", run_keys, source) if "schedule" in df.columns else None
    warm = _per_run(df, "warmup_epochs", run_keys, source, number="real") if "warmup_epochs" in df.columns else None
    if opt is None:
        notes.append("no optimizer column: the clocks assume SGD (T_adapt = 0)")
    index = {d: {v: i for i, v in enumerate(ds[d].values.tolist())} for d in cube.CELL_DIMS}
    for key, rows in df.groupby(run_keys, sort=False):
        rows = rows.sort_values(cube.EPOCH)
        b = int(batch[key])
        if has_step:
            st = rows.set_index(cube.EPOCH)[cube.STEP]
            per = (st / st.index.to_series().replace(0, np.nan)).dropna()
            if per.empty or not np.allclose(per, per.iloc[0]) or per.iloc[0] != round(per.iloc[0]):
                raise UserError(f"{source}: run {_run(key)}: the step column is not a fixed number of steps per epoch")
            spe = int(round(per.iloc[0]))
        else:
            spe = schedule.steps_per_epoch(n_train, b)
        E = horizon[key]
        eta = _per_step_lr(rows, sched, key, E, spe, warm, source)
        optimizer = str(opt[key]) if opt is not None else "sgd"
        lam = float(wd[key]) if wd is not None and np.isfinite(wd[key]) else 0.0
        kind = optimizers.get(optimizer)  # the optimizer table: coupled L2 or decoupled decay
        res = schedule.epoch_clocks(
            eta, E, spe, batch_size=b, optimizer=optimizer,
            momentum=float(mom[key]) if mom is not None and np.isfinite(mom[key]) else 0.0,
            coupled_l2=kind.coupled_l2(lam), decoupled_wd=kind.decoupled_wd(lam))
        i = tuple(index[d][k] for d, k in zip(cube.CELL_DIMS, key, strict=True))
        within = epochs <= E  # NaN past the pipeline's horizon (docs/cube.md)
        for name, values in res.items():
            out[name][i][within] = values[epochs[within]]
    for name, arr in out.items():
        if name not in ds:
            ds[name] = (cube.CURVE_DIMS, arr)
    notes.append("clocks computed from the lr and batch_size columns with the engine's schedule code")
    return ds, notes
