"""Calibration of the radial-memory verdict (stats/radial.py): false verdicts at the margin and power, on
simulated final log kernel norms, with 95% Wilson intervals. The table in docs/radial-verdict.md.

    python studies/radial_calibration.py [--reps 2000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from initmem.stats.radial import FORGETS, KEEPS, RADIAL_MARGIN, radial_verdict

LOG_SIGMA = np.log([0.25, 0.5, 1.0, 2.0, 4.0])


def tables(slope: float, n_seed: int, reps: int, rng: np.random.Generator, tails: str) -> np.ndarray:
    """(rep, sigma_w, seed): seed offset SD 0.3, seed slope SD 0.03 around ``slope``, run noise SD 0.02."""
    def draw(size):
        return rng.standard_t(3, size) / math.sqrt(3) if tails == "t3" else rng.standard_normal(size)
    b = slope + 0.03 * draw((reps, 1, n_seed))
    return 2.0 + 0.3 * draw((reps, 1, n_seed)) + b * LOG_SIGMA[None, :, None] + 0.02 * draw((reps, 5, n_seed))


def wilson(k: int, n: int, z: float = 1.96) -> str:
    p = k / n
    d = 1 + z * z / n
    c, h = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return f"{k}/{n} = {p:.1%} [{100 * (c - h):.1f}, {100 * (c + h):.1f}]"


DESIGNS = [  # (label, true slope, seeds, tails, verdict counted)
    ("margin (0.1), normal", RADIAL_MARGIN, 3, "normal", KEEPS),
    ("margin (0.1), normal", RADIAL_MARGIN, 3, "normal", FORGETS),
    ("margin (0.1), normal", RADIAL_MARGIN, 5, "normal", KEEPS),
    ("margin (0.1), normal", RADIAL_MARGIN, 5, "normal", FORGETS),
    ("margin (0.1), t3 seeds", RADIAL_MARGIN, 5, "t3", KEEPS),
    ("margin (0.1), t3 seeds", RADIAL_MARGIN, 5, "t3", FORGETS),
    ("-margin, normal", -RADIAL_MARGIN, 5, "normal", FORGETS),
    ("0 (forgotten)", 0.0, 3, "normal", FORGETS),
    ("0 (forgotten)", 0.0, 5, "normal", FORGETS),
    ("0.8 (plain SGD)", 0.8, 3, "normal", KEEPS),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    reps = ap.parse_args().reps
    print("| true slope | seeds | verdict counted | rate |\n|---|---|---|---|")
    for i, (label, slope, n_seed, tails, verdict) in enumerate(DESIGNS):
        t = tables(slope, n_seed, reps, np.random.default_rng(1000 + i), tails)
        k = sum(radial_verdict(x, LOG_SIGMA)["verdict"] == verdict for x in t)
        print(f"| {label} | {n_seed} | {verdict} | {wilson(k, reps)} |")


if __name__ == "__main__":
    main()
