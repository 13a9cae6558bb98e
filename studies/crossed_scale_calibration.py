"""The scale verdict's seed tests on crossed seed designs: false rates at a spread of delta, and power.

On a crossed design (every (init, data) seed pair one run) runs that share an init or data seed are correlated
across sigma_w when the seed's effect differs by level, so the tests of models/paired.py read every pair of
levels through the crossed-block moments (``crossed``: SE^2 = var(init-seed means) / I + var(data-seed means) / J,
Welch-Satterthwaite df). This study draws gaussian crossed tables (simulate/draw.py ``crossed_tables``, the
simulator's model in outcome units; delta = 1 point = 0.01) and prints, per design (8 x 4 and 4 x 4 seeds;
interactions: none, init x sigma_w "init x sw", data x sigma_w "data x sw"), how often each test decides, with
the crossed moments ("crossed") and with each run treated as one block ("block", the tests before crossed designs
were read):

- false "remembers": the ordered test at alpha = 0.05 on 2 levels exactly delta apart (one pair at its
  boundary: the sharpest case);
- false "forgets": the intersection-union test at its share of alpha (0.04) on the same tables;
- power: "remembers" at a spread of 3 delta (5 levels, a ramp in log sigma_w), and "forgets" at a spread of 0
  (5 levels).

The SDs (fractions): init seed 0.01, data seed 0.005, residual 0.003, and an interaction of 0.01 (init x
sigma_w or data x sigma_w) where it is on. The verdict's "remembers" needs the model AND the ordered test, so its
false rate is at most the ordered test's; "forgets" is the UNION of the intersection-union test and the memory
model's route (P(spread < delta) >= 0.975 with three or more levels), which decides without the seed tests: the
model treats each run as a seed with its own effect and slope, not as init x data, so ``--model N`` also refits
N batches of 24 crossed tables (7 levels exactly delta apart at the ends, a ramp) on the compiled memory model
(models/designs.py, 2 chains x 500 draws) and prints the final verdict's and the model's own rates.

    python studies/crossed_scale_calibration.py [--tables 4000] [--seed 0] [--model 0] [--verdict 0]

``--verdict N`` puts N crossed tables per cell at a spread of exactly delta through the verdict function
(models/summaries.py ``verdict``; the model's probabilities by the planner's quadrature of the same posterior,
models/plan.py) with and without the crossed guard: on a crossed design "forgets" needs the intersection-union
test, and the model's route alone does not decide (``--tables 0`` skips the first table).

Output of ``python studies/crossed_scale_calibration.py --tables 4000 --model 2`` (rates with 95% Wilson
intervals; 2 shared CPU cores):

    4000 tables per cell; delta = 0.01; ordered test at alpha 0.05, intersection-union test at 0.04

    | seeds | interaction | tests | false remembers (%) | false forgets (%) | remembers, 3 delta (%) | forgets, 0 (%) |
    |---|---|---|---|---|---|---|
    | 8 x 4 | none | crossed | 1.1 [0.8, 1.4] | 0.9 [0.7, 1.2] | 100.0 [99.9, 100.0] | 100.0 [99.9, 100.0] |
    | 8 x 4 | none | block | 5.2 [4.5, 5.9] | 4.0 [3.5, 4.7] | 100.0 [99.9, 100.0] | 100.0 [99.9, 100.0] |
    | 8 x 4 | init x sw | crossed | 4.2 [3.7, 4.9] | 2.8 [2.3, 3.4] | 92.7 [91.9, 93.5] | 0.0 [0.0, 0.1] |
    | 8 x 4 | init x sw | block | 20.5 [19.3, 21.8] | 20.6 [19.4, 21.9] | 99.9 [99.7, 99.9] | 16.6 [15.5, 17.8] |
    | 8 x 4 | data x sw | crossed | 4.3 [3.8, 5.0] | 1.9 [1.5, 2.3] | 43.5 [42.0, 45.1] | 0.0 [0.0, 0.1] |
    | 8 x 4 | data x sw | block | 31.4 [30.0, 32.9] | 27.4 [26.0, 28.8] | 99.2 [98.9, 99.5] | 7.6 [6.8, 8.5] |
    | 4 x 4 | none | crossed | 1.2 [0.9, 1.6] | 1.1 [0.8, 1.4] | 100.0 [99.9, 100.0] | 100.0 [99.9, 100.0] |
    | 4 x 4 | none | block | 4.6 [4.0, 5.3] | 3.8 [3.2, 4.4] | 100.0 [99.9, 100.0] | 100.0 [99.9, 100.0] |
    | 4 x 4 | init x sw | crossed | 3.6 [3.1, 4.3] | 1.9 [1.5, 2.3] | 43.0 [41.5, 44.6] | 0.0 [0.0, 0.1] |
    | 4 x 4 | init x sw | block | 22.6 [21.4, 23.9] | 18.9 [17.7, 20.1] | 97.8 [97.3, 98.2] | 1.8 [1.4, 2.3] |
    | 4 x 4 | data x sw | crossed | 3.4 [2.9, 4.0] | 1.8 [1.4, 2.2] | 42.6 [41.1, 44.2] | 0.0 [0.0, 0.1] |
    | 4 x 4 | data x sw | block | 23.1 [21.8, 24.4] | 18.6 [17.5, 19.9] | 97.2 [96.7, 97.7] | 1.3 [1.0, 1.7] |

    The memory model at a spread of exactly delta (7 levels, a ramp), crossed seed tests;
    the final verdict and the model's alone:

    | seeds | interaction | fits | forgets (%) | remembers (%) | model: forgets (%) | model: remembers (%) |
    |---|---|---|---|---|---|---|
    | 8 x 4 | init x sw | 48 | 0.0 [0.0, 7.4] | 0.0 [0.0, 7.4] | 0.0 [0.0, 7.4] | 25.0 [14.9, 38.8] |
    | 8 x 4 | data x sw | 48 | 0.0 [0.0, 7.4] | 4.2 [1.2, 14.0] | 0.0 [0.0, 7.4] | 70.8 [56.8, 81.8] |
    | 4 x 4 | init x sw | 48 | 0.0 [0.0, 7.4] | 0.0 [0.0, 7.4] | 0.0 [0.0, 7.4] | 45.8 [32.6, 59.7] |
    | 4 x 4 | data x sw | 48 | 0.0 [0.0, 7.4] | 6.2 [2.1, 16.8] | 0.0 [0.0, 7.4] | 52.1 [38.3, 65.5] |

    173 s

Output of ``python studies/crossed_scale_calibration.py --tables 0 --verdict 2000`` (378 s):

    False 'forgets' of the verdict function at a spread of exactly delta, 2000 tables per cell: with the crossed
    guard (needs the intersection-union test), without it (the model's route alone may decide), the model's and
    the test's own:

    | seeds | interaction | levels | guarded (%) | unguarded (%) | model alone (%) | IUT alone (%) |
    |---|---|---|---|---|---|---|
    | 8 x 4 | none | ramp, 7 | 0.7 [0.4, 1.2] | 1.4 [1.0, 2.0] | 1.1 [0.7, 1.6] | 0.7 [0.4, 1.2] |
    | 8 x 4 | none | one end, 7 | 0.0 [0.0, 0.2] | 0.1 [0.0, 0.3] | 0.1 [0.0, 0.3] | 0.0 [0.0, 0.2] |
    | 8 x 4 | none | one end, 3 | 0.3 [0.1, 0.7] | 0.3 [0.1, 0.7] | 0.2 [0.1, 0.6] | 0.3 [0.1, 0.7] |
    | 8 x 4 | init x sw | ramp, 7 | 0.0 [0.0, 0.2] | 1.1 [0.8, 1.7] | 1.1 [0.8, 1.7] | 0.0 [0.0, 0.2] |
    | 8 x 4 | init x sw | one end, 7 | 0.0 [0.0, 0.2] | 0.8 [0.5, 1.2] | 0.8 [0.5, 1.2] | 0.0 [0.0, 0.2] |
    | 8 x 4 | init x sw | one end, 3 | 0.1 [0.1, 0.4] | 5.4 [4.5, 6.5] | 5.4 [4.5, 6.5] | 0.1 [0.1, 0.4] |
    | 8 x 4 | data x sw | ramp, 7 | 0.0 [0.0, 0.2] | 0.8 [0.5, 1.4] | 0.8 [0.5, 1.4] | 0.0 [0.0, 0.2] |
    | 8 x 4 | data x sw | one end, 7 | 0.0 [0.0, 0.2] | 0.7 [0.4, 1.1] | 0.7 [0.4, 1.1] | 0.0 [0.0, 0.2] |
    | 8 x 4 | data x sw | one end, 3 | 0.1 [0.0, 0.3] | 8.2 [7.1, 9.5] | 8.2 [7.1, 9.5] | 0.1 [0.0, 0.3] |
    | 4 x 4 | none | ramp, 7 | 0.1 [0.0, 0.4] | 0.8 [0.5, 1.4] | 0.8 [0.5, 1.3] | 0.1 [0.0, 0.4] |
    | 4 x 4 | none | one end, 7 | 0.0 [0.0, 0.2] | 0.0 [0.0, 0.2] | 0.0 [0.0, 0.2] | 0.0 [0.0, 0.2] |
    | 4 x 4 | none | one end, 3 | 0.1 [0.1, 0.4] | 0.2 [0.1, 0.5] | 0.1 [0.0, 0.3] | 0.1 [0.1, 0.4] |
    | 4 x 4 | init x sw | ramp, 7 | 0.0 [0.0, 0.2] | 0.3 [0.1, 0.7] | 0.3 [0.1, 0.7] | 0.0 [0.0, 0.2] |
    | 4 x 4 | init x sw | one end, 7 | 0.0 [0.0, 0.2] | 0.2 [0.1, 0.5] | 0.2 [0.1, 0.5] | 0.0 [0.0, 0.2] |
    | 4 x 4 | init x sw | one end, 3 | 0.1 [0.0, 0.3] | 3.0 [2.4, 3.9] | 3.0 [2.4, 3.9] | 0.1 [0.0, 0.3] |
    | 4 x 4 | data x sw | ramp, 7 | 0.0 [0.0, 0.2] | 0.6 [0.3, 1.0] | 0.6 [0.3, 1.0] | 0.0 [0.0, 0.2] |
    | 4 x 4 | data x sw | one end, 7 | 0.0 [0.0, 0.2] | 0.1 [0.0, 0.3] | 0.1 [0.0, 0.3] | 0.0 [0.0, 0.2] |
    | 4 x 4 | data x sw | one end, 3 | 0.1 [0.0, 0.3] | 2.5 [1.9, 3.3] | 2.5 [1.9, 3.3] | 0.1 [0.0, 0.3] |

Reading: treating each run as one block, an interaction as large as delta made the seed tests say "remembers"
20-31% and "forgets" 19-27% of the time at a spread of exactly delta; with the crossed blocks every design keeps
its level (at most 4.3% and 2.8%), at the cost of power where the interaction is large (a 3-delta memory is
found in 43-93% of tables instead of 97-100%, the latter being mostly the false precision). Without any
interaction the crossed SE counts the residual twice, so the tests are conservative (about 1%). The memory model
alone says "remembers" on 25-71% of crossed tables at delta (it reads the runs' shared effects as memory); the
verdict holds because "remembers" also needs the ordered test. The model's own route to "forgets" gave no false
"forgets" in the 48 refits of each ramp, but by the quadrature (thousands of tables) it said "forgets" on up to
1.4% of the 7-level tables and, with an interaction, on 2.5-8.2% of the 3-level tables with one level delta away
(8 x 4, data x sw: 8.2% [7.1, 9.5], above alpha): it reads the level means as better known than they are. So
on a crossed design the verdict's "forgets" needs the intersection-union test on the crossed blocks
(``verdict(..., crossed=True)``), and its false "forgets" is then that test's, at most 0.7% here.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from scipy import stats

from initmem.models.paired import CrossedSeeds, forgets_bounds, forgets_levels, remembers_at
from initmem.simulate.draw import crossed_tables, sigma_levels

DELTA = 0.01
ALPHA = 0.05
IUT_ALPHA = forgets_levels(ALPHA)[0]
BASE = {"init_sd": 0.01, "data_sd": 0.005, "residual_sd": 0.003}
INTERACTIONS = {"none": {}, "init x sw": {"init_sigma_sd": 0.01}, "data x sw": {"data_sigma_sd": 0.01}}
SHAPES = ((8, 4), (4, 4))


def wilson(k: int, n: int) -> tuple[float, float]:
    """The 95% Wilson interval of k of n."""
    z = stats.norm.ppf(0.975)
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def _cell(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def rates(shape: tuple[int, int], sds: dict, n: int, rng: np.random.Generator) -> dict[str, dict[str, int]]:
    """Counts of each test's decisions on n tables per truth, with the crossed moments and run as block."""
    n_i, n_j = shape
    crossed = CrossedSeeds.full(n_i, n_j)
    at_delta = crossed_tables(n, [0.0, DELTA], n_i, n_j, rng, **sds)
    memory = crossed_tables(n, np.linspace(0.0, 3 * DELTA, 5), n_i, n_j, rng, **sds)
    null = crossed_tables(n, np.zeros(5), n_i, n_j, rng, **sds)
    sw = sigma_levels(5)
    out = {}
    for name, cr in (("crossed", crossed), ("block", None)):
        out[name] = {
            "false remembers": int(remembers_at(at_delta, DELTA, ALPHA, crossed=cr).sum()),
            "false forgets": int((forgets_bounds(at_delta, IUT_ALPHA, crossed=cr) < DELTA).sum()),
            "remembers at 3 delta": int(remembers_at(memory, DELTA, ALPHA, sigma_w=sw, crossed=cr).sum()),
            "forgets at 0": int((forgets_bounds(null, IUT_ALPHA, crossed=cr) < DELTA).sum()),
        }
    return out


def model_rates(shape: tuple[int, int], sds: dict, batches: int, rng: np.random.Generator) -> dict[str, int]:
    """The final verdict's and the model's own "forgets" and "remembers" counts over batches of 24 crossed tables
    at a spread of exactly delta (7 levels, a ramp), refitted on the compiled memory model."""
    from initmem.models.data import noise_scale
    from initmem.models.designs import P, compiled_model, table_data

    n_i, n_j = shape
    s = n_i * n_j
    model = compiled_model(n_seed=s)
    counts = {"n": 0, "forgets": 0, "remembers": 0, "model forgets": 0, "model remembers": 0}
    for _ in range(batches):
        y = crossed_tables(P, np.linspace(0.0, DELTA, 7), n_i, n_j, rng, **sds)
        used = np.ones(y.shape, dtype=bool)
        scale = np.array([noise_scale("gaussian", t, u, None, None) for t, u in zip(y, used, strict=True)])
        d = table_data(y, used, scale)
        cr = CrossedSeeds.full(n_i, n_j)
        d = replace(d, init_seed=cr.init, data_seed=cr.data)
        fit = model.refit(d, seed=int(rng.integers(1 << 30)))
        for entry in fit.summarize(DELTA).values():
            counts["n"] += 1
            counts["forgets"] += entry["verdict"] == "forgets"
            counts["remembers"] += entry["verdict"] == "remembers"
            counts["model forgets"] += entry["model_verdict"] == "forgets"
            counts["model remembers"] += entry["model_verdict"] == "remembers"
    return counts


VERDICT_TRUTHS = {  # spread exactly delta, three or more levels (the model's route to "forgets" needs three)
    "ramp, 7": np.linspace(0.0, DELTA, 7),
    "one end, 7": np.r_[np.zeros(6), DELTA],
    "one end, 3": np.array([0.0, 0.0, DELTA]),
}


def verdict_rates(shape: tuple[int, int], sds: dict, n: int, rng: np.random.Generator) -> dict[str, dict[str, int]]:
    """False "forgets" of the verdict function (models/summaries.py ``verdict``) at a spread of exactly delta, with
    the crossed guard (``crossed=True``: "forgets" needs the intersection-union test) and without it (the model's
    route decides alone), per truth of VERDICT_TRUTHS: the model's probabilities by the planner's quadrature of the
    same posterior (models/plan.py ``posterior_spread``, tables standardised by the pooled within-level SD as the
    analysis's noise scale), the seed tests on the crossed blocks."""
    from initmem.models.plan import posterior_spread
    from initmem.models.summaries import binomial_mcse, verdict

    n_i, n_j = shape
    crossed = CrossedSeeds.full(n_i, n_j)
    out = {}
    for name, mu in VERDICT_TRUTHS.items():
        y = crossed_tables(n, mu, n_i, n_j, rng, **sds)
        scale = np.sqrt(np.var(y, axis=-1, ddof=1).mean(axis=-1))
        sw = sigma_levels(mu.size)
        iut = forgets_bounds(y, IUT_ALPHA, crossed=crossed) < DELTA
        ordered = remembers_at(y, DELTA, ALPHA, sigma_w=sw, crossed=crossed)
        c = {"guarded": 0, "unguarded": 0, "model": 0, "iut": int(iut.sum())}
        for k in range(n):
            post = posterior_spread(y[k:k + 1] / scale[k], DELTA / scale[k], rng, sigma_w=sw)
            p_gt, p_lt = float(post["p_gt"][0]), float(post["p_lt"][0])
            mcse = (float(binomial_mcse(p_gt, 4000)), float(binomial_mcse(p_lt, 4000)))
            for key, guard in (("guarded", True), ("unguarded", False)):
                c[key] += verdict(p_gt, p_lt, 1 - ALPHA, mcse, paired_ok=bool(ordered[k]), iut_ok=bool(iut[k]),
                                  crossed=guard) == "forgets"
            c["model"] += verdict(p_gt, p_lt, 1 - ALPHA, mcse) == "forgets"
        out[name] = c
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", type=int, default=0, help="batches of 24 tables refitted on the memory model")
    ap.add_argument("--verdict", type=int, default=0,
                    help="tables per cell through the verdict function, with and without the crossed guard")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    n = args.tables
    if n:
        print(f"{n} tables per cell; delta = {DELTA}; ordered test at alpha {ALPHA}, intersection-union test at "
              f"{IUT_ALPHA:g}\n")
        print("| seeds | interaction | tests | false remembers (%) | false forgets (%) | remembers, 3 delta (%) | "
              "forgets, 0 (%) |")
        print("|---|---|---|---|---|---|---|")
    for shape in SHAPES if n else ():
        for inter, extra in INTERACTIONS.items():
            got = rates(shape, {**BASE, **extra}, n, rng)
            for name, label in (("crossed", "crossed"), ("block", "block")):
                c = got[name]
                print(f"| {shape[0]} x {shape[1]} | {inter} | {label} | {_cell(c['false remembers'], n)} | "
                      f"{_cell(c['false forgets'], n)} | {_cell(c['remembers at 3 delta'], n)} | "
                      f"{_cell(c['forgets at 0'], n)} |")
    if args.model:
        print("\nThe memory model at a spread of exactly delta (7 levels, a ramp), crossed seed tests;\n"
              "the final verdict and the model's alone:\n")
        print("| seeds | interaction | fits | forgets (%) | remembers (%) | model: forgets (%) | "
              "model: remembers (%) |")
        print("|---|---|---|---|---|---|---|")
        for shape in SHAPES:
            for inter, extra in INTERACTIONS.items():
                if inter == "none":
                    continue
                c = model_rates(shape, {**BASE, **extra}, args.model, rng)
                m = c["n"]
                print(f"| {shape[0]} x {shape[1]} | {inter} | {m} | {_cell(c['forgets'], m)} | "
                      f"{_cell(c['remembers'], m)} | {_cell(c['model forgets'], m)} | "
                      f"{_cell(c['model remembers'], m)} |")
    if args.verdict:
        m = args.verdict
        print(f"\nFalse 'forgets' of the verdict function at a spread of exactly delta, {m} tables per cell: "
              "with the crossed guard\n(needs the intersection-union test), without it (the model's route alone "
              "may decide), the model's and the test's own:\n")
        print("| seeds | interaction | levels | guarded (%) | unguarded (%) | model alone (%) | IUT alone (%) |")
        print("|---|---|---|---|---|---|---|")
        for shape in SHAPES:
            for inter, extra in INTERACTIONS.items():
                for truth, c in verdict_rates(shape, {**BASE, **extra}, m, rng).items():
                    print(f"| {shape[0]} x {shape[1]} | {inter} | {truth} | {_cell(c['guarded'], m)} | "
                          f"{_cell(c['unguarded'], m)} | {_cell(c['model'], m)} | {_cell(c['iut'], m)} |")
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
