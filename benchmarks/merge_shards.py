"""Merge time of 1,000 shards (the bound in docs/collect-runs.md: at most 60 s).

Generates N single-cell shards with the paper layout per cell (ResNet-9's 9 kernels, 10,000
test predictions, --epochs epochs) through the collector's own shard writer, then times
``initmem.collect.execution.shards.merge_dir`` (read, check, merge, write the cube atomically) twice:
the second run shows the rerun cost with a warm page cache. Then, with ``--jobs N`` (N > 1), the shards read
by one process and by N processes, alternately (``--pairs`` times, warm cache), and the two cubes compared.

    python benchmarks/merge_shards.py [--pipelines 5 --sigma 8 --seeds 25 --epochs 200] [--jobs 2 --pairs 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _synth import synthetic_cube

from initmem import cube
from initmem.collect.execution.shards import merge_dir, split_pack, write_shard


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pipelines", type=int, default=5)
    ap.add_argument("--sigma", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--n-test", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=1, help="also time the merge reading with this many processes")
    ap.add_argument("--pairs", type=int, default=2)
    args = ap.parse_args()
    pipes = [f"p{i}" for i in range(args.pipelines)]
    sigma = [2.0 ** (i - args.sigma // 2) for i in range(args.sigma)]
    seeds = list(range(args.seeds))
    n = len(pipes) * len(sigma) * len(seeds)
    with tempfile.TemporaryDirectory() as tmp:
        shards_dir = Path(tmp) / "shards"
        t0 = time.perf_counter()
        for p in pipes:
            ds = synthetic_cube([p], sigma, seeds, epochs=args.epochs, n_test=args.n_test, seed=len(p))
            cells = [(p, s, k) for s in sigma for k in seeds]
            for cell, part in split_pack(ds, cells).items():
                write_shard(part, shards_dir, cell, grid_hash="benchmark")
        gen = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in shards_dir.iterdir())
        print(f"generated {n} shards ({args.epochs} epochs, {args.n_test} test examples each; "
              f"{size / 1e6:.1f} MB) in {gen:.1f} s")
        runs = [("first", 1), ("rerun", 1)]
        if args.jobs > 1:
            runs += [(f"pair {i + 1}", j) for i in range(args.pairs) for j in (1, args.jobs)]
        cubes = {}
        for attempt, jobs in runs:
            t0 = time.perf_counter()
            report = merge_dir(shards_dir, Path(tmp) / "cube.nc", pipelines=pipes, sigma_w=sigma, seeds=seeds,
                               accepted_hashes={"benchmark"}, attrs={}, pipeline_defaults={}, jobs=jobs)
            seconds = time.perf_counter() - t0
            ok = int((report.ds[cube.STATUS].values == cube.OK).sum())
            cubes[jobs] = report.ds.drop_attrs()
            print(f"merge ({attempt}, {jobs} reading process(es)): {report.n_shards} shards -> {ok} ok cells in "
                  f"{seconds:.1f} s ({1000 * seconds / n:.1f} ms per shard); cube "
                  f"{(Path(tmp) / 'cube.nc').stat().st_size / 1e6:.1f} MB")
        if args.jobs > 1:
            same = cubes[1].identical(cubes[args.jobs])
            print(f"cube read by {args.jobs} processes identical to the one-process cube: {same}")


if __name__ == "__main__":
    main()
