"""Time the collapse test, bootstrap included, on a simulated cube of paper scale.

8 pipelines x 7 sigma_w x 5 seeds x 200 epochs, truth = T_sgd: the coordinate-swap permutation
test (all 2^7 distinct patterns, the leave-one-pipeline-out analysis recomputed for each) and
200 bootstrap replicates (seeds redrawn, analysis rerun), plus forgetting times with the same
number of seed-bootstrap draws. Goal: <= 60 s on 2 cores. Prints the wall time without the
bootstrap (permutation test included) and of the whole test.

    .venv/bin/python benchmarks/collapse_speed.py [--n-boot 200] [--memory radial]
"""

from __future__ import annotations

import argparse
import time

from initmem import cube
from initmem.simulate import SimPipeline, simulate_cube
from initmem.stats.collapse import collapse_test

GOAL_S = 60.0


def paper_pipelines() -> list[SimPipeline]:
    base = {"n_sigma": 7, "n_seed": 5, "epochs": 200}
    return [
        SimPipeline("sgd_low_lr", optimizer="sgd", lr=0.01, batch_size=32, **base),
        SimPipeline("sgd_l2", optimizer="sgd", lr=0.1, batch_size=32, weight_decay=5e-4, momentum=0.9,
                    schedule="cosine", **base),
        SimPipeline("sgd_mom_wd", optimizer="sgd", lr=0.05, batch_size=64, weight_decay=2e-3, momentum=0.9,
                    schedule="cosine", **base),
        SimPipeline("sgd_step", optimizer="sgd", lr=0.1, batch_size=128, weight_decay=5e-4, schedule="step", **base),
        SimPipeline("adam", optimizer="adam", lr=1e-3, batch_size=32, weight_decay=1e-4, **base),
        SimPipeline("adamw", optimizer="adamw", lr=2e-3, batch_size=64, weight_decay=0.05, **base),
        SimPipeline("adam_big", optimizer="adam", lr=3e-4, batch_size=256, **base),
        SimPipeline("sgd_b128", optimizer="sgd", lr=0.2, batch_size=128, weight_decay=1e-4, **base),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--memory", default="radial", choices=["radial", "functional"])
    args = ap.parse_args()
    ds = simulate_cube(paper_pipelines(), curves=True, truth_axis=cube.T_SGD, epochs=200, seed=0)
    print(f"cube: {dict(ds.sizes)}")
    t0 = time.perf_counter()
    res0 = collapse_test(ds, memory=args.memory, n_boot=0)
    one = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = collapse_test(ds, memory=args.memory, n_boot=args.n_boot)
    full = time.perf_counter() - t0
    print(f"analysis + permutation test ({res0['n_permutations']} patterns), no bootstrap: {one:.3f} s")
    print(f"collapse test with {args.n_boot} bootstrap replicates: {full:.1f} s "
          f"({full / max(one, 1e-9):.0f}x without)")
    print(f"verdict {res['verdict']}, best {res['best']}")
    print(f"goal <= {GOAL_S:.0f} s: {'met' if full <= GOAL_S else 'NOT met'}")


if __name__ == "__main__":
    main()
