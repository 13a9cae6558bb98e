"""How often the survivorship warning fires when lost runs pile up at large sigma_w, and how often it fires falsely.

The warning (models/summaries.py, "missingness") reads ``MemoryData.missingness_p``: the Bonferroni combination
min(1, 2 min(p_omnibus, p_trend)) of the chi-square permutation test of the level x lost table (blind to the order
of sigma_w) and the exact Cochran-Armitage trend test in log sigma_w (models/data.py ``_trend_test``).

Held-out design (paper scale, 7 sigma_w levels x 5 seeds, a gaussian metric without memory whose largest level has
9 times the noise variance): the 2 worst seeds at the largest sigma_w and the worst at the next are lost as
missing runs. Built as cubes and read through ``prepare_data``, as ``initmem analyze`` does.

Nulls: the same 7 x 5 table, each run lost with probability ``--loss`` whatever its sigma_w (tables with no loss
are dropped: no test, no warning); a rate is credibly above alpha when its count exceeds the binomial 0.99
quantile at alpha.

    python studies/survivorship_trend.py [--reps 100] [--null-reps 2000] [--loss 0.1]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from initmem import cube
from initmem.models.data import _missingness_tests, prepare_data
from initmem.names import ALPHA
from initmem.simulate import SimPipeline, simulate_cube

LEVELS, SEEDS = 7, 5
NOISIER = 9.0   # the top level's noise variance, relative to the others'


def held_out_cube(rng_seed: int):
    """One cube of the held-out design with its 3 lost runs recorded as missing."""
    ds = simulate_cube([SimPipeline("flat", sigma_sd=0.0, seed_sd=1.0, residual_sd=1.0, family="gaussian",
                                    n_sigma=LEVELS, n_seed=SEEDS)], seed=rng_seed)
    rng = np.random.default_rng(10_000 + rng_seed)
    y = ds[cube.SELECTED_TEST_ACC].values.astype(float).copy()
    y[0, -1] += (np.sqrt(NOISIER) - 1.0) * rng.standard_normal(SEEDS)    # the top level's extra noise
    status = ds[cube.STATUS].values.copy()
    status[0, -1, np.argsort(y[0, -1])[:2]] = cube.MISSING                 # the 2 worst seeds at the top
    status[0, -2, np.argsort(y[0, -2])[:1]] = cube.MISSING                 # the worst at the next
    return ds.assign({cube.SELECTED_TEST_ACC: (cube.CELL_DIMS, y), cube.STATUS: (cube.CELL_DIMS, status)})


def held_out(reps: int) -> dict[str, int]:
    fired = {"omnibus": 0, "trend": 0, "combined (the warning)": 0}
    for r in range(reps):
        d = prepare_data(held_out_cube(r), cube.SELECTED_TEST_ACC, "gaussian", gate="all", seed=r)
        ps = {"omnibus": d.missingness_omnibus_p["flat"], "trend": d.missingness_trend_p["flat"],
              "combined (the warning)": d.missingness_p["flat"]}
        for k, p in ps.items():
            fired[k] += p is not None and p < ALPHA
    return fired


def nulls(reps: int, loss: float, seed: int = 0) -> tuple[dict[str, int], int]:
    rng = np.random.default_rng(seed)
    obs = np.ones((LEVELS, SEEDS), dtype=bool)
    fired = {"omnibus": 0, "trend": 0, "combined (the warning)": 0, "either at alpha (not used)": 0}
    n = 0
    while n < reps:
        lost = rng.random((LEVELS, SEEDS)) < loss
        if not lost.any():
            continue
        n += 1
        got = _missingness_tests(lost, obs, rng)
        fired["omnibus"] += got["omnibus"] < ALPHA
        fired["trend"] += got["trend"] < ALPHA
        fired["combined (the warning)"] += got["combined"] < ALPHA
        fired["either at alpha (not used)"] += min(got["omnibus"], got["trend"]) < ALPHA
    return fired, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100, help="held-out cubes")
    ap.add_argument("--null-reps", type=int, default=2000, help="null tables with at least one lost run")
    ap.add_argument("--loss", type=float, default=0.1, help="per-run loss probability of the nulls")
    args = ap.parse_args()
    bound = int(stats.binom.ppf(0.99, args.null_reps, ALPHA))
    print(f"survivorship warning, alpha = {ALPHA:g}; 7 sigma_w levels x 5 seeds")
    print(f"{'design':<58} {'test':<28} {'fired':>11} {'rate':>6}")
    for k, v in held_out(args.reps).items():
        print(f"{'held-out: 2 lost at the top sigma_w, 1 at the next':<58} {k:<28} {v:>5}/{args.reps:<5} "
              f"{v / args.reps:>6.3f}")
    fired, n = nulls(args.null_reps, args.loss)
    for k, v in fired.items():
        flag = "  ABOVE alpha" if v > bound else ""
        print(f"{f'null: each run lost w.p. {args.loss:g}, any sigma_w':<58} {k:<28} {v:>5}/{n:<5} {v / n:>6.3f}"
              f"{flag}")
    print(f"(a null rate is credibly above alpha when its count exceeds binom.ppf(0.99, {n}, {ALPHA:g}) = {bound})")


if __name__ == "__main__":
    main()
