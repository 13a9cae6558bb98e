"""Do disjoint sets of real training seeds scatter as the spread's intervals say?

A simulation checks an interval against the model that made it; real training can break that model (one sigma_w
level noisier than the others, seeds that respond to sigma_w differently, heavy tails near interpolation). This
study takes a real grid with many seeds (24: studies/reruns/quick_24.yaml, studies/reruns/atlas_24.yaml), splits
the seeds into disjoint sets of ``--set-size`` (4, what users run), analyzes each set as a user would (``initmem
analyze --delta D``) and all seeds together, and reports per pipeline and pooled:

- how often a set's 90% interval covers the all-seed estimate (the posterior median of all 24 seeds);
- Cochran's Q of the sets' estimates with their intervals' SEs ((q95 - q05) / 3.29), and the mean square of the
  standardized differences between sets (about 1 for intervals of the width they claim);
- the same statistics for the REFERENCE: tables simulated from the all-seed fit's own components (the model's
  assumptions hold there: one residual SD at every level), split into sets of the same size and given intervals by
  the same rule (the planner's quadrature of the model, models/plan.py ``posterior_spread``, applied to the real
  sets as well so that real and reference are compared under one interval rule). The p-value is the share of
  simulated grids whose pooled Q reaches the real one;
- the seed-centred residual SD per sigma_w level (points), from all seeds: the structure the model pools away.

Each row is given for the model's interval and for the reported interval (``summary.json``'s ``spread``), which
is at least as wide as the seeds' own paired t interval of the pair of levels that attains the spread
(models/summaries.py, ``spread_interval``).

    python studies/rerun_coverage.py CUBE.nc [--delta 0.02] [--set-size 4] [--n-ref 200] [--out DIR]

The cubes, their sha256 and the figures: docs/memory-model.md, "Real reruns".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

from initmem import cube
from initmem.cube.io import write_cube
from initmem.models.data import prepare_data
from initmem.models.paired import pair_interval
from initmem.models.plan import posterior_spread

Z90 = 2 * stats.norm.ppf(0.95)   # a 90% interval is Z90 standard errors wide


def cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "initmem.cli", "-q", *args], text=True, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"initmem {' '.join(args)} failed:\n{proc.stderr[-2000:]}")


def analyze(ds, seeds: list, tmp: Path, tag: str, delta: float) -> dict:
    """``initmem analyze`` of the cube restricted to ``seeds``: per pipeline (median, q05, q95, verdict, the model's
    q05 and q95), in points."""
    path, out = tmp / f"{tag}.nc", tmp / f"{tag}-analysis"
    if not (out / "summary.json").exists():    # an --out folder keeps its analyses: a rerun reads them
        write_cube(ds.sel({cube.SEED: seeds}), path)
        cli("analyze", str(path), "--out", str(out), "--delta", f"{delta:g}")
    summary = json.loads((out / "summary.json").read_text())
    rows = {}
    for pipe, e in summary["pipelines"].items():
        model = e.get("spread_model", e["spread"])
        rows[pipe] = (100 * e["spread"]["median"], 100 * e["spread"]["q05"], 100 * e["spread"]["q95"], e["verdict"],
                      100 * model["q05"], 100 * model["q95"])
    return rows


def q_stats(est: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float, int]:
    """Cochran's Q of the sets' estimates (SE from each 90% interval), the mean square of the standardized pairwise
    differences, and the number of pairs."""
    se = np.maximum((hi - lo) / Z90, 1e-12)
    w = 1 / se**2
    q = float(np.sum(w * (est - np.sum(w * est) / np.sum(w)) ** 2))
    i, j = np.triu_indices(est.size, 1)
    z = (est[i] - est[j]) / np.sqrt(se[i] ** 2 + se[j] ** 2)
    return q, float(np.mean(z**2)), int(i.size)


def residual_sd_by_level(table: np.ndarray) -> np.ndarray:
    """Per level of a complete (L, S) table: the SD of the seed- and level-centred residuals (df-corrected)."""
    r = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    n_lev, n_seed = table.shape
    return np.sqrt(np.sum(r**2, axis=1) / ((n_seed - 1) * (n_lev - 1) / n_lev))


def quadrature_interval(tables: np.ndarray, scale: float, sigma_w: np.ndarray, delta: float,
                        rng: np.random.Generator, n_test: int | None = None) -> np.ndarray:
    """(n, 2) reported interval (points) of (n, L, S) tables in outcome units, by the rule of
    models/summaries.py ``spread_interval`` with the model's posterior by the planner's quadrature: its q05 and q95,
    widened to hold the seeds' paired t interval of the levels with the largest and smallest mean."""
    post = posterior_spread(tables / scale, delta / scale, rng, sigma_w=sigma_w)
    out = np.stack([post["q05"], post["q95"]], axis=1) * scale
    means = tables.mean(axis=2)
    for i, t in enumerate(tables):
        got = pair_interval(t, int(np.argmax(means[i])), int(np.argmin(means[i])), n_test=n_test, run_sd=scale)
        if got is not None:
            out[i] = min(out[i, 0], max(got[1], 0.0)), max(out[i, 1], got[2])
    return 100 * out


def reference(table: np.ndarray, scale: float, sigma_w: np.ndarray, delta: float, set_size: int, n_sets: int,
              n_ref: int, rng: np.random.Generator, n_test: int | None = None, kind: str = "model") -> np.ndarray:
    """Per simulated grid (``n_ref``) the Q of its sets (the midpoint of the interval as the estimate), the grids
    drawn from the all-seed table: ``model``, under the model's assumptions (level means as observed, a seed
    effect and one residual SD for every level, from the two-way ANOVA); ``seeds``, by resampling whole seeds (each
    a column of the real table, with its noise at every level), which keeps what the real seeds do and assumes only
    that they are exchangeable."""
    n_lev, n_seed = table.shape
    s = set_size * n_sets
    if kind == "seeds":
        sims = table[:, rng.integers(0, n_seed, (n_ref, s))].transpose(1, 0, 2)
    else:
        means = table.mean(axis=1)
        r = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
        s_e = np.sqrt(np.sum(r**2) / ((n_lev - 1) * (n_seed - 1)))
        s_seed = np.sqrt(max(np.var(table.mean(axis=0), ddof=1) - s_e**2 / n_lev, 0.0))
        sims = (means[None, :, None] + s_seed * rng.standard_normal((n_ref, 1, s))
                + s_e * rng.standard_normal((n_ref, n_lev, s)))
    sets = sims.reshape(n_ref, n_lev, n_sets, set_size).transpose(0, 2, 1, 3).reshape(-1, n_lev, set_size)
    iv = quadrature_interval(sets, scale, sigma_w, delta, rng, n_test).reshape(n_ref, n_sets, 2)
    est = iv.mean(axis=2)
    return np.array([q_stats(est[k], iv[k, :, 0], iv[k, :, 1])[0] for k in range(n_ref)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cube")
    ap.add_argument("--delta", type=float, default=0.02)
    ap.add_argument("--set-size", type=int, default=4)
    ap.add_argument("--n-ref", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="keep the analyses here (default: a temporary folder)")
    ap.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                    help="split a random permutation of the seeds (drawn with SEED) instead of consecutive blocks")
    args = ap.parse_args()
    ds = cube.open_cube(args.cube)
    sha = hashlib.sha256(Path(args.cube).read_bytes()).hexdigest()
    seeds = list(ds[cube.SEED].values)
    order = seeds if args.shuffle is None else list(np.random.default_rng(args.shuffle).permutation(seeds))
    n_sets = len(seeds) // args.set_size
    sets = [sorted(order[k * args.set_size:(k + 1) * args.set_size]) for k in range(n_sets)]
    rng = np.random.default_rng(args.seed)
    print(f"{args.cube} (sha256 {sha[:16]}): {len(seeds)} seeds, {n_sets} disjoint sets of {args.set_size}, delta "
          f"{100 * args.delta:g} points (python studies/rerun_coverage.py {args.cube} --delta {args.delta:g})")
    with tempfile.TemporaryDirectory(prefix="initmem-rerun-") as t:
        tmp = Path(args.out) if args.out else Path(t)
        tmp.mkdir(parents=True, exist_ok=True)
        full = analyze(ds, seeds, tmp, "all", args.delta)
        tag = "set" if args.shuffle is None else f"shuffle{args.shuffle}-set"
        per_set = [analyze(ds, s, tmp, f"{tag}{k}", args.delta) for k, s in enumerate(sets)]
    data = prepare_data(ds)
    print("| pipeline | all seeds | sets: median [90%] | covers (reported / model) | Q reported / model (df) | "
          "mean z^2 reported / model | quadrature Q real / reference median, p | verdicts of the sets | "
          "residual SD by level (pt) |")
    print("|---|---|---|---|---|---|---|---|---|")
    pooled = {"rep": [0.0, 0], "mod": [0.0, 0], "quad": [0.0, 0], "cover_rep": [0, 0], "cover_mod": [0, 0]}
    ref_total, boot_total = np.zeros(args.n_ref), np.zeros(args.n_ref)
    for a, pipe in enumerate(data.pipelines):
        if pipe not in full:
            continue
        lev = data.level_mask[a]
        table = data.y[a][lev][:, data.seed_mask[a]]
        sig = data.sigma_w[lev]
        truth = full[pipe][0]
        rows = np.array([[r[pipe][0], r[pipe][1], r[pipe][2], r[pipe][4], r[pipe][5]] for r in per_set])
        est, lo, hi, mlo, mhi = rows.T
        cov_rep, cov_mod = int(np.sum((lo <= truth) & (truth <= hi))), int(np.sum((mlo <= truth) & (truth <= mhi)))
        q_rep, z_rep, _ = q_stats(est, lo, hi)
        q_mod, z_mod, _ = q_stats(est, mlo, mhi)
        # the quadrature needs complete tables: each set's seeds with a run at every level (all of them, except
        # where the interpolation gate left a run out), the reference the complete seeds of all
        complete = ~np.isnan(table).any(axis=0)
        columns = [[seeds.index(x) for x in members] for members in sets]
        blocks = [table[:, c][:, complete[c]] for c in columns]
        iv = np.concatenate([quadrature_interval(b[None], float(data.scale[a]), sig, args.delta, rng, data.n_test)
                             for b in blocks if b.shape[1] >= 2])    # a set needs two complete seeds
        q_quad = q_stats(iv.mean(axis=1), iv[:, 0], iv[:, 1])[0]
        table = table[:, complete]
        ref = reference(table, float(data.scale[a]), sig, args.delta, args.set_size, n_sets, args.n_ref, rng,
                        data.n_test)
        ref_total += ref
        ref_seeds = reference(table, float(data.scale[a]), sig, args.delta, args.set_size, n_sets, args.n_ref, rng,
                              data.n_test, kind="seeds")
        boot_total += ref_seeds
        for key, q in (("rep", q_rep), ("mod", q_mod), ("quad", q_quad)):
            pooled[key][0] += q
            pooled[key][1] += (len(iv) if key == "quad" else n_sets) - 1
        pooled["cover_rep"][0] += cov_rep
        pooled["cover_mod"][0] += cov_mod
        pooled["cover_rep"][1] += n_sets
        sd = ", ".join(f"{100 * v:.2f}" for v in residual_sd_by_level(table))
        verdicts = ", ".join(r[pipe][3] for r in per_set)
        print(f"| {pipe} | {truth:.2f} [{full[pipe][1]:.2f}, {full[pipe][2]:.2f}] | "
              + "; ".join(f"{e:.2f} [{x:.2f}, {y:.2f}]" for e, x, y in zip(est, lo, hi, strict=True))
              + f" | {cov_rep}/{n_sets} / {cov_mod}/{n_sets} | {q_rep:.1f} / {q_mod:.1f} ({n_sets - 1}) | "
              f"{z_rep:.2f} / {z_mod:.2f} | {q_quad:.1f} / {np.median(ref):.1f}, {np.mean(ref >= q_quad):.2f} | "
              f"{verdicts} (all seeds: {full[pipe][3]}) | {sd} |", flush=True)
    n_cov = pooled["cover_rep"][1]
    p_ref = float(np.mean(ref_total >= pooled["quad"][0]))
    print(f"pooled: covers {pooled['cover_rep'][0]}/{n_cov} (reported), {pooled['cover_mod'][0]}/{n_cov} (model); "
          f"Q {pooled['rep'][0]:.1f} (reported), {pooled['mod'][0]:.1f} (model) on {pooled['rep'][1]} df "
          f"(chi-square p {stats.chi2.sf(pooled['rep'][0], pooled['rep'][1]):.3f} / "
          f"{stats.chi2.sf(pooled['mod'][0], pooled['mod'][1]):.3f}); quadrature Q real {pooled['quad'][0]:.1f} "
          f"against the model reference's median {np.median(ref_total):.1f} "
          f"(90% {np.quantile(ref_total, 0.9):.1f}), p {p_ref:.3f}; against the resampled seeds' median "
          f"{np.median(boot_total):.1f} (90% {np.quantile(boot_total, 0.9):.1f}), "
          f"p {np.mean(boot_total >= pooled['quad'][0]):.3f}")


if __name__ == "__main__":
    main()
