"""The memory of the initial draw, for cubes with a crossed seed design (docs/crossed.md).

A grid's ``seeds: {init: [...], data: [...]}`` trains every (init seed, data seed) pair, so that one
pipeline's final metric at one sigma_w level is an init x data table. The seed variance then splits into the
initial draw's part (SD_init), the data order's part (SD_data) and what is left (their interaction and the
evaluation noise). This module turns the analysis's table into (pipeline, sigma_w, init, data) arrays, and
joins three readings of them into summary.json's ``crossed`` block:

- the components pooled over sigma_w with their modified large-sample intervals, the draw verdict against the
  margin, and the per-level components (:mod:`initmem.stats.crossed`);
- the crossed random-effects posterior (:mod:`initmem.models.crossed`), shown beside them;
- the init share at each evaluated epoch (the draw's forgetting curve), from the cube's test-accuracy curves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from initmem import cube
from initmem.cube.describe import crossed_design
from initmem.errors import UserError
from initmem.models.crossed import CrossedModel
from initmem.models.data import MemoryData
from initmem.models.paired import CrossedSeeds
from initmem.results.margins import DRAW_MARGIN_POINTS
from initmem.results.records import FRACTION, METRIC_UNITS
from initmem.stats.crossed import complete_block, crossed_components, init_share_curve


def crossed_index(ds: xr.Dataset, seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Any], list[Any]] | None:
    """Where each run of ``seeds`` sits in the init x data design: (init index, data index, init seeds,
    data seeds); None when the cube has one seed per run."""
    design = crossed_design(ds)
    if design is None:
        return None
    runs = ds[cube.SEED].to_index()
    pos = runs.get_indexer(list(seeds))
    inits = np.asarray(ds[cube.INIT_SEED].values)[pos]
    datas = np.asarray(ds[cube.DATA_SEED].values)[pos]
    i_idx = np.searchsorted(np.asarray(design["init"]), inits)
    j_idx = np.searchsorted(np.asarray(design["data"]), datas)
    return i_idx, j_idx, design["init"], design["data"]


def to_crossed(values: np.ndarray, i_idx: np.ndarray, j_idx: np.ndarray, n_init: int, n_data: int) -> np.ndarray:
    """A (..., seed) array as (..., init, data), NaN where the design has no run (the paired tests' layout,
    :meth:`~initmem.models.paired.CrossedSeeds.grid`)."""
    return CrossedSeeds(np.asarray(i_idx), np.asarray(j_idx), int(n_init), int(n_data)).grid(values)


def _curve_tables(ds: xr.Dataset, data: MemoryData, index: tuple[np.ndarray, np.ndarray, list, list]
                  ) -> tuple[np.ndarray, np.ndarray] | None:
    """(pipeline, epoch, sigma_w, init, data) test accuracy of the analysis's runs at each evaluated epoch, and
    the epochs; None when the cube has no test-accuracy curves."""
    if cube.TEST_ACC not in ds.data_vars or cube.EPOCH not in ds[cube.TEST_ACC].dims:
        return None
    acc = ds[cube.TEST_ACC].sel({cube.PIPELINE: data.pipelines, cube.SIGMA: data.sigma_w, cube.SEED: data.seeds})
    acc = acc.transpose(cube.PIPELINE, cube.EPOCH, cube.SIGMA, cube.SEED)
    vals = np.where(data.used[:, None, :, :], acc.values.astype(float), np.nan)
    evaluated = np.isfinite(vals).any(axis=(0, 2, 3))
    i_idx, j_idx, inits, datas = index
    return (to_crossed(vals[:, evaluated], i_idx, j_idx, len(inits), len(datas)),
            np.asarray(acc[cube.EPOCH].values)[evaluated])


def _frequentist(y: np.ndarray, sigma_w: np.ndarray, margin: float | None, alpha: float) -> dict[str, Any] | str:
    """One pipeline's components and draw verdict on its largest complete init x data block; a reason string
    when fewer than two init or two data seeds are complete."""
    y, rows, cols = complete_block(y)
    if rows.size < 2 or cols.size < 2:
        return (f"only {rows.size} init x {cols.size} data seeds complete at every sigma_w (at least 2 x 2 "
                "are needed)")
    return crossed_components(y, alpha=alpha, sigma_w=sigma_w).as_dict(margin=margin)


def _bayes(y: np.ndarray, pipes: list[str], sigma_w: np.ndarray, seeds: tuple[list, list], margin: float | None,
           alpha: float, fit: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The crossed random-effects posterior of the pipelines (one fit), in the summary's ``bayes`` shape, and the
    sampler's flags that survived its retry (the posterior is then reported, and the flags said)."""
    model = CrossedModel(y, pipelines=pipes, sigma_w=sigma_w, init_seeds=seeds[0], data_seeds=seeds[1])
    model.fit(**fit)
    keep = ("sd_init", "sd_data", "sd_resid", "init_share", "p_sd_init_gt_margin")
    flags = [f"the crossed model's sampler: {f}" for f in model.diagnostics()["flags"]]
    return {p: {k: v for k, v in entry.items() if k in keep}
            for p, entry in model.summary(margin=margin, alpha=alpha).items()}, flags


def crossed_block(ds: xr.Dataset, data: MemoryData, *, margin: float | None, alpha: float, draws: int, tune: int,
                  chains: int, seed: int, progress: bool = False) -> tuple[dict[str, Any] | None, list[str]]:
    """summary.json's ``crossed`` block for a cube with a crossed seed design (None otherwise), and notes.

    Parameters
    ----------
    ds : xarray.Dataset
        The cube.
    data : MemoryData
        The analysis's table (the runs the scale verdict uses, NaN elsewhere).
    margin : float or None
        The draw verdict's margin on SD_init in the metric's units (``Margins.draw_margin``,
        results/margins.py); None: no verdict.
    alpha : float
        Each bound is one-sided at 1 - alpha; the draw verdict's false rate at the margin is at most alpha.
    draws, tune, chains, seed : int
        The Bayesian crossed model's sampler settings.
    progress : bool
        Show the sampler's progress bar.

    Returns
    -------
    (dict or None, list of str)
        The block in :class:`~initmem.results.records.Crossed`'s shape, and notes for pipelines left out of it.
    """
    index = crossed_index(ds, data.seeds)
    if index is None:
        return None, []
    i_idx, j_idx, inits, datas = index
    table = to_crossed(data.y, i_idx, j_idx, len(inits), len(datas))        # (pipeline, sigma_w, init, data)
    curves = _curve_tables(ds, data, index)
    pipelines: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for a, pipe in enumerate(data.pipelines):
        if pipe in data.skipped:
            continue
        levels = np.isfinite(table[a]).any(axis=(1, 2))
        entry = _frequentist(table[a][levels], data.sigma_w[levels], margin, alpha)
        if isinstance(entry, str):
            notes.append(f"pipeline {pipe!r}: no draw verdict: {entry}")
            continue
        if curves is not None:
            entry["init_share_curve"] = init_share_curve(curves[0][a][:, levels], curves[1])
        pipelines[pipe] = entry
    if pipelines:
        fitted = [a for a, p in enumerate(data.pipelines) if p in pipelines]
        try:
            bayes, flags = _bayes(table[fitted], [data.pipelines[a] for a in fitted], data.sigma_w,
                                  (inits, datas), margin, alpha, {"draws": draws, "tune": tune, "chains": chains,
                                                                  "seed": seed, "progress": progress})
            notes += flags
        except UserError as exc:   # a pipeline the model cannot take (a level with no runs): the bounds stand
            notes.append(f"the crossed model was not fitted: {exc}")
            bayes = {}
        for pipe, post in bayes.items():
            pipelines[pipe]["bayes"] = post
    block = {"margin": margin, "alpha": alpha, "units": FRACTION if data.is_accuracy else METRIC_UNITS,
             "n_init": len(inits), "n_data": len(datas), "pipelines": pipelines}
    return block, notes


__all__ = ["DRAW_MARGIN_POINTS", "crossed_block", "crossed_index", "to_crossed"]
