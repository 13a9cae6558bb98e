"""Questions asked of an open cube: which cells hold a result, whether seeds pair across sigma_w,
how many runs ended in each status, each pipeline's settings, attributes stored as JSON.

Pure xarray over the names of :mod:`initmem.cube.schema`; :mod:`initmem.cube.io` stays the only module
that knows the file format.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import xarray as xr

from initmem.cube.schema import (
    A_SEED_DESIGN,
    ACCURACY_VARS,
    CELL_DIMS,
    DIVERGED,
    OK,
    PIPELINE,
    SEED,
    SEED_DESIGNS,
    SEED_PAIRED,
    SIGMA,
    STATUS,
    STATUS_NAMES,
)
from initmem.errors import UserError


def observed(ds: xr.Dataset) -> xr.DataArray:
    """Boolean (pipeline, sigma_w, seed): the cell has a result (status ok or diverged)."""
    if STATUS in ds.data_vars:
        return ds[STATUS].isin([OK, DIVERGED])
    metric = next(v for v in ds.data_vars if set(CELL_DIMS) <= set(ds[v].dims))
    da = ds[metric]
    extra = [d for d in da.dims if d not in CELL_DIMS]
    return da.notnull().any(extra) if extra else da.notnull()


def ok_cells(ds: xr.Dataset) -> xr.DataArray:
    """Boolean (pipeline, sigma_w, seed): the run finished ok. The one "usable cell" mask of the
    statistics; without a status variable every observed cell counts (imported tables)."""
    if STATUS in ds.data_vars:
        return (ds[STATUS] == OK).transpose(*CELL_DIMS)
    return observed(ds).transpose(*CELL_DIMS)


def points_scale(metric: str) -> float:
    """Factor from a metric's units to the units the report speaks in: 100 for an accuracy variable
    (stored as a fraction: fractions become points), 1 for any other metric.

    The name only says what a variable is stored as. The count of correct answers
    (``selected_test_correct``) is in answers, not a fraction, so its factor is 1; the analysis never
    analyzes it in that unit (models/data.py refuses it and analyzes ``selected_test_acc``), and whether
    analyzed data are an accuracy is decided from the data (``MemoryData.is_accuracy``)."""
    return 100.0 if metric in ACCURACY_VARS or metric.endswith("_acc") else 1.0


def seed_design(ds: xr.Dataset) -> str:
    """``"paired"`` or ``"independent"`` (attribute ``seed_design``; absent means paired)."""
    design = str(ds.attrs.get(A_SEED_DESIGN, SEED_PAIRED))
    if design not in SEED_DESIGNS:
        raise UserError(f"cube attribute {A_SEED_DESIGN}={design!r} is not one of {', '.join(SEED_DESIGNS)}")
    return design


def unpaired_seeds(ds: xr.Dataset) -> dict[str, list[int]]:
    """Per pipeline, the seeds observed at some but not all sigma_w levels.

    Seeds are common random numbers: the statistics treat a seed as one block shared by every
    sigma_w, so a seed that is missing at some levels breaks the pairing.
    """
    if not set(CELL_DIMS) <= set(ds.dims):
        return {}
    try:
        obs = observed(ds)
    except StopIteration:
        return {}
    per_seed = obs.sum(SIGMA)
    n_sigma = ds.sizes[SIGMA]
    out: dict[str, list[int]] = {}
    for pipe in ds[PIPELINE].values.tolist():
        counts = per_seed.sel({PIPELINE: pipe})
        bad = counts[(counts > 0) & (counts < n_sigma)][SEED].values.tolist()
        if bad:
            out[str(pipe)] = [int(s) for s in bad]
    return out


def status_counts(ds: xr.Dataset) -> dict[str, dict[str, int]]:
    """Per pipeline, how many cells are ok / diverged / failed / missing."""
    out: dict[str, dict[str, int]] = {}
    if STATUS not in ds.data_vars:
        return out
    for pipe in ds[PIPELINE].values.tolist():
        vals = ds[STATUS].sel({PIPELINE: pipe}).values.ravel()
        out[str(pipe)] = {name: int((vals == code).sum()) for code, name in STATUS_NAMES.items()}
    return out


def pipeline_settings(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    """Per pipeline, the settings stored as coordinates on the pipeline dim."""
    names = [c for c in ds.coords if c != PIPELINE and ds[c].dims == (PIPELINE,)]
    out: dict[str, dict[str, Any]] = {}
    for i, pipe in enumerate(ds[PIPELINE].values.tolist()):
        out[str(pipe)] = {c: to_python(ds[c].values[i]) for c in names}
    return out


def to_python(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and np.isnan(v):
        return None
    return v


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
