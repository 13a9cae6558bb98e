"""How much scatter do the machine's CPU kernels add to a cube?

Training is bitwise reproducible on one machine, but a matrix product summed in another order (AVX2 instead of
AVX-512 kernels, another BLAS) changes the last bits of every step, and over thousands of steps a run can land
elsewhere. This study holds the runs of two cubes of the same cells trained under different kernels against each
other (the same grid, seeds and data; PyTorch's ``ATEN_CPU_CAPABILITY`` picks the kernels):

    ATEN_CPU_CAPABILITY=avx2 initmem collect studies/reruns/kernels_8.yaml --out runs/kernels-avx2
    python studies/kernel_scatter.py runs/rerun-quick/cube.nc runs/kernels-avx2/cube.nc

Per pipeline and sigma_w: how many runs are bitwise the same, and the SD of the per-run difference in
selected test accuracy (points) against the SD of the runs themselves across seeds; per pipeline the extreme
pair's mean difference (the spread's main contrast) under each kernel, the SE of their difference from the
per-seed differences, and one cube's own paired SE.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np

from initmem import cube


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reference", help="a cube trained under this machine's default kernels")
    ap.add_argument("other", help="a cube of (some of) the same cells trained under other kernels")
    args = ap.parse_args()
    a, b = cube.open_cube(args.reference), cube.open_cube(args.other)
    for path in (args.reference, args.other):
        print(f"{path}: sha256 {hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]}")
    for name, ds in (("reference", a), ("other", b)):
        print(f"{name}: torch CPU capability {ds.attrs.get('cpu_capability', 'not recorded')}")
    seeds = np.intersect1d(a[cube.SEED].values, b[cube.SEED].values)
    pipes = [p for p in b[cube.PIPELINE].values if p in set(a[cube.PIPELINE].values)]
    print(f"{len(pipes)} pipelines x {b.sizes[cube.SIGMA]} sigma_w x {seeds.size} seeds in common")
    print("| pipeline | sigma_w | bitwise equal | SD of the difference (pt) | SD across seeds (pt) |")
    print("|---|---|---|---|---|")
    metric = cube.SELECTED_TEST_ACC
    for p in pipes:
        ya = 100 * a[metric].sel({cube.PIPELINE: p, cube.SEED: seeds}).values
        yb = 100 * b[metric].sel({cube.PIPELINE: p, cube.SEED: seeds}).values
        for i, s in enumerate(b[cube.SIGMA].values):
            ok = np.isfinite(ya[i]) & np.isfinite(yb[i])
            d = yb[i][ok] - ya[i][ok]
            print(f"| {p} | {s:g} | {int(np.sum(d == 0))}/{ok.sum()} | {np.std(d, ddof=1):.2f} | "
                  f"{np.std(ya[i][ok], ddof=1):.2f} |")
    print()
    print("| pipeline | extreme pair, reference (pt) | other kernels (pt) | difference | "
          "its SE (per-seed differences) | one cube's SE |")
    print("|---|---|---|---|---|---|")
    for p in pipes:
        ya = 100 * a[metric].sel({cube.PIPELINE: p, cube.SEED: seeds}).values
        yb = 100 * b[metric].sel({cube.PIPELINE: p, cube.SEED: seeds}).values
        da, db = ya[0] - ya[-1], yb[0] - yb[-1]
        ok = np.isfinite(da) & np.isfinite(db)
        n = np.sqrt(ok.sum())
        se_diff, se_one = np.std(db[ok] - da[ok], ddof=1) / n, np.std(da[ok], ddof=1) / n
        print(f"| {p} | {da[ok].mean():.2f} | {db[ok].mean():.2f} | {db[ok].mean() - da[ok].mean():+.2f} | "
              f"{se_diff:.2f} | {se_one:.2f} |")


if __name__ == "__main__":
    main()
