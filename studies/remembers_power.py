"""Power of "remembers" against an oracle, and both false rates at delta, on designs the rule was not built on.

The rule (models/summaries.py, ``verdict``): "remembers" when the ordered paired test supports it and the model
agrees (P(spread > delta) >= 1/2). The rule before it also demanded P(spread > delta) >= 0.95 of the model; that
column is printed beside, on the same tables. Designs, accuracies out of ``n_test`` test examples (binomial counts),
delta = 1 point, alpha = 0.05:

- shapes: a linear ramp in log sigma_w (direction drawn per table), a step at the grid's middle, a tent-shaped peak
  at the middle level with equal ends;
- 5 or 7 sigma_w levels (1/4..4, geometric), 6 or 10 paired seeds;
- 719 test examples at 96-98% (the binomial SD of a run, 0.64 points, plus 0.3 points of run noise beyond it), or
  10,000 at the same accuracies with the run noise of the presets' real reruns: 0.5 points at every level but the
  largest sigma_w, 1.5 points there (the REML residuals of the quick and atlas presets, docs/memory-model.md);
- a seed effect of 0.5 points shared by every level.

Power: the shape at twice delta. The oracle: the pair of levels with the largest true difference, alone, tested by
one one-sided paired t against delta at the whole alpha with its SD estimated (it knows which pair carries the
memory and its direction, which no analysis does). False rates: the same designs at exactly delta, where both
verdicts are false; each with its 95% Wilson interval.

Each table is decided at its own noise scale (models/data.py ``noise_scale("counts", ...)``, as ``initmem analyze``
of an imported table of counts) by the planner's quadrature of the model (models/plan.py ``rule_decisions``).
Real fits of imported counts through the command line: ``python studies/count_import_calibration.py --designs
ramp2,step2,peak2,ramp16 --accuracy 0.96 --interaction 0.003``.

    python studies/remembers_power.py [--tables 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy import stats

from initmem.models.data import near_ceiling_data, noise_scale
from initmem.models.designs import wilson
from initmem.models.plan import N_EFF, _clears, decide, posterior_spread
from initmem.models.summaries import model_thresholds
from initmem.names import ALPHA

DELTA, LOW, SEED_SD = 0.01, 0.96, 0.005
SHAPES = ("ramp", "step", "peak")
NOISE = {719: (0.003, 0.003), 10_000: (0.005, 0.015)}   # run noise beyond the binomial: other levels, top level


def shape(name: str, levels: int) -> np.ndarray:
    """The memory's profile over ``levels`` levels, max - min = 1."""
    i = np.arange(levels)
    mid = levels // 2
    if name == "ramp":
        return i / (levels - 1)
    if name == "step":
        return (i >= mid).astype(float)
    return 1.0 - np.abs(i - mid) / mid


def tables(name: str, spread: float, levels: int, seeds: int, n_test: int, n: int,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(n, L, S) accuracies of one design: profile x spread (a ramp's direction drawn per table), a shared seed
    effect, run noise beyond the binomial (larger at the top sigma_w with 10,000 examples), binomial counts; and
    per table +1 where the last level is the higher end of the ramp, -1 where the first is."""
    sign = np.where(rng.random(n) < 0.5, 1.0, -1.0) if name == "ramp" else np.ones(n)
    prof = spread * shape(name, levels)
    prof = np.where(sign[:, None] > 0, prof, prof[::-1])
    other, top = NOISE[n_test]
    sd = np.full(levels, other)
    sd[-1] = top
    p = LOW + prof[:, :, None] + SEED_SD * rng.standard_normal((n, 1, seeds)) \
        + sd[None, :, None] * rng.standard_normal((n, levels, seeds))
    return rng.binomial(n_test, np.clip(p, 0.0, 1.0)) / n_test, sign


def oracle(t: np.ndarray, sign: np.ndarray, name: str, levels: int) -> np.ndarray:
    """The best pair alone at the whole alpha: one-sided paired t of its difference against delta, SD estimated,
    the pair and its direction known (the middle level against the first for a peak, the two ends otherwise)."""
    hi = levels // 2 if name == "peak" else levels - 1
    d = sign[:, None] * (t[:, hi, :] - t[:, 0, :])
    n = d.shape[1]
    se = d.std(axis=1, ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return stats.t.sf((d.mean(axis=1) - DELTA) / se, n - 1) <= ALPHA


def decide_tables(t: np.ndarray, sigma_w: np.ndarray, n_test: int, rng: np.random.Generator,
                  n_bins: int = 20) -> dict[str, np.ndarray]:
    """The rule per table at the table's own noise scale (tables binned by scale, one quadrature per bin), and the
    rule before it (the model's P(spread > delta) >= 1 - alpha as well)."""
    used = np.ones(t.shape[1:], dtype=bool)
    scales = np.array([noise_scale("counts", x, used, None, n_test) for x in t])
    near = np.array([near_ceiling_data(x, used) for x in t])
    t_gt, _ = model_thresholds(ALPHA, int(N_EFF))
    out = {k: np.zeros(len(t), dtype=bool) for k in ("remembers", "forgets", "before")}
    for idx in np.array_split(np.argsort(scales), n_bins):
        if not idx.size:
            continue
        s = float(scales[idx].mean())
        post = posterior_spread(t[idx] / s, DELTA / s, rng, sigma_w=sigma_w, n_test=n_test, unit=s)
        v = decide({**post, "near_ceiling": near[idx]}, DELTA / s, N_EFF, ALPHA)
        out["remembers"][idx], out["forgets"][idx] = v == 1, v == -1
        out["before"][idx] = _clears(post["p_gt"], t_gt, N_EFF) & post["paired_ok"]
    return out


def rate(x: np.ndarray) -> str:
    k, n = int(x.sum()), x.size
    lo, hi = wilson(k, n)
    return f"{k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = args.tables
    t0 = time.perf_counter()
    print(f"delta 1 point, alpha {ALPHA:g}, {n} tables a design (python studies/remembers_power.py --tables {n} "
          f"--seed {args.seed}); rates with 95% Wilson intervals")
    print("| shape | levels | seeds | test examples | remembers at 2 delta | oracle | the rule before | "
          "false remembers at delta | false forgets at delta |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = {"gap": -1.0, "remembers": 0.0, "forgets": 0.0}
    for d, (name, levels, seeds, n_test) in enumerate(itertools.product(SHAPES, (5, 7), (6, 10), (719, 10_000))):
        sigma_w = np.geomspace(0.25, 4.0, levels)
        rng = np.random.default_rng([args.seed, d])
        power, sign = tables(name, 2 * DELTA, levels, seeds, n_test, n, rng)
        got, orc = decide_tables(power, sigma_w, n_test, rng), oracle(power, sign, name, levels)
        null = decide_tables(tables(name, DELTA, levels, seeds, n_test, n, rng)[0], sigma_w, n_test, rng)
        worst = {"gap": max(worst["gap"], orc.mean() - got["remembers"].mean()),
                 "remembers": max(worst["remembers"], null["remembers"].mean()),
                 "forgets": max(worst["forgets"], null["forgets"].mean())}
        print(f"| {name} | {levels} | {seeds} | {n_test:,} | {rate(got['remembers'])} | {orc.mean():.3f} | "
              f"{got['before'].mean():.3f} | {rate(null['remembers'])} | {rate(null['forgets'])} |", flush=True)
    print(f"largest gap to the oracle {worst['gap']:.3f}; largest false remembers {worst['remembers']:.3f}, "
          f"false forgets {worst['forgets']:.3f} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
