"""Does ``initmem plan`` predict what more seeds really do? The plan against a real rerun.

``initmem plan`` simulates future experiments from the posterior of a small analysis and reports,
per pipeline, the chance of a decisive verdict at each seed count. This benchmark holds that
prediction against real seeds: from a run with many seeds (the rerun) it

1. analyzes the first ``--first`` seeds (as the demo would) and runs ``initmem plan`` on them;
2. for each seed count S, decides ``--subsets`` random S-seed subsets of the rerun's seeds with the
   analysis's own rule (the model's probabilities by the planner's quadrature, the ordered paired
   test, the intersection-union test: ``models.plan.rule_decisions``), giving the real data's
   P(decisive) at S (subsets overlap, so this is a subsampling estimate, not independent reruns);
3. runs the full analysis (NUTS) on the first S seeds for each S, the verdict a user would get.

    python studies/plan_vs_rerun.py RUN_DIR [--first 4] [--sizes 4,8,12,16] [--subsets 300]

Prints one markdown table per pipeline (docs/memory-model.md, "Planning", quotes its output).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import initmem
from initmem.cube.io import write_cube
from initmem.models.data import prepare_data
from initmem.models.plan import rule_decisions
from initmem.names import ALPHA


def cli(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "initmem.cli", *args], text=True, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"initmem {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout


def analyze_seeds(ds, seeds: list[int], tmp: Path, tag: str) -> dict:
    """The real analysis (``initmem analyze``) of the cube restricted to ``seeds``; its summary."""
    path = tmp / f"{tag}.nc"
    write_cube(ds.sel(seed=seeds), path)
    out = tmp / f"{tag}-analysis"
    cli("analyze", str(path), "--out", str(out))
    return json.loads((out / "summary.json").read_text())


def subset_rates(ds, delta: float, sizes: list[int], n_sub: int, rng: np.random.Generator) -> dict:
    """Per pipeline and S: the rule's P(remembers), P(forgets) over random S-seed subsets."""
    data = prepare_data(ds)
    out: dict[str, dict[int, tuple[float, float]]] = {}
    for a, pipe in enumerate(data.pipelines):
        levels = data.used[a].any(axis=1)
        seeds = np.flatnonzero(data.used[a][levels].all(axis=0))   # seeds complete at every used level
        table = data.y[a][levels] / data.scale[a]
        rates = {}
        for s in sizes:
            if s > seeds.size:
                continue
            picks = np.stack([rng.choice(seeds, size=s, replace=False) for _ in range(n_sub)])
            tables = np.stack([table[:, p] for p in picks])
            v = rule_decisions(tables, delta / data.scale[a], ALPHA, rng, None)
            rates[s] = (float(np.mean(v == 1)), float(np.mean(v == -1)))
        out[pipe] = rates
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a run folder (cube.nc) with more seeds than --first")
    ap.add_argument("--first", type=int, default=4, help="seeds of the small analysis the plan starts from")
    ap.add_argument("--sizes", default="4,8,12,16")
    ap.add_argument("--subsets", type=int, default=300)
    ap.add_argument("--n-sim", type=int, default=400, help="the plan's simulations per seed count")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    ds = initmem.open_cube(Path(args.run) / "cube.nc")
    all_seeds = [int(s) for s in ds.seed.values]
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(prefix="initmem-plan-") as t:
        tmp = Path(t)
        small = analyze_seeds(ds, all_seeds[: args.first], tmp, f"first{args.first}")
        plan = json.loads(cli("plan", str(tmp / f"first{args.first}-analysis"), "--json", "--n-sim", str(args.n_sim),
                              "--seed", str(args.seed)))
        delta = float(small["delta"])
        real = subset_rates(ds, delta, sizes, args.subsets, rng)
        fits = {s: analyze_seeds(ds, all_seeds[:s], tmp, f"first{s}") for s in sizes if s <= len(all_seeds)}
    print(f"run: {args.run}; plan from the first {args.first} seeds (n_sim {args.n_sim}); real: {args.subsets} "
          f"random S-seed subsets of {len(all_seeds)} seeds, decided by the analysis's rule; delta {delta:g}")
    for pipe, p in plan["pipelines"].items():
        post = p["posterior"]
        print(f"\n{pipe}: verdict at {args.first} seeds {small['pipelines'][pipe]['verdict']}; plan: seeds needed "
              f"{post['seeds_needed']} (REML {p['reml']['seeds_needed'] if p.get('reml') else '-'})")
        print("| S | plan P(remembers) | plan P(forgets) | real P(remembers) | real P(forgets) "
              "| analysis of seeds 0..S-1 |")
        print("|---|---|---|---|---|---|")
        for s in sizes:
            pr, pf = post["p_remembers"].get(str(s)), post["p_forgets"].get(str(s))
            rr = real.get(pipe, {}).get(s)
            fit = fits.get(s, {}).get("pipelines", {}).get(pipe, {})
            spread = fit.get("spread", {}).get("median")
            fit_txt = f"{fit.get('verdict')} ({100 * spread:.2f} pts)" if spread is not None else "-"
            fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
            print(f"| {s} | {fmt(pr)} | {fmt(pf)} | {fmt(rr[0] if rr else None)} | {fmt(rr[1] if rr else None)} "
                  f"| {fit_txt} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
