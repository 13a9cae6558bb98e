"""Everything a figure or a report needs, read from an analysis folder (and its cube), never recomputed.

Why it lives in the plot package: the figure functions (:mod:`initmem.plot`) take an analysis
folder or a loaded :class:`Analysis`, and the report (:mod:`initmem.reports`, one layer up) and
``initmem export`` call those same functions, so the loader sits with the figures, below both.
:func:`find_cube` is where the analysed cube is looked for (the report's provenance and export's
checksum use it). A report only presents: it reads ``summary.json`` and ``collapse.json`` through
:mod:`initmem.results` (typed records; fields in docs/analysis-folder.md), ``curves.nc`` when the
cube had curves, and the cube itself for the raw per-run values. It never opens ``posterior.nc``,
trains or samples. Missing optional parts are not errors: they become notes with a reason
(:attr:`Analysis.notes`).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import yaml

from initmem import cube as cubemod
from initmem import results as R
from initmem.errors import UserError
from initmem.grid import Grid, parse_grid


@dataclass
class Analysis:
    """One analysis folder, loaded: the JSON outputs as records, the curves and cube as datasets."""

    dir: Path
    summary: R.Summary
    collapse: R.CollapseResult | None = None
    curves: xr.Dataset | None = None
    cube: xr.Dataset | None = None
    cube_path: Path | None = None
    notes: list[str] = field(default_factory=list)  # why an optional part is missing

    @property
    def pipelines(self) -> list[str]:
        return list(self.summary.pipelines)

    def pipe(self, name: str) -> R.PipelineResult:
        return self.summary.pipelines[name]

    @property
    def metric(self) -> str:
        return self.summary.metric

    @property
    def is_accuracy(self) -> bool:
        """Accuracy-like metrics are shown in percentage points: as the analysis decided it (summary.json's
        ``is_accuracy``), else from the family and the metric's name (folders written before it was recorded)."""
        recorded = getattr(self.summary, "is_accuracy", None)
        if recorded is not None:
            return bool(recorded)
        return self.summary.family == "binomial" or cubemod.points_scale(self.metric) != 1.0

    @property
    def scale(self) -> float:
        """Outcome units -> the units the report speaks in (points for accuracies)."""
        return cubemod.points_scale(cubemod.SELECTED_TEST_ACC if self.is_accuracy else self.metric)

    @property
    def unit(self) -> str:
        return "points" if self.is_accuracy else "units"

    @property
    def delta(self) -> float:
        return self.summary.delta

    @property
    def digits(self) -> int:
        """Decimals that resolve delta in the shown unit (1 for points with delta = 1 point)."""
        shown = self.delta * self.scale
        return max(1, 1 - math.floor(math.log10(shown))) if shown > 0 else 2

    def cube_has(self, *names: str) -> bool:
        return self.cube is not None and all(n in self.cube.data_vars for n in names)

    def grid(self) -> Grid | None:
        """The grid file the cube was collected from, validated as a :class:`~initmem.grid.Grid` (None
        for simulated or imported cubes, and for a grid this version of initmem cannot read)."""
        if self.cube is None:
            return None
        text = self.cube.attrs.get(cubemod.A_GRID)
        if not isinstance(text, str) or not text.strip():
            return None
        try:
            return parse_grid(yaml.safe_load(text), source="the cube's grid attribute")
        except (yaml.YAMLError, UserError) as exc:
            note = f"the cube's grid file is not one this initmem reads, so the methods omit the design ({exc})"
            if note not in self.notes:
                self.notes.append(note)
            return None


def find_cube(analysis_dir: Path, recorded: Any) -> Path | None:
    """The analysed cube: as recorded, else relative to the folder or its parent, else DIR/../cube.nc."""
    candidates: list[Path] = []
    if isinstance(recorded, str) and recorded:
        p = Path(recorded)
        candidates += [p] if p.is_absolute() else [p, analysis_dir / p, analysis_dir.parent / p]
        candidates += [analysis_dir / p.name, analysis_dir.parent / p.name]
    candidates += [analysis_dir.parent / R.CUBE_NC, analysis_dir / R.CUBE_NC]
    for c in candidates:
        if c.is_file():
            return c
    return None


def load_analysis(analysis_dir: str | Path) -> Analysis:
    """Read an analysis folder once, for several figures.

    Parameters
    ----------
    analysis_dir : str or pathlib.Path
        A folder written by ``initmem analyze`` or ``initmem run``.

    Returns
    -------
    Analysis
        Its summary, collapse test, curves and the analysed cube (when found; ``notes`` says what was not).

    Raises
    ------
    UserError
        No such folder, or no readable summary.json in it.
    """
    d = R.check_folder(analysis_dir)
    summary = R.load_summary(d)
    a = Analysis(dir=d, summary=summary, collapse=R.load_collapse(d))
    curves_path = d / R.CURVES_NC
    if curves_path.is_file():
        try:
            with xr.open_dataset(curves_path, engine="netcdf4") as f:
                a.curves = f.load()
        except (OSError, ValueError) as exc:
            a.notes.append(f"curves.nc could not be read ({exc.__class__.__name__})")

    cube_path = find_cube(d, summary.cube)
    if cube_path is None:
        a.notes.append(f"the analysed cube ({summary.cube or 'path not recorded'}) was not found")
    else:
        try:
            a.cube = cubemod.open_cube(cube_path)
            a.cube_path = cube_path
        except UserError as exc:
            a.notes.append(str(exc))
    if a.cube is not None:
        a.cube = _align_pipelines(a.cube, a.pipelines, a.notes)
    return a


def _align_pipelines(ds: xr.Dataset, pipelines: list[str], notes: list[str]) -> xr.Dataset | None:
    have = [str(p) for p in ds[cubemod.PIPELINE].values.tolist()]
    missing = [p for p in pipelines if p not in have]
    if missing:
        notes.append(f"the cube does not hold pipeline(s) {', '.join(missing)} of summary.json")
        return None
    return ds.sel({cubemod.PIPELINE: pipelines})


ok_mask = cubemod.ok_cells  # cells with a usable result (status ok), (pipeline, sigma_w, seed)


def finite(values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]


def as_analysis(source: Analysis | str | os.PathLike) -> Analysis:
    """An :class:`Analysis` from itself or from an analysis folder's path (loaded; bad input is a
    ``UserError``): every figure function accepts either."""
    return source if isinstance(source, Analysis) else load_analysis(source)


def num(v: Any) -> float:
    """A statistic as a float; NaN for null or anything that is not a number."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def q(d: R.Quantiles | R.PpcStat | None, key: str = "median") -> float:
    """One quantile of a record (NaN when the record or the value is absent)."""
    return num(getattr(d, key, None)) if d is not None else math.nan


def failed_checks(info: R.PipelineResult) -> list[str]:
    """The model checks a pipeline failed: the analysis's own list, else the same rule
    (models/checks.py: either tail of 0.05 split over the checks) applied to its p-values."""
    from initmem.models.checks import failures

    return list(info.checks_failed) or failures({k: {"p_value": v.p_value} for k, v in info.ppc.items()})


def seed_design(a: Analysis) -> str | None:
    """``paired`` / ``independent`` as the cube records it (collected grids are paired); None without a cube."""
    if a.cube is None:
        return None
    return cubemod.seed_design(a.cube)


@dataclass(frozen=True)
class VerdictLevels:
    """The thresholds the analysis decided at (summary.json's ``thresholds``): alpha, the bar on
    P(spread > delta) for "remembers", on P(spread < delta) for "forgets", and the intersection-union
    test's level."""

    alpha: float
    remembers: float
    forgets: float | None      # None: the model's route to "forgets" was closed (a look finer than its draws)
    iut_alpha: float


def verdict_levels(a: Analysis) -> VerdictLevels:
    """The analysis's own thresholds (a sequential run decides at a smaller alpha than 0.05): summary.json's typed
    ``thresholds`` (models/rules.py, ``thresholds``). A summary.json written before that field has them rebuilt
    where it is read (models/rules.py, ``stored_thresholds``), so this reads fields, never the rule's prose."""
    from initmem.models.rules import stored_thresholds
    from initmem.models.sequential import Spending

    s = a.summary
    sp = getattr(s, "spending", None)
    spend = (Spending(sp.alpha, tuple(sp.looks), sp.look - 1, sp.design)
             if sp is not None and sp.looks and sp.look is not None else None)
    t = stored_thresholds(getattr(s, "thresholds", None), s.alpha, spend, s.verdict_rule,
                          sp.draws if sp is not None else None)
    return VerdictLevels(t.alpha, t.remembers, t.forgets, t.iut_alpha)


__all__ = ["Analysis", "VerdictLevels", "as_analysis", "failed_checks", "find_cube", "finite", "load_analysis", "num",
           "ok_mask", "q", "seed_design", "verdict_levels"]
