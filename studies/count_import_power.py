"""Power of "remembers" on count imports: what the rule reaches, what its parts reach, what an oracle would.

Count imports (docs/import.md) are accuracies that are whole counts out of n_test; ``initmem analyze`` uses the
counts' binomial bound as the noise scale (models/data.py ``noise_scale``: p(1 - p) / n_test at the pipeline's
mean accuracy, at least the seeds' pooled SD within levels where some level reaches 99%). Designs, all with a
2-point ramp across 5 sigma_w levels (0.25-4, geometric) and 10 paired seeds on 719 test examples, a seed effect
of 0.5 points shared by the levels, a seed x level interaction of 0.2 points (run noise beyond the binomial), then
binomial counts:

- ``held-out`` : the ramp centred on 97% (96-98%);
- ``project``  : studies/count_import_calibration.py's ramp2 (97-99%: the top level at the ceiling);
- ``held-out, 0.5 pt``: the held-out ramp with 0.5 points of run noise beyond the binomial.

Each design's tables are decided by the rule at the analysis's level through the planner's quadrature
(models/plan.py ``posterior_spread`` and ``decide``, as ``rule_decisions`` runs them: the model's probabilities
on the standardised table, the ordered paired test, the intersection-union test), each table at its own noise
scale (``noise_scale("counts", ...)``). Printed beside: the ordered test alone, the model's P(spread > delta)
alone, the extreme pair alone at its share of alpha (0.6 alpha) and at the whole alpha (the paired t with its SD
estimated, as the rule's), the noise scale and the true SD of the extreme pair's difference, and two oracles
with the true SD of every pair's difference known (what no analysis has): the ordered test as a z test, and the
extreme pair alone at the whole alpha (the most powerful test of this design that uses the seeds' differences:
for a linear ramp of twice delta no other valid contrast has more noncentrality). The controls of a change to the
rule: nulls at 16 seeds ("forgets" >= 80%) and a ramp of exactly delta at 16 seeds (each false verdict <= 2/24).

    python studies/count_import_power.py [--tables 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from initmem.models.data import near_ceiling_data, noise_scale
from initmem.models.paired import EXTREME_WEIGHT, _exceed_p, _pair_arrays, remembers_at
from initmem.models.plan import N_EFF, _clears, decide, posterior_spread
from initmem.models.summaries import model_thresholds
from initmem.names import ALPHA, FORGETS, REMEMBERS

N_TEST, LEVELS = 719, 5
SIGMA_W = np.geomspace(0.25, 4.0, LEVELS)
DELTA = 0.01
SEED_SD = 0.005
# name: (lowest level's accuracy, spread, seeds, run noise beyond the binomial)
DESIGNS = {
    "held-out: 2-pt ramp 96-98%, 10 seeds": (0.96, 0.02, 10, 0.002),
    "project: 2-pt ramp 97-99%, 10 seeds": (0.97, 0.02, 10, 0.002),
    "held-out, 95-97%": (0.95, 0.02, 10, 0.002),
    "held-out, 0.5 pt beyond binomial": (0.96, 0.02, 10, 0.005),
    "null 97%, 16 seeds (forgets >= 0.8)": (0.97, 0.0, 16, 0.002),
    "ramp of delta 96.5-97.5%, 16 seeds": (0.965, 0.01, 16, 0.002),
}


def tables(low: float, spread: float, seeds: int, inter: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, L, S) accuracies: a linear ramp in log sigma_w (direction drawn per table), shared seed effect,
    interaction, binomial counts out of N_TEST."""
    ramp = np.linspace(0.0, spread, LEVELS)
    ramp = np.where(rng.random((n, 1)) < 0.5, ramp, ramp[::-1])
    p = low + ramp[:, :, None] + SEED_SD * rng.standard_normal((n, 1, seeds)) \
        + inter * rng.standard_normal((n, LEVELS, seeds))
    return rng.binomial(N_TEST, np.clip(p, 0.0, 1.0)) / N_TEST


def true_pair_sd(low: float, spread: float, inter: float, n_mc: int = 400_000, seed: int = 99) -> np.ndarray:
    """The SD of every pair's per-seed difference (j < k order of ``np.triu_indices``), by Monte Carlo over the
    design's own noise (the seed effect cancels within a seed; the ramp is drawn upward, the SDs do not depend on
    its direction beyond relabelling, and the oracle tests below use the upward tables' labels)."""
    rng = np.random.default_rng(seed)
    t = tables(low, spread, 2, inter, n_mc // 2, rng)
    j, k = np.triu_indices(LEVELS, 1)
    # reorder each table so that its ramp runs upward: the level means carry the direction
    up = t[:, 0, :].mean(axis=1) < t[:, -1, :].mean(axis=1)
    t = np.where(up[:, None, None], t, t[:, ::-1, :])
    d = (t[:, j, :] - t[:, k, :]).transpose(1, 0, 2).reshape(j.size, -1)
    return d.std(axis=1, ddof=1)


def oracle_rates(t: np.ndarray, sd: np.ndarray, delta: float) -> tuple[float, float]:
    """The ordered test with every pair's SD known (z and the exact size at |E d| = delta in place of the
    Berger-Boos t; the peak contrast left out, its share given to the extreme pair) and the extreme pair alone at
    the whole alpha with its SD known."""
    n_seed = t.shape[-1]
    up = t[:, 0, :].mean(axis=1) < t[:, -1, :].mean(axis=1)
    t = np.where(up[:, None, None], t, t[:, ::-1, :])
    j, k = np.triu_indices(LEVELS, 1)
    ad = np.abs((t[:, j, :] - t[:, k, :]).mean(axis=2))
    se = sd / np.sqrt(n_seed)
    z, lam = (ad - delta) / se, delta / se
    p = stats.norm.sf(z) + stats.norm.cdf(-z - 2 * lam)
    ext = (j == 0) & (k == LEVELS - 1)
    w = EXTREME_WEIGHT + (1 - EXTREME_WEIGHT) * 0.75      # the peak contrast's share to the extreme pair
    level = np.where(ext, ALPHA * w, ALPHA * (1 - w) / (ext.size - 1))
    return float((p <= level).any(axis=1).mean()), float((p[:, ext][:, 0] <= ALPHA).mean())


def decide_each(t: np.ndarray, rng: np.random.Generator, n_bins: int = 40) -> dict[str, np.ndarray]:
    """The rule and its parts per table, each table standardised by its own noise scale as the analysis does.
    For speed the tables are sorted by scale into ``n_bins`` bins of near-equal scale, and each bin is one
    quadrature at its mean scale (the scales within a bin differ by a small fraction of a percent away from the
    ceiling)."""
    used = np.ones(t.shape[1:], dtype=bool)
    scales = np.array([noise_scale("counts", x, used, None, N_TEST) for x in t])
    near = np.array([near_ceiling_data(x, used) for x in t])
    t_gt, _ = model_thresholds(ALPHA, int(N_EFF))
    out = {k: np.zeros(len(t), dtype=bool) for k in (REMEMBERS, FORGETS, "model")}
    for idx in np.array_split(np.argsort(scales), n_bins):
        if not idx.size:
            continue
        s = float(scales[idx].mean())
        post = posterior_spread(t[idx] / s, DELTA / s, rng, sigma_w=SIGMA_W)
        v = decide({**post, "near_ceiling": near[idx]}, DELTA / s, N_EFF, ALPHA)
        out[REMEMBERS][idx], out[FORGETS][idx] = v == 1, v == -1
        out["model"][idx] = _clears(post["p_gt"], t_gt, N_EFF)
    out["ordered"] = remembers_at(t, DELTA, sigma_w=SIGMA_W)
    j, k, ad, se, df = _pair_arrays(t)
    df = np.broadcast_to(df, ad.shape)
    ext = (j == 0) & (k == LEVELS - 1)
    args = (ad[:, ext][:, 0], se[:, ext][:, 0], df[:, ext][:, 0], DELTA)
    out["extreme"] = _exceed_p(*args, ALPHA * EXTREME_WEIGHT) <= ALPHA * EXTREME_WEIGHT
    out["extreme_all"] = _exceed_p(*args, ALPHA) <= ALPHA      # the whole alpha on the extreme pair, SD estimated
    out["scale"] = scales
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = args.tables
    t0 = time.perf_counter()
    print(f"count imports: {LEVELS} levels, {N_TEST} examples, delta 1 point, alpha {ALPHA:g}, {n} tables a design "
          f"(python studies/count_import_power.py --tables {n} --seed {args.seed})")
    print("| design | rule: remembers | rule: forgets | ordered test alone | model alone | extreme pair alone "
          "(0.6 alpha) | extreme pair alone, alpha | oracle: ordered, SDs known | oracle: extreme pair, SD known, "
          "alpha | noise scale (pt) | true SD of extreme diff (pt) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for d, (name, (low, spread, seeds, inter)) in enumerate(DESIGNS.items()):
        rng = np.random.default_rng([args.seed, d])
        t = tables(low, spread, seeds, inter, n, rng)
        got = decide_each(t, rng)
        sd = true_pair_sd(low, spread, inter)
        o_ord, o_ext = oracle_rates(t, sd, DELTA)
        j, k = np.triu_indices(LEVELS, 1)
        sd_ext = sd[(j == 0) & (k == LEVELS - 1)][0]

        def r(key: str, g=got) -> str:
            return f"{int(g[key].sum())}/{n} = {g[key].mean():.3f}"

        print(f"| {name} | {r(REMEMBERS)} | {r(FORGETS)} | {r('ordered')} | {r('model')} | {r('extreme')} | "
              f"{r('extreme_all')} | {o_ord:.3f} | {o_ext:.3f} | {100 * got['scale'].mean():.3f} | "
              f"{100 * sd_ext:.3f} |", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
