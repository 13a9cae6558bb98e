"""Whether a dataset is a valid cube: every problem found, each with a stable code (docs/cube.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from initmem.cube.queries import unpaired_seeds
from initmem.cube.schema import (
    A_N_TEST,
    A_SCHEMA,
    A_SEED_DESIGN,
    CELL_DIMS,
    CURVE_VARS,
    EPOCH,
    EXAMPLE,
    EXPECTED_DIMS,
    INT_VARS,
    LAYER,
    PIPELINE,
    REQUIRED_DIMS,
    RUN_VARS,
    SCHEMA,
    SEED,
    SEED_DESIGNS,
    SEED_PAIRED,
    SELECTED_TEST_CORRECT,
    SIGMA,
    STATUS,
    STATUS_NAMES,
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a cube. ``code`` is a stable name tests and tools can match on."""

    code: str
    message: str
    severity: str = "error"  # "error" makes the cube invalid; "warning" is reported only

    def __str__(self) -> str:
        return f"{self.severity}: {self.code}: {self.message}"



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
        for pipe, seeds in unpaired_seeds(ds).items():
            add("unpaired_seed",
                f"pipeline {pipe!r}: seed(s) {seeds} are observed at some sigma_w levels but not all",
                "warning")
    return problems


def errors(ds: xr.Dataset) -> list[Problem]:
    return [p for p in validate(ds) if p.severity == "error"]
