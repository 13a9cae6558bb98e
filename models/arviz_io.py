"""Every ArviZ call of initmem lives here (reading, writing, convergence diagnostics, LOO).

Keeping ArviZ behind one small module means a change in its API (the 0.x -> 1.x transition
is under way) touches one file, and the rest of the code works on plain numpy / xarray.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np
import xarray as xr

from initmem.atomic import atomic_path
from initmem.errors import UserError

InferenceData = az.InferenceData


def to_netcdf(idata: az.InferenceData, path: str | os.PathLike) -> Path:
    """Write the InferenceData atomically (temporary name in the same folder, then rename)."""
    with atomic_path(path) as tmp:
        idata.to_netcdf(str(tmp))
    return Path(path)


def from_netcdf(path: str | os.PathLike) -> az.InferenceData:
    """Read an InferenceData fully into memory; a missing or unreadable file is a UserError."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"no posterior at {path}: run 'initmem analyze' first")
    try:
        idata = az.from_netcdf(str(path))
        for group in idata.groups():
            idata[group].load()
        return idata
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{path} is not a readable posterior ({exc.__class__.__name__}: {exc})") from None


def take_first(idata: az.InferenceData, sizes: dict[str, int]) -> az.InferenceData:
    """The first ``sizes[dim]`` positions along each named dim, in every group that has it (a
    padded model's slots dropped, models/memory.py); the same object when nothing is cut."""
    cut = {}
    for group in idata.groups():
        ds = idata[group]
        cut.update({dim: slice(0, n) for dim, n in sizes.items() if dim in ds.dims and ds.sizes[dim] > n})
    return idata.isel(**cut) if cut else idata


def with_posterior_vars(idata: az.InferenceData, extra: dict[str, xr.DataArray],
                        drop: list[str] | None = None, coords: dict[str, Any] | None = None,
                        sizes: dict[str, int] | None = None) -> az.InferenceData:
    """Add derived quantities (dims chain, draw, ...) to the posterior group, drop variables
    that are no longer wanted (e.g. imputed cells) and relabel coordinates (a refit on a
    compiled sampler keeps the labels it was compiled with), in place. With ``sizes``, a padded model's slots are
    cut first (:func:`take_first`), and the result is a new object: the posterior a fit keeps, made in one call."""
    if sizes is not None:
        idata = take_first(idata, sizes)
    post = idata.posterior
    if coords:
        post = post.assign_coords({k: v for k, v in coords.items() if k in post.dims})
    for name, da in extra.items():
        post[name] = da
    if drop:
        post = post.drop_vars([n for n in drop if n in post])
    idata.posterior = post
    return idata


@contextlib.contextmanager
def _numpy_kernels() -> Iterator[None]:
    """ArviZ's numpy kernels instead of its numba ones: ArviZ compiles those afresh in every
    process (no cache), 0.5-2 s of each ``analyze`` on 2 cores, more than the statistics
    themselves on posteriors of a few thousand draws; the numpy path gives the same values to
    rounding (compile once, or not at all)."""
    before = az.Numba.numba_flag
    az.Numba.numba_flag = False
    try:
        yield
    finally:
        az.Numba.numba_flag = before


def mcse_mean(x: np.ndarray) -> float:
    """Monte Carlo standard error of the mean of a (chain, draw) array (ESS-based)."""
    ds = az.convert_to_dataset({"x": np.asarray(x, dtype=float)})
    with _numpy_kernels():
        return float(az.mcse(ds, method="mean")["x"].item())


def rhat_ess(idata: az.InferenceData, var_names: list[str]) -> dict[str, xr.DataArray]:
    """Rank-normalised split R-hat and bulk ESS of each variable (dims as in the posterior)."""
    ds = idata.posterior[var_names]
    # Quantities defined only at some levels are NaN elsewhere, and a quantity fixed by the data is constant
    # (their R-hat is NaN and ignored); ArviZ logs a warning per such array and numpy one per 0/0, noise here.
    log = getattr(az, "_log", None) or logging.getLogger("arviz")  # ArviZ 0.x keeps its own logger
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with _numpy_kernels(), np.errstate(invalid="ignore", divide="ignore"):
            rhat = az.rhat(ds, method="rank")
            ess = az.ess(ds, method="bulk")
    finally:
        log.setLevel(level)
    return {"rhat": rhat, "ess_bulk": ess}


def divergences(idata: az.InferenceData) -> int:
    """Number of divergent transitions after warm-up (0 when the sampler does not report them)."""
    stats = getattr(idata, "sample_stats", None)
    if stats is None:
        return 0
    for name in ("diverging", "divergences"):
        if name in stats:
            return int(np.asarray(stats[name]).astype(bool).sum())
    return 0


def version() -> str:
    return az.__version__
