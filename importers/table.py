"""``initmem import``: a long results table made elsewhere becomes a cube.

Researchers often already have their numbers in a CSV (one row per run, or per run and epoch) or
in a tracker (importers/trackers.py turns W&B, MLflow and TensorBoard exports into the same long
table). The import keeps the meaning of columns named like cube variables or their aliases
(importers/columns.py), turns per-pipeline settings into pipeline coordinates, marks cells absent
from the table as missing (status 3), derives what per-epoch curves imply with the engine's code
(importers/derive.py), and refuses ambiguous or wrongly scaled tables with one line that names
the offending row or column (docs/import.md). How seeds relate across sigma_w is declared, never
assumed (``seeds``: paired or independent).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from initmem import cube
from initmem.errors import UserError, option
from initmem.importers import columns as COL
from initmem.importers import derive
from initmem.version import __version__

KEYS = (cube.PIPELINE, cube.SIGMA, cube.SEED)
def seeds_help() -> str:
    """What to declare when a table does not say how its seeds relate (option ``seeds``)."""
    return (f"declare how seeds relate across sigma_w with {option('seeds', 'paired')} (one seed number gives the "
            f"same initial direction, data order and augmentation at every sigma_w) or "
            f"{option('seeds', 'independent')} (each run drew its own randomness)")


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV as text columns, exactly as written: only an empty field is missing, 'nan' and 'inf' stay values to
    check, and a pipeline named '1e-3' or '007' keeps its name (each column is made a number where it means one)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such table: {path}")
    if path.is_dir():
        raise UserError(f"{path} is a folder, not a CSV table (for MLflow or TensorBoard folders give "
                        f"{option('format')})")
    try:
        df = pd.read_csv(path, skipinitialspace=True, keep_default_na=False, na_values=[""], dtype=str,
                         index_col=False)
    except pd.errors.EmptyDataError:
        raise UserError(f"{path}: the table is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a readable CSV table ({_first_line(exc)})") from None
    df.columns = [str(c).strip() for c in df.columns]
    _check_field_counts(path, len(df.columns))
    return df


def _check_field_counts(path: Path, n_header: int) -> None:
    """Refuse a row with more fields than the header: pandas would otherwise shift every column of the
    table by one (the first column becomes an index) or drop the extra field silently."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as fh:
        for i, row in enumerate(csv.reader(fh, skipinitialspace=True)):
            if len(row) > n_header:
                extra = " (a trailing comma?)" if all(not f.strip() for f in row[n_header:]) else ""
                raise UserError(f"{path}: row {i + 1} has {len(row)} fields but the header has {n_header}{extra}")


def table_to_cube(path: str | Path, **options) -> xr.Dataset:
    """Read ``path`` and build a cube from it (see :func:`frame_to_cube` for the options)."""
    return frame_to_cube(read_table(path), source=str(path), **options)


def _check_options(df: pd.DataFrame, *, seeds: str | None, scale: str, source: str) -> None:
    """The options and the table's key columns, before anything is read."""
    if seeds not in cube.SEED_DESIGNS:
        raise UserError(f"{source}: {seeds_help()}" if seeds is None
                        else f"{source}: {option('seeds')} must be paired or independent, not {seeds!r}")
    if scale not in COL.SCALES:
        raise UserError(f"{option('scale')} must be one of {', '.join(COL.SCALES)}, not {scale!r}")
    if df.empty:
        raise UserError(f"{source}: the table is empty (no data rows)")
    for key in KEYS:
        if key not in df.columns:
            raise UserError(f"{source}: missing key column '{key}' (need pipeline, sigma_w, seed)")


def _keyed(df: pd.DataFrame, source: str, notes: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The table with its key columns validated and typed, and the keys of a row (epoch too, per epoch)."""
    df = df.reset_index(drop=True).copy()
    if cube.EPOCH not in df.columns and cube.STEP in df.columns:
        df[cube.EPOCH] = df[cube.STEP]
        notes.append("no epoch column: each logged step is one point of the curves (epoch = step)")
    df[cube.PIPELINE] = _pipeline_column(df[cube.PIPELINE], source)
    df[cube.SIGMA] = _positive_column(df[cube.SIGMA], cube.SIGMA, source)
    df[cube.SEED] = _integer_column(df[cube.SEED], cube.SEED, source)
    if cube.EPOCH not in df.columns:
        return df, list(KEYS)
    df[cube.EPOCH] = _integer_column(df[cube.EPOCH], cube.EPOCH, source, minimum=0)
    return df, [*KEYS, cube.EPOCH]


def _seed_pairs(df: pd.DataFrame, ignored: set[str], source: str) -> pd.DataFrame | None:
    """A crossed design's seeds (columns ``init_seed`` and ``data_seed``), one (init, data) pair per seed
    index (``seed`` is then a run index), as a frame indexed by seed; None when the table has neither.

    Both columns or neither; each a non-negative integer in every row; constant within a run (one run has one
    initial draw and one data order); and no pair given to two seed indices, which would count one run twice.
    """
    present = [c for c in cube.SEED_COORDS if c in df.columns and c not in ignored]
    if not present:
        return None
    if len(present) == 1:
        other = cube.DATA_SEED if present[0] == cube.INIT_SEED else cube.INIT_SEED
        raise UserError(f"{source}: column '{present[0]}' needs a column '{other}' too (a crossed seed design gives "
                        "each run's init seed and data seed)")
    for c in cube.SEED_COORDS:
        df[c] = _integer_column(df[c], c, source, minimum=0)
    varies = df.groupby(cube.SEED)[list(cube.SEED_COORDS)].nunique() > 1
    if varies.to_numpy().any():
        seed = varies.index[np.flatnonzero(varies.any(axis=1).to_numpy())[0]]
        col = next(c for c in cube.SEED_COORDS if varies.loc[seed, c])
        rows = [int(i) + 2 for i in np.flatnonzero((df[cube.SEED] == seed).to_numpy())]
        raise UserError(f"{source}: seed {seed} has more than one {col} (rows {_rows(rows)}); in a crossed design "
                        "the seed column numbers the runs, each with one init seed and one data seed")
    pairs = df.groupby(cube.SEED)[list(cube.SEED_COORDS)].first()
    dup = pairs.duplicated(keep=False)
    if dup.any():
        init, data = (int(v) for v in pairs[dup].iloc[0])
        runs = [int(k) for k in pairs.index[(pairs[cube.INIT_SEED] == init) & (pairs[cube.DATA_SEED] == data)]]
        raise UserError(f"{source}: seeds {', '.join(map(str, runs))} share init_seed {init} and data_seed {data}; "
                        "each (init, data) pair is one run: give it one seed number")
    return pairs


def _settings(ds: xr.Dataset, df: pd.DataFrame, kind: dict[str, str], original: dict[str, str],
              pipelines: list[str], *, has_epoch: bool, source: str) -> xr.Dataset:
    """Per-pipeline settings as coordinates on ``pipeline``; a setting that varies within a pipeline is a
    result, not a setting (refused), except a per-epoch schedule that the clocks read from the table."""
    for col in (c for c, k in kind.items() if k == "setting"):
        if (df.groupby(cube.PIPELINE)[col].nunique(dropna=False) > 1).any():
            if col in COL.PER_EPOCH_SETTINGS and has_epoch:
                continue
            raise UserError(f"{source}: setting '{original.get(col, col)}' varies within a pipeline; per-pipeline "
                            f"settings must be constant (declare it with {option('metric_cols')} if it is a result)")
        first = df.groupby(cube.PIPELINE, sort=False)[col].first().reindex(pipelines)
        vals = first.to_numpy()
        if first.dtype.kind not in "iuf":
            vals = np.array(["" if pd.isna(v) else str(v) for v in vals], dtype=object)
        ds = ds.assign_coords({col: (cube.PIPELINE, vals)})
    return ds


def frame_to_cube(df: pd.DataFrame, *, seeds: str | None, n_test: int | None = None, source: str = "table",
                  scale: str = "fraction", metric_cols: Iterable[str] = (), ignore_cols: Iterable[str] = (),
                  nan_as_missing: bool = False, n_train: int | None = None,
                  notes: list[str] | None = None) -> xr.Dataset:
    """Build a cube from a long table.

    ``seeds`` (``paired`` / ``independent``) is required: the memory model treats paired seeds as
    one block across sigma_w, which is false for runs that share nothing. ``scale`` is the unit of
    the accuracy columns (``fraction`` or ``percent``). ``nan_as_missing`` imports runs whose
    results are not finite as missing instead of refusing the table. ``n_train`` gives steps per
    epoch for the clocks. What was mapped or derived is appended to ``notes``.
    Row numbers in messages count like a spreadsheet: the header is row 1, data start at row 2.
    """
    notes = notes if notes is not None else []
    _check_options(df, seeds=seeds, scale=scale, source=source)
    df, keys = _keyed(df, source, notes)
    has_epoch = cube.EPOCH in keys
    seed_pairs = _seed_pairs(df, set(ignore_cols), source)
    value_cols = [c for c in df.columns if c not in keys and c not in cube.SEED_COORDS]
    rename, kind, mapped = COL.resolve(value_cols, per_epoch=has_epoch, metric_cols=metric_cols,
                                       ignore_cols=ignore_cols, source=source)
    notes += mapped
    original = {new: old for old, new in rename.items()}
    df = df[[*keys, *rename]].rename(columns=rename)   # resolve refused a table without a result column

    dup = df.duplicated(keys, keep=False)
    if dup.any():
        rows = [int(i) + 2 for i in np.flatnonzero(dup.to_numpy())]
        raise UserError(f"{source}: duplicate ({', '.join(keys)}) in rows {_rows(rows)}")

    n_test = _n_test(df, kind, n_test, source)
    status = (COL.status_codes(df[cube.STATUS], source) if cube.STATUS in kind
              else pd.Series(cube.OK, index=df.index, dtype="int64"))
    raw: dict[str, pd.Series] = {}
    text = {c: df[c].copy() for c in df.columns}
    values = [c for c, k in kind.items() if k in ("run", "curve", "metric")]
    for col in values:
        raw[col] = COL.numeric(df, col, source, original.get(col))
        df[col] = (COL.check_scale(raw[col], original.get(col, col), scale, source, curve=kind[col] != "run")
                   if COL.is_accuracy(col) else raw[col])
    for col in (c for c, k in kind.items() if k == "setting"):
        num = pd.to_numeric(df[col], errors="coerce")
        if num.notna().sum() == df[col].notna().sum():
            df[col] = num

    status = _non_finite(df, raw, text, kind, original, status, has_epoch=has_epoch, nan_as_missing=nan_as_missing,
                         source=source, notes=notes)
    for c in values:  # infinities of unfinished runs are no values either
        df[c] = df[c].where(np.isfinite(df[c].to_numpy(dtype=float)))

    pipelines = list(dict.fromkeys(df[cube.PIPELINE]))
    sigmas = sorted(df[cube.SIGMA].unique().tolist())
    seed_values = sorted(df[cube.SEED].unique().tolist())
    ds = cube.empty_cube(pipelines, sigmas, seed_values, attrs={
        cube.A_SOURCE: f"initmem import {source}", cube.A_INITMEM_VERSION: __version__,
        cube.A_GRID: "", cube.A_CREATED: pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
        cube.A_SEED_DESIGN: seeds,
    })
    if has_epoch:
        ds = ds.assign_coords({cube.EPOCH: np.asarray(sorted(df[cube.EPOCH].unique().tolist()), dtype="int64")})
    if seed_pairs is not None:
        ds = ds.assign_coords({name: (cube.SEED, seed_pairs[name].reindex(seed_values).to_numpy(dtype="int64"))
                               for name in cube.SEED_COORDS})
        notes.append(f"crossed seeds: {seed_pairs[cube.INIT_SEED].nunique()} init x "
                     f"{seed_pairs[cube.DATA_SEED].nunique()} data seeds over {len(seed_values)} runs")

    curve_cols = [c for c in values if kind[c] == "curve" or (kind[c] == "metric" and has_epoch
                                                               and _varies_in_run(df, c))]
    cell_cols = [c for c in values if c not in curve_cols]
    indexed = df.set_index(keys)
    for col in curve_cols:
        ds[col] = xr.DataArray.from_series(indexed[col]).reindex_like(ds).transpose(*cube.CURVE_DIMS)
    cells = df.groupby(list(KEYS), sort=False)
    for col in cell_cols:
        per_cell = cells[col].agg(_one_value, col=original.get(col, col), source=source)
        ds[col] = xr.DataArray.from_series(per_cell).reindex_like(ds).transpose(*cube.CELL_DIMS)
    run_status = pd.concat([df[list(KEYS)], status.rename(cube.STATUS)], axis=1).groupby(list(KEYS))[cube.STATUS].max()
    ds[cube.STATUS] = (xr.DataArray.from_series(run_status).reindex_like(ds).fillna(cube.MISSING)
                       .transpose(*cube.CELL_DIMS))

    ds = _settings(ds, df, kind, original, pipelines, has_epoch=has_epoch, source=source)

    if has_epoch:
        ds, more = derive.selected_from_curves(ds)
        notes += more
        ds, more = derive.clocks(df, ds, n_train=n_train, source=source)
        notes += more
    if cube.SELECTED_TEST_CORRECT in kind and n_test is None:
        COL.check_counts(df[cube.SELECTED_TEST_CORRECT], None, original.get(cube.SELECTED_TEST_CORRECT,
                                                                            cube.SELECTED_TEST_CORRECT), source)
    if n_test is not None:
        ds.attrs[cube.A_N_TEST] = int(n_test)
        _counts(ds, df, raw, kind, original, n_test, source)
    if cube.TAU_INTERP not in ds:
        notes.append("no tau_interp column: the report says interpolation was not recorded")
    return cube.canonicalize(ds)


def _non_finite(df: pd.DataFrame, raw: dict[str, pd.Series], text: dict[str, pd.Series], kind: dict[str, str],
                original: dict[str, str], status: pd.Series, *, has_epoch: bool, nan_as_missing: bool, source: str,
                notes: list[str]) -> pd.Series:
    """Results that are not finite: refused, or (``nan_as_missing``) the whole run becomes missing.

    A finished run (ok or diverged) must have a finite value in every per-run column; in a
    per-epoch table an empty curve value is an epoch the run did not log, but a written nan or
    inf is a result (refused in a run marked ok), and a per-run column empty in every row of a
    run is no result. Returns the status with such runs missing (their values cleared in ``df``)."""
    values = [c for c, k in kind.items() if k in ("run", "curve", "metric")]
    checked = [c for c in values if kind[c] != "curve"]
    bad_rows = np.zeros(len(df), bool)
    if has_epoch:
        ok_run = (status == cube.OK).to_numpy()  # a diverged run's curve ends in nan or inf by its nature
        for c in (c for c in values if kind[c] == "curve"):
            written = (raw[c].notna().to_numpy() & COL.non_finite_rows(raw[c])) | COL.written_nan(text[c])
            bad_rows |= written & ok_run
        for c in checked:
            bad_rows |= df.groupby(list(KEYS))[c].transform(lambda s: s.notna().sum() == 0).to_numpy()
    else:
        for c in checked:
            bad_rows |= COL.non_finite_rows(df[c])
    bad_rows &= status.isin([cube.OK, cube.DIVERGED]).to_numpy()
    if not bad_rows.any():
        return status
    if not nan_as_missing:
        i = int(np.flatnonzero(bad_rows)[0])
        col = next((c for c in values if not np.isfinite(float(df[c].iloc[i]))), values[0])
        v = text[col].iloc[i]
        what = "empty" if pd.isna(v) else repr(str(v))
        raise UserError(f"{source}: column '{original.get(col, col)}' is {what} in row {i + 2}; a run without a "
                        f"finite result is not a finished run: fix the row, or pass {option('nan_as_missing', True)} "
                        "to import "
                        "such runs as missing")
    runs = df.loc[bad_rows, list(KEYS)].drop_duplicates()
    bad_run = df.set_index(list(KEYS)).index.isin(pd.MultiIndex.from_frame(runs))
    for c in values:
        df.loc[bad_run, c] = np.nan
    notes.append(f"{len(runs)} run(s) with non-finite results imported as missing")
    return status.where(~bad_run, cube.MISSING)


def _n_test(df: pd.DataFrame, kind: dict[str, str], n_test: int | None, source: str) -> int | None:
    if cube.A_N_TEST not in kind:
        return n_test
    given = df[cube.A_N_TEST].notna()
    values = pd.to_numeric(df[cube.A_N_TEST][given], errors="coerce").unique()
    if len(values) != 1 or not np.isfinite(values[0]) or values[0] != round(values[0]) or values[0] < 1:
        raise UserError(f"{source}: column 'n_test' must hold one whole number for the whole table")
    if n_test is not None and int(values[0]) != n_test:
        raise UserError(f"{source}: {option('n_test', n_test)} contradicts the table's n_test column "
                        f"({int(values[0])})")
    return int(values[0])


def _counts(ds: xr.Dataset, df: pd.DataFrame, raw: dict[str, pd.Series], kind: dict[str, str],
            original: dict[str, str], n_test: int, source: str) -> None:
    """Check every test accuracy against ``n_test`` and store the selected one's counts (or, from counts alone,
    the accuracy they make: the metric the analysis models)."""
    if cube.SELECTED_TEST_CORRECT in kind:
        COL.check_counts(df[cube.SELECTED_TEST_CORRECT], n_test, original.get(cube.SELECTED_TEST_CORRECT,
                                                                               cube.SELECTED_TEST_CORRECT), source)
    for col in COL.TEST_ACCURACIES:
        if col in raw:
            counts = COL.counts_from_accuracy(df[col], raw[col], n_test, original.get(col, col), source)
            if col == cube.SELECTED_TEST_ACC and cube.SELECTED_TEST_CORRECT in kind:
                _agree(counts, df[cube.SELECTED_TEST_CORRECT], original.get(col, col),
                       original.get(cube.SELECTED_TEST_CORRECT, cube.SELECTED_TEST_CORRECT), source)
    if cube.SELECTED_TEST_CORRECT not in ds and cube.SELECTED_TEST_ACC in ds:
        counts = ds[cube.SELECTED_TEST_ACC] * n_test
        ds[cube.SELECTED_TEST_CORRECT] = counts.round()
    elif cube.SELECTED_TEST_ACC not in ds and cube.SELECTED_TEST_CORRECT in ds:
        ds[cube.SELECTED_TEST_ACC] = ds[cube.SELECTED_TEST_CORRECT] / n_test   # a table of counts alone


def _agree(from_accuracy: pd.Series, counts: pd.Series, acc_col: str, count_col: str, source: str) -> None:
    """The selected test accuracy and its count are one result twice: refuse a table where they differ."""
    a, c = from_accuracy.to_numpy(dtype=float), counts.to_numpy(dtype=float)
    off = np.isfinite(a) & np.isfinite(c) & (a != c)
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise UserError(f"{source}: row {i + 2}: '{acc_col}' is {a[i]:g} correct answers but '{count_col}' says "
                        f"{c[i]:g}; give one of the two columns, or make them agree")


def _varies_in_run(df: pd.DataFrame, col: str) -> bool:
    return bool((df.groupby(list(KEYS))[col].nunique(dropna=True) > 1).any())


def cube_to_frame(ds: xr.Dataset) -> pd.DataFrame:
    """The long table of a cube's observed cells (the inverse of :func:`frame_to_cube`)."""
    has_epoch = cube.EPOCH in ds.dims
    obs = cube.observed(ds) if cube.STATUS in ds else None
    cell_vars = [v for v in ds.data_vars if ds[v].dims == cube.CELL_DIMS and v != cube.STATUS]
    keep = [*cell_vars, cube.STATUS] if cube.STATUS in ds else cell_vars
    frame = ds[keep].reset_coords(drop=True).to_dataframe()
    if obs is not None:
        frame = frame[obs.to_series().reindex(frame.index).to_numpy()]
    if has_epoch:
        curve_vars = [v for v in ds.data_vars if ds[v].dims == cube.CURVE_DIMS]
        curves = ds[curve_vars].reset_coords(drop=True).to_dataframe().dropna(how="all")
        frame = curves.join(frame, how="inner")
    coords = [c for c in ds.coords if ds[c].dims == (cube.PIPELINE,)]
    seed_coords = [c for c in cube.SEED_COORDS if c in ds.coords and ds[c].dims == (cube.SEED,)]
    out = frame.reset_index()
    for c in coords:
        out[c] = out[cube.PIPELINE].map(dict(zip(ds[cube.PIPELINE].values, ds[c].values, strict=True)))
    for c in seed_coords:
        out[c] = out[cube.SEED].map(dict(zip(ds[cube.SEED].values.tolist(), ds[c].values.tolist(), strict=True)))
    return out.drop(columns=[c for c in out.columns if c not in (*KEYS, cube.EPOCH, *cell_vars,
                                                                 *(curve_vars if has_epoch else ()), *coords,
                                                                 *seed_coords)])


def _one_value(s: pd.Series, *, col: str, source: str) -> float:
    vals = s.dropna().unique()
    if len(vals) > 1:
        raise UserError(f"{source}: column '{col}' is a per-run value but differs across epochs of one run")
    return float(vals[0]) if len(vals) else np.nan


def _pipeline_column(col: pd.Series, source: str) -> pd.Series:
    """Pipeline names as text. A source that typed them as numbers has already lost how they were written
    ('0.10' and '0.1' are one number): refused, not renamed (read_table keeps every column as text)."""
    bad = col.isna() | (col.astype(str).str.strip() == "")
    if bad.any():
        raise UserError(f"{source}: empty pipeline name in row {int(np.flatnonzero(bad.to_numpy())[0]) + 2}")
    if col.dtype.kind in "iufc":
        raise UserError(f"{source}: the pipeline column holds numbers ({_shown(col.iloc[0])}, ...); pipelines are "
                        "names: write them as text (for example 'lr_0.1')")
    return col.astype(str).str.strip()


def _positive_column(col: pd.Series, name: str, source: str) -> pd.Series:
    values = pd.to_numeric(col, errors="coerce").astype(float)
    bad = ~(np.isfinite(values) & (values > 0))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        what = ("not a number" if pd.isna(values.iloc[i]) else "not finite" if not np.isfinite(values.iloc[i])
                else "not positive")
        raise UserError(f"{source}: row {i + 2}: {name} = {_shown(col.iloc[i])} is {what} (must be a positive number)")
    return values


# Integers a float holds exactly; a seed beyond it (or beyond int64) would be stored as another seed.
_EXACT = 2 ** 53
_INT64 = np.iinfo(np.int64)


def _integer_column(col: pd.Series, name: str, source: str, minimum: int | None = None) -> pd.Series:
    values = pd.to_numeric(col, errors="coerce")
    big = np.array([abs(v) >= (_EXACT if isinstance(v, float) else _INT64.max) for v in values.tolist()
                    if not pd.isna(v)], dtype=bool)
    if big.any():
        i = int(np.flatnonzero(values.notna().to_numpy())[np.flatnonzero(big)[0]])
        raise UserError(f"{source}: row {i + 2}: {name} = {_shown(col.iloc[i])} is too large to keep exactly: give "
                        "integers below 2^63, written without a decimal point or exponent above 2^53")
    values = values.astype(float) if values.dtype != "int64" else values
    bad = values.isna() | (values != values.round())
    if minimum is not None:
        bad |= values < minimum
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        need = "an integer" + (f" >= {minimum}" if minimum is not None else "")
        raise UserError(f"{source}: row {i + 2}: {name} = {_shown(col.iloc[i])} is not {need}")
    return values.astype("int64")


def _shown(v: object) -> str:
    """A table value as a user wrote it: 'nan', not np.float64(nan)."""
    return repr(v) if isinstance(v, str) else repr(str(v.item() if isinstance(v, np.generic) else v))


def _rows(rows: list[int]) -> str:
    return ", ".join(map(str, rows[:6])) + (" ..." if len(rows) > 6 else "")


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
