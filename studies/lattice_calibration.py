"""The design-based tests on accuracies that move in steps of 1 / n_test: false verdicts with and without the SE floor.

With 2-4 seeds the per-seed differences of a pair of sigma_w levels are often all equal (SE 0) or nearly so, and a
t test that trusts that SE decides at any level (models/paired.py, ``_run_var_floor``). Each design: binomial runs
out of n_test (50, 100, 600) at accuracy 90, 97 or 99% (the top level), 2-4 seeds, 2, 3 or 5 levels, a ramp of
spread 0 or exactly delta (delta 1 point, 2 points or 3 test examples); models/designs.py,
``lattice_tables``. Columns: false "remembers" (the ordered test at alpha 0.05; spreads 0 and delta) and false
"forgets" (the intersection-union test at its share of alpha, 0.04; spread delta) with the SE

- ``none``: not floored (n_test not passed: the tests as for a gaussian metric);
- ``rule``: floored at one test example for the difference of two runs (``n_test`` passed: the analysis's rule);
- ``binomial``: floored at the binomial SE of a difference of two runs at the pair's mean accuracy, for comparison.

A last table: two levels exactly delta apart, 4 seeds, at the first look of the sequential design (looks 4, 8, 12,
16), where the intersection-union test alone decides "forgets" at a level of about 0.5%.

Run: ``python studies/lattice_calibration.py [n_tables]`` (default 4,000 tables per design; 100,000 for the look).
"""

from __future__ import annotations

import sys

import numpy as np
from scipy import stats

from initmem.models import paired
from initmem.models.designs import lattice_tables
from initmem.models.sequential import Spending
from initmem.names import ALPHA

IUT_ALPHA = paired.forgets_levels(ALPHA)[0]


def designs() -> list[tuple[int, float, float, int, int, float]]:
    """(n_test, top accuracy, delta, levels, seeds, spread in deltas) of every design of the study."""
    out = []
    for n_test in (50, 100, 600):
        for top in (0.9, 0.97, 0.99):
            for delta in sorted({0.01, 0.02, 3.0 / n_test}):
                for n_lev in (2, 3, 5):
                    for n_seed in (2, 3, 4):
                        for spread in (0.0, 1.0):
                            out.append((n_test, top, delta, n_lev, n_seed, spread))
    return out


def binomial_rates(tables: np.ndarray, n_test: int, delta: float) -> tuple[float, float]:
    """(remembers, forgets) rates with every pair's SE floored at the binomial SE of a difference of two runs at the
    pair's mean accuracy (half an example from 0 and 1): the alternative floor, not the rule's."""
    j, k = np.triu_indices(tables.shape[-2], 1)
    d = tables[..., j, :] - tables[..., k, :]
    n = d.shape[-1]
    q = np.clip(0.5 * (tables[..., j, :].mean(-1) + tables[..., k, :].mean(-1)), 0.5 / n_test, 1 - 0.5 / n_test)
    se = np.maximum(d.std(-1, ddof=1), np.sqrt(2 * q * (1 - q) / n_test)) / np.sqrt(n)
    ad, df = np.abs(d.mean(-1)), np.full(se.shape, n - 1.0)
    ext = (j == 0) & (k == tables.shape[-2] - 1)
    w_ext, _, w_fall = paired.step_shares(2 if j.size == 1 else 3)   # pairs only: the peak step left out here
    level = np.broadcast_to(ALPHA * np.where(ext, w_ext, w_fall / max(int((~ext).sum()), 1)), ad.shape)
    rem = (np.nan_to_num(paired._exceed_p(ad, se, df, delta, level), nan=1.0) <= level).any(-1)
    forg = (ad + stats.t.isf(IUT_ALPHA, df) * se).max(-1) < delta
    return float(rem.mean()), float(forg.mean())


def main(n: int = 4000) -> None:
    rng = np.random.default_rng(20240612)
    print(f"{n} tables per design; alpha {ALPHA} (\"remembers\"), {IUT_ALPHA:g} (\"forgets\")")
    print("| n_test | top | delta (points) | levels | seeds | spread | remembers: none / rule / binomial "
          "| forgets: none / rule / binomial |")
    print("|---|---|---|---|---|---|---|---|")
    worst = {"none": [0.0, 0.0], "rule": [0.0, 0.0], "binomial": [0.0, 0.0]}
    for n_test, top, delta, n_lev, n_seed, spread in designs():
        t = lattice_tables(n_test, top, delta, n_lev, n_seed, spread, n, rng)
        rates = {}
        for name, nt in (("none", None), ("rule", n_test)):
            rates[name] = (float(paired.remembers_at(t, delta, n_test=nt).mean()),
                           float((paired.forgets_bounds(t, IUT_ALPHA, n_test=nt) < delta).mean()))
        rates["binomial"] = binomial_rates(t, n_test, delta)
        for name, (r, f) in rates.items():
            worst[name][0] = max(worst[name][0], r)
            worst[name][1] = max(worst[name][1], f if spread else 0.0)
        rem = " / ".join(f"{rates[m][0]:.3f}" for m in worst)
        forg = " / ".join(f"{rates[m][1]:.3f}" for m in worst) if spread else "(true)"
        print(f"| {n_test} | {top:g} | {100 * delta:.3g} | {n_lev} | {n_seed} | {spread:g} | {rem} | {forg} |",
              flush=True)
    for name, (r, f) in worst.items():
        print(f"largest false rate, {name}: remembers {r:.3f} (allotment {ALPHA}), forgets {f:.3f} "
              f"(allotment {IUT_ALPHA:g})")
    look = Spending(ALPHA, looks=(4, 8, 12, 16), look=0)
    level = paired.forgets_levels(look)[0]
    big = 25 * n
    print(f"\ntwo levels exactly delta apart, 4 seeds, the sequential design's first look (IUT at {level:.4f}); "
          f"{big} tables")
    print("| n_test | top | delta (points) | forgets: none | forgets: rule |\n|---|---|---|---|---|")
    for n_test in (50, 100, 600):
        for top in (0.9, 0.97, 0.99):
            for delta in sorted({0.01, 0.02, 3.0 / n_test}):
                t = lattice_tables(n_test, top, delta, 2, 4, 1.0, big, rng)
                none = float((paired.forgets_bounds(t, level) < delta).mean())
                rule = float((paired.forgets_bounds(t, level, n_test=n_test) < delta).mean())
                print(f"| {n_test} | {top:g} | {100 * delta:.3g} | {none:.4f} | {rule:.4f} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
