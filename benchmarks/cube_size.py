"""Size of the paper preset's cube (5 pipelines x 7 sigma_w x 5 seeds, ResNet-9, CIFAR-10 test set).

Computes the uncompressed size of every variable from the layout and measures the compressed
NetCDF size by writing a synthetic cube of that exact shape with ``initmem.cube.write_cube``.

    python benchmarks/cube_size.py [--epochs 200 5000] [--seeds 5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _synth import PAPER_PIPELINES, PAPER_SIGMA, RESNET9_KERNELS, synthetic_cube

from initmem import cube


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--epochs", type=int, nargs="+", default=[200, 5000])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n-test", type=int, default=10_000)
    args = ap.parse_args()
    P, S, K, L = len(PAPER_PIPELINES), len(PAPER_SIGMA), args.seeds, len(RESNET9_KERNELS)
    print(f"layout: {P} pipelines x {S} sigma_w x {K} seeds = {P * S * K} cells, {L} kernels (resnet9), "
          f"{args.n_test} test examples")
    for epochs in args.epochs:
        ds = synthetic_cube(list(PAPER_PIPELINES), list(PAPER_SIGMA), list(range(K)), epochs=epochs,
                            n_test=args.n_test)
        raw = {name: ds[name].nbytes for name in ds.data_vars}
        curves = sum(raw[v] for v in cube.CURVE_VARS)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cube.nc"
            t0 = time.perf_counter()
            cube.write_cube(ds, path)
            seconds = time.perf_counter() - t0
            size = path.stat().st_size
        total = sum(raw.values())
        print(f"epochs {epochs}: raw {total / 1e6:.1f} MB ({len(cube.CURVE_VARS)} curves {curves / 1e6:.1f} MB, "
              "per-layer "
              f"{sum(raw[v] for v in cube.LAYER_VARS if v in raw) / 1e6:.1f} MB, {cube.TEST_PRED} "
              f"{raw[cube.TEST_PRED] / 1e6:.1f} MB, run vars "
              f"{sum(raw[v] for v in cube.RUN_VARS) / 1e3:.1f} kB); NetCDF zlib-4 {size / 1e6:.1f} MB "
              f"(ratio {total / size:.2f}), written in {seconds:.1f} s")


if __name__ == "__main__":
    main()
