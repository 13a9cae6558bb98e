"""``initmem import``: a long results table made elsewhere becomes a cube.

Researchers often already have their numbers in a CSV (one row per run, or per run and epoch).
The import keeps the meaning of columns named like cube variables, turns per-pipeline settings
into pipeline coordinates, marks cells absent from the table as missing (status 3), and refuses
ambiguous tables with one line that names the offending row or column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from initmem import __version__, cube
from initmem.errors import UserError

KEYS = (cube.PIPELINE, cube.SIGMA, cube.SEED)


def read_table(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such table: {path}")
    try:
        df = pd.read_csv(path, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path}: the table is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV table ({_first_line(exc)})") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def table_to_cube(path: str | Path, *, n_test: int | None = None) -> xr.Dataset:
    """Read ``path`` and build a cube from it (see :func:`frame_to_cube`)."""
    return frame_to_cube(read_table(path), n_test=n_test, source=str(path))


def frame_to_cube(df: pd.DataFrame, *, n_test: int | None = None, source: str = "table") -> xr.Dataset:
    """Build a cube from a long table.

    Row numbers in messages count like a spreadsheet: the header is row 1, data start at row 2.
    """
    if df.empty:
        raise UserError(f"{source}: the table is empty (no data rows)")
    for key in KEYS:
        if key not in df.columns:
            raise UserError(f"{source}: missing key column '{key}' (need pipeline, sigma_w, seed)")
    has_epoch = cube.EPOCH in df.columns
    keys = [*KEYS, cube.EPOCH] if has_epoch else list(KEYS)
    df = df.copy()
    df[cube.PIPELINE] = _pipeline_column(df[cube.PIPELINE], source)
    df[cube.SIGMA] = _positive_column(df[cube.SIGMA], cube.SIGMA, source)
    df[cube.SEED] = _integer_column(df[cube.SEED], cube.SEED, source)
    if has_epoch:
        df[cube.EPOCH] = _integer_column(df[cube.EPOCH], cube.EPOCH, source, minimum=0)

    dup = df.duplicated(keys, keep=False)
    if dup.any():
        rows = [int(i) + 2 for i in np.flatnonzero(dup.to_numpy())]
        raise UserError(f"{source}: duplicate ({', '.join(keys)}) in rows {_rows(rows)}")

    if cube.A_N_TEST in df.columns:
        values = pd.to_numeric(df[cube.A_N_TEST], errors="coerce").dropna().unique()
        if len(values) != 1:
            raise UserError(f"{source}: column 'n_test' must hold one value for the whole table")
        n_test = n_test or int(values[0])
        df = df.drop(columns=cube.A_N_TEST)

    value_cols = [c for c in df.columns if c not in keys]
    coord_cols, metric_cols = [], []
    for col in value_cols:
        numeric = pd.to_numeric(df[col], errors="coerce")
        is_numeric = numeric.notna().sum() == df[col].notna().sum()
        if col in cube.EXPECTED_DIMS:
            if not is_numeric:
                row = int(np.flatnonzero(numeric.isna() & df[col].notna())[0]) + 2
                raise UserError(f"{source}: column '{col}' must be numeric (row {row} holds {df[col].iloc[row - 2]!r})")
            df[col] = numeric
            metric_cols.append(col)
        elif col in cube.PIPELINE_COORDS or not is_numeric:
            if (df.groupby(cube.PIPELINE)[col].nunique(dropna=False) > 1).any():
                if not is_numeric:
                    raise UserError(f"{source}: column '{col}' is not numeric and varies within a pipeline; "
                                    "per-pipeline settings must be constant, metrics numeric")
                df[col] = numeric
                metric_cols.append(col)
            else:
                coord_cols.append(col)
        else:
            df[col] = numeric
            metric_cols.append(col)
    if not metric_cols:
        raise UserError(f"{source}: no numeric metric column besides {', '.join(keys)}")

    pipelines = list(dict.fromkeys(df[cube.PIPELINE]))
    sigmas = sorted(df[cube.SIGMA].unique().tolist())
    seeds = sorted(df[cube.SEED].unique().tolist())
    epochs = sorted(df[cube.EPOCH].unique().tolist()) if has_epoch else None
    ds = cube.empty_cube(pipelines, sigmas, seeds, attrs={
        cube.A_SOURCE: f"initmem import {source}", cube.A_INITMEM_VERSION: __version__,
        cube.A_GRID: "", cube.A_CREATED: pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
    })
    if has_epoch:
        ds = ds.assign_coords({cube.EPOCH: np.asarray(epochs, dtype="int64")})

    cell_cols = [c for c in metric_cols if c in cube.RUN_VARS or not has_epoch]
    curve_cols = [c for c in metric_cols if c not in cell_cols]
    indexed = df.set_index(keys)
    for col in curve_cols:
        da = xr.DataArray.from_series(indexed[col]).reindex_like(ds)
        ds[col] = da.transpose(*cube.CURVE_DIMS)
    cells = df.groupby(list(KEYS), sort=False)
    for col in cell_cols:
        per_cell = cells[col].agg(_one_value, col=col, source=source)
        ds[col] = xr.DataArray.from_series(per_cell).reindex_like(ds).transpose(*cube.CELL_DIMS)

    present = xr.DataArray.from_series(cells.size()).reindex_like(ds).notnull().transpose(*cube.CELL_DIMS)
    if cube.STATUS in ds.data_vars:
        ds[cube.STATUS] = ds[cube.STATUS].where(present, cube.MISSING).fillna(cube.MISSING)
    else:
        ds[cube.STATUS] = xr.where(present, cube.OK, cube.MISSING).astype("int8")

    for col in coord_cols:
        first = df.groupby(cube.PIPELINE, sort=False)[col].first().reindex(pipelines)
        values = first.to_numpy()
        if first.dtype.kind not in "iuf":
            values = np.array(["" if pd.isna(v) else str(v) for v in values], dtype=object)
        ds = ds.assign_coords({col: (cube.PIPELINE, values)})

    if n_test is not None:
        ds.attrs[cube.A_N_TEST] = int(n_test)
        if cube.SELECTED_TEST_CORRECT not in ds and cube.SELECTED_TEST_ACC in ds:
            counts = ds[cube.SELECTED_TEST_ACC] * n_test
            if bool((np.abs(counts - counts.round()) < 1e-3).where(counts.notnull(), True).all()):
                ds[cube.SELECTED_TEST_CORRECT] = counts.round()
    return cube.canonicalize(ds)


def cube_to_frame(ds: xr.Dataset) -> pd.DataFrame:
    """The long table of a cube's observed cells (the inverse of :func:`frame_to_cube`)."""
    has_epoch = cube.EPOCH in ds.dims
    obs = cube.observed(ds) if cube.STATUS in ds else None
    cell_vars = [v for v in ds.data_vars if ds[v].dims == cube.CELL_DIMS and v != cube.STATUS]
    frame = ds[cell_vars].reset_coords(drop=True).to_dataframe()
    if obs is not None:
        frame = frame[obs.to_series().reindex(frame.index).to_numpy()]
    if has_epoch:
        curve_vars = [v for v in ds.data_vars if ds[v].dims == cube.CURVE_DIMS]
        curves = ds[curve_vars].reset_coords(drop=True).to_dataframe().dropna(how="all")
        frame = curves.join(frame, how="inner") if cell_vars else curves
    coords = [c for c in ds.coords if ds[c].dims == (cube.PIPELINE,)]
    out = frame.reset_index()
    for c in coords:
        out[c] = out[cube.PIPELINE].map(dict(zip(ds[cube.PIPELINE].values, ds[c].values, strict=True)))
    return out.drop(columns=[c for c in out.columns if c not in (*KEYS, cube.EPOCH, *cell_vars,
                                                                 *(curve_vars if has_epoch else ()), *coords)])


def _one_value(s: pd.Series, *, col: str, source: str) -> float:
    vals = s.dropna().unique()
    if len(vals) > 1:
        raise UserError(f"{source}: column '{col}' is a per-run value but differs across epochs of one run")
    return float(vals[0]) if len(vals) else np.nan


def _pipeline_column(col: pd.Series, source: str) -> pd.Series:
    bad = col.isna() | (col.astype(str).str.strip() == "")
    if bad.any():
        raise UserError(f"{source}: empty pipeline name in row {int(np.flatnonzero(bad.to_numpy())[0]) + 2}")
    return col.astype(str).str.strip()


def _positive_column(col: pd.Series, name: str, source: str) -> pd.Series:
    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna() | ~(values > 0)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        what = "not a number" if pd.isna(values.iloc[i]) else "not positive"
        raise UserError(f"{source}: row {i + 2}: {name} = {col.iloc[i]!r} is {what} (must be a positive number)")
    return values.astype(float)


def _integer_column(col: pd.Series, name: str, source: str, minimum: int | None = None) -> pd.Series:
    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna() | (values != values.round())
    if minimum is not None:
        bad |= values < minimum
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        need = "an integer" + (f" >= {minimum}" if minimum is not None else "")
        raise UserError(f"{source}: row {i + 2}: {name} = {col.iloc[i]!r} is not {need}")
    return values.astype("int64")


def _rows(rows: list[int]) -> str:
    return ", ".join(map(str, rows[:6])) + (" ..." if len(rows) > 6 else "")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
