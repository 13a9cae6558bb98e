"""Known-truth controls of the clock-exponent model (models/exponents.py; docs/reading-the-clocks.md).

Simulates per-seed forgetting times in steps on the clocks preset's 13 L2 pipelines,
log t = a + beta . (log eta, log lambda, log b) + tau z_p + sigma e_ps, right-censored at a
per-pipeline budget, for planted exponents (-1, -1, 0) (T_l2) and (-2, 0, +1) (T_sgd), fits the
model (one compile, refits with new data) and counts how often the 90% intervals cover the truth.

    python studies/exponent_calibration.py --reps 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from initmem.models.exponents import ExponentModel, build_data
from initmem.simulate.exponents import BATCH, ETA, LAM, NAMES, TRUTHS, forgetting_times


def data_for(beta: np.ndarray, rng: np.random.Generator):
    """The exponent model's data from one draw of ``initmem.simulate.exponents.forgetting_times``."""
    t, budget = forgetting_times(beta, rng)
    return build_data(list(NAMES), ETA, LAM, BATCH, np.zeros(len(ETA)), ["sgd"] * len(ETA),
                      t, budget)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--draws", type=int, default=500)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    model = ExponentModel(data_for(TRUTHS["T_l2"], rng)).fit(draws=args.draws, tune=args.draws, seed=0)
    print(f"compile {model.compile_seconds:.1f} s")
    for name, beta in TRUTHS.items():
        hits, n, cens, p_true = 0, 0, 0, []
        for r in range(args.reps):
            d = data_for(beta, rng)
            s = model.refit(d, draws=args.draws, tune=args.draws, seed=r).summary()
            for k, c in enumerate(("eta", "lambda", "b")):
                e = s["exponents"][c]
                hits += e["q05"] <= beta[k] <= e["q95"]
                n += 1
            cens += s["n_censored"]
            p_true.append(s["clocks"][name]["probability"])
        print(f"truth {name} {beta.tolist()}: 90% intervals cover {hits}/{n} = {hits / n:.1%}; "
              f"censored seeds {cens / args.reps:.1f} per data set; median P({name} within 0.25) "
              f"{np.median(p_true):.2f}")
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
