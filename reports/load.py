"""Everything a report needs, read from an analysis folder (and its cube), never recomputed.

A report only presents: it reads ``summary.json`` (SPEC.md section 3), ``collapse.json`` and
``curves.nc`` when the cube had curves, and the cube itself for the raw per-run values. It never
opens ``posterior.nc``, trains or samples. Missing optional parts are not errors: they become
skipped sections with a reason (:attr:`Analysis.skipped`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import yaml

from initmem import cube as cubemod
from initmem.errors import UserError

SUMMARY_SCHEMA = "initmem.summary/1"


@dataclass
class Analysis:
    """One analysis folder, loaded: the JSON outputs as dicts, the curves and cube as datasets."""

    dir: Path
    summary: dict[str, Any]
    collapse: dict[str, Any] | None = None
    curves: xr.Dataset | None = None
    cube: xr.Dataset | None = None
    cube_path: Path | None = None
    notes: list[str] = field(default_factory=list)  # why an optional part is missing

    @property
    def pipelines(self) -> list[str]:
        return list(self.summary.get("pipelines", {}))

    @property
    def metric(self) -> str:
        return str(self.summary.get("metric", "metric"))

    @property
    def is_accuracy(self) -> bool:
        """Accuracy-like metrics are shown in percentage points."""
        return self.summary.get("family") == "binomial" or self.metric in cubemod.ACCURACY_VARS

    @property
    def delta(self) -> float:
        return float(self.summary.get("delta", 0.01))

    @property
    def digits(self) -> int:
        """Decimals that resolve delta in the shown unit (1 for points with delta = 1 point)."""
        import math

        shown = self.delta * (100.0 if self.is_accuracy else 1.0)
        return max(1, 1 - math.floor(math.log10(shown))) if shown > 0 else 2

    def cube_has(self, *names: str) -> bool:
        return self.cube is not None and all(n in self.cube.data_vars for n in names)

    def grid(self) -> dict[str, Any] | None:
        """The grid file the cube was collected from (None for simulated or imported cubes)."""
        if self.cube is None:
            return None
        text = self.cube.attrs.get("grid")
        if not isinstance(text, str) or not text.strip():
            return None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
        return data if isinstance(data, dict) else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} must hold a JSON object")
    return data


def _find_cube(analysis_dir: Path, recorded: Any) -> Path | None:
    """The analysed cube: as recorded, else relative to the folder or its parent, else DIR/../cube.nc."""
    candidates: list[Path] = []
    if isinstance(recorded, str) and recorded:
        p = Path(recorded)
        candidates += [p] if p.is_absolute() else [p, analysis_dir / p, analysis_dir.parent / p]
        candidates += [analysis_dir / p.name, analysis_dir.parent / p.name]
    candidates += [analysis_dir.parent / "cube.nc", analysis_dir / "cube.nc"]
    for c in candidates:
        if c.is_file():
            return c
    return None


def load_analysis(analysis_dir: str | Path) -> Analysis:
    """Read an analysis folder; bad input (no folder, no summary.json) raises ``UserError``."""
    d = Path(analysis_dir)
    if not d.is_dir():
        raise UserError(f"no such analysis folder: {d} (run 'initmem analyze CUBE --out {d}' first)")
    summary_path = d / "summary.json"
    if not summary_path.is_file():
        raise UserError(f"{d} has no summary.json: run 'initmem analyze CUBE --out {d}' first")
    summary = _read_json(summary_path)
    if summary.get("schema") != SUMMARY_SCHEMA:
        raise UserError(f"{summary_path} has schema {summary.get('schema')!r}, expected {SUMMARY_SCHEMA!r}")
    if not isinstance(summary.get("pipelines"), dict) or not summary["pipelines"]:
        raise UserError(f"{summary_path} lists no pipelines")
    a = Analysis(dir=d, summary=summary)

    collapse_path = d / "collapse.json"
    if collapse_path.is_file():
        a.collapse = _read_json(collapse_path)
    curves_path = d / "curves.nc"
    if curves_path.is_file():
        try:
            with xr.open_dataset(curves_path, engine="netcdf4") as f:
                a.curves = f.load()
        except (OSError, ValueError) as exc:
            a.notes.append(f"curves.nc could not be read ({exc.__class__.__name__})")

    cube_path = _find_cube(d, summary.get("cube"))
    if cube_path is None:
        a.notes.append(f"the analysed cube ({summary.get('cube') or 'path not recorded'}) was not found")
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


def ok_mask(ds: xr.Dataset) -> xr.DataArray:
    """Cells with a usable result (status ok) as booleans (pipeline, sigma_w, seed)."""
    if "status" in ds.data_vars:
        return ds["status"] == cubemod.OK
    return cubemod.observed(ds)


def finite(values: Any) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]
