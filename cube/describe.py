"""What ``initmem inspect`` reports of a cube: its shape, problems, status counts and settings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import xarray as xr

from initmem.cube.queries import pipeline_settings, seed_design, status_counts, to_python, unpaired_seeds
from initmem.cube.schema import (
    A_GRID,
    A_SCHEMA,
    CURVE_VARS,
    DATA_SEED,
    EXPECTED_DIMS,
    INIT_SEED,
    LABEL_VARS,
    LAYER_VARS,
    PIPELINE,
    PRED_VARS,
    RUN_VARS,
    SEED,
    SIGMA,
)
from initmem.cube.validate import validate


def crossed_design(ds: xr.Dataset) -> dict[str, list[Any]] | None:
    """The distinct init and data seeds of a crossed seed design (coordinates ``init_seed`` and
    ``data_seed`` on the seed dim), ascending; None for a cube with one seed per run."""
    if INIT_SEED not in ds.coords or DATA_SEED not in ds.coords:
        return None
    return {"init": sorted({to_python(v) for v in ds[INIT_SEED].values}),
            "data": sorted({to_python(v) for v in ds[DATA_SEED].values})}


def describe(ds: xr.Dataset) -> dict[str, Any]:
    """What ``initmem inspect`` prints: dims, pipelines, variables, statuses, pairing, problems."""
    problems = validate(ds)
    unpaired = unpaired_seeds(ds) if not any(p.severity == "error" for p in problems) else {}
    return {
        "schema": ds.attrs.get(A_SCHEMA),
        "dims": {str(k): int(v) for k, v in ds.sizes.items()},
        "pipelines": pipeline_settings(ds) if PIPELINE in ds.coords else {},
        "sigma_w": [float(s) for s in ds[SIGMA].values] if SIGMA in ds.coords else [],
        "seeds": [to_python(s) for s in ds[SEED].values] if SEED in ds.coords else [],
        "variables": {
            "curves": [v for v in CURVE_VARS + LAYER_VARS if v in ds.data_vars],
            "runs": [v for v in RUN_VARS if v in ds.data_vars],
            "predictions": [v for v in PRED_VARS + LABEL_VARS if v in ds.data_vars],
            "other": sorted(str(v) for v in ds.data_vars if v not in EXPECTED_DIMS),
        },
        "status_counts": status_counts(ds),
        "seeds_paired": not unpaired, "seed_design": seed_design(ds),
        "unpaired_seeds": unpaired,
        "crossed": crossed_design(ds) if not any(p.severity == "error" for p in problems) else None,
        "attrs": {k: to_python(v) for k, v in ds.attrs.items() if k != A_GRID},
        "problems": [asdict(p) for p in problems],
        "valid": not any(p.severity == "error" for p in problems),
    }
