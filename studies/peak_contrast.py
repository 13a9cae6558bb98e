"""What the ordered test's peak step costs the ramps and buys the peaks: one table over candidate splits of alpha.

The ordered test of "remembers" (models/paired.py, ``paired_check``) spends alpha on the extreme sigma_w pair, the
peak contrast (the middle level against the mean of the two ends) and a Bonferroni fallback over the other pairs.
Each row is a split (extreme / peak / fallback; 0.75 / 0 / 0.25 is the test without a peak step); each column the
rate of "remembers" on count-like designs (models/designs.py, ``count_tables``: about 97% accuracy, counts
out of 10,000 examples, 10 seeds, run noise 2 points, seed effect 1 point), delta 1 point, alpha 0.05:

- false "remembers" at a spread of exactly delta (ramp, plateau and peak; 5, 6 and 7 levels): each must stay <= 5%;
- power: a 3-point peak (5, 6, 7 levels) and 2- and 3-point ramps (5, 7 levels), and the power controls of the
  calibration designs (models/designs.py ``rule_tables``): the 2-point ramp (5 levels, 10 seeds, demo noise),
  2-point exchangeable memory at the paper's scale and 12-19 points of it at 3 seeds x 6 levels.

Run: ``python studies/peak_contrast.py [n_tables]`` (default 4,000 tables per design and split; the binomial SE
of a rate near 5% is then 0.35 points, near 50% 0.8 points).
"""

from __future__ import annotations

import sys

import numpy as np

from initmem.models import paired
from initmem.models.designs import count_tables, peak_grid, rule_tables

DELTA = 0.01
SPLITS = ((0.75, 0.0), (0.65, 0.25), (0.6, 0.25), (0.6, 0.3), (0.6, 0.35), (0.5, 0.35))
NULLS = [(shape, n_lev) for shape in ("ramp", "plateau", "peak") for n_lev in (5, 6, 7)]
CALIBRATION = (("ramp2", "demo"), ("power2", "paper"), ("big3", "demo"))   # tests/test_paired.py's power controls
POWER = [("peak", 3.0, n_lev) for n_lev in (5, 6, 7)] + [("ramp", h, n_lev) for h in (2.0, 3.0) for n_lev in (5, 7)]


def rate(tables: np.ndarray, n_lev: int) -> float:
    return float(paired.remembers_at(tables, DELTA, n_test=10_000, sigma_w=peak_grid(n_lev)).mean())


def main(n: int = 4000) -> None:
    rng = np.random.default_rng(20240611)
    nulls = {(s, L): count_tables(s, DELTA, L, n, rng) for s, L in NULLS}
    power = {(s, h, L): count_tables(s, h * 0.01, L, n, rng) for s, h, L in POWER}
    demo = {kind: rule_tables(kind, scale, n, rng) for kind, scale in CALIBRATION}
    head = ([f"{s} {L} at delta" for s, L in NULLS] + [f"{s} {h:g}pt {L}" for s, h, L in POWER]
            + [f"{kind} ({scale})" for kind, scale in CALIBRATION])
    print(f"{n} tables per design; rates of \"remembers\" (alpha 0.05, delta 1 point)")
    print("| extreme / peak / fallback | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    saved = paired.EXTREME_WEIGHT, paired.PEAK_WEIGHT
    try:
        for w_ext, w_peak in SPLITS:
            paired.EXTREME_WEIGHT, paired.PEAK_WEIGHT = w_ext, w_peak
            cells = [rate(t, L) for (s, L), t in nulls.items()] + [rate(t, L) for (s, h, L), t in power.items()]
            cells += [float(paired.remembers_at(t, DELTA).mean()) for t in demo.values()]
            mark = " (rule)" if (w_ext, w_peak) == saved else ""
            print(f"| {w_ext:g} / {w_peak:g} / {1 - w_ext - w_peak:.2g}{mark} | "
                  + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    finally:
        paired.EXTREME_WEIGHT, paired.PEAK_WEIGHT = saved


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
