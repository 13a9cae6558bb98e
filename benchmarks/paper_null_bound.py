"""The paper-scale null at 5 seeds: "forgets" by the intersection-union test, with each SD estimated and known.

    python benchmarks/paper_null_bound.py [--cubes 10] [--seeds 5]

The simulator's paper-scale null (tests/test_calibration.py: 7 sigma_w levels, 10,000 test examples, seed and
run noise 0.02 logit each, no memory) says "forgets" in about half its pipelines at 5 seeds
(docs/memory-model.md, "Calibration"). This script asks whether the rule or the data is the limit. It runs
the intersection-union test of "forgets" twice on the same null tables: as the rule runs it (every pair's SD
estimated from its own seeds, a t with n - 1 degrees of freedom), and with every pair's SD known exactly (a z
test; the SDs are measured once on 400 seeds of the same simulator). The known-SD test is a reference for the
design-based route: the same test without the cost of estimating any SD. Both at the rule's level
(alpha x 0.8) and at alpha; delta = 1 point.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from initmem.models.paired import forgets_levels
from initmem.names import ALPHA
from initmem.simulate import SimPipeline, simulate_cube

LEVELS, PIPES, DELTA_POINTS = 7, 24, 1.0


def null_tables(n_pipe: int, n_seed: int, seed: int) -> np.ndarray:
    """(pipelines, levels, seeds) selected test accuracies in points of the simulator's paper-scale null."""
    specs = [SimPipeline(f"n{k}", sigma_sd=0.0, seed_sd=0.02, residual_sd=0.02, n_sigma=LEVELS, n_seed=n_seed)
             for k in range(n_pipe)]
    return simulate_cube(specs, n_test=10_000, seed=seed)["selected_test_acc"].values * 100.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cubes", type=int, default=10, help=f"null cubes of {PIPES} pipelines")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    j, k = np.triu_indices(LEVELS, 1)
    many = null_tables(8, 400, seed=1)
    sd_pair = np.sqrt(np.mean([np.var(t[j] - t[k], axis=1, ddof=1) for t in many], axis=0))
    print(f"run SD {many.std(axis=2, ddof=1).mean():.3f} points; SD of a paired difference "
          f"{sd_pair.min():.3f}-{sd_pair.max():.3f} points (400 seeds)")
    tables = np.concatenate([null_tables(PIPES, args.seeds, seed=40 + c) for c in range(args.cubes)])
    d = tables[:, j] - tables[:, k]
    mean, se = np.abs(d.mean(axis=2)), d.std(axis=2, ddof=1) / np.sqrt(args.seeds)
    print(f"{len(tables)} null pipelines, {args.seeds} seeds, delta {DELTA_POINTS} point")
    print("| level | IUT, SD estimated (the rule's test) | IUT, SD known (best case) |\n|---|---|---|")
    for level in (forgets_levels(ALPHA)[0], ALPHA):
        est = (mean + stats.t.isf(level, args.seeds - 1) * se).max(axis=1) < DELTA_POINTS
        known = (mean + stats.norm.isf(level) * sd_pair / np.sqrt(args.seeds)).max(axis=1) < DELTA_POINTS
        print(f"| {level:.2f} | {est.mean():.3f} | {known.mean():.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
