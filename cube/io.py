"""The cube: one NetCDF-4 file that holds every curve and every run of a grid.

This is the only module that knows the file format (docs/cube.md): dtypes on disk, compression,
attributes stored as JSON, the atomic write. Everything else works on labelled ``xarray.Dataset``
objects and calls :func:`open_cube` / :func:`write_cube`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from initmem.atomic import atomic_path
from initmem.cube.schema import (
    A_SCHEMA,
    COMPRESSION,
    EPOCH,
    EXAMPLE,
    EXPECTED_DIMS,
    FLOAT_DTYPE,
    INT_VARS,
    PIPELINE,
    SCHEMA,
    SEED,
    SEED_COORDS,
    SIGMA,
    VARIABLE_ATTRS,
)
from initmem.cube.validate import errors
from initmem.errors import UserError

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
    for name in SEED_COORDS:   # a crossed design's seeds: int64, like the seed dim (an integral float too)
        if name in ds.coords and ds[name].dims == (SEED,):
            vals = ds[name].values
            if vals.dtype.kind in "iu" or (vals.dtype.kind == "f" and np.isfinite(vals).all()
                                           and (vals == np.round(vals)).all()):
                ds = ds.assign_coords({name: (SEED, vals.astype("int64"))})
    for name in list(ds.coords):
        if ds[name].dtype.kind in "US":
            ds = ds.assign_coords({name: ds[name].values.astype(object)})
    for name in ds.data_vars:        # CF labels, where the variable carries none of its own
        for key, value in VARIABLE_ATTRS.get(str(name), {}).items():
            ds[name].attrs.setdefault(key, value)
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
    """Write ``ds`` as NetCDF-4 (zlib, float32 curves), atomically: temporary name, then rename.

    Parameters
    ----------
    ds : xarray.Dataset
        A cube (docs/cube.md): dims ``pipeline``, ``sigma_w``, ``seed`` and optional curve dims.
    path : str or os.PathLike
        The file to write; an existing cube there is replaced, anything else is refused.
    check : bool, default True
        Validate the cube first, so that an invalid cube is never written.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        The cube is invalid (with ``check``).
    UserError
        ``path`` is a folder or a file that is not NetCDF.

    Examples
    --------
    >>> import initmem
    >>> cube = initmem.simulate_cube([initmem.SimPipeline("sgd", n_sigma=3, n_seed=2)])
    >>> initmem.write_cube(cube, "sgd.nc")
    PosixPath('sgd.nc')
    >>> initmem.open_cube("sgd.nc").sizes["seed"]
    2
    """
    ds = canonicalize(ds)
    if check:
        errs = errors(ds)
        if errs:
            raise ValueError("refusing to write an invalid cube: " + "; ".join(p.message for p in errs))
    _check_target(Path(path))
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=_encoding(ds))
    return Path(path)


# The first bytes of a NetCDF-4 (HDF5) and a classic NetCDF file.
_NETCDF_MAGIC = (b"\x89HDF\r\n\x1a\n", b"CDF\x01", b"CDF\x02", b"CDF\x05")


def _check_target(path: Path) -> None:
    """A cube replaces an older cube, never a folder or another kind of file (the table it was imported
    from, say): such a path is refused before anything is written."""
    if path.is_dir():
        raise UserError(f"{path} is a folder; give the cube's file name (a path inside it, ending in .nc)")
    if path.exists():
        with open(path, "rb") as fh:
            head = fh.read(8)
        if head and not head.startswith(_NETCDF_MAGIC):
            raise UserError(f"{path} exists and is not a NetCDF file; refusing to overwrite it with a cube")


def open_cube(path: str | os.PathLike, *, check: bool = True) -> xr.Dataset:
    """Read a cube fully into memory (the file is closed again, so it can be replaced later).

    Parameters
    ----------
    path : str or os.PathLike
        A cube written by initmem (``initmem collect``, ``import``, ``simulate``).
    check : bool, default True
        Validate it (dims, coordinates, status codes; docs/cube.md).

    Returns
    -------
    xarray.Dataset
        The cube.

    Raises
    ------
    UserError
        No such file, not NetCDF, or an invalid cube (with ``check``).

    Examples
    --------
    >>> import initmem
    >>> path = initmem.write_cube(initmem.simulate_cube([initmem.SimPipeline("sgd", n_sigma=3, n_seed=2)]), "sgd.nc")
    >>> ds = initmem.open_cube(path)
    >>> [str(p) for p in ds["pipeline"].values], ds.sizes["sigma_w"], ds.sizes["seed"]
    (['sgd'], 3, 2)
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
