"""What each share of alpha spends over the looks of a sequential design: its own levels (models/sequential.py,
``Spending``: ``design_levels(looks, share x alpha)``) against the full-alpha levels multiplied by the share.

Each share of the rule is a one-sided t test of the seeds' paired differences (a pair, the peak contrast, the
intersection-union test's limiting pair) or the model's route, allotted share x alpha over the whole design.
Under the boundary null its statistics on nested seeds are t statistics of N(0, 1) differences, so a level
sequence's spending is the fraction of simulated paths that cross some look's boundary. The paths here come
from other seeds than the levels' own construction (seed 0).

    python studies/share_spending.py [--paths 4000000] [--looks 4,8,12,16] [--designs paired-t,paired-t/pocock]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from initmem.models.paired import FORGETS_IUT_SHARE, FORGETS_MODEL_SHARE, step_shares
from initmem.models.sequential import Spending, crossings, nested_t
from initmem.names import ALPHA

CHUNK = 1_000_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=4_000_000)
    ap.add_argument("--looks", default="4,8,12,16")
    ap.add_argument("--designs", default="paired-t,paired-t/pocock")
    args = ap.parse_args()
    looks = tuple(int(x) for x in args.looks.split(","))
    shares = {"intersection-union test": FORGETS_IUT_SHARE, "model's 'forgets'": FORGETS_MODEL_SHARE,
              "former extreme pair (0.75)": 0.75, "former fallback, 5 levels (0.25 / 9)": 0.25 / 9,
              "former fallback, 6 levels (0.25 / 14)": 0.25 / 14}
    for n_lev in (5, 6):
        ext, peak, fall = step_shares(n_lev)
        shares[f"extreme pair, {n_lev} levels"] = ext
        shares[f"peak contrast, {n_lev} levels"] = peak
        shares[f"fallback pair, {n_lev} levels"] = fall / (n_lev * (n_lev - 1) // 2 - 1)
    t0 = time.perf_counter()
    sets = {}
    for design in args.designs.split(","):
        full = [Spending(ALPHA, looks, k, design).level() for k in range(len(looks))]
        for name, share in shares.items():
            sets[(design, name, "own")] = [Spending(ALPHA, looks, k, design).level(share) for k in range(len(looks))]
            sets[(design, name, "multiplied")] = [share * a for a in full]
    hits = dict.fromkeys(sets, 0)
    n = 0
    for chunk in range(-(-args.paths // CHUNK)):
        m = min(CHUNK, args.paths - n)
        t_stat = nested_t(looks, m, np.random.default_rng(20261203 + chunk))
        n += m
        for key, levels in sets.items():
            hits[key] += crossings(t_stat, looks, levels)
    print("| design | share | allotted | own levels: spent / allotted | multiplied: spent / allotted |")
    print("| --- | --- | --- | --- | --- |")
    for design in args.designs.split(","):
        for name, share in shares.items():
            allot = share * ALPHA
            own, mult = hits[(design, name, "own")] / n, hits[(design, name, "multiplied")] / n
            se = np.sqrt(allot / n) / allot
            print(f"| {design} | {name} | {allot:.5f} | {own / allot:.3f} | {mult / allot:.3f} (SE {se:.3f}) |")
    print(f"\nlooks {args.looks}, {n:,} paths, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
