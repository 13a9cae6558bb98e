"""The draw plan (stats/crossed_plan.py) on designs outside its model: its predicted power against the rate.

The plan simulates normal init, data and interaction effects with one SD each, pooled over the sigma_w levels.
Here the tables come from the held-out designs of studies/crossed_calibration.py (effects that differ by level,
one noisier level, heavy-tailed or skewed seeds, a bad init seed now and then), at SD_init = 2m (a draw memory
the plan should find) and at SD_init = m (where "keeps" is a false verdict), margin m = 0.5 points, 3 levels.
For each design the plan is given the pooled components the design has (sqrt of the mean variance over
levels), as a pilot would estimate them on average; its prediction is set beside the rule's rate on the design
(95% Wilson interval). A prediction far above the rate would make a study too small.

    python studies/crossed_plan_check.py [--reps 4000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from crossed_calibration import M, _components, held_out_tables, wilson

from initmem.stats.crossed import draw_verdict_rates

DESIGNS = ("normal", "unequal SD_init by level", "unequal SD_data by level", "one noisier level",
           "heavy-tailed seeds", "skewed seeds", "bad init seeds")
POOLED = {  # (SD_data, SD_resid) a pilot estimates on average, pooled over the three levels
    "unequal SD_data by level": (math.sqrt((0.25 + 1.0 + 4.0) / 3), 0.5),
    "one noisier level": (1.0, math.sqrt((0.25 + 0.25 + 2.25) / 3)),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=4000)
    reps = ap.parse_args().reps
    print(f"### The draw plan on held-out designs, 3 levels, margin {M}, {reps} tables per cell\n")
    print("P(keeps its draw) in %: the plan's prediction (normal effects, pooled SDs) / the rule's rate on the "
          "design [95% Wilson].\n")
    print("| design | regime | I x J | SD_init = 2m: plan / rate | SD_init = m: plan / rate |\n|---|---|---|---|---|")
    for design in DESIGNS:
        sd_data, sd_resid = POOLED.get(design, (1.0, 0.5))
        for regime in ("identical", "independent"):
            for n_init in (8, 12):
                cells = []
                for k, sd_init in enumerate((2 * M, M)):
                    rng = np.random.default_rng([n_init, k, DESIGNS.index(design), regime == "identical"])
                    y = held_out_tables(rng, reps, n_init, 4, sd_init, design, regime)
                    rate = int((_components(y, 0.05, share=False)["sd_init_lower"] > M).sum())
                    plan = draw_verdict_rates(sd_init, sd_data, sd_resid, n_levels=3, n_init=n_init, n_data=4,
                                              margin=M, shared=1.0 if regime == "identical" else 0.0, reps=reps,
                                              seed=n_init + 10 * k)["keeps"]
                    cells.append(f"{100 * plan:.1f} / {wilson(rate, reps)}")
                print(f"| {design} | {regime} | {n_init} x 4 | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
