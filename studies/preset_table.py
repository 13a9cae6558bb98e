"""Per-pipeline design table of a collected cube: does each pipeline do what the preset needs?

Why this exists: a preset is designed so that some pipelines remember and others forget, and
every cell must interpolate for the selected metric to mean "at interpolation". Before the
statistics run, this prints, per pipeline, what the design rests on: cells that interpolated,
the spread across sigma_w of the seed-mean final and selected test accuracy (points), the radial
memory (slope of log seed-mean final kernel norm on log sigma_w), and how often the validation
accuracy of the selected checkpoint is saturated at 1. docs/reading-the-demo.md quotes it.

    python studies/preset_table.py runs/quick/cube.nc
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from initmem import cube


def spread_points(da: xr.DataArray, ok: xr.DataArray) -> float:
    """Max minus min over sigma_w of the seed mean (ok cells only), in points."""
    m = da.where(ok).mean(cube.SEED)
    return float(m.max() - m.min()) * cube.points_scale(str(da.name))


def last_epoch(da: xr.DataArray) -> xr.DataArray:
    """The pipeline's last recorded epoch (pipelines of a cube may have different horizons)."""
    return da.dropna(cube.EPOCH, how="all").isel({cube.EPOCH: -1})


def radial_slope(da: xr.DataArray, ok: xr.DataArray) -> float:
    final = last_epoch(da).where(ok).mean(cube.SEED)
    x = np.log(final[cube.SIGMA].values)
    y = np.log(final.values)
    keep = np.isfinite(y)
    return float(np.polyfit(x[keep], y[keep], 1)[0]) if keep.sum() >= 2 else float("nan")


def table(ds: xr.Dataset) -> list[dict[str, object]]:
    threshold = float(ds.attrs[cube.A_INTERP_THRESHOLD])
    rows = []
    for p in ds[cube.PIPELINE].values:
        d = ds.sel({cube.PIPELINE: p})
        ok = cube.ok_cells(ds).sel({cube.PIPELINE: p})
        interp = (d[cube.TRAIN_ACC].max(cube.EPOCH) >= threshold) & ok
        rows.append({
            "pipeline": str(p),
            "interpolated": f"{int(interp.sum())}/{int(ok.size)}",
            "min final train acc": float(last_epoch(d[cube.TRAIN_ACC]).where(ok).min()),
            "final spread (pts)": spread_points(d[cube.FINAL_TEST_ACC], ok),
            "selected spread (pts)": spread_points(d[cube.SELECTED_TEST_ACC], ok),
            "radial slope": radial_slope(d[cube.KERNEL_NORM], ok),
            "val saturated": float((d[cube.SELECTED_VAL_ACC].where(ok) >= 1.0).sum()) / max(int(ok.sum()), 1),
        })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cube")
    args = ap.parse_args()
    rows = table(cube.open_cube(args.cube))
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


if __name__ == "__main__":
    main()
