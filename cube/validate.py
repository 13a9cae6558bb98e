"""Whether a dataset is a valid cube: every problem found, each with a stable code (docs/cube.md)."""

from __future__ import annotations

from collections.abc import Iterator
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
    DATA_SEED,
    EPOCH,
    EXAMPLE,
    EXPECTED_DIMS,
    INIT_SEED,
    INT_VARS,
    LAYER,
    PIPELINE,
    REQUIRED_DIMS,
    RUN_VARS,
    SCHEMA,
    SEED,
    SEED_COORDS,
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



def _coordinate_problems(ds: xr.Dataset, dim: str) -> Iterator[Problem]:
    """A dimension's coordinate: present, of the right kind, no NaN, unique; sigma_w positive and ascending."""
    if dim not in ds.coords:
        yield Problem("missing_coord", f"dimension '{dim}' has no coordinate values")
        return
    values = ds[dim].values
    kind = values.dtype.kind
    if dim in (PIPELINE, LAYER):
        if kind not in "OUS":
            yield Problem("wrong_dtype", f"coordinate '{dim}' must hold strings, found dtype {values.dtype}")
        elif any(not isinstance(v, str) for v in values.tolist()):
            yield Problem("nan_coord", f"coordinate '{dim}' holds a value that is not a string (NaN or None)")
    elif dim == SIGMA:
        yield from _sigma_problems(values)
    elif kind == "f":
        if np.isnan(values).any():
            yield Problem("nan_coord", f"coordinate '{dim}' contains NaN")
        else:
            yield Problem("wrong_dtype", f"coordinate '{dim}' must hold integers, found dtype {values.dtype}")
    elif kind not in "iu":
        yield Problem("wrong_dtype", f"coordinate '{dim}' must hold integers, found dtype {values.dtype}")
    if kind != "f" and len(set(values.tolist())) != len(values):
        yield Problem("duplicate_coord", f"coordinate '{dim}' has duplicate values")


def _sigma_problems(values: np.ndarray) -> Iterator[Problem]:
    if values.dtype.kind not in "fi":
        yield Problem("wrong_dtype", f"coordinate 'sigma_w' must be numeric, found dtype {values.dtype}")
        return
    vals = values.astype(float)
    if np.isnan(vals).any():
        yield Problem("nan_coord", "coordinate 'sigma_w' contains NaN")
    elif (vals <= 0).any():
        yield Problem("bad_coord", "coordinate 'sigma_w' must be positive")
    elif (np.diff(vals) <= 0).any():
        yield Problem("bad_coord", "coordinate 'sigma_w' must be strictly ascending")


def _seed_coord_problems(ds: xr.Dataset) -> Iterator[Problem]:
    """A crossed design's ``init_seed`` and ``data_seed``: both or neither, integers on the seed dim, each
    (init, data) pair once (two runs of one pair would be one run counted twice)."""
    present = [c for c in SEED_COORDS if c in ds.coords]
    if not present:
        return
    if len(present) == 1:
        other = DATA_SEED if present[0] == INIT_SEED else INIT_SEED
        yield Problem("missing_coord", f"coordinate '{present[0]}' needs '{other}' too (a crossed seed design "
                                       "gives both)")
        return
    ok = True
    for name in SEED_COORDS:
        var = ds[name]
        if tuple(var.dims) != (SEED,):
            yield Problem("wrong_dims", f"coordinate '{name}' has dims {tuple(var.dims)}, expected ('{SEED}',)")
            ok = False
        elif var.dtype.kind not in "iu":
            yield Problem("wrong_dtype", f"coordinate '{name}' must hold integers, found dtype {var.dtype}")
            ok = False
        elif (var.values < 0).any():
            yield Problem("bad_coord", f"coordinate '{name}' must hold non-negative seeds")
            ok = False
    if ok:
        pairs = list(zip(ds[INIT_SEED].values.tolist(), ds[DATA_SEED].values.tolist(), strict=True))
        if len(set(pairs)) != len(pairs):
            yield Problem("duplicate_coord", f"coordinates '{INIT_SEED}' and '{DATA_SEED}' give some (init, data) "
                                             "pair to more than one seed index")


def _variable_problems(ds: xr.Dataset) -> Iterator[Problem]:
    """At least one run or curve variable; every known variable with its expected dims and dtype."""
    run_like = [v for v in (*RUN_VARS, *CURVE_VARS) if v in ds.data_vars]
    extra_metrics = [v for v in ds.data_vars if v not in EXPECTED_DIMS and set(CELL_DIMS) <= set(ds[v].dims)]
    if not run_like and not extra_metrics:
        yield Problem("no_variables", "the cube holds no run or curve variable")
    for name in (v for v in EXPECTED_DIMS if v in ds.data_vars):
        var = ds[name]
        want = EXPECTED_DIMS[name]
        if tuple(var.dims) != want:
            yield Problem("wrong_dims", f"variable '{name}' has dims {tuple(var.dims)}, expected {want}")
        if name in INT_VARS and var.dtype.kind not in "iu":
            yield Problem("wrong_dtype", f"variable '{name}' must be an integer array, found dtype {var.dtype}")
        elif name not in INT_VARS and var.dtype.kind != "f":
            yield Problem("wrong_dtype", f"variable '{name}' must be floating point, found dtype {var.dtype}")
    if STATUS in ds.data_vars and ds[STATUS].dtype.kind in "iu":
        bad = ~np.isin(ds[STATUS].values, list(STATUS_NAMES))
        if bad.any():
            yield Problem("bad_status",
                          f"variable 'status' holds {int(bad.sum())} value(s) outside {sorted(STATUS_NAMES)}")


def validate(ds: xr.Dataset) -> list[Problem]:
    """Every problem found in ``ds`` (not only the first). An empty list means valid."""
    problems: list[Problem] = []
    schema = ds.attrs.get(A_SCHEMA)
    if schema != SCHEMA:
        problems.append(Problem("schema_attr", f"global attribute 'schema' is {schema!r}, expected {SCHEMA!r}"))
    problems += [Problem("missing_dim", f"dimension '{dim}' is missing") for dim in REQUIRED_DIMS if dim not in ds.dims]
    for dim in (PIPELINE, SIGMA, SEED, EPOCH, LAYER, EXAMPLE):
        if dim in ds.dims:
            problems += _coordinate_problems(ds, dim)
    problems += _seed_coord_problems(ds)
    problems += _variable_problems(ds)
    if SELECTED_TEST_CORRECT in ds.data_vars and A_N_TEST not in ds.attrs:
        problems.append(Problem("missing_attr", "'selected_test_correct' needs the global attribute 'n_test'"))
    design = str(ds.attrs.get(A_SEED_DESIGN, SEED_PAIRED))
    if design not in SEED_DESIGNS:
        problems.append(Problem("bad_attr", f"attribute {A_SEED_DESIGN!r} must be one of {', '.join(SEED_DESIGNS)} "
                                            f"(got {design!r})"))
    if not any(p.severity == "error" for p in problems) and design == SEED_PAIRED:
        problems += [Problem("unpaired_seed", f"pipeline {pipe!r}: seed(s) {seeds} are observed at some sigma_w "
                                              "levels but not all", "warning")
                     for pipe, seeds in unpaired_seeds(ds).items()]
    return problems


def errors(ds: xr.Dataset) -> list[Problem]:
    return [p for p in validate(ds) if p.severity == "error"]
