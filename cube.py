"""The cube: one NetCDF-4 file that holds every curve and every run of a grid.

This is the only module that knows the file format (docs/cube.md). Everything else works
on labelled ``xarray.Dataset`` objects and calls :func:`open_cube` / :func:`write_cube`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from initmem import clocks as _clocks
from initmem.atomic import atomic_path
from initmem.errors import UserError
from initmem.lazy import lazy_getattr

SCHEMA = "initmem.cube/1"

# Dimensions -------------------------------------------------------------------------------
PIPELINE, SIGMA, SEED, EPOCH, LAYER, EXAMPLE = "pipeline", "sigma_w", "seed", "epoch", "layer", "example"
CELL_DIMS = (PIPELINE, SIGMA, SEED)
CURVE_DIMS = (*CELL_DIMS, EPOCH)
REQUIRED_DIMS = CELL_DIMS

# Variables --------------------------------------------------------------------------------
# Every cube variable has one name, exported here; no other module spells it as a string
# (docs/cube.md documents each one).
# Curves, dims (pipeline, sigma_w, seed, epoch).
TRAIN_LOSS, TRAIN_ACC = "train_loss", "train_acc"
VAL_LOSS, VAL_ACC = "val_loss", "val_acc"
TEST_LOSS, TEST_ACC = "test_loss", "test_acc"
KERNEL_NORM, STEP, LR_NOW = "kernel_norm", "step", "lr_now"
# Clock names are owned by the clocks table, initmem/clocks.py (docs/cube.md, "Clocks"); take them from here.
T_ETA, T_SGD, T_L2, T_ADAPT, T_WD = _clocks.T_ETA, _clocks.T_SGD, _clocks.T_L2, _clocks.T_ADAPT, _clocks.T_WD
T_ETA_MOM, T_SGD_MOM, T_L2_MOM = _clocks.T_ETA_MOM, _clocks.T_SGD_MOM, _clocks.T_L2_MOM
T_ANGLE, T_EFF = _clocks.T_ANGLE, _clocks.T_EFF
# Per layer, dims (pipeline, sigma_w, seed, epoch, layer).
LAYER_NORM = "layer_norm"
COS_TO_INIT = "cos_to_init"    # cosine between each kernel and its value at epoch 0
ANGULAR_PATH = "angular_path"  # cumulative sum of per-step angles, radians
EFF_LR = "eff_lr"              # eta / ||w||^2 where a normalisation follows the layer (NaN elsewhere)
# Runs, dims (pipeline, sigma_w, seed).
STATUS, TAU_INTERP, TAU_BEST = "status", "tau_interp", "tau_best"
SELECTED_VAL_ACC, SELECTED_TEST_ACC = "selected_val_acc", "selected_test_acc"
SELECTED_TEST_CORRECT, FINAL_TEST_ACC = "selected_test_correct", "final_test_acc"
INIT_KERNEL_NORM, WALL_SECONDS = "init_kernel_norm", "wall_seconds"
# Per-example predictions.
TEST_PRED, TEST_LABEL = "test_pred", "test_label"

CLOCKS = (T_ETA, T_SGD, T_L2, T_ADAPT)  # the clocks every collected cube has (SPEC section 2)
MOMENTUM_CLOCKS = (T_ETA_MOM, T_SGD_MOM, T_L2_MOM)
SCHEDULE_CLOCKS = _clocks.names(_clocks.SCHEDULE)  # every clock computed from the learning-rate schedule
MEASURED_CLOCKS = _clocks.names(_clocks.MEASURED)
ALL_CLOCKS = _clocks.names()
CURVE_VARS = (
    TRAIN_LOSS, TRAIN_ACC, VAL_LOSS, VAL_ACC, TEST_LOSS, TEST_ACC,
    KERNEL_NORM, STEP, LR_NOW, *ALL_CLOCKS,
)
LAYER_VARS = (LAYER_NORM, COS_TO_INIT, ANGULAR_PATH, EFF_LR)  # dims CURVE_DIMS + (layer,)
RUN_VARS = (
    STATUS, TAU_INTERP, TAU_BEST, SELECTED_VAL_ACC, SELECTED_TEST_ACC,
    SELECTED_TEST_CORRECT, FINAL_TEST_ACC, INIT_KERNEL_NORM, WALL_SECONDS,
)
PRED_VARS = (TEST_PRED,)   # dims CELL_DIMS + (example,)
LABEL_VARS = (TEST_LABEL,)  # dims (example,)
ACCURACY_VARS = (TRAIN_ACC, VAL_ACC, TEST_ACC, SELECTED_VAL_ACC, SELECTED_TEST_ACC, FINAL_TEST_ACC)

EXPECTED_DIMS: dict[str, tuple[str, ...]] = {
    **{v: CURVE_DIMS for v in CURVE_VARS},
    **{v: (*CURVE_DIMS, LAYER) for v in LAYER_VARS},
    **{v: CELL_DIMS for v in RUN_VARS},
    **{v: (*CELL_DIMS, EXAMPLE) for v in PRED_VARS},
    **{v: (EXAMPLE,) for v in LABEL_VARS},
}

# Integer variables and the fill value that marks "no value" in them.
INT_VARS: dict[str, tuple[str, int]] = {
    STATUS: ("int8", 3),  # 3 = MISSING
    SELECTED_TEST_CORRECT: ("int32", -1),
    TEST_PRED: ("int16", -1),
    TEST_LABEL: ("int16", -1),
}
FLOAT_DTYPE = "float32"

# Per-pipeline settings (coordinates on the pipeline dim).
PIPELINE_COORDS = ("optimizer", "lr", "batch_size", "momentum", "weight_decay", "schedule", "epochs")

# Run status codes.
OK, DIVERGED, FAILED, MISSING = 0, 1, 2, 3
STATUS_NAMES = {OK: "ok", DIVERGED: "diverged", FAILED: "failed", MISSING: "missing"}

# Global attributes. GRID, TRUTH and FAILED_CELLS hold JSON/YAML text: read them with json_attr.
A_SCHEMA, A_N_TEST, A_INTERP_THRESHOLD, A_SELECT = "schema", "n_test", "interp_threshold", "select"
A_GRID, A_DATASET_FINGERPRINT = "grid", "dataset_fingerprint"
A_INITMEM_VERSION, A_TORCH_VERSION, A_DEVICE, A_CREATED = "initmem_version", "torch_version", "device", "created"
A_TRUTH, A_FAILED_CELLS, A_CORRUPT_SHARDS, A_SOURCE = "truth", "failed_cells", "corrupt_shards", "source"
# What a collected cube was trained with, for provenance and for telling grids apart.
A_GRID_HASH, A_GRID_NAME, A_DATASET = "grid_hash", "grid_name", "dataset"
A_ARCH, A_NORM, A_INIT_SCALE, A_AUGMENT = "arch", "norm", "init_scale", "augment"
# The init probe sigma_w holds (absent: scale), what it acts on, its level names (docs/arms.md).
A_PROBE, A_PROBE_TARGET, A_PROBE_LEVELS = "probe", "probe_target", "probe_levels"
PROBE_SCALE, PROBE_SHAPE = "scale", "shape"
# How seeds relate across sigma_w levels: "paired" (one seed shares initial direction, data order and
# augmentation across every level: initmem's own collect) or "independent" (imported runs whose seeds
# share nothing). Absent means paired. The memory model keeps the shared seed effect only when paired.
A_SEED_DESIGN = "seed_design"
SEED_PAIRED, SEED_INDEPENDENT = "paired", "independent"
SEED_DESIGNS = (SEED_PAIRED, SEED_INDEPENDENT)
GLOBAL_ATTRS = (
    A_SCHEMA, A_N_TEST, A_INTERP_THRESHOLD, A_SELECT, A_GRID, A_DATASET_FINGERPRINT,
    A_INITMEM_VERSION, A_TORCH_VERSION, A_DEVICE, A_CREATED,
)
COMPRESSION = {"zlib": True, "complevel": 4}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a cube. ``code`` is a stable name tests and tools can match on."""

    code: str
    message: str
    severity: str = "error"  # "error" makes the cube invalid; "warning" is reported only

    def __str__(self) -> str:
        return f"{self.severity}: {self.code}: {self.message}"


def known_variables() -> tuple[str, ...]:
    return tuple(EXPECTED_DIMS)


# Validation -------------------------------------------------------------------------------

def validate(ds: xr.Dataset) -> list[Problem]:
    """Every problem found in ``ds`` (not only the first). An empty list means valid."""
    problems: list[Problem] = []
    add = lambda code, msg, sev="error": problems.append(Problem(code, msg, sev))  # noqa: E731

    schema = ds.attrs.get(A_SCHEMA)
    if schema != SCHEMA:
        add("schema_attr", f"global attribute 'schema' is {schema!r}, expected {SCHEMA!r}")

    for dim in REQUIRED_DIMS:
        if dim not in ds.dims:
            add("missing_dim", f"dimension '{dim}' is missing")

    # Coordinates: present, right kind, no NaN, unique, sigma_w positive and ascending.
    for dim in (PIPELINE, SIGMA, SEED, EPOCH, LAYER, EXAMPLE):
        if dim not in ds.dims:
            continue
        if dim not in ds.coords:
            add("missing_coord", f"dimension '{dim}' has no coordinate values")
            continue
        values = ds[dim].values
        kind = values.dtype.kind
        if dim in (PIPELINE, LAYER):
            if kind not in "OUS":
                add("wrong_dtype", f"coordinate '{dim}' must hold strings, found dtype {values.dtype}")
            elif any(not isinstance(v, str) for v in values.tolist()):
                add("nan_coord", f"coordinate '{dim}' holds a value that is not a string (NaN or None)")
        elif dim == SIGMA:
            if kind not in "fi":
                add("wrong_dtype", f"coordinate 'sigma_w' must be numeric, found dtype {values.dtype}")
            else:
                vals = values.astype(float)
                if np.isnan(vals).any():
                    add("nan_coord", "coordinate 'sigma_w' contains NaN")
                elif (vals <= 0).any():
                    add("bad_coord", "coordinate 'sigma_w' must be positive")
                elif (np.diff(vals) <= 0).any():
                    add("bad_coord", "coordinate 'sigma_w' must be strictly ascending")
        else:
            if kind == "f":
                if np.isnan(values).any():
                    add("nan_coord", f"coordinate '{dim}' contains NaN")
                else:
                    add("wrong_dtype", f"coordinate '{dim}' must hold integers, found dtype {values.dtype}")
            elif kind not in "iu":
                add("wrong_dtype", f"coordinate '{dim}' must hold integers, found dtype {values.dtype}")
        if kind != "f" and len(set(values.tolist())) != len(values):
            add("duplicate_coord", f"coordinate '{dim}' has duplicate values")

    # Variables: expected dims and dtypes.
    present = [v for v in EXPECTED_DIMS if v in ds.data_vars]
    run_like = [v for v in (*RUN_VARS, *CURVE_VARS) if v in ds.data_vars]
    extra_metrics = [v for v in ds.data_vars if v not in EXPECTED_DIMS and set(CELL_DIMS) <= set(ds[v].dims)]
    if not run_like and not extra_metrics:
        add("no_variables", "the cube holds no run or curve variable")
    for name in present:
        var = ds[name]
        want = EXPECTED_DIMS[name]
        if tuple(var.dims) != want:
            add("wrong_dims", f"variable '{name}' has dims {tuple(var.dims)}, expected {want}")
        kind = var.dtype.kind
        if name in INT_VARS:
            if kind not in "iu":
                add("wrong_dtype", f"variable '{name}' must be an integer array, found dtype {var.dtype}")
        elif kind != "f":
            add("wrong_dtype", f"variable '{name}' must be floating point, found dtype {var.dtype}")

    if STATUS in ds.data_vars and ds[STATUS].dtype.kind in "iu":
        bad = ~np.isin(ds[STATUS].values, list(STATUS_NAMES))
        if bad.any():
            add("bad_status", f"variable 'status' holds {int(bad.sum())} value(s) outside {sorted(STATUS_NAMES)}")

    if SELECTED_TEST_CORRECT in ds.data_vars and A_N_TEST not in ds.attrs:
        add("missing_attr", "'selected_test_correct' needs the global attribute 'n_test'")

    design = str(ds.attrs.get(A_SEED_DESIGN, SEED_PAIRED))
    if design not in SEED_DESIGNS:
        add("bad_attr", f"attribute {A_SEED_DESIGN!r} must be one of {', '.join(SEED_DESIGNS)} (got {design!r})")
    if not any(p.severity == "error" for p in problems) and design == SEED_PAIRED:
        from initmem.cube_queries import unpaired_seeds

        for pipe, seeds in unpaired_seeds(ds).items():
            add("unpaired_seed",
                f"pipeline {pipe!r}: seed(s) {seeds} are observed at some sigma_w levels but not all",
                "warning")
    return problems


def errors(ds: xr.Dataset) -> list[Problem]:
    return [p for p in validate(ds) if p.severity == "error"]


# Building ---------------------------------------------------------------------------------

def canonicalize(ds: xr.Dataset) -> xr.Dataset:
    """Cast a cube to its on-disk dtypes, so that writing and reading give back an equal Dataset.

    Floats become float32, the integer variables their fixed width (NaN -> fill value), string
    coordinates plain Python strings, and sigma_w float64 (levels like 1/8 stay exact).
    """
    ds = ds.copy()
    for name in list(ds.data_vars):
        var = ds[name]
        if name in INT_VARS:
            dtype, fill = INT_VARS[name]
            vals = var.values
            if vals.dtype.kind == "f":
                vals = np.where(np.isnan(vals), fill, vals)
            ds[name] = var.copy(data=vals.astype(dtype))
        elif var.dtype.kind == "f" or var.dtype.kind in "iub" and name in EXPECTED_DIMS:
            ds[name] = var.astype(FLOAT_DTYPE)
    if SIGMA in ds.coords:
        ds = ds.assign_coords({SIGMA: ds[SIGMA].values.astype("float64")})
    for dim in (SEED, EPOCH, EXAMPLE):
        if dim in ds.coords and ds[dim].dtype.kind in "iuf":
            ds = ds.assign_coords({dim: ds[dim].values.astype("int64")})
    for name in list(ds.coords):
        if ds[name].dtype.kind in "US":
            ds = ds.assign_coords({name: ds[name].values.astype(object)})
    ds.attrs = {k: _attr(v) for k, v in ds.attrs.items()}
    for name in ds.variables:
        ds[name].attrs = {k: _attr(v) for k, v in ds[name].attrs.items()}
    return ds


def _attr(v: Any) -> Any:
    """NetCDF attributes hold strings and numbers only; everything else is stored as JSON."""
    if isinstance(v, bool | np.bool_):
        return int(v)
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, str | int | float):
        return v
    if v is None:
        return "null"
    return json.dumps(v, sort_keys=True, default=_json_default)


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot store {type(o).__name__} in a cube attribute")


def json_attr(ds: xr.Dataset, name: str, default: Any = None) -> Any:
    """Read an attribute that :func:`canonicalize` stored as JSON."""
    raw = ds.attrs.get(name)
    if raw is None:
        return default
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


# Reading and writing ------------------------------------------------------------------------

def _encoding(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    enc: dict[str, dict[str, Any]] = {}
    for name in ds.data_vars:
        var = ds[name]
        e: dict[str, Any] = dict(COMPRESSION) if var.dtype.kind in "iuf" else {}
        if var.dtype.kind == "f":
            e["_FillValue"] = np.float32(np.nan) if var.dtype == np.float32 else np.nan
        elif var.dtype.kind in "iu":
            e["_FillValue"] = None
        enc[name] = e
    for name in ds.coords:
        e = dict(COMPRESSION) if ds[name].dtype.kind in "iuf" and ds[name].size > 1 else {}
        if ds[name].dtype.kind == "f":
            e["_FillValue"] = None
        enc[name] = e
    return enc


def write_cube(ds: xr.Dataset, path: str | os.PathLike, *, check: bool = True) -> Path:
    """Write ``ds`` as NetCDF-4 (zlib, float32 curves), atomically: temporary name, then rename."""
    ds = canonicalize(ds)
    if check:
        errs = errors(ds)
        if errs:
            raise ValueError("refusing to write an invalid cube: " + "; ".join(p.message for p in errs))
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=_encoding(ds))
    return Path(path)


def open_cube(path: str | os.PathLike, *, check: bool = True) -> xr.Dataset:
    """Read a cube fully into memory (the file is closed again, so it can be replaced later).

    Bad input (no such file, not NetCDF, an invalid cube when ``check``) raises ``UserError``.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"no such cube file: {path}")
    try:
        with xr.open_dataset(path, engine="netcdf4") as f:
            ds = f.load()
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not a readable NetCDF cube ({exc.__class__.__name__}: {exc})") from None
    # Integer fill values were written without _FillValue, so no masking happens on read;
    # restore the plain attribute dicts so a round trip is exact.
    for name in ds.variables:
        ds[name].encoding = {}
    if check:
        errs = errors(ds)
        if errs:
            raise UserError(f"{path} is not a valid cube: " + "; ".join(p.message for p in errs))
    return ds


def empty_cube(
    pipelines: list[str],
    sigma_w: list[float],
    seeds: list[int],
    *,
    epochs: int | None = None,
    attrs: dict[str, Any] | None = None,
) -> xr.Dataset:
    """A cube skeleton with the right coordinates, no variables, and the schema attribute."""
    coords: dict[str, Any] = {
        PIPELINE: np.array(pipelines, dtype=object),
        SIGMA: np.asarray(sigma_w, dtype="float64"),
        SEED: np.asarray(seeds, dtype="int64"),
    }
    if epochs is not None:
        coords[EPOCH] = np.arange(epochs + 1, dtype="int64")
    ds = xr.Dataset(coords=coords)
    ds.attrs = {A_SCHEMA: SCHEMA, **(attrs or {})}
    return ds



# What a cube holds (pure xarray, no file format) lives in cube_queries.py and is re-exported here,
# where every module takes it, on first use: cube_queries reads the names above, so importing it
# from here at load time would be an import cycle.
_QUERIES = ("describe", "observed", "ok_cells", "pipeline_settings", "points_scale", "seed_design",
            "status_counts", "unpaired_seeds", "_py")
__getattr__ = lazy_getattr(__name__, {name: ("initmem.cube_queries", name) for name in _QUERIES})
