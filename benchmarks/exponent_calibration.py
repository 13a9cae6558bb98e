"""Known-truth controls of the clock-exponent model (models/exponents.py; docs/reading-the-clocks.md).

Simulates per-seed forgetting times in steps on the clocks preset's 13 L2 pipelines,
log t = a + beta . (log eta, log lambda, log b) + tau z_p + sigma e_ps, right-censored at a
per-pipeline budget, for planted exponents (-1, -1, 0) (T_l2) and (-2, 0, +1) (T_sgd), fits the
model (one compile, refits with new data) and counts how often the 90% intervals cover the truth.

    python benchmarks/exponent_calibration.py --reps 40
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from initmem.models.exponents import ExponentModel, build_data

# The clocks preset's L2 pipelines (configs/clocks.yaml).
ETA = np.array([0.4, 0.1, 0.2, 0.2, 0.1, 0.2, 0.4, 0.1, 0.4, 0.2, 0.4, 0.2, 0.4])
LAM = np.array([0.005, 0.02, 0.01, 0.02, 0.04, 0.02, 0.01, 0.04, 0.02, 0.04, 0.02, 0.04, 0.02])
BATCH = np.array([32, 32, 64, 16, 32, 32, 64, 64, 32, 64, 64, 128, 128.0])
TRUTHS = {"T_l2": np.array([-1.0, -1.0, 0.0]), "T_sgd": np.array([-2.0, 0.0, 1.0])}


def simulate(beta: np.ndarray, rng: np.random.Generator, *, tau: float = 0.1, sigma: float = 0.15,
             n_seed: int = 2, censor_share: float = 0.15):
    """Per-seed times (P, S) with +inf where censored, and the budgets (P,)."""
    x = np.stack([np.log(ETA), np.log(LAM), np.log(BATCH)], 1)
    mu = 7.0 + (x - x.mean(0)) @ beta + rng.normal(0, tau, len(ETA))
    logt = mu[:, None] + rng.normal(0, sigma, (len(ETA), n_seed))
    # Budgets: most pipelines run well past their time; about censor_share of the seeds are cut off.
    budget = np.exp(mu + np.where(rng.random(len(ETA)) < censor_share * 2, 0.0, 1.0))
    t = np.exp(logt)
    return np.where(t > budget[:, None], np.inf, t), budget


def data_for(beta, rng):
    t, budget = simulate(beta, rng)
    return build_data([f"p{i}" for i in range(len(ETA))], ETA, LAM, BATCH, np.zeros(len(ETA)), ["sgd"] * len(ETA),
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
